// Command codeward-consumer calls the codeward Go API the way the README
// shows and prints one line per answer, which ci/go_module.py compares with
// what the policy says and what a sandboxed command printed: the program
// depends on the module alone (the sandbox's init is this program itself).
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	codeward "github.com/codeward/codeward/bindings/go"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "codeward-consumer:", err)
		os.Exit(1)
	}
}

func run() error {
	policy, err := codeward.NewPermissionPolicy(codeward.PolicyOptions{
		Deny:  []string{"bash(rm -rf**)", "write(**/.env*)"},
		Ask:   []string{"bash(git push**)"},
		Allow: []string{"read(*)", "bash(cargo test**)"},
	})
	if err != nil {
		return err
	}
	defer policy.Close()
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"bash", map[string]any{"command": "cargo test --all"}},
		{"bash", map[string]any{"command": "rm -rf /"}},
		{"bash", map[string]any{"command": "git push origin main"}},
		{"write", map[string]any{"file_path": "app/.env.local"}},
		{"webfetch", map[string]any{"url": "https://example.com"}},
	} {
		d, err := policy.Check(call.tool, call.args)
		if err != nil {
			return err
		}
		fmt.Printf("%s %v: %s\n", call.tool, call.args, d)
	}
	_, err = codeward.NewPermissionPolicy(codeward.PolicyOptions{Deny: []string{"Bash("}})
	var pe *codeward.PolicyError
	if !errors.As(err, &pe) {
		return fmt.Errorf("a malformed rule gave %v, not a *PolicyError", err)
	}
	fmt.Printf("malformed rule: %s\n", pe.Rule)
	if err := sandboxed(); err != nil {
		return err
	}
	fmt.Printf("version %s abi %d\n", codeward.Version().String, codeward.ABIVersion())
	return nil
}

// sandboxed runs a command in the sandbox, with nothing installed but bubblewrap.
func sandboxed() error {
	ws, err := os.MkdirTemp("", "codeward-consumer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := codeward.SelectSandbox(ctx, ws, codeward.SandboxOptions{Strict: true})
	if err != nil {
		return err
	}
	defer sb.Close()
	out, err := sb.Exec(ctx,
		"echo sandboxed; tr '\\0' '\\n' < /proc/1/cmdline | head -1; touch /usr/cw 2>/dev/null || echo refused",
		codeward.ExecOptions{Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	fmt.Printf("sandbox %s %v: %q exit %d\n", sb.Backend(), sb.Sandboxed(), out.Stdout, out.ExitCode)
	// output as it arrives, to an io.Writer
	var streamed strings.Builder
	if _, err := sb.Exec(ctx, "echo streamed", codeward.ExecOptions{Stdout: &streamed}); err != nil {
		return err
	}
	fmt.Printf("streamed %q\n", streamed.String())
	// an owned process (an MCP server would be one): its pipes, then Close ends it
	proc, err := codeward.StartProcess(ctx, sb, "/bin/cat", codeward.ProcessOptions{})
	if err != nil {
		return err
	}
	proc.Stdin.WriteString("ping\n")
	reply, err := bufio.NewReader(proc.Stdout).ReadString('\n')
	if err != nil {
		return err
	}
	fmt.Printf("process: %q\n", reply)
	if err := proc.Close(); err != nil {
		return err
	}
	// a network grant: one origin (a server on the loopback), mediated by this program
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "granted\n")
	})}
	go server.Serve(ln)
	defer server.Close()
	policy, err := sb.Policy()
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	out, err = sb.Exec(ctx, fmt.Sprintf("curl -sS http://127.0.0.1:%d/; "+
		"curl -sS -o /dev/null -w '%%{http_code}\\n' http://127.0.0.1:9/", port),
		codeward.ExecOptions{NetworkGrant: &codeward.NetworkGrant{
			Host: "127.0.0.1", Port: port, PolicyDigest: policy.Digest}})
	if err != nil {
		return err
	}
	fmt.Printf("grant: %q connections %d refused %d\n", out.Stdout, out.NetworkGrant.Connections,
		out.NetworkGrant.Refused)
	report, err := codeward.Doctor(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("doctor ready %v, %d checks\n", report.Ready, len(report.Checks))
	// fail closed: a refused exec's output is never OK, and the error is idiomatic
	out, err = sb.Exec(ctx, "true", codeward.ExecOptions{Env: map[string]string{"LD_PRELOAD": "/x.so"}})
	fmt.Printf("LD_PRELOAD: invalid argument %v, ok %v\n", errors.Is(err, codeward.ErrInvalidArgument), out.OK())
	if err := sb.Close(); err != nil {
		return err
	}
	_, err = sb.Exec(ctx, "true", codeward.ExecOptions{})
	fmt.Printf("after Close: closed %v\n", errors.Is(err, codeward.ErrClosed))
	return nil
}
