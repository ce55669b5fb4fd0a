module github.com/codeward/codeward/bindings/go

go 1.22
