module github.com/a3s-code/a3s-code/bindings/go

go 1.22
