//go:build cgo

package codeward

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import (
	"fmt"
	"io"
	"runtime/cgo"
	"unsafe"
)

// outputSink takes a command's output as it arrives (a3s_exec_options.on_output)
// and writes it to the caller's writers; a writer that fails gets nothing
// more, and the first failure is Exec's error.
type outputSink struct {
	writers [2]io.Writer // stdout, stderr
	failed  [2]bool
	err     error
}

func (s *outputSink) write(stream int, p []byte) {
	i := 0
	if stream == 2 {
		i = 1
	}
	if s.writers[i] == nil || s.failed[i] {
		return
	}
	if _, err := s.writers[i].Write(p); err != nil {
		s.failed[i] = true
		if s.err == nil {
			s.err = fmt.Errorf("codeward: writing the command's %s: %w", [2]string{"stdout", "stderr"}[i], err)
		}
	}
}

// codewardWriteOutput is the C core's on_output: ctx points at a cgo.Handle
// of the exec's *outputSink. It runs on the goroutine's own thread, inside
// the a3s_sandbox_exec call of Exec.
//
//export codewardWriteOutput
func codewardWriteOutput(ctx unsafe.Pointer, stream C.int, data *C.char, n C.size_t) {
	sink := cgo.Handle(*(*C.uintptr_t)(ctx)).Value().(*outputSink)
	sink.write(int(stream), unsafe.Slice((*byte)(unsafe.Pointer(data)), int(n)))
}
