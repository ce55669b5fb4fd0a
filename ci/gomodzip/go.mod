module github.com/codeward/codeward/ci/gomodzip

go 1.22.0

require golang.org/x/mod v0.23.0
