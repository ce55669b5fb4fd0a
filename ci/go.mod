// This go.mod is not a Go module anyone imports: a directory holding a
// go.mod is left out of the enclosing module's zip, so the Go module
// github.com/codeward/codeward (what `go get` downloads) does not carry
// ci/ (docs/packaging.md, "The Go module"); the Go programs under it
// (gomodzip, go_consumer) have modules of their own.
module github.com/codeward/codeward/internal-not-a-module/ci

go 1.22
