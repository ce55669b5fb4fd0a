// A program that uses codeward as any Go user would. ci/go_module.py copies
// it into a fresh directory and runs `go get` against the module zip it
// serves from a file:// GOPROXY (a nested module: not part of that zip).
module example.com/codeward-consumer

go 1.22
