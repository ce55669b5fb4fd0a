package codeward

/*
#include <stdlib.h>
#include <a3s/a3s.h>

// stream.go's exported Go function, as the C core's output callback.
extern void codewardWriteOutput(void *ctx, int stream, char *data, size_t n);
static a3s_output_fn output_callback(void) { return (a3s_output_fn)codewardWriteOutput; }

// a3s_features_info.flags of the running kernel, or 0 when it cannot tell.
static uint64_t feature_flags(void) {
	a3s_features_info f = {.struct_size = sizeof f};
	return a3s_features(&f, NULL) == A3S_OK ? f.flags : 0;
}
*/
import "C"

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/cgo"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// The sandboxes the C core runs: the native boundary (bubblewrap, seccomp,
// Landlock, a3s-init as PID 1) and the opted-in process host. On Linux the
// init is this program itself (A3S_SANDBOX_SELF_INIT): the package compiles
// native/init into the program, whose constructor turns a start as the init
// into the init before the Go runtime exists (native/init/embed.c), so a
// program that imports the package runs sandboxed commands with nothing else
// installed but bubblewrap.

// selfInit is the flag that names this program as the init, where the
// package carries one.
var selfInit = func() C.uint64_t {
	if runtime.GOOS == "linux" {
		return C.A3S_SANDBOX_SELF_INIT
	}
	return 0
}()

const probeTimeoutMs = 10_000

// coreSandbox is a C sandbox handle shared by goroutines: execs run at once
// (a second one while the long-lived sandbox is busy runs one-shot), Close
// cancels them and waits for them before the handle goes.
type coreSandbox struct {
	backend   string
	sandboxed bool
	workspace string

	mu       sync.Mutex
	sb       *C.a3s_sandbox // nil once closed
	inflight map[*execCall]struct{}
	procs    map[*Process]struct{} // StartProcess's, closed before the handle goes
	running  sync.WaitGroup
}

// execCall is one running exec: its cancel pipe (the C core polls the read
// end) and why it was cancelled.
type execCall struct {
	cancelR, cancelW *os.File
	once             sync.Once
	closed           atomic.Bool // cancelled by Close (else by its context)
}

// cancel writes to the pipe once, after recording who cancelled: Exec
// reads that from another goroutine once the core has seen the byte.
func (c *execCall) cancel(byClose bool) {
	c.once.Do(func() {
		c.closed.Store(byClose)
		c.cancelW.Write([]byte{1})
	})
}

// cStrings copies strs into a C array of C strings; free it with freeCStrings.
func cStrings(strs []string) **C.char {
	if len(strs) == 0 {
		return nil
	}
	p := (**C.char)(C.malloc(C.size_t(len(strs)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	arr := unsafe.Slice(p, len(strs))
	for i, s := range strs {
		arr[i] = C.CString(s)
	}
	return p
}

func freeCStrings(p **C.char, n int) {
	if p == nil {
		return
	}
	for _, s := range unsafe.Slice(p, n) {
		C.free(unsafe.Pointer(s))
	}
	C.free(unsafe.Pointer(p))
}

// newCoreHandle binds a C handle to workspace. An error of the core that
// the caller's input explains is a *SandboxArgumentError, one that says the
// boundary cannot run here a *SandboxUnavailableError.
func newCoreHandle(workspace, bwrap string, flags C.uint64_t, limits Limits) (*C.a3s_sandbox, error) {
	cws := C.CString(workspace)
	defer C.free(unsafe.Pointer(cws))
	var cbwrap *C.char
	if bwrap != "" {
		cbwrap = C.CString(bwrap)
		defer C.free(unsafe.Pointer(cbwrap))
	}
	// the host environment the sandbox filters: Go's own, not the C copy a
	// concurrent os.Setenv may be changing
	env := os.Environ()
	cenv := cStrings(env)
	defer freeCStrings(cenv, len(env))
	cfg := C.a3s_sandbox_config{
		struct_size:          C.size_t(unsafe.Sizeof(C.a3s_sandbox_config{})),
		flags:                flags | selfInit,
		workspace:            cws,
		bwrap_path:           cbwrap,
		host_env:             cenv,
		host_envc:            C.size_t(len(env)),
		memory_max_bytes:     C.uint64_t(limits.MemoryMaxBytes),
		max_processes:        C.uint64_t(limits.MaxProcesses),
		tmpfs_max_bytes:      C.uint64_t(limits.TmpfsMaxBytes),
		inotify_watch_budget: C.uint64_t(limits.InotifyWatchBudget),
		idle_stop_ms:         C.uint64_t(idleStopMs(limits.IdleStop)),
	}
	var sb *C.a3s_sandbox
	var cerr C.a3s_error
	if rc := C.a3s_sandbox_new(&cfg, &sb, &cerr); rc != C.A3S_OK {
		return nil, sandboxError(rc, &cerr, workspace)
	}
	return sb, nil
}

// millis rounds d up to whole milliseconds (a positive d never becomes the
// 0 that means "the default").
func millis(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return uint64((d + time.Millisecond - 1) / time.Millisecond)
}

// idleStopMs is the C core's idle_stop_ms for Limits.IdleStop.
func idleStopMs(d time.Duration) uint64 {
	if d < 0 {
		return Unlimited
	}
	return millis(d)
}

// sandboxError maps a failed sandbox call as Python's _raise_native does.
func sandboxError(rc C.int, cerr *C.a3s_error, workspace string) error {
	msg := errorMessage(cerr)
	switch rc {
	case C.A3S_E_INVALID:
		return &SandboxArgumentError{Message: msg}
	case C.A3S_E_UNSUPPORTED, C.A3S_E_REFUSED:
		return &SandboxUnavailableError{Workspace: workspace, Cause: msg, message: msg}
	}
	return coreError(rc, cerr)
}

func newNativeSandbox(workspace string, opts SandboxOptions) (Sandbox, error) {
	bwrap := findBwrap(workspace)
	if bwrap == "" {
		return nil, &SandboxUnavailableError{Workspace: workspace, Cause: "bwrap missing",
			message: "bubblewrap (bwrap) is not installed"}
	}
	var flags C.uint64_t
	if !opts.OneShot {
		flags |= C.A3S_SANDBOX_REUSE
	}
	if opts.NoLandlock {
		flags |= C.A3S_SANDBOX_NO_LANDLOCK
	}
	sb, err := newCoreHandle(workspace, bwrap, flags, opts.Limits)
	if err != nil {
		return nil, err
	}
	return wrap(sb, "bwrap", true), nil
}

func newProcessHostSandbox(workspace string) (Sandbox, error) {
	sb, err := newCoreHandle(workspace, "", C.A3S_SANDBOX_PROCESS_HOST, Limits{})
	if err != nil {
		return nil, err
	}
	return wrap(sb, "process-host", false), nil
}

func wrap(sb *C.a3s_sandbox, backend string, sandboxed bool) *coreSandbox {
	s := &coreSandbox{
		backend:   backend,
		sandboxed: sandboxed,
		workspace: C.GoString(C.a3s_sandbox_workspace(sb)),
		sb:        sb,
		inflight:  map[*execCall]struct{}{},
		procs:     map[*Process]struct{}{},
	}
	runtime.SetFinalizer(s, (*coreSandbox).Close)
	return s
}

func (s *coreSandbox) Backend() string   { return s.backend }
func (s *coreSandbox) Sandboxed() bool   { return s.sandboxed }
func (s *coreSandbox) Workspace() string { return s.workspace }

// String names the backend and the workspace.
func (s *coreSandbox) String() string {
	return fmt.Sprintf("Sandbox(%s, %q)", s.backend, s.workspace)
}

// checkExec validates what the C core would refuse less helpfully.
func checkExec(command string, o ExecOptions) ([]string, error) {
	if strings.IndexByte(command, 0) >= 0 {
		return nil, &SandboxArgumentError{Message: "the command contains a NUL byte"}
	}
	for _, b := range []struct {
		name       string
		value, max time.Duration
	}{
		{"Timeout", o.Timeout, MaxTimeout},
		{"KillGrace", o.KillGrace, MaxKillGrace},
	} {
		if b.value < 0 || b.value > b.max {
			return nil, &SandboxArgumentError{
				Message: fmt.Sprintf("%s must be from 0 (the default) to %v (%d ms), not %v",
					b.name, b.max, b.max.Milliseconds(), b.value)}
		}
	}
	if strings.IndexByte(o.Dir, 0) >= 0 {
		return nil, &SandboxArgumentError{Message: "Dir contains a NUL byte"}
	}
	if o.MaxOutputBytes > MaxOutputBytes {
		return nil, &SandboxArgumentError{Message: fmt.Sprintf(
			"MaxOutputBytes must be an integer from 1 to %d, not %d", MaxOutputBytes, o.MaxOutputBytes)}
	}
	env := make([]string, 0, len(o.Env))
	for k, v := range o.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, &SandboxArgumentError{Message: fmt.Sprintf(
				"invalid environment variable name %q: it must be non-empty, without '=' or NUL", k)}
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, &SandboxArgumentError{
				Message: fmt.Sprintf("environment variable %s contains a NUL byte", k)}
		}
		env = append(env, k+"="+v)
	}
	if r := o.ExecRules; r != nil {
		for _, list := range [][]string{r.Deny, r.Ask, r.Approved} {
			for _, item := range list {
				if strings.IndexByte(item, 0) >= 0 {
					return nil, &SandboxArgumentError{Message: "an exec rule contains a NUL byte"}
				}
			}
		}
	}
	return env, nil
}

func (s *coreSandbox) Exec(ctx context.Context, command string, o ExecOptions) (CommandOutput, error) {
	env, err := checkExec(command, o)
	if err != nil {
		return CommandOutput{}, err
	}
	var g *grant
	if o.NetworkGrant != nil {
		if g, err = checkGrant(o.NetworkGrant); err != nil {
			return CommandOutput{}, err
		}
		if !s.sandboxed {
			return CommandOutput{}, &NetworkGrantError{Message: fmt.Sprintf(
				"the %s backend cannot mediate network grants: it has no boundary of its own", s.backend)}
		}
	}
	if err := ctx.Err(); err != nil {
		return CommandOutput{}, err
	}
	var stdin []byte
	if o.Stdin != nil {
		if stdin, err = io.ReadAll(o.Stdin); err != nil {
			return CommandOutput{}, fmt.Errorf("codeward: reading ExecOptions.Stdin: %w", err)
		}
	}
	cancelR, cancelW, err := os.Pipe() // close-on-exec: nothing the core starts inherits it
	if err != nil {
		return CommandOutput{}, &CoreError{Status: "system", Code: int(C.A3S_E_SYSTEM),
			Message: "pipe: " + err.Error()}
	}
	call := &execCall{cancelR: cancelR, cancelW: cancelW}
	defer cancelR.Close()
	defer cancelW.Close()

	s.mu.Lock()
	sb := s.sb
	if sb == nil {
		s.mu.Unlock()
		return CommandOutput{}, ErrClosed
	}
	s.inflight[call] = struct{}{}
	s.running.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.inflight, call)
		s.mu.Unlock()
		s.running.Done()
	}()

	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
			call.cancel(false)
		case <-stop:
		}
	}()

	ccmd := C.CString(command)
	defer C.free(unsafe.Pointer(ccmd))
	cenv := cStrings(env)
	defer freeCStrings(cenv, len(env))
	opts := C.a3s_exec_options{
		struct_size:      C.size_t(unsafe.Sizeof(C.a3s_exec_options{})),
		flags:            C.A3S_EXEC_CANCEL_FD,
		command:          ccmd,
		command_len:      C.size_t(len(command)),
		env:              cenv,
		envc:             C.size_t(len(env)),
		timeout_ms:       C.uint64_t(millis(o.Timeout)),
		kill_grace_ms:    C.uint64_t(millis(o.KillGrace)),
		max_output_bytes: C.uint64_t(o.MaxOutputBytes),
		cancel_fd:        C.int(cancelR.Fd()),
	}
	if rules := o.ExecRules; rules != nil { // the exec check's lists
		deny, ask, approved := cStrings(rules.Deny), cStrings(rules.Ask), cStrings(rules.Approved)
		defer freeCStrings(deny, len(rules.Deny))
		defer freeCStrings(ask, len(rules.Ask))
		defer freeCStrings(approved, len(rules.Approved))
		opts.exec_deny, opts.exec_deny_count = deny, C.size_t(len(rules.Deny))
		opts.exec_ask, opts.exec_ask_count = ask, C.size_t(len(rules.Ask))
		opts.exec_approved, opts.exec_approved_count = approved, C.size_t(len(rules.Approved))
	}
	if o.Dir != "" {
		cdir := C.CString(o.Dir)
		defer C.free(unsafe.Pointer(cdir))
		opts.cwd = cdir
	}
	if o.Stdin != nil {
		// C memory: the options struct must not hold a Go pointer; C.CBytes of no bytes
		// is still a pointer, which is what tells the core "an empty stdin", not none
		cin := C.CBytes(append(stdin, 0))
		defer C.free(cin)
		opts.stdin_data = cin
		opts.stdin_len = C.size_t(len(stdin))
	}
	var sink *outputSink
	if o.Stdout != nil || o.Stderr != nil {
		sink = &outputSink{writers: [2]io.Writer{o.Stdout, o.Stderr}}
		h := cgo.NewHandle(sink)
		defer h.Delete()
		ctx := (*C.uintptr_t)(C.malloc(C.size_t(unsafe.Sizeof(C.uintptr_t(0)))))
		defer C.free(unsafe.Pointer(ctx))
		*ctx = C.uintptr_t(h)
		opts.on_output = C.output_callback()
		opts.on_output_ctx = unsafe.Pointer(ctx)
	}
	var adm *admission
	if o.NetworkGrant != nil { // this one command's grant, served until the exec returns
		if adm, err = openAdmission(ctx, g); err != nil {
			return CommandOutput{}, err
		}
		cdigest := C.CString(g.digest)
		defer C.free(unsafe.Pointer(cdigest))
		opts.flags |= C.A3S_EXEC_NETWORK_GRANT
		opts.grant_fd = C.int(adm.peer)
		opts.policy_digest = cdigest
	}
	var r *C.a3s_process_result
	var cerr C.a3s_error
	rc := C.a3s_sandbox_exec(sb, &opts, &r, &cerr)
	var summary NetworkGrantSummary
	if adm != nil {
		summary = adm.close() // the grant ends with the command
	}
	if rc != C.A3S_OK {
		return CommandOutput{}, sandboxError(rc, &cerr, s.workspace)
	}
	out := s.output(r)
	C.a3s_process_result_free(r)
	if adm != nil {
		out.NetworkGrant = &summary
	}
	if sink != nil && sink.err != nil {
		return out, sink.err
	}
	if out.Cancelled {
		if call.closed.Load() {
			return out, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return out, err
		}
	}
	return out, nil
}

// output copies a C result into a CommandOutput.
func (s *coreSandbox) output(r *C.a3s_process_result) CommandOutput {
	v := C.a3s_process_result_view{struct_size: C.size_t(unsafe.Sizeof(C.a3s_process_result_view{}))}
	C.a3s_process_result_get(r, &v, nil)
	flag := func(f C.uint64_t) bool { return v.flags&f != 0 }
	out := CommandOutput{
		Ran:        v.setup_error == nil && v.flags&C.A3S_RESULT_SETUP_FAILED == 0,
		Stdout:     decodeUTF8(C.GoBytes(unsafe.Pointer(v.stdout_data), C.int(v.stdout_len))),
		Stderr:     decodeUTF8(C.GoBytes(unsafe.Pointer(v.stderr_data), C.int(v.stderr_len))),
		ExitCode:   int(v.exit_code),
		TimedOut:   flag(C.A3S_RESULT_TIMED_OUT),
		Truncated:  flag(C.A3S_RESULT_STDOUT_TRUNCATED) || flag(C.A3S_RESULT_STDERR_TRUNCATED),
		TotalBytes: uint64(v.stdout_total) + uint64(v.stderr_total),
		Sandboxed:  s.sandboxed,
		Backend:    s.backend,
		Cancelled:  flag(C.A3S_RESULT_CANCELLED),
		Duration:   time.Duration(v.duration_us) * time.Microsecond,
		OOMKilled:  flag(C.A3S_RESULT_OOM_KILLED),
		Outlived:   flag(C.A3S_RESULT_OUTLIVED),

		PolicyChanged: flag(C.A3S_RESULT_POLICY_CHANGED),
	}
	// both may hold names from the workspace: decoded as the output is
	if v.setup_error != nil {
		out.SetupError = decodeUTF8([]byte(C.GoString(v.setup_error)))
	}
	if v.neutralized != nil && *v.neutralized != 0 { // one line each ('\n' never in a line)
		out.Neutralized = strings.Split(decodeUTF8([]byte(C.GoString(v.neutralized))), "\n")
	}
	if flag(C.A3S_RESULT_EXEC_STOPPED) {
		stop := &ExecStop{Decision: "ask", Rule: C.GoString(v.exec_stop_rule),
			Command: decodeUTF8([]byte(C.GoString(v.exec_stop_command)))}
		if v.exec_stop_list == C.A3S_LIST_DENY {
			stop.Decision = "deny"
		}
		out.ExecStopped = stop
	}
	return out
}

// Policy is the effective policy a command would run under now, and its
// digest (a3s_sandbox_policy): what a network grant is approved against. A
// *SandboxUnavailableError when a command would be refused right now (a
// symlinked protected name ...).
func (s *coreSandbox) Policy() (SandboxPolicy, error) {
	s.mu.Lock()
	defer s.mu.Unlock() // Close waits: the handle stays while it is planned on
	if s.sb == nil {
		return SandboxPolicy{}, ErrClosed
	}
	var p *C.a3s_policy
	var cerr C.a3s_error
	if rc := C.a3s_sandbox_policy(s.sb, &p, &cerr); rc != C.A3S_OK {
		return SandboxPolicy{}, sandboxError(rc, &cerr, s.workspace)
	}
	defer C.a3s_policy_free(p)
	var n C.size_t
	text := C.a3s_policy_text(p, &n)
	return SandboxPolicy{Text: C.GoStringN(text, C.int(n)), Digest: C.GoString(C.a3s_policy_digest(p))}, nil
}

// Close cancels the running execs, waits for them, stops the long-lived
// sandbox (its placeholders leave the workspace) and frees the handle.
func (s *coreSandbox) Close() error {
	s.mu.Lock()
	sb := s.sb
	s.sb = nil
	for call := range s.inflight {
		call.cancel(true)
	}
	procs := s.procs
	s.procs = map[*Process]struct{}{}
	s.mu.Unlock()
	if sb == nil {
		return nil
	}
	runtime.SetFinalizer(s, nil)
	for p := range procs {
		p.Close() // a program may not outlive the sandbox it runs in
	}
	s.running.Wait()
	C.a3s_sandbox_free(sb)
	return nil
}

// info is the long-lived sandbox's state (for the tests).
func (s *coreSandbox) info() (running bool, starts uint64, pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sb == nil {
		return false, 0, 0
	}
	in := C.a3s_sandbox_info{struct_size: C.size_t(unsafe.Sizeof(C.a3s_sandbox_info{}))}
	if C.a3s_sandbox_info_get(s.sb, &in, nil) != C.A3S_OK {
		return false, 0, 0
	}
	return in.flags&C.A3S_SANDBOX_INFO_RUNNING != 0, uint64(in.starts), int(in.pid)
}

// The readiness verdict per bubblewrap, once per process: a probe runs
// once and every caller waits for its verdict (or for its own context).
var (
	probeMu    sync.Mutex
	probeCache = map[string]*probeRun{}
)

type probeRun struct {
	done  chan struct{}
	cause string
}

// nativeProbe is "" when the native boundary works on this machine, else
// the reason it does not (Python's NativeBashSandbox.probe); ctx.Err() when
// ctx ends first (the probe goes on and its verdict is kept).
func nativeProbe(ctx context.Context, workspace string) (string, error) {
	if runtime.GOOS != "linux" {
		return fmt.Sprintf("the native sandbox is not supported on this platform (%s)", runtime.GOOS), nil
	}
	bwrap := findBwrap(workspace)
	if bwrap == "" {
		return "bubblewrap (bwrap) is not installed as a root-owned system program: " +
			"apt-get install bubblewrap", nil
	}
	probeMu.Lock()
	run, started := probeCache[bwrap]
	if !started {
		run = &probeRun{done: make(chan struct{})}
		probeCache[bwrap] = run
		go func() {
			run.cause = runProbe(bwrap)
			close(run.done)
		}()
	}
	probeMu.Unlock()
	select {
	case <-run.done:
		return run.cause, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func runProbe(bwrap string) string {
	version := bwrapVersion(bwrap)
	if version == nil || versionBelow(version, minBwrap) {
		shown := "unknown"
		if version != nil {
			shown = fmt.Sprintf("%d.%d.%d", version[0], version[1], version[2])
		}
		return fmt.Sprintf("%s is version %s; bubblewrap 0.8 or newer is required", bwrap, shown)
	}
	features := C.feature_flags()
	if features&C.A3S_FEATURE_USER_NAMESPACES == 0 {
		return "user namespaces are not available: enable them " +
			"(sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0) " +
			"or allow them in the container runtime"
	}
	if features&C.A3S_FEATURE_SECCOMP_FILTER == 0 {
		return "the kernel has no seccomp filter support"
	}
	dir, err := os.MkdirTemp("", "a3s-probe-")
	if err != nil {
		return "cannot make a directory for the self-test: " + err.Error()
	}
	defer os.RemoveAll(dir)
	// through a long-lived sandbox: the path commands take by default
	sb, err := newCoreHandle(dir, bwrap, C.A3S_SANDBOX_REUSE, Limits{})
	if err != nil {
		if u, ok := err.(*SandboxUnavailableError); ok {
			return u.Cause
		}
		return strings.TrimPrefix(err.Error(), "codeward: ")
	}
	defer C.a3s_sandbox_free(sb)
	var cerr C.a3s_error
	if rc := C.a3s_sandbox_probe(sb, probeTimeoutMs, &cerr); rc != C.A3S_OK {
		return errorMessage(&cerr)
	}
	return ""
}
