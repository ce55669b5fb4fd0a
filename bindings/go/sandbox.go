//go:build cgo

package codeward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// ProcessHostEnv is the environment variable that opts a host in to the
// process host (its value 1, true, yes or on, in any case): the design's
// name, shared by every binding.
const ProcessHostEnv = "A3S_CODE_ALLOW_PROCESS_HOST_SANDBOX"

// Unlimited is a bound of [Limits] that leaves its resource unbounded (the C
// ABI's A3S_NO_LIMIT).
const Unlimited uint64 = math.MaxUint64

// The bounds of one exec's arguments, as in the Python binding.
const (
	// MaxTimeout is the longest time a command may be given: a day.
	MaxTimeout = 24 * time.Hour
	// MaxOutputBytes is the most output kept per stream: 1 GiB.
	MaxOutputBytes = 1 << 30
	// MaxKillGrace is the longest grace between TERM and KILL: 10 minutes.
	MaxKillGrace = 10 * time.Minute
)

// The defaults an ExecOptions zero value stands for (native/abi/options.json).
const (
	// DefaultTimeout is a command's time when ExecOptions.Timeout is 0.
	DefaultTimeout = 120 * time.Second
	// DefaultKillGrace is the grace when ExecOptions.KillGrace is 0.
	DefaultKillGrace = 500 * time.Millisecond
	// DefaultMaxOutputBytes is the output kept per stream when
	// ExecOptions.MaxOutputBytes is 0.
	DefaultMaxOutputBytes = 102400
	// DefaultIdleStop is Limits.IdleStop's default.
	DefaultIdleStop = 5 * time.Minute
)

// Limits are the resource bounds of the native Linux sandbox
// (docs/security.md, "Resource bounds"; native/abi/options.json). Zero keeps
// the safe default; [Unlimited] leaves a resource unbounded. The process host
// enforces none of them.
type Limits struct {
	// MemoryMaxBytes bounds the memory of the whole sandbox (its processes
	// and what its tmpfs mounts hold); a command past it is killed and its
	// output says OOMKilled. Default: half the machine's memory; least 16 MiB.
	MemoryMaxBytes uint64
	// MaxProcesses bounds processes and threads (fork fails with EAGAIN
	// beyond it). Default: 4096; least 8.
	MaxProcesses uint64
	// TmpfsMaxBytes is the size of each tmpfs a command writes to (/tmp,
	// /var/tmp, /run, /dev/shm, the masked homes): ENOSPC beyond it.
	// Default: an eighth of the machine's memory; least 1 MiB.
	TmpfsMaxBytes uint64
	// InotifyWatchBudget is how many inotify watches the credential scan of
	// the workspace may hold; beyond them it checks directories by their
	// metadata. Default: a quarter of fs.inotify.max_user_watches.
	InotifyWatchBudget uint64
	// IdleStop stops a long-lived sandbox (the default, not OneShot) that
	// ran no command for this long: its processes, placeholders, descriptors
	// and watches are released and the next command starts a new one.
	// 0: [DefaultIdleStop]; a negative duration: never. Rounded up to whole
	// milliseconds.
	IdleStop time.Duration
}

// SandboxOptions configure [SelectSandbox]. The zero value is the safe
// default: the native boundary, or, when it cannot run, the error-only
// sandbox. Every bool defaults to false.
type SandboxOptions struct {
	// Strict makes SelectSandbox return an error matching
	// [ErrSandboxUnavailable] when no enforcing sandbox can run, instead of
	// the error-only sandbox (whose every Exec fails) or the process host.
	// It cannot be combined with AllowProcessHostSandbox; with Strict the
	// environment's opt-in (ProcessHostEnv) is ignored.
	Strict bool
	// AllowProcessHostSandbox opts in to the process host when the native
	// boundary cannot run: commands then run on the host with no boundary,
	// so set it only where an outer container or VM is the boundary.
	// ProcessHostEnv set to 1, true, yes or on does the same.
	AllowProcessHostSandbox bool
	// SandboxHandle, when not nil, is returned as it is: a boundary the host
	// supplies always wins.
	SandboxHandle Sandbox
	// Limits bound the native sandbox's resources (zero: the defaults).
	Limits Limits
	// OneShot starts one bubblewrap per command instead of keeping one
	// long-lived sandbox per handle whose init starts each command as a
	// fresh, fully confined child (the default, about 10x faster per
	// command). Python's reuse=False.
	OneShot bool
	// NoLandlock leaves out the Landlock layer (for tests of the other
	// layers; never a default).
	NoLandlock bool
}

// ExecOptions are the arguments of one [Sandbox.Exec]; zero keeps each
// default. Durations are rounded up to whole milliseconds.
type ExecOptions struct {
	// Timeout is the command's time (0: [DefaultTimeout], at most
	// [MaxTimeout]); then TERM to every process of it, KILL after
	// KillGrace, exit 124 and TimedOut. For a deadline of the caller's, use
	// the context.
	Timeout time.Duration
	// KillGrace is the time between TERM and KILL when a command is
	// stopped (0: [DefaultKillGrace], at most [MaxKillGrace]). A timeout's
	// result comes within Timeout + KillGrace + 0.25 s, also when a process
	// cannot be killed (then Outlived).
	KillGrace time.Duration
	// MaxOutputBytes is the output kept per stream (0:
	// [DefaultMaxOutputBytes], at most [MaxOutputBytes]): beyond it a head
	// and a tail around a marker.
	MaxOutputBytes uint64
	// Dir is the directory the command starts in, absolute or relative to
	// the workspace ("": the workspace), as os/exec.Cmd.Dir. One the
	// sandbox does not have is a setup failure: exit 125 and SetupError
	// "chdir DIR: ...", nothing runs. The sandbox, not Dir, is the boundary.
	Dir string
	// Stdout and Stderr, when not nil, get the command's output as it
	// arrives, every byte (also past MaxOutputBytes; the output keeps a head
	// and a tail), each write returning before the next piece is read, all
	// before Exec returns. Writes happen on Exec's goroutine; a slow writer
	// holds the command back as a full pipe would (its timeout runs on). A
	// write error stops the writes to that writer and is returned with the
	// output once the command is over.
	Stdout, Stderr io.Writer
	// Stdin, when not nil, is what the command reads on its standard input,
	// then end of file (nil: nothing, /dev/null), as os/exec.Cmd.Stdin. It
	// is read to its end before the command starts (a reader that never
	// ends holds Exec there; its error is returned and nothing runs); the
	// bytes are written while the output is drained, and a command that
	// does not read them all just does not get the rest.
	Stdin io.Reader
	// Env holds per-call variables on top of the sandbox's scrubbed
	// environment. Names and values are checked: an interpreter-injection
	// variable (LD_PRELOAD, BASH_ENV, NODE_OPTIONS ...) or a secret-looking
	// one is refused with a *[SandboxArgumentError], never dropped.
	Env map[string]string
	// ExecRules turns on the exec check (docs/policy.md, "The exec
	// check"): every program the command runs is checked at its exec, with
	// the arguments it really runs, before its first instruction. nil: no
	// check.
	ExecRules *ExecRules
	// NetworkGrant lets this one command reach one origin through a proxy
	// at 127.0.0.1:3128 in its sandbox, mediated by this process
	// (docs/security.md, "Network grants"): the exec's goroutines serve it
	// and end with the command, or when ctx ends. Only the native sandbox
	// mediates grants; a malformed grant or another backend is a
	// *[NetworkGrantError]. The output's NetworkGrant says what the command
	// did with it; PolicyChanged, that the sandbox's policy is no longer the
	// approved PolicyDigest (nothing ran). nil: no network.
	NetworkGrant *NetworkGrant
}

// ExecRules are what the exec check holds a command to: the patterns of
// the policy's bash deny and ask rules (the text inside bash(...)) and the
// simple commands the human approved for this call (an ask rule lets them
// run). A program a deny pattern matches, or an ask pattern unless it is
// approved, is stopped: the output's ExecStopped says what and why, and
// the exit code is 126.
type ExecRules struct {
	Deny, Ask, Approved []string
}

// Sandbox runs agent commands (`bash -c command`) in a workspace. Every
// implementation is safe for concurrent use.
type Sandbox interface {
	// Exec runs command and returns its output: a timeout, a refusal of
	// the sandbox (exit 125, SetupError) or a command's failure is an
	// output, not an error. Errors are for arguments the sandbox refuses
	// (*[SandboxArgumentError], [ErrInvalidArgument]), the error-only
	// sandbox ([ErrSandboxUnavailable]), a closed sandbox ([ErrClosed])
	// and failures of the host's own process (*[CoreError], [ErrCore]);
	// with an error the output is the zero value unless the command ran,
	// and the zero value means "not run" (Ran false, OK false). When ctx
	// ends first, the command is stopped with every process it started,
	// and Exec returns the output (Cancelled, exit 124) together with
	// ctx.Err().
	Exec(ctx context.Context, command string, opts ExecOptions) (CommandOutput, error)
	// Backend is "bwrap", "process-host" or "unavailable".
	Backend() string
	// Sandboxed is false for the process host and the error-only sandbox.
	Sandboxed() bool
	// Workspace is the directory commands run in.
	Workspace() string
	// Policy is the effective policy a command would run under now, as a
	// canonical text, and its digest: what a human approves a
	// [NetworkGrant] against (the error-only sandbox returns its
	// *[SandboxUnavailableError]).
	Policy() (SandboxPolicy, error)
	// Close stops the sandbox: running commands are cancelled, a long-lived
	// sandbox is stopped and its placeholders leave the workspace. Later
	// calls of Exec return ErrClosed. It is safe to call more than once.
	Close() error
}

// ErrSandboxUnavailable is matched (errors.Is) by every error of the
// error-only sandbox and of a Strict selection: no boundary could run and
// the host did not opt in to the process host.
var ErrSandboxUnavailable = errors.New("codeward: the sandbox is unavailable")

// ErrInvalidArgument is matched (errors.Is) by every *[SandboxArgumentError]:
// an argument no sandbox can honour.
var ErrInvalidArgument = errors.New("codeward: invalid argument")

// SandboxUnavailableError says why no command can run in a workspace. It
// corresponds to Python's SandboxUnavailable; errors.Is(err,
// ErrSandboxUnavailable) matches it.
type SandboxUnavailableError struct {
	// Workspace is the workspace the sandbox was selected for.
	Workspace string
	// Cause says what is missing or failed (bubblewrap, user namespaces, the
	// self-test ...).
	Cause   string
	message string
}

// Error names the workspace, the cause and the way out.
func (e *SandboxUnavailableError) Error() string {
	if e.message != "" {
		return "codeward: " + e.message
	}
	fix := "Install bubblewrap and enable user namespaces"
	if runtime.GOOS == "darwin" {
		fix = "Check that /usr/bin/sandbox-exec runs"
	}
	return fmt.Sprintf("codeward: bash is unavailable for workspace %s: %s. %s, or, only inside "+
		"an outer container or VM, opt in to the process host (%s=1)",
		e.Workspace, e.Cause, fix, ProcessHostEnv)
}

// Is makes errors.Is(err, ErrSandboxUnavailable) true.
func (e *SandboxUnavailableError) Is(target error) bool { return target == ErrSandboxUnavailable }

// SandboxArgumentError reports an argument no sandbox can honour: a
// workspace that is not a directory, a bound out of range, an environment
// variable the sandbox refuses. It corresponds to Python's
// SandboxArgumentError.
type SandboxArgumentError struct {
	// Message says what was refused and why.
	Message string
}

// Error returns the message.
func (e *SandboxArgumentError) Error() string { return "codeward: " + e.Message }

// Is makes errors.Is(err, ErrInvalidArgument) true.
func (e *SandboxArgumentError) Is(target error) bool { return target == ErrInvalidArgument }

// ProcessHostOptedIn reports whether the environment (ProcessHostEnv) opts
// in to the process host: 1, true, yes or on, in any case, surrounding
// white space ignored.
func ProcessHostOptedIn() bool {
	return optedIn(os.Getenv(ProcessHostEnv))
}

var optInValues = map[string]bool{"1": true, "true": true, "yes": true, "on": true}

// optedIn is Python's value.strip().lower() in {"1", "true", "yes", "on"}.
func optedIn(value string) bool {
	return optInValues[asciiLower(strings.TrimFunc(value, pythonSpace))]
}

// pythonSpace is Python's str.isspace: what str.strip() removes (it differs
// from unicode.IsSpace in \x1c-\x1f).
func pythonSpace(r rune) bool {
	switch {
	case r >= '\t' && r <= '\r', r >= 0x1c && r <= ' ', r == 0x85, r == 0xa0, r == 0x1680,
		r >= 0x2000 && r <= 0x200a, r == 0x2028, r == 0x2029, r == 0x202f, r == 0x205f,
		r == 0x3000:
		return true
	}
	return false
}

// asciiLower lowers ASCII letters only: no other character lowers to one of
// the letters of the opt-in words, so the comparison is Python's.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// SelectSandbox returns the boundary for a session over workspace, failing
// closed (python/codeward/sandbox/_select.py):
//
//  1. opts.SandboxHandle, if set, always wins;
//  2. otherwise the native boundary is probed (once per process: a
//     self-test through the real boundary, which can take seconds; ctx
//     bounds the wait for it); if it works, every command runs inside it,
//     within opts.Limits;
//  3. if it does not and opts.Strict is set, the error is a
//     *[SandboxUnavailableError] naming the cause ([ErrSandboxUnavailable]);
//  4. if the host opted in (AllowProcessHostSandbox, or ProcessHostEnv),
//     the process host runs commands unconfined (Sandboxed false);
//  5. otherwise the error-only sandbox: every Exec returns a
//     *[SandboxUnavailableError] naming the cause.
//
// Other errors: a workspace that is not an existing directory (or is a
// symlink), Strict with AllowProcessHostSandbox, or, once the boundary
// works, limits below what a sandbox runs with (*[SandboxArgumentError]);
// ctx.Err() when ctx ends before the probe does.
func SelectSandbox(ctx context.Context, workspace string, opts SandboxOptions) (Sandbox, error) {
	if opts.SandboxHandle != nil {
		return opts.SandboxHandle, nil
	}
	if opts.Strict && opts.AllowProcessHostSandbox {
		return nil, &SandboxArgumentError{Message: "a strict selection (Strict) and " +
			"AllowProcessHostSandbox contradict each other: the process host enforces nothing"}
	}
	path, err := absWorkspace(workspace)
	if err != nil {
		return nil, &SandboxArgumentError{Message: fmt.Sprintf("workspace %s: %v", workspace, err)}
	}
	var st syscall.Stat_t
	if syscall.Lstat(path, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil, &SandboxArgumentError{
			Message: fmt.Sprintf("workspace %s must be an existing directory, not a symlink", path),
		}
	}
	cause, err := nativeProbe(ctx, path)
	if err != nil {
		return nil, err
	}
	if cause == "" {
		return newNativeSandbox(path, opts)
	}
	if opts.Strict {
		return nil, &SandboxUnavailableError{Workspace: path, Cause: cause}
	}
	if opts.AllowProcessHostSandbox || ProcessHostOptedIn() {
		if runtime.GOOS != "linux" {
			cause += "; the process host is not supported on " + runtime.GOOS + " either"
			return &unavailableSandbox{workspace: path, cause: cause}, nil
		}
		return newProcessHostSandbox(path)
	}
	return &unavailableSandbox{workspace: path, cause: cause}, nil
}

// unavailableSandbox is the error-only handle: every Exec fails with a
// *SandboxUnavailableError naming the cause, so tools fail closed instead of
// running unconfined.
type unavailableSandbox struct {
	workspace string
	cause     string
}

func (u *unavailableSandbox) Exec(context.Context, string, ExecOptions) (CommandOutput, error) {
	return CommandOutput{}, &SandboxUnavailableError{Workspace: u.workspace, Cause: u.cause}
}

func (u *unavailableSandbox) Backend() string   { return "unavailable" }
func (u *unavailableSandbox) Sandboxed() bool   { return false }
func (u *unavailableSandbox) Workspace() string { return u.workspace }
func (u *unavailableSandbox) Policy() (SandboxPolicy, error) {
	return SandboxPolicy{}, &SandboxUnavailableError{Workspace: u.workspace, Cause: u.cause}
}
func (u *unavailableSandbox) Close() error { return nil }

// String names the handle and its cause.
func (u *unavailableSandbox) String() string {
	return fmt.Sprintf("UnavailableSandbox(%q, cause=%q)", u.workspace, u.cause)
}
