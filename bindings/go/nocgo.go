//go:build !cgo

package codeward

// The package compiles the C core (native/src) into itself, so it cannot be
// built without cgo. Go turns cgo off when CGO_ENABLED=0 or when it finds no
// C compiler; every other file of the package needs cgo, so the build fails
// on the one undefined name below, whose text is the explanation:
//
//	bindings/go/nocgo.go:14:11: undefined: codeward_needs_cgo_and_a_C_compiler__set_CGO_ENABLED_1_and_put_gcc_or_clang_on_PATH
//
// (A constant, not an invalid import path: `go mod tidy` reads every file
// whatever its build constraint and must keep working for users.)
const _ = codeward_needs_cgo_and_a_C_compiler__set_CGO_ENABLED_1_and_put_gcc_or_clang_on_PATH
