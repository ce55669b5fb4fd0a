//go:build linux && cgo

package codeward

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// What the test files that run commands in a real sandbox share (sandbox,
// process, outlived, network grant and the shared vectors' tests): the native
// sandbox over a fresh workspace, closed when the test ends, and the host's
// view of the processes a sandbox runs (its pids are visible here).

// nativeSandbox selects a sandbox over a fresh temporary directory and fails
// the test unless it is the native (bwrap) one.
func nativeSandbox(t *testing.T, opts SandboxOptions) Sandbox {
	t.Helper()
	sb, err := SelectSandbox(context.Background(), t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if sb.Backend() != "bwrap" {
		t.Fatalf("the native sandbox cannot run here: %v", sb)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

// newMarker is a word no other process on the machine carries in its command line.
func newMarker(t *testing.T) string {
	return fmt.Sprintf("cwgo%d%d", os.Getpid(), time.Now().UnixNano())
}

// waitNoSurvivors fails the test if a process carrying marker is still there after 5 s.
func waitNoSurvivors(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(survivors(marker)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := survivors(marker); len(left) > 0 {
		t.Fatalf("survivors: %v", left)
	}
}

// survivors lists the processes whose command line holds marker.
func survivors(marker string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(cmdline, []byte(marker)) {
			found = append(found, e.Name()+": "+string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		}
	}
	return found
}
