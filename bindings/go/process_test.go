//go:build linux && cgo

package codeward

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An owned process: talked to over its pipes, in a sandbox of its own, and
// gone with everything it started when stopped, closed, or its sandbox closed.
func TestStartProcessTalksOverPipesAndOwnsItsTree(t *testing.T) {
	sb := nativeSandbox(t, SandboxOptions{})
	m := newMarker(t)
	if err := os.Mkdir(filepath.Join(sb.Workspace(), "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := `setsid bash -c '(exec -a ` + m + ` sleep 600) &'; ` +
		`while read -r line; do echo "got:$line:$(pwd):$GIVEN"; done; ` +
		`echo bye >&2; touch /etc/x 2>/dev/null || echo confined >&2`
	p, err := StartProcess(context.Background(), sb, "/bin/bash", ProcessOptions{
		Args: []string{"-c", script}, Env: map[string]string{"GIVEN": "yes"}, Dir: "sub",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	out := bufio.NewReader(p.Stdout)
	if _, err := p.Stdin.WriteString("hello\n"); err != nil {
		t.Fatal(err)
	}
	line, err := out.ReadString('\n')
	want := "got:hello:" + filepath.Join(sb.Workspace(), "sub") + ":yes\n"
	if err != nil || line != want {
		t.Fatalf("read %q, %v; want %q", line, err, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait while it runs: %v", err)
	}
	p.Stdin.Close() // end of file: the loop ends, the program exits
	code, err := p.Wait(context.Background())
	if err != nil || code != 0 {
		t.Fatalf("exit %d, %v", code, err)
	}
	rest, _ := bufio.NewReader(p.Stderr).ReadString(0)
	if !strings.Contains(rest, "bye") || !strings.Contains(rest, "confined") {
		t.Fatalf("stderr %q", rest)
	}
	waitNoSurvivors(t, m) // the daemon it started died with it
	if c, err := p.Stop(); err != nil || c != 0 {
		t.Fatalf("Stop after the end: %d, %v", c, err)
	}
}

func TestClosingTheSandboxStopsItsProcesses(t *testing.T) {
	sb, err := SelectSandbox(context.Background(), t.TempDir(), SandboxOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	m := newMarker(t)
	p, err := StartProcess(context.Background(), sb, "/bin/bash",
		ProcessOptions{Args: []string{"-c", "exec -a " + m + " sleep 600"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	waitNoSurvivors(t, m)
	if _, err := p.Wait(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait after the sandbox closed: %v", err)
	}
	if _, err := StartProcess(context.Background(), sb, "/bin/true", ProcessOptions{}); !errors.Is(err, ErrInvalidArgument) && !errors.Is(err, ErrClosed) {
		t.Fatalf("StartProcess on a closed sandbox: %v", err)
	}
}

func TestStartProcessRefusesWhatItCannotRun(t *testing.T) {
	sb := nativeSandbox(t, SandboxOptions{})
	if _, err := StartProcess(context.Background(), sb, "/nonexistent/server", ProcessOptions{}); err == nil ||
		!strings.Contains(err.Error(), "/nonexistent/server") {
		t.Fatalf("a missing program: %v", err)
	}
	if _, err := StartProcess(context.Background(), &unavailableSandbox{workspace: "/w", cause: "x"}, "/bin/true",
		ProcessOptions{}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("the error-only sandbox: %v", err)
	}
	if _, err := StartProcess(context.Background(), sb, "relative", ProcessOptions{}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a relative path: %v", err)
	}
}
