//go:build linux && cgo

package codeward

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The Go side of the sandbox: contexts, goroutines, Close, and the caller's
// death. The shared vectors (vectors_sandbox_test.go) hold the boundary
// itself.

// helperEnv makes the test binary a helper program instead (TestMain).
const helperEnv = "CODEWARD_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode, os.Args[len(os.Args)-1]))
	}
	os.Exit(m.Run())
}

// helper runs as a separate program: it starts a sandbox over workspace,
// says "ready <sandbox pid>" once a command of it runs, and then either
// waits to be killed ("kill") or returns without closing ("exit").
func helper(mode, workspace string) int {
	sb, err := SelectSandbox(context.Background(), workspace, SandboxOptions{})
	if err != nil || sb.Backend() != "bwrap" {
		fmt.Println("no sandbox:", err)
		return 1
	}
	if _, err := sb.Exec(context.Background(), "true", ExecOptions{}); err != nil {
		fmt.Println("exec:", err)
		return 1
	}
	if mode == "hostcode" { // this program is the host's code: a copy inside the workspace
		out, err := sb.Exec(context.Background(), "echo x >> bin/helper; echo bin=$?; "+
			"echo mine > project.txt; echo project=$?", ExecOptions{})
		sb.Close()
		if err != nil {
			fmt.Println("exec:", err)
			return 1
		}
		fmt.Print(out.Stdout)
		return 0
	}
	_, _, pid := sb.(*coreSandbox).info()
	if mode == "exit" {
		fmt.Println("ready", pid)
		return 0 // no Close: the process's end takes the sandbox down
	}
	go sb.Exec(context.Background(), "touch started; exec -a "+os.Getenv("CODEWARD_TEST_MARKER")+
		" sleep 120", ExecOptions{})
	for {
		if _, err := os.Stat(filepath.Join(workspace, "started")); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("ready", pid)
	select {} // until SIGKILL
}

func TestContextCancelKillsTheTree(t *testing.T) {
	for _, reuse := range []bool{true, false} {
		t.Run(fmt.Sprintf("reuse=%v", reuse), func(t *testing.T) {
			sb := nativeSandbox(t, SandboxOptions{OneShot: !reuse})
			m := newMarker(t)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			start := time.Now()
			out, err := sb.Exec(ctx, "setsid bash -c '(exec -a "+m+" sleep 60) &'; exec -a "+m+
				" sleep 60", ExecOptions{KillGrace: 200 * time.Millisecond})
			if !errors.Is(err, context.Canceled) || !out.Cancelled || out.ExitCode != 124 {
				t.Fatalf("err %v, output %+v", err, out)
			}
			if elapsed := time.Since(start); elapsed > 30*time.Second {
				t.Fatalf("the cancelled command took %v", elapsed)
			}
			waitNoSurvivors(t, m)
			// the sandbox goes on
			if out, err := sb.Exec(context.Background(), "echo next", ExecOptions{}); err != nil ||
				out.Stdout != "next\n" {
				t.Fatalf("after the cancel: %+v %v", out, err)
			}
		})
	}
}

func TestContextDeadlineKillsTheTree(t *testing.T) {
	sb := nativeSandbox(t, SandboxOptions{})
	m := newMarker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	out, err := sb.Exec(ctx, "(exec -a "+m+" sleep 60) & exec -a "+m+" sleep 60",
		ExecOptions{KillGrace: 200 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) || !out.Cancelled || out.ExitCode != 124 {
		t.Fatalf("err %v, output %+v", err, out)
	}
	waitNoSurvivors(t, m)
	// a context that is already done runs nothing
	out, err = sb.Exec(ctx, "touch ran", ExecOptions{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a done context ran: %+v %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(sb.Workspace(), "ran")); err == nil {
		t.Fatal("a done context ran the command")
	}
}

// atOnce runs work(g, fail) for g from 0 to n-1, each in a goroutine of its
// own, and reports every error given to fail (64 at the most) once all have
// ended.
func atOnce(t *testing.T, n int, work func(g int, fail func(error))) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			work(g, func(err error) { errs <- err })
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// echoes runs `echo g-i` in sb: an error unless that is all it printed.
func echoes(sb Sandbox, g, i int) error {
	want := fmt.Sprintf("%d-%d", g, i)
	out, err := sb.Exec(context.Background(), "echo "+want, ExecOptions{})
	if err != nil || out.Stdout != want+"\n" || out.ExitCode != 0 {
		return fmt.Errorf("%s: %+v %v", want, out, err)
	}
	return nil
}

func TestManyGoroutinesShareOneSandbox(t *testing.T) {
	sb := nativeSandbox(t, SandboxOptions{})
	atOnce(t, 8, func(g int, fail func(error)) {
		for i := 0; i < 4; i++ {
			if err := echoes(sb, g, i); err != nil {
				fail(err)
			}
		}
	})
}

// Goroutines starting, using and closing sandboxes of their own at once (issue 26):
// every start forks an intermediate child, which used to hold the other starts'
// pipes and wait on them forever. A deadlock ends in the test binary's timeout.
func TestManyGoroutinesStartSandboxesAtOnce(t *testing.T) {
	atOnce(t, 8, func(g int, fail func(error)) {
		for i := 0; i < 3; i++ {
			sb, err := SelectSandbox(context.Background(), t.TempDir(), SandboxOptions{})
			if err != nil {
				fail(err)
				return
			}
			if err := echoes(sb, g, i); err != nil {
				fail(err)
			}
			sb.Close()
		}
	})
}

func TestCloseCancelsRunningCommandsAndIsFinal(t *testing.T) {
	sb := nativeSandbox(t, SandboxOptions{})
	m := newMarker(t)
	done := make(chan error, 2)
	var outs [2]CommandOutput
	for i := range outs {
		go func(i int) {
			var err error
			outs[i], err = sb.Exec(context.Background(), "touch started"+strconv.Itoa(i)+
				"; exec -a "+m+" sleep 60", ExecOptions{KillGrace: 200 * time.Millisecond})
			done <- err
		}(i)
	}
	for i := range outs {
		for {
			if _, err := os.Stat(filepath.Join(sb.Workspace(), "started"+strconv.Itoa(i))); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	for range outs {
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("a command running at Close returned %v", err)
		}
	}
	for _, out := range outs {
		if !out.Cancelled {
			t.Errorf("not cancelled: %+v", out)
		}
	}
	waitNoSurvivors(t, m)
	if _, err := sb.Exec(context.Background(), "true", ExecOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Exec after Close: %v", err)
	}
	if err := sb.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

func TestTheInitIsThisProgram(t *testing.T) {
	sb := nativeSandbox(t, SandboxOptions{})
	out, err := sb.Exec(context.Background(), "tr '\\0' ' ' < /proc/1/cmdline", ExecOptions{})
	if err != nil || !strings.HasPrefix(out.Stdout, "/run/a3s/init --mode server ") {
		t.Fatalf("PID 1 is not the init: %+v %v", out, err)
	}
	// bubblewrap is retired once the sandbox is up: the pid is the init's own
	_, _, pid := sb.(*coreSandbox).info()
	init := fmt.Sprint(pid)
	// the same file (its path inside is /run/a3s/init)
	exe, err := os.Stat("/proc/" + init + "/exe")
	if err != nil {
		t.Skipf("the init is not readable from here (%v): it is non-dumpable", err)
	}
	self, _ := os.Executable()
	mine, err := os.Stat(self)
	if err != nil || !os.SameFile(exe, mine) {
		t.Fatalf("the init does not run this program %s (%v)", self, err)
	}
}

// startHelper runs this test binary as a helper over a fresh workspace and
// returns it with the sandbox pid (its init) it reported.
func startHelper(t *testing.T, mode, marker string) (*exec.Cmd, int, string) {
	t.Helper()
	ws := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$", ws)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "CODEWARD_TEST_MARKER="+marker)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	var pid int
	if _, err := fmt.Sscanf(line, "ready %d", &pid); err != nil || pid <= 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the helper said %q", line)
	}
	return cmd, pid, ws
}

// gone reports whether pid no longer runs (no process, or a zombie).
func gone(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !gone(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !gone(pid) {
		t.Fatalf("the sandbox (init %d) outlived its caller", pid)
	}
}

func TestSIGKILLOfTheCallerTakesTheSandboxDown(t *testing.T) {
	m := newMarker(t)
	cmd, pid, ws := startHelper(t, "kill", m)
	// "started" exists before the command's exec -a names it (the create may
	// even be made for it by the init's name supervisor): wait for the name.
	for deadline := time.Now().Add(10 * time.Second); len(survivors(m)) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if len(survivors(m)) == 0 {
		t.Fatal("the helper's command does not run")
	}
	names := listing(t, ws)
	if namesEmulated() && strings.Join(names, " ") != "started" {
		t.Fatalf("the running sandbox shows in the workspace: %v", names)
	} else if !namesEmulated() && len(names) < 2 {
		t.Fatalf("no placeholders while the sandbox runs: %v", names)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	waitGone(t, pid)
	waitNoSurvivors(t, m)
	// with the emulation there was nothing to remove; on the fallback its
	// janitor removes the placeholders once the sandbox is gone
	waitListing(t, ws, "started")
}

// hostListing is the host's view of a workspace: each entry's mode and inode,
// and an lstat of protected names (missing: "-").
func hostListing(t *testing.T, ws string) string {
	t.Helper()
	var b strings.Builder
	for _, name := range listing(t, ws) {
		st, err := os.Lstat(filepath.Join(ws, name))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %v %d\n", name, st.Mode(), st.Sys().(*syscall.Stat_t).Ino)
	}
	for _, name := range []string{".git", ".vscode", ".mcp.json", ".bashrc", ".gitmodules"} {
		if _, err := os.Lstat(filepath.Join(ws, name)); err == nil {
			fmt.Fprintf(&b, "lstat %s present\n", name)
		}
	}
	return b.String()
}

func TestTheHostListingIsTheSameWhileASandboxIsOpen(t *testing.T) {
	if !namesEmulated() {
		t.Skip("the kernel lacks SECCOMP_ADDFD_FLAG_SEND (Linux 5.14): placeholders are used")
	}
	for _, reuse := range []bool{true, false} {
		ws := t.TempDir()
		if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		before := hostListing(t, ws)
		sb, err := SelectSandbox(context.Background(), ws, SandboxOptions{OneShot: !reuse})
		if err != nil || sb.Backend() != "bwrap" {
			t.Fatalf("no native sandbox: %v", err)
		}
		if _, err := sb.Exec(context.Background(), "true", ExecOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := hostListing(t, ws); got != before {
			t.Fatalf("reuse=%v: the open sandbox shows:\n%s\nwas\n%s", reuse, got, before)
		}
		done := make(chan CommandOutput, 1)
		go func() {
			out, _ := sb.Exec(context.Background(),
				"echo go > sub/started; sleep 2; echo x > .mcp.json; mkdir .vscode", ExecOptions{})
			done <- out
		}()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, err := os.Stat(filepath.Join(ws, "sub", "started")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the command never started")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got := hostListing(t, ws); got != before {
			t.Fatalf("reuse=%v: a running command shows:\n%s\nwas\n%s", reuse, got, before)
		}
		out := <-done
		if !strings.Contains(out.Stderr, ".mcp.json: Permission denied") {
			t.Fatalf("reuse=%v: the protected name was not refused: %+v", reuse, out)
		}
		sb.Close()
		if got := hostListing(t, ws); got != before {
			t.Fatalf("reuse=%v: left behind:\n%s\nwas\n%s", reuse, got, before)
		}
	}
}

func TestTheProgramsOwnDirectoryInsideTheWorkspaceIsReadOnly(t *testing.T) {
	ws := t.TempDir()
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(ws, "bin", "helper")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^$", ws)
	cmd.Env = append(os.Environ(), helperEnv+"=hostcode")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the helper: %v (%s)", err, out)
	}
	if string(out) != "bin=1\nproject=0\n" {
		t.Fatalf("the command could write the program's directory, or not the workspace: %q", out)
	}
	after, err := os.ReadFile(bin)
	if err != nil || len(after) != len(self) {
		t.Fatalf("the program inside the workspace was changed (%d bytes, was %d): %v",
			len(after), len(self), err)
	}
}

// listing is the workspace's top level, sorted.
func listing(t *testing.T, ws string) []string {
	t.Helper()
	entries, err := os.ReadDir(ws)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// waitListing waits until the workspace holds exactly want (milliseconds after
// a caller's death; the bound is for a loaded machine).
func waitListing(t *testing.T, ws string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Join(listing(t, ws), " ") != strings.Join(want, " ") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := listing(t, ws); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("the workspace holds %v, want %v", got, want)
	}
}

func TestAProgramThatExitsWithoutCloseLeavesNothing(t *testing.T) {
	cmd, pid, ws := startHelper(t, "exit", newMarker(t))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the helper: %v", err)
	}
	waitGone(t, pid)
	// what it left in the workspace (placeholders of missing protected
	// names) goes with its janitor, and a next sandbox finds nothing
	waitListing(t, ws)
	sb, err := SelectSandbox(context.Background(), ws, SandboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Exec(context.Background(), "true", ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	sb.Close()
	if _, err := os.Lstat(filepath.Join(ws, ".bashrc")); err == nil {
		t.Fatal("a placeholder of the dead program's sandbox is still in the workspace")
	}
}

// A host that checks OK and forgets the error still stops: the output of
// an Exec that did not run the command is never OK.
func TestOutputOfARefusedExecIsNotOK(t *testing.T) {
	if (CommandOutput{}).OK() {
		t.Fatal("the zero CommandOutput is OK")
	}
	sb := nativeSandbox(t, SandboxOptions{})
	out, err := sb.Exec(context.Background(), "true", ExecOptions{Env: map[string]string{"LD_PRELOAD": "/x.so"}})
	if !errors.Is(err, ErrInvalidArgument) || out.OK() || out.Ran {
		t.Fatalf("refused LD_PRELOAD: err %v, output %+v", err, out)
	}
	var arg *SandboxArgumentError
	if !errors.As(err, &arg) || !strings.Contains(arg.Message, "LD_PRELOAD") {
		t.Fatalf("want a *SandboxArgumentError naming LD_PRELOAD, got %v", err)
	}
	if out, err := sb.Exec(context.Background(), "true", ExecOptions{}); err != nil || !out.OK() || !out.Ran {
		t.Fatalf("true: %+v %v", out, err)
	}
	out, err = sb.Exec(context.Background(), "sleep 5", ExecOptions{Timeout: time.Millisecond})
	if err != nil || out.OK() || !out.TimedOut || !out.Ran {
		t.Fatalf("a timed-out command: %+v %v", out, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out, err := sb.Exec(ctx, "true", ExecOptions{}); !errors.Is(err, context.Canceled) || out.OK() {
		t.Fatalf("a cancelled context: %+v %v", out, err)
	}
	sb.Close()
	if out, err := sb.Exec(context.Background(), "true", ExecOptions{}); !errors.Is(err, ErrClosed) || out.OK() {
		t.Fatalf("a closed sandbox: %+v %v", out, err)
	}
}

func TestSelectSandboxHonoursItsContext(t *testing.T) {
	withoutBwrap(t) // the verdict is recomputed: nothing cached answers at once
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// without bubblewrap there is no probe to wait for: the verdict is immediate
	if _, err := SelectSandbox(ctx, t.TempDir(), SandboxOptions{Strict: true}); !errors.Is(err, ErrSandboxUnavailable) {
		t.Fatalf("strict without bubblewrap: %v", err)
	}
	var u *SandboxUnavailableError
	_, err := SelectSandbox(context.Background(), t.TempDir(), SandboxOptions{Strict: true})
	if !errors.As(err, &u) || u.Cause == "" {
		t.Fatalf("want a *SandboxUnavailableError with a cause, got %v", err)
	}
}

func TestSelectSandboxWaitsForTheProbeOnlyAsLongAsItsContext(t *testing.T) {
	probeMu.Lock()
	saved := probeCache
	blocked := &probeRun{done: make(chan struct{})} // a probe that has not answered yet
	probeCache = map[string]*probeRun{}
	if bwrap := findBwrap(os.TempDir()); bwrap != "" {
		probeCache[bwrap] = blocked
	}
	probeMu.Unlock()
	t.Cleanup(func() {
		probeMu.Lock()
		probeCache = saved
		probeMu.Unlock()
	})
	if len(probeCache) == 0 {
		t.Fatal("no bubblewrap here")
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if sb, err := SelectSandbox(ctx, t.TempDir(), SandboxOptions{}); !errors.Is(err, context.Canceled) || sb != nil {
		t.Fatalf("got %v, %v; want context.Canceled", sb, err)
	}
}

func TestDurationsRoundUpToWholeMilliseconds(t *testing.T) {
	for d, want := range map[time.Duration]uint64{0: 0, 1: 1, time.Millisecond: 1,
		time.Millisecond + 1: 2, 2 * time.Second: 2000} {
		if got := millis(d); got != want {
			t.Errorf("millis(%v) = %d, want %d", d, got, want)
		}
	}
	if idleStopMs(-1) != Unlimited {
		t.Error("a negative IdleStop is not 'never'")
	}
	sb := nativeSandbox(t, SandboxOptions{})
	for _, o := range []ExecOptions{{Timeout: -1}, {Timeout: MaxTimeout + 1}, {KillGrace: MaxKillGrace + 1}} {
		if _, err := sb.Exec(context.Background(), "true", o); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

func TestEveryErrorTypeMatchesItsSentinel(t *testing.T) {
	for _, c := range []struct {
		err      error
		sentinel error
	}{
		{&SandboxArgumentError{}, ErrInvalidArgument},
		{&SandboxUnavailableError{}, ErrSandboxUnavailable},
		{&PolicyError{}, ErrPolicy},
		{&CoreError{}, ErrCore},
	} {
		if !errors.Is(fmt.Errorf("wrapped: %w", c.err), c.sentinel) {
			t.Errorf("%T does not match %v", c.err, c.sentinel)
		}
	}
	if _, err := NewPermissionPolicy(PolicyOptions{Deny: []string{"Bash("}}); !errors.Is(err, ErrPolicy) {
		t.Errorf("a malformed rule: %v", err)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// A writer's error reaches the caller (errors.Is finds it) once the command
// is over; the other stream's writer goes on.
func TestAWritersErrorIsReturnedWithTheOutput(t *testing.T) {
	sb := nativeSandbox(t, SandboxOptions{})
	full := errors.New("disk full")
	var stderr strings.Builder
	out, err := sb.Exec(context.Background(), "echo out; echo err >&2; echo done > done",
		ExecOptions{Stdout: failingWriter{full}, Stderr: &stderr})
	if !errors.Is(err, full) || !out.Ran || out.Stdout != "out\n" || stderr.String() != "err\n" {
		t.Fatalf("err %v, output %+v, stderr %q", err, out, stderr.String())
	}
	if _, statErr := os.Stat(filepath.Join(sb.Workspace(), "done")); statErr != nil {
		t.Fatal("the command did not run to its end")
	}
}

func TestTheExecCheckStopsADeniedProgram(t *testing.T) {
	for _, reuse := range []bool{true, false} {
		t.Run(fmt.Sprintf("reuse=%v", reuse), func(t *testing.T) {
			sb := nativeSandbox(t, SandboxOptions{OneShot: !reuse})
			setup := `mkdir -p bin && printf '#!/bin/sh\ntouch ran\n' > bin/git && chmod +x bin/git`
			if out, err := sb.Exec(context.Background(), setup, ExecOptions{}); err != nil || !out.OK() {
				t.Fatalf("setup: %+v %v", out, err)
			}
			rules := &ExecRules{Deny: []string{"git push**"}}
			out, err := sb.Exec(context.Background(), `PATH="$PWD/bin:$PATH"; x="git push"; $x`,
				ExecOptions{ExecRules: rules})
			if err != nil {
				t.Fatal(err)
			}
			want := ExecStop{Decision: "deny", Rule: "bash(git push**)", Command: "git push"}
			if out.ExitCode != 126 || out.ExecStopped == nil || *out.ExecStopped != want {
				t.Fatalf("output %+v, stopped %+v", out, out.ExecStopped)
			}
			check, _ := sb.Exec(context.Background(), "test -e ran && echo ran || echo never",
				ExecOptions{})
			if check.Stdout != "never\n" || check.ExecStopped != nil {
				t.Fatalf("the denied program ran: %+v", check)
			}
			approved := &ExecRules{Ask: []string{"git push**"}, Approved: []string{"git push"}}
			out, err = sb.Exec(context.Background(), `PATH="$PWD/bin:$PATH" bash -c "git push"`,
				ExecOptions{ExecRules: approved})
			if err != nil || out.ExitCode != 0 || out.ExecStopped != nil {
				t.Fatalf("the approved push: %+v %v", out, err)
			}
		})
	}
}

// failingReader returns some bytes, then an error.
type failingReader struct{ sent bool }

var errReaderBroke = errors.New("the reader broke")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.sent {
		return 0, errReaderBroke
	}
	f.sent = true
	return copy(p, "partial"), nil
}

func TestStdinReaderErrorRunsNothing(t *testing.T) {
	sb := nativeSandbox(t, SandboxOptions{})
	ws := sb.Workspace()
	out, err := sb.Exec(context.Background(), "cat > ran", ExecOptions{Stdin: &failingReader{}})
	if !errors.Is(err, errReaderBroke) || out.Ran || out.OK() {
		t.Fatalf("got %+v, %v; want the reader's error and no run", out, err)
	}
	if _, serr := os.Stat(filepath.Join(ws, "ran")); !os.IsNotExist(serr) {
		t.Fatalf("the command ran: %v", serr)
	}
	// an empty reader is end of file at once, not /dev/null's absence of a pipe
	out, err = sb.Exec(context.Background(), "wc -c", ExecOptions{Stdin: strings.NewReader("")})
	if err != nil || out.Stdout != "0\n" {
		t.Fatalf("empty stdin: %+v, %v", out, err)
	}
}
