// Package codeward runs an AI agent's commands in an enforced boundary and
// checks its tool calls against a permission policy: the Go binding of the
// codeward security kernel, one C library (native/ in the repository) shared
// with the Python and Node bindings and compiled into your program by cgo.
//
// # The sandbox
//
// [SelectSandbox] gives the boundary for a workspace and fails closed. On
// Linux that is bubblewrap namespaces, a seccomp filter and Landlock around
// every command, with the workspace as the only writable place and no
// network; the sandbox's init (PID 1 inside) is this program itself, so
// nothing but bubblewrap needs to be installed:
//
//	sb, err := codeward.SelectSandbox(ctx, dir, codeward.SandboxOptions{Strict: true})
//	if err != nil {
//		return err // errors.Is(err, codeward.ErrSandboxUnavailable): no boundary here
//	}
//	defer sb.Close()
//	out, err := sb.Exec(ctx, "go test ./...", codeward.ExecOptions{
//		Timeout: 10 * time.Minute,
//		Stdout:  os.Stdout, // as the bytes arrive; out.Stdout keeps a head and a tail
//	})
//	if err != nil {
//		return err // the command did not run (or ctx ended): out.OK() is false
//	}
//
// A timeout, a refusal of the sandbox or a failing command is an output, not
// an error; the zero [CommandOutput] means "not run", so OK is false unless
// the command ran and exited 0. A cancelled ctx stops the command with every
// process it started. [ExecOptions] names its fields as os/exec.Cmd does:
// Dir, Stdout and Stderr (as the bytes arrive), Stdin (read to its end
// before the command starts, then written while the output is drained).
// [Doctor] says what this machine offers the sandbox,
// as `codeward doctor` does.
//
// # Owned processes
//
// [StartProcess] starts a long-lived program (an MCP server, a language
// server) in a sandbox of its own and returns a [Process] with its pipes. It
// is owned whole: whatever it starts, a setsid daemon included, ends when it
// is stopped or closed, when its sandbox is closed, or when this program
// dies. [Process.Stop] sends SIGTERM to every process of it and SIGKILL after
// KillGrace unless they end sooner, so a server's TERM handler runs and its
// own exit status is returned; [Process.StopWith] chooses the first signal
// (SIGINT for a program that exits on it), and [Process.Signal] sends a
// signal without stopping it. All go through the sandbox's init, which as
// PID 1 of the sandbox's pid namespace takes no signal from outside it and
// signals only the processes of that program:
//
//	p, err := codeward.StartProcess(ctx, sb, "/usr/bin/my-mcp-server", codeward.ProcessOptions{
//		KillGrace: 5 * time.Second,
//	})
//	...
//	p.Signal(syscall.SIGHUP) // reload
//	code, err := p.Stop()    // TERM, then KILL after 5 s: 0 if its handler exits 0
//
// # Network grants
//
// A sandbox has no network. [ExecOptions].NetworkGrant lets one command reach
// one approved origin: the command finds a proxy at 127.0.0.1:3128 in its
// sandbox, and a mediator in this program (the exec's own goroutines, gone
// when Exec returns) admits HTTP CONNECT, absolute-form HTTP and SOCKS5
// requests for that host and port only, deciding each as the Python
// package's mediator does. The grant is pinned to the digest of
// [Sandbox.Policy] the approver saw:
//
//	policy, _ := sb.Policy()
//	out, err := sb.Exec(ctx, "git fetch", codeward.ExecOptions{
//		NetworkGrant: &codeward.NetworkGrant{Host: "github.com", PolicyDigest: policy.Digest},
//	})
//	// out.NetworkGrant counts the connections and the refusals;
//	// out.PolicyChanged: the policy is no longer the approved one, nothing ran
//
// # The permission policy
//
// [NewPermissionPolicy] compiles deny, allow and ask rules of the form
// "Tool(pattern)" that answer [Deny], [Allow] or [Ask] for one tool call.
// A call is reduced to a canonical tool name and an argument string (see
// [ArgumentString]) that is byte for byte the one the Python and Node
// bindings build, so one policy gives the same answer in every language.
//
// # Errors
//
// Every error matches one sentinel with errors.Is ([ErrInvalidArgument],
// [ErrSandboxUnavailable], [ErrClosed], [ErrPolicy], [ErrCore],
// [ErrNetworkGrant]) or is a context's error, and carries its details in a
// typed error errors.As finds (*[SandboxArgumentError],
// *[SandboxUnavailableError], *[PolicyError], *[CoreError],
// *[NetworkGrantError]).
//
// # Handles
//
// Every handle ([Sandbox], [PermissionPolicy], [Glob]) owns C resources and
// is safe for concurrent use. Call Close when done (it returns an error, as
// io.Closer does); a finalizer frees them otherwise.
//
// Building needs cgo and a C11 compiler (CGO_ENABLED=1); without cgo the
// build stops with one line saying so. The policy works on every platform;
// the sandbox calls are Linux-only, and elsewhere SelectSandbox gives the
// error-only sandbox (or, with Strict, an error) naming the platform.
package codeward
