package codeward

/*
#include <a3s/a3s.h>
*/
import "C"

import (
	"runtime"
	"sync"
)

// MaxPatternLength is the longest pattern, in bytes, that [CompileGlob]
// accepts (the C core's A3S_GLOB_MAX_PATTERN): far above any real rule, and it
// bounds the matcher's worst case.
const MaxPatternLength = C.A3S_GLOB_MAX_PATTERN

// Glob is a compiled policy glob pattern.
//
// The pattern language is the one of rule patterns: "*" alone matches
// anything; a pattern ending in ":*" is a plain prefix test; "*" matches any
// run of bytes except '/'; "**" any run including '/'; "**/" nothing or a run
// ending in '/'; "\*" is a literal '*'. Matching is of the whole subject and
// case-sensitive, except for tool-name globs (see [CompileGlob]).
//
// A Glob is safe for concurrent use. Close frees its C memory; a finalizer
// does so if Close is never called.
type Glob struct {
	mu sync.RWMutex
	g  *C.a3s_glob // nil once closed
}

// CompileGlob compiles pattern. With toolName set it compiles a tool-name
// glob: ASCII case-insensitive, and '*' also crosses '/'.
//
// A pattern longer than [MaxPatternLength] is a *[PolicyError]; any
// other failure is a *[CoreError].
func CompileGlob(pattern string, toolName bool) (*Glob, error) {
	var flags C.uint64_t
	if toolName {
		flags = C.A3S_GLOB_TOOL_NAME
	}
	var out *C.a3s_glob
	var cerr C.a3s_error
	p, n := borrow(pattern)
	rc := C.a3s_glob_compile(p, n, flags, &out, &cerr)
	if rc != C.A3S_OK {
		if rc == C.A3S_E_TOO_LARGE || rc == C.A3S_E_SYNTAX {
			return nil, &PolicyError{Message: "glob pattern: " + errorMessage(&cerr)}
		}
		return nil, coreError(rc, &cerr)
	}
	g := &Glob{g: out}
	runtime.SetFinalizer(g, (*Glob).Close)
	return g, nil
}

// Match reports whether the whole subject matches. A closed Glob matches
// nothing.
func (g *Glob) Match(subject string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.g == nil {
		return false
	}
	s, n := borrow(subject)
	m := C.a3s_glob_match(g.g, s, n) == 1
	runtime.KeepAlive(g)
	return m
}

// Close frees the compiled pattern. It is safe to call more than once
// and always returns nil (an [io.Closer]).
func (g *Glob) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.g != nil {
		C.a3s_glob_free(g.g)
		g.g = nil
		runtime.SetFinalizer(g, nil)
	}
	return nil
}
