//go:build linux && cgo

package codeward

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// A sandbox's init takes no signal from outside its pid namespace: Stop's
// TERM and Signal are sent by the init, asked over its lifeline. The grace
// is far longer than the test could wait: only the program's own TERM
// handler can make Stop return 0.
const longGrace = 2 * time.Minute

const trappingScript = `trap 'echo stopped > "$0.term"; exit 0' TERM
trap 'echo usr1 >> "$0.usr1"' USR1
echo ready
while :; do sleep 1; done
`

func startTrapping(t *testing.T, sb Sandbox) (*Process, string) {
	t.Helper()
	script := filepath.Join(sb.Workspace(), "server.sh")
	if err := os.WriteFile(script, []byte(trappingScript), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := StartProcess(context.Background(), sb, "/bin/sh",
		ProcessOptions{Args: []string{script}, KillGrace: longGrace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if line, err := bufio.NewReader(p.Stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	return p, script
}

func TestStopSendsTermFirstAndSignalReachesTheProgram(t *testing.T) {
	for _, oneShot := range []bool{false, true} {
		t.Run(map[bool]string{false: "long-lived", true: "one-shot"}[oneShot], func(t *testing.T) {
			sb := nativeSandbox(t, SandboxOptions{OneShot: oneShot})
			p, script := startTrapping(t, sb)
			if err := p.Signal(syscall.SIGUSR1); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for _, err := os.Stat(script + ".usr1"); err != nil && time.Now().Before(deadline); _, err = os.Stat(script + ".usr1") {
				time.Sleep(20 * time.Millisecond)
			}
			if b, err := os.ReadFile(script + ".usr1"); err != nil || string(b) != "usr1\n" {
				t.Fatalf("USR1 did not reach the program: %q, %v", b, err)
			}
			if exited, _, _ := p.status(0); exited {
				t.Fatal("a signal is not a stop")
			}
			start := time.Now()
			code, err := p.Stop()
			if err != nil || code != 0 {
				t.Fatalf("Stop: %d, %v: TERM did not reach the program", code, err)
			}
			if time.Since(start) >= longGrace {
				t.Fatal("Stop waited the grace")
			}
			if b, err := os.ReadFile(script + ".term"); err != nil || string(b) != "stopped\n" {
				t.Fatalf("the TERM handler's marker: %q, %v", b, err)
			}
			if err := p.Signal(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
				t.Fatalf("Signal after the end: %v", err)
			}
			p.Close()
			if err := p.Signal(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) && !errors.Is(err, ErrClosed) {
				t.Fatalf("Signal after Close: %v", err)
			}
		})
	}
}

type notASignal struct{}

func (notASignal) String() string { return "not a signal" }
func (notASignal) Signal()        {}

func TestSignalRefusesWhatIsNoSignal(t *testing.T) {
	sb := nativeSandbox(t, SandboxOptions{})
	p, _ := startTrapping(t, sb)
	for _, bad := range []os.Signal{syscall.Signal(0), syscall.Signal(65), notASignal{}} {
		var argErr *SandboxArgumentError
		if err := p.Signal(bad); !errors.As(err, &argErr) || !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("Signal(%v): %v", bad, err)
		}
	}
	if code, err := p.Stop(); err != nil || code != 0 {
		t.Fatalf("Stop: %d, %v", code, err)
	}
}

func TestAProgramIgnoringTermIsKilledAfterTheGraceWithItsDaemon(t *testing.T) {
	sb := nativeSandbox(t, SandboxOptions{})
	m := newMarker(t)
	// an ignored signal stays ignored in children and across exec
	script := `trap '' TERM; setsid bash -c 'exec -a ` + m + `-daemon sleep 600' </dev/null >/dev/null 2>&1 & ` +
		`echo started; exec -a ` + m + `-main sleep 600`
	p, err := StartProcess(context.Background(), sb, "/bin/bash",
		ProcessOptions{Args: []string{"-c", script}, KillGrace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if line, err := bufio.NewReader(p.Stdout).ReadString('\n'); err != nil || line != "started\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	// both exec'd: argv[0] is the marker (the shells before them carry it in their -c text)
	running := func() (n int) {
		for _, s := range survivors(m) {
			_, cmdline, _ := strings.Cut(s, ": ")
			if strings.HasPrefix(cmdline, m+"-") {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(10 * time.Second)
	for running() < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := running(); n != 2 {
		t.Fatalf("the program and its daemon run: %d (%v)", n, survivors(m))
	}
	start := time.Now()
	code, err := p.Stop()
	if err != nil || code != 128+9 {
		t.Fatalf("Stop: %d, %v", code, err)
	}
	if time.Since(start) < 250*time.Millisecond {
		t.Fatal("killed before the grace")
	}
	if left := survivors(m); len(left) > 0 {
		t.Fatalf("left once Stop returned: %v", left)
	}
}

// StopWith's first signal is the caller's: a program whose INT handler
// exits returns its own status, long before the grace.
func TestStopWithSendsTheChosenSignalFirst(t *testing.T) {
	sb := nativeSandbox(t, SandboxOptions{})
	script := filepath.Join(sb.Workspace(), "int.sh")
	body := "trap 'echo interrupted > \"$0.int\"; exit 0' INT\ntrap '' TERM\necho ready\nwhile :; do sleep 1; done\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := StartProcess(context.Background(), sb, "/bin/sh",
		ProcessOptions{Args: []string{script}, KillGrace: longGrace})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if line, err := bufio.NewReader(p.Stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	if _, err := p.StopWith(notASignal{}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("StopWith(not a signal): %v", err)
	}
	if exited, _, _ := p.status(0); exited {
		t.Fatal("a refused StopWith stopped the program")
	}
	start := time.Now()
	code, err := p.StopWith(syscall.SIGINT)
	if err != nil || code != 0 {
		t.Fatalf("StopWith(SIGINT): %d, %v: INT did not reach the program", code, err)
	}
	if time.Since(start) >= longGrace {
		t.Fatal("StopWith waited the grace")
	}
	if b, err := os.ReadFile(script + ".int"); err != nil || string(b) != "interrupted\n" {
		t.Fatalf("the INT handler's marker: %q, %v", b, err)
	}
	if code, err := p.StopWith(syscall.SIGKILL); err != nil || code != 0 {
		t.Fatalf("StopWith again: %d, %v", code, err)
	}
	if _, err := p.StopWith(syscall.Signal(65)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("StopWith(65) after the end: %v", err)
	}
}
