//go:build linux && cgo

package codeward

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The shared owned-process signal vectors (tests/vectors/owned_signals.json;
// its description states the schema), as pytest
// (tests/mcp/test_signal_vectors.py) and node --test run them.

type signalVectors struct {
	Signals []struct {
		Name   string          `json:"name"`
		Signal any             `json:"signal"`
		Expect json.RawMessage `json:"expect"`
		Go     json.RawMessage `json:"go"`
	} `json:"signals"`
	Behaviour []struct {
		Name        string `json:"name"`
		Script      string `json:"script"`
		Stop        string `json:"stop"`
		KillGraceMs int64  `json:"kill_grace_ms"`
		Running     int    `json:"running"`
		Expect      struct {
			Status      int     `json:"status"`
			Marker      *string `json:"marker"`
			BeforeGrace bool    `json:"before_grace"`
			Left        int     `json:"left"`
		} `json:"expect"`
	} `json:"behaviour"`
}

type signalExpect struct {
	Number  *int   `json:"number"`
	Refused string `json:"refused"`
}

// namedSignal is a vector's signal name: an os.Signal that is no syscall.Signal.
type namedSignal string

func (s namedSignal) String() string { return string(s) }
func (namedSignal) Signal()          {}

// stopSignals are the names the behaviour cases stop with.
var stopSignals = map[string]syscall.Signal{
	"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT, "SIGKILL": syscall.SIGKILL,
	"SIGHUP": syscall.SIGHUP, "SIGUSR1": syscall.SIGUSR1,
}

func readSignalVectors(t *testing.T) signalVectors {
	var v signalVectors
	if err := json.Unmarshal(readVectors(t, filepath.Join(vectorsDir(), "owned_signals.json")), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSignalVectorsWhatEachSignalIs(t *testing.T) {
	v := readSignalVectors(t)
	sb := nativeSandbox(t, SandboxOptions{})
	// an ended program: an accepted signal sends nothing and a stop returns its status
	p, err := StartProcess(context.Background(), sb, "/bin/sh", ProcessOptions{Args: []string{"-c", "exit 5"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if code, err := p.Wait(context.Background()); err != nil || code != 5 {
		t.Fatalf("Wait: %d, %v", code, err)
	}
	for _, c := range v.Signals {
		raw := c.Expect
		if c.Go != nil {
			raw = c.Go
		}
		if string(raw) == `"not_representable"` {
			continue
		}
		var want signalExpect
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		var sig os.Signal
		switch s := c.Signal.(type) {
		case float64:
			sig = syscall.Signal(int(s))
		case string:
			sig = namedSignal(s)
		default:
			t.Fatalf("%s: a %T signal must be not_representable in Go", c.Name, s)
		}
		sendErr := p.Signal(sig)
		code, stopErr := p.StopWith(sig)
		switch {
		case want.Refused == "argument":
			var argErr *SandboxArgumentError
			for _, err := range []error{sendErr, stopErr} {
				if !errors.As(err, &argErr) || !errors.Is(err, ErrInvalidArgument) {
					t.Errorf("%s (%v): %v, not refused as an argument", c.Name, sig, err)
				}
			}
		case want.Refused != "":
			t.Fatalf("%s: no Go error for the kind %q", c.Name, want.Refused)
		default:
			if n, _ := sig.(syscall.Signal); want.Number == nil || int(n) != *want.Number {
				t.Errorf("%s: %v is not signal %v", c.Name, sig, want.Number)
			}
			if !errors.Is(sendErr, os.ErrProcessDone) || stopErr != nil || code != 5 {
				t.Errorf("%s (%v): Signal %v, StopWith %d, %v", c.Name, sig, sendErr, code, stopErr)
			}
		}
	}
}

func TestSignalVectorsHowAStopEndsAProgram(t *testing.T) {
	for _, c := range readSignalVectors(t).Behaviour {
		t.Run(c.Name, func(t *testing.T) {
			sb := nativeSandbox(t, SandboxOptions{})
			script := filepath.Join(sb.Workspace(), c.Name+".sh")
			if err := os.WriteFile(script, []byte(c.Script), 0o755); err != nil {
				t.Fatal(err)
			}
			grace := time.Duration(c.KillGraceMs) * time.Millisecond
			p, err := StartProcess(context.Background(), sb, "/bin/sh",
				ProcessOptions{Args: []string{script}, KillGrace: grace})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if line, err := bufio.NewReader(p.Stdout).ReadString('\n'); err != nil || line != "ready\n" {
				t.Fatalf("read %q, %v", line, err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for len(survivors(script)) < c.Running && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if n := len(survivors(script)); n < c.Running {
				t.Fatalf("%d processes run, not %d", n, c.Running)
			}
			sig, ok := stopSignals[c.Stop]
			if !ok {
				t.Fatalf("no syscall signal for %q", c.Stop)
			}
			start := time.Now()
			code, err := p.StopWith(sig)
			elapsed := time.Since(start)
			if err != nil || code != c.Expect.Status {
				t.Fatalf("StopWith(%v): %d, %v", sig, code, err)
			}
			if c.Expect.BeforeGrace && elapsed >= grace {
				t.Fatal("the stop waited the grace")
			}
			if !c.Expect.BeforeGrace && elapsed < grace-50*time.Millisecond {
				t.Fatalf("killed before the grace (%v)", elapsed)
			}
			b, err := os.ReadFile(script + ".marker")
			if c.Expect.Marker == nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a marker was written: %q, %v", b, err)
			}
			if c.Expect.Marker != nil && (err != nil || string(b) != *c.Expect.Marker) {
				t.Fatalf("the marker: %q, %v", b, err)
			}
			if left := survivors(script); len(left) != c.Expect.Left {
				t.Fatalf("left once the stop returned: %v", left)
			}
		})
	}
}
