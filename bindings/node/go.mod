// This go.mod is not a Go module anyone imports: a directory holding a
// go.mod is left out of the enclosing module's zip, so the Go module
// github.com/codeward/codeward (what `go get` downloads) does not carry
// bindings/node/ (docs/packaging.md, "The Go module"). Nothing here is Go code.
module github.com/codeward/codeward/internal-not-a-module/bindings-node

go 1.22
