//go:build cgo

package codeward

/*
#include <stdlib.h>
#include <a3s/a3s.h>
*/
import "C"

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// ProcessOptions configure [StartProcess]; the zero value is the default.
type ProcessOptions struct {
	// Args are the arguments after the program's path.
	Args []string
	// Env holds variables added to the program's environment as given: they
	// are the host's configuration of this program (an MCP server's token),
	// on top of the sandbox's scrubbed environment, and are not checked.
	Env map[string]string
	// Dir is the directory the program starts in, absolute or relative to
	// the workspace ("": the workspace).
	Dir string
	// KillGrace is the time between TERM and KILL when the program is
	// stopped (0: 2 seconds: a server's stop, not a command's timeout).
	KillGrace time.Duration
}

// Process is a long-lived program (an MCP server, a language server) that
// the host talks to over its standard streams, started in a sandbox of its
// own and owned whole: whatever it starts, a daemon that calls setsid
// included, ends when the process is stopped or closed, or when this
// program dies. The C core's a3s_sandbox_spawn; Python's MCP client runs
// its sandboxed servers the same way (python/codeward/mcp/_process.py).
type Process struct {
	// Stdin is the write end of the program's standard input; close it to
	// send end of file.
	Stdin *os.File
	// Stdout and Stderr are the read ends of its standard output and error.
	// Read them while it runs: a full pipe holds the program back.
	Stdout, Stderr *os.File

	mu    sync.Mutex
	c     *C.a3s_child // nil once closed
	code  int
	done  bool
	owner *coreSandbox
}

// StartProcess starts the program at path (absolute, as the sandbox sees
// it) in a sandbox of its own over sb's workspace, with the boundary a
// command gets (never in the long-lived sandbox), and returns once it runs.
// sb must be the native sandbox SelectSandbox gave (Backend "bwrap"); the
// process host and other sandboxes are refused with a
// *[SandboxArgumentError]. The sandbox must outlive the process. Errors: a
// *[SandboxArgumentError] for arguments the core refuses, a
// *[SandboxUnavailableError] when the sandbox refused to start (what it
// found hostile in the workspace ...), a *[CoreError] when the program
// could not be started (its message names the step and the program),
// [ErrClosed] for a closed sandbox, ctx.Err() when ctx ended first.
func StartProcess(ctx context.Context, sb Sandbox, path string, opts ProcessOptions) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	core, ok := sb.(*coreSandbox)
	if !ok || core.backend != "bwrap" {
		return nil, &SandboxArgumentError{Message: fmt.Sprintf(
			"StartProcess needs the native sandbox (backend bwrap), not %v", sb)}
	}
	strs := append([]string{path, opts.Dir}, opts.Args...)
	env := make([]string, 0, len(opts.Env))
	for k, v := range opts.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return nil, &SandboxArgumentError{Message: fmt.Sprintf(
				"invalid environment variable %q: a non-empty name without '=' or NUL, a value without NUL", k)}
		}
		env = append(env, k+"="+v)
	}
	for _, s := range strs {
		if strings.IndexByte(s, 0) >= 0 {
			return nil, &SandboxArgumentError{Message: "a path or argument contains a NUL byte"}
		}
	}
	if opts.KillGrace < 0 || opts.KillGrace > MaxKillGrace {
		return nil, &SandboxArgumentError{Message: fmt.Sprintf(
			"KillGrace must be from 0 (the default) to %v, not %v", MaxKillGrace, opts.KillGrace)}
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	cargs := cStrings(opts.Args)
	defer freeCStrings(cargs, len(opts.Args))
	cenv := cStrings(env)
	defer freeCStrings(cenv, len(env))
	copts := C.a3s_child_options{
		struct_size:   C.size_t(unsafe.Sizeof(C.a3s_child_options{})),
		path:          cpath,
		args:          cargs,
		nargs:         C.size_t(len(opts.Args)),
		env:           cenv,
		envc:          C.size_t(len(env)),
		kill_grace_ms: C.uint64_t(millis(opts.KillGrace)),
	}
	if opts.Dir != "" {
		dir := opts.Dir
		if !filepath.IsAbs(dir) { // the workspace has the same path inside the sandbox
			dir = filepath.Join(core.workspace, dir)
		}
		cdir := C.CString(dir)
		defer C.free(unsafe.Pointer(cdir))
		copts.cwd = cdir
	}
	core.mu.Lock()
	handle := core.sb
	if handle == nil {
		core.mu.Unlock()
		return nil, ErrClosed
	}
	core.running.Add(1) // Close waits for the spawn, not for the process
	core.mu.Unlock()
	defer core.running.Done()
	stdio := C.a3s_child_stdio{struct_size: C.size_t(unsafe.Sizeof(C.a3s_child_stdio{}))}
	var child *C.a3s_child
	var cerr C.a3s_error
	if rc := C.a3s_sandbox_spawn(handle, &copts, &child, &stdio, &cerr); rc != C.A3S_OK {
		if rc == C.A3S_E_SYSTEM {
			return nil, coreError(rc, &cerr)
		}
		return nil, sandboxError(rc, &cerr, core.workspace)
	}
	p := &Process{
		Stdin:  os.NewFile(uintptr(stdio.stdin_fd), "stdin of "+path),
		Stdout: os.NewFile(uintptr(stdio.stdout_fd), "stdout of "+path),
		Stderr: os.NewFile(uintptr(stdio.stderr_fd), "stderr of "+path),
		c:      child,
		owner:  core,
	}
	runtime.SetFinalizer(p, (*Process).Close)
	core.mu.Lock()
	if core.sb == nil { // closed meanwhile: the program may not outlive it
		core.mu.Unlock()
		p.Close()
		return nil, ErrClosed
	}
	core.procs[p] = struct{}{}
	core.mu.Unlock()
	return p, nil
}

// status reads the child's state, waiting up to timeout (0: only looks).
func (p *Process) status(timeout time.Duration) (exited bool, code int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return true, p.code, nil
	}
	if p.c == nil {
		return false, 0, ErrClosed
	}
	st := C.a3s_child_status{struct_size: C.size_t(unsafe.Sizeof(C.a3s_child_status{}))}
	var cerr C.a3s_error
	if rc := C.a3s_child_wait(p.c, C.uint64_t(millis(timeout)), &st, &cerr); rc != C.A3S_OK {
		return false, 0, coreError(rc, &cerr)
	}
	if st.flags&C.A3S_CHILD_EXITED != 0 {
		p.done, p.code = true, int(st.exit_code)
	}
	return p.done, p.code, nil
}

// Wait waits for the program to end and returns its exit status (128+N
// when signal N ended it). When ctx ends first it returns ctx.Err() and the
// program goes on (Stop ends it).
func (p *Process) Wait(ctx context.Context) (int, error) {
	for {
		exited, code, err := p.status(50 * time.Millisecond)
		if err != nil || exited {
			return code, err
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
}

// maxSignal is the highest signal a3s_child_signal takes (SIGRTMAX).
const maxSignal = 64

// Signal sends sig (a [syscall.Signal] from 1 to 64, such as
// [syscall.SIGHUP]) to every process of the program without stopping it. The
// sandbox's init sends it: as PID 1 of the sandbox's pid namespace it takes
// no signal from outside, so this program asks it over a pipe only it
// writes, and the signal reaches the processes of this program only. It
// returns [os.ErrProcessDone] once the program is known to have ended,
// [ErrClosed] after Close, and a *[SandboxArgumentError] for any other
// os.Signal.
func (p *Process) Signal(sig os.Signal) error {
	num, err := signalNumber(sig)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return os.ErrProcessDone
	}
	if p.c == nil {
		return ErrClosed
	}
	var cerr C.a3s_error
	if rc := C.a3s_child_signal(p.c, C.int(num), &cerr); rc != C.A3S_OK {
		return coreError(rc, &cerr)
	}
	return nil
}

// signalNumber is sig as the C core takes it: a [syscall.Signal] from 1 to
// 64; anything else is a *[SandboxArgumentError] (errors.Is
// [ErrInvalidArgument]).
func signalNumber(sig os.Signal) (syscall.Signal, error) {
	num, ok := sig.(syscall.Signal)
	if !ok || num < 1 || num > maxSignal {
		return 0, &SandboxArgumentError{Message: fmt.Sprintf(
			"%v is not a signal this process can send (a syscall.Signal from 1 to %d)", sig, maxSignal)}
	}
	return num, nil
}

// Stop ends the program and everything it started, and returns its exit
// status: SIGTERM to every process of it (sent by the sandbox's init, as
// Signal does), SIGKILL after KillGrace unless they end sooner. A program
// whose TERM handler exits returns its own status at once (0 from a server
// that flushed its state); 128+9 when it had to be killed. Idempotent.
// StopWith chooses the first signal.
func (p *Process) Stop() (int, error) {
	return p.StopWith(syscall.SIGTERM)
}

// StopWith is [Process.Stop] with sig in place of SIGTERM as the first
// step: [syscall.SIGINT] for a program that exits on it, [syscall.SIGKILL]
// to kill everything at once without a grace. The status is the program's
// own when its handler for sig exits. sig is checked first, even once the
// program has ended: anything but a [syscall.Signal] from 1 to 64 is a
// *[SandboxArgumentError] (errors.Is [ErrInvalidArgument]) and stops
// nothing. [ErrClosed] after Close; idempotent otherwise (a program that
// already ended returns its status).
func (p *Process) StopWith(sig os.Signal) (int, error) {
	num, err := signalNumber(sig)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return p.code, nil
	}
	if p.c == nil {
		return 0, ErrClosed
	}
	st := C.a3s_child_status{struct_size: C.size_t(unsafe.Sizeof(C.a3s_child_status{}))}
	var cerr C.a3s_error
	if rc := C.a3s_child_stop_with(p.c, C.int(num), &st, &cerr); rc != C.A3S_OK {
		return 0, coreError(rc, &cerr)
	}
	p.done, p.code = true, int(st.exit_code)
	return p.code, nil
}

// Close stops the program if it still runs, closes the three pipes and
// frees the handle. It is safe to call more than once.
func (p *Process) Close() error {
	p.mu.Lock()
	c := p.c
	p.c = nil
	p.mu.Unlock()
	if c == nil {
		return nil
	}
	runtime.SetFinalizer(p, nil)
	C.a3s_child_free(c) // stops it first if it runs
	p.owner.mu.Lock()
	delete(p.owner.procs, p)
	p.owner.mu.Unlock()
	for _, f := range []*os.File{p.Stdin, p.Stdout, p.Stderr} {
		f.Close()
	}
	return nil
}
