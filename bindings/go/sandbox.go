//go:build cgo

package codeward

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"syscall"
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
	// MaxTimeoutMs is the longest time a command may be given: a day.
	MaxTimeoutMs = 24 * 3600 * 1000
	// MaxOutputBytes is the most output kept per stream: 1 GiB.
	MaxOutputBytes = 1 << 30
	// MaxKillGraceMs is the longest grace between TERM and KILL: 10 minutes.
	MaxKillGraceMs = 600_000
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
	// IdleStopMs stops a long-lived sandbox (Reuse) that ran no command for
	// this many milliseconds: its processes, placeholders, descriptors and
	// watches are released and the next command starts a new one.
	// Default: 300000 (5 minutes); [Unlimited]: never.
	IdleStopMs uint64
}

// SandboxOptions configure [SelectSandbox]. The zero value is the safe
// default: the native boundary, or, when it cannot run, the error-only
// sandbox.
type SandboxOptions struct {
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
	// Reuse keeps one long-lived sandbox per handle, each command a fresh,
	// fully confined child of its init (nil: true, the default); false
	// starts one bubblewrap per command.
	Reuse *bool
	// NoLandlock leaves out the Landlock layer (for tests of the other
	// layers; never a default).
	NoLandlock bool
}

// ExecOptions are the arguments of one [Sandbox.Exec]; zero keeps each
// default.
type ExecOptions struct {
	// TimeoutMs is the command's time (0: 120000, at most [MaxTimeoutMs]);
	// then TERM to every process of it, KILL after KillGraceMs, exit 124.
	TimeoutMs uint64
	// KillGraceMs is the time between TERM and KILL when a command is
	// stopped (0: 2000, at most [MaxKillGraceMs]).
	KillGraceMs uint64
	// MaxOutputBytes is the output kept per stream (0: 102400, at most
	// [MaxOutputBytes]): beyond it a head and a tail around a marker.
	MaxOutputBytes uint64
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
	// (*[SandboxArgumentError]), the error-only sandbox
	// ([ErrSandboxUnavailable]), a closed sandbox ([ErrClosed]) and
	// failures of the host's own process (*[CoreError]). When ctx ends
	// first, the command is stopped with every process it started, and
	// Exec returns the output (Cancelled, exit 124) together with ctx.Err().
	Exec(ctx context.Context, command string, opts ExecOptions) (CommandOutput, error)
	// Backend is "bwrap", "process-host" or "unavailable".
	Backend() string
	// Sandboxed is false for the process host and the error-only sandbox.
	Sandboxed() bool
	// Workspace is the directory commands run in.
	Workspace() string
	// Close stops the sandbox: running commands are cancelled, a long-lived
	// sandbox is stopped and its placeholders leave the workspace. Later
	// calls of Exec return ErrClosed. It is safe to call more than once.
	Close() error
}

// ErrSandboxUnavailable is matched (errors.Is) by every error of the
// error-only sandbox: no boundary could run and the host did not opt in to
// the process host.
var ErrSandboxUnavailable = errors.New("codeward: the sandbox is unavailable")

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
//     self-test through the real boundary); if it works, every command runs
//     inside it, within opts.Limits;
//  3. if it does not, and the host opted in (AllowProcessHostSandbox, or
//     ProcessHostEnv), the process host runs commands unconfined
//     (Sandboxed false);
//  4. otherwise the error-only sandbox: every Exec returns a
//     *[SandboxUnavailableError] naming the cause.
//
// The error is for a workspace that is not an existing directory (or is a
// symlink), or, once the boundary works, limits below what a sandbox runs
// with (*[SandboxArgumentError]).
func SelectSandbox(workspace string, opts SandboxOptions) (Sandbox, error) {
	if opts.SandboxHandle != nil {
		return opts.SandboxHandle, nil
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
	cause := nativeProbe(path)
	if cause == "" {
		return newNativeSandbox(path, opts)
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
func (u *unavailableSandbox) Close() error      { return nil }

// String names the handle and its cause.
func (u *unavailableSandbox) String() string {
	return fmt.Sprintf("UnavailableSandbox(%q, cause=%q)", u.workspace, u.cause)
}
