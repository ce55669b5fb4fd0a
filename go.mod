module github.com/codeward/codeward

go 1.22
