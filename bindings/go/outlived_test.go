//go:build linux && cgo

package codeward

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The timeout bounds when the result comes, also with a process in D state
// (issue 22; the C core's exec, as Python's tests/sandbox/test_proc_outlived.py
// measures it): a process frozen by the cgroup v1 freezer does not die of
// SIGKILL until thawed, and the result comes without it, saying Outlived.

const freezerRoot = "/sys/fs/cgroup/freezer"

// freezeWhenStarted moves the processes whose command line holds marker (and
// "time.sleep", so not bubblewrap or the init naming it) into group and
// freezes it; it returns the pids it froze.
func freezeWhenStarted(group, marker string) []int {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var moved []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			argv, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err != nil || !bytes.Contains(argv, []byte(marker)) {
				continue
			}
			// the command itself (python3, maybe by its full path), not bubblewrap,
			// the init or bash naming it
			if prog, _, _ := bytes.Cut(argv, []byte{0}); !strings.HasPrefix(filepath.Base(string(prog)), "python") {
				continue
			}
			if os.WriteFile(filepath.Join(group, "cgroup.procs"), []byte(e.Name()), 0) == nil {
				moved = append(moved, pid)
			}
		}
		if len(moved) > 0 {
			os.WriteFile(filepath.Join(group, "freezer.state"), []byte("FROZEN"), 0)
			return moved
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

func TestATimeoutIsBoundedWithAProcessInDState(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root and the cgroup v1 freezer (its frozen tasks ignore SIGKILL)")
	}
	if _, err := os.Stat(filepath.Join(freezerRoot, "cgroup.procs")); err != nil {
		t.Skip("needs the cgroup v1 freezer (its frozen tasks ignore SIGKILL)")
	}
	// not codeward-*: a handle's first start sweeps those
	group := filepath.Join(freezerRoot, fmt.Sprintf("outlived-go-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(group, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.WriteFile(filepath.Join(group, "freezer.state"), []byte("THAWED"), 0)
		for i := 0; i < 200; i++ { // the thawed tasks die of their pending SIGKILL
			if procs, _ := os.ReadFile(filepath.Join(group, "cgroup.procs")); len(bytes.TrimSpace(procs)) == 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		os.Remove(group)
	})
	sb := nativeSandbox(t, SandboxOptions{})
	if _, err := sb.Exec(context.Background(), "true", ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	m := newMarker(t)
	frozen := make(chan []int, 1)
	go func() { frozen <- freezeWhenStarted(group, m) }()
	start := time.Now()
	out, err := sb.Exec(context.Background(),
		"python3 -c 'import time; time.sleep(2.5); open(\"late.txt\", \"w\").write(\""+m+"\")'",
		ExecOptions{Timeout: 2 * time.Second}) // the default grace
	elapsed := time.Since(start)
	if pids := <-frozen; len(pids) == 0 {
		t.Fatal("nothing was frozen")
	}
	if err != nil || !out.TimedOut || out.ExitCode != 124 || !out.Outlived {
		t.Fatalf("err %v, output %+v", err, out)
	}
	// timeout + grace (0.5 s) + the init's reap (0.25 s), with generous slack
	if elapsed > 2750*time.Millisecond+2500*time.Millisecond {
		t.Fatalf("the result took %v", elapsed)
	}
	t.Logf("2 s timeout, a frozen process: the result came in %v", elapsed)
	os.WriteFile(filepath.Join(group, "freezer.state"), []byte("THAWED"), 0)
	waitNoSurvivors(t, m)
	time.Sleep(3 * time.Second) // past the moment it would have written
	if _, err := os.Stat(filepath.Join(sb.Workspace(), "late.txt")); err == nil {
		t.Fatal("the frozen process wrote after the result")
	}
}
