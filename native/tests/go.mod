// This go.mod is not a Go module anyone imports: a directory holding a
// go.mod is left out of the enclosing module's zip, so the Go module
// github.com/codeward/codeward (what `go get` downloads) does not carry
// native/tests/ (docs/packaging.md, "The Go module"). Nothing here is Go code.
module github.com/codeward/codeward/internal-not-a-module/native-tests

go 1.22
