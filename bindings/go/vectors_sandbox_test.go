//go:build linux && cgo

package codeward

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The shared sandbox vectors (tests/vectors/sandbox.json; its description
// states the schema), run against a real sandbox, as pytest and node --test
// run them.

type sandboxVectors struct {
	Schema      int           `json:"schema"`
	Description string        `json:"description"`
	MinCases    int           `json:"min_cases"`
	Cases       []sandboxCase `json:"cases"`
}

type sandboxCase struct {
	Name         string            `json:"name"`
	OutsideFiles map[string]string `json:"outside_files"`
	Files        orderedFiles      `json:"files"`
	HostEnv      map[string]string `json:"host_env"`
	Native       string            `json:"native"`
	Workspace    string            `json:"workspace"`
	Select       struct {
		AllowProcessHostSandbox bool  `json:"allow_process_host_sandbox"`
		Strict                  bool  `json:"strict"`
		Reuse                   *bool `json:"reuse"`
		NoLandlock              bool  `json:"no_landlock"`
		Limits                  struct {
			MemoryMaxBytes     uint64 `json:"memory_max_bytes"`
			MaxProcesses       uint64 `json:"max_processes"`
			TmpfsMaxBytes      uint64 `json:"tmpfs_max_bytes"`
			InotifyWatchBudget uint64 `json:"inotify_watch_budget"`
			IdleStopMs         uint64 `json:"idle_stop_ms"`
		} `json:"limits"`
	} `json:"select"`
	Exec struct {
		Command        string            `json:"command"`
		TimeoutMs      uint64            `json:"timeout_ms"`
		KillGraceMs    uint64            `json:"kill_grace_ms"`
		MaxOutputBytes uint64            `json:"max_output_bytes"`
		Env            map[string]string `json:"env"`
		Stream         bool              `json:"stream"`
		Cwd            string            `json:"cwd"`
		ExecRules      *struct {
			Deny     []string `json:"deny"`
			Ask      []string `json:"ask"`
			Approved []string `json:"approved"`
		} `json:"exec_rules"`
		Stdin       *string `json:"stdin"`
		StdinRepeat int     `json:"stdin_repeat"`
	} `json:"exec"`
	Expect sandboxExpect `json:"expect"`
}

type sandboxExpect struct {
	Error *struct {
		Kind     string   `json:"kind"`
		At       string   `json:"at"`
		Contains []string `json:"contains"`
	} `json:"error"`
	ExitCode            *int               `json:"exit_code"`
	TimedOut            *bool              `json:"timed_out"`
	Truncated           *bool              `json:"truncated"`
	TotalBytes          *uint64            `json:"total_bytes"`
	Sandboxed           *bool              `json:"sandboxed"`
	Backend             *string            `json:"backend"`
	OOMKilled           *bool              `json:"oom_killed"`
	SetupErrorContains  *string            `json:"setup_error_contains"`
	Stdout              *string            `json:"stdout"`
	Stderr              *string            `json:"stderr"`
	StdoutContains      []string           `json:"stdout_contains"`
	StderrContains      []string           `json:"stderr_contains"`
	StdoutLacks         []string           `json:"stdout_lacks"`
	StdoutStarts        *string            `json:"stdout_starts"`
	StdoutEnds          *string            `json:"stdout_ends"`
	StdoutMaxBytes      *int               `json:"stdout_max_bytes"`
	StderrMaxBytes      *int               `json:"stderr_max_bytes"`
	Files               map[string]*string `json:"files"`
	NoSurvivors         bool               `json:"no_survivors"`
	NeutralizedContains *string            `json:"neutralized_contains"`
	StreamedStdoutBytes *int               `json:"streamed_stdout_bytes"`
	StreamedStdoutStart *string            `json:"streamed_stdout_starts"`
	StreamedStderr      *string            `json:"streamed_stderr"`
	// ExecStopped: set (to null or a stop) when the case names it
	ExecStopped json.RawMessage `json:"exec_stopped"`
}

// orderedFiles keeps the order of the "files" object: a hard link comes
// after the file it links to.
type orderedFiles []struct {
	rel  string
	spec json.RawMessage
}

func (o *orderedFiles) UnmarshalJSON(data []byte) error {
	d := json.NewDecoder(bytes.NewReader(data))
	if _, err := d.Token(); err != nil { // {
		return err
	}
	for d.More() {
		key, err := d.Token()
		if err != nil {
			return err
		}
		var spec json.RawMessage
		if err := d.Decode(&spec); err != nil {
			return err
		}
		*o = append(*o, struct {
			rel  string
			spec json.RawMessage
		}{key.(string), spec})
	}
	return nil
}

func loadSandboxVectors(t *testing.T) sandboxVectors {
	t.Helper()
	data := readVectors(t, filepath.Join(vectorsDir(), "sandbox.json"))
	var v sandboxVectors
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields() // a key this runner does not know is a schema change
	if err := d.Decode(&v); err != nil {
		t.Fatalf("sandbox.json: %v", err)
	}
	if v.Schema != 1 || len(v.Cases) < v.MinCases || v.MinCases < 40 {
		t.Fatalf("sandbox.json: schema %d, %d cases (at least %d)", v.Schema, len(v.Cases), v.MinCases)
	}
	return v
}

// withoutBwrap takes bubblewrap away from the locator and forgets the
// probe's verdict, for the case only.
func withoutBwrap(t *testing.T) {
	savedSystem, savedLook := systemBwrap, lookPath
	probeMu.Lock()
	savedCache := probeCache
	probeCache = map[string]*probeRun{}
	probeMu.Unlock()
	systemBwrap = nil
	lookPath = func(name string) (string, error) {
		if name == "bwrap" {
			return "", exec.ErrNotFound
		}
		return savedLook(name)
	}
	t.Cleanup(func() {
		systemBwrap, lookPath = savedSystem, savedLook
		probeMu.Lock()
		probeCache = savedCache
		probeMu.Unlock()
	})
}

// forceRemove removes a tree whose directories a case made read-only.
func forceRemove(root string) {
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(root)
}

func TestSandboxVectors(t *testing.T) {
	if cause, _ := nativeProbe(context.Background(), os.TempDir()); cause != "" {
		t.Fatalf("the native sandbox cannot run on this machine: %s", cause) // fail, not skip
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	port := fmt.Sprint(listener.Addr().(*net.TCPAddr).Port)
	for _, c := range loadSandboxVectors(t).Cases {
		t.Run(c.Name, func(t *testing.T) { runSandboxCase(t, c, port) })
	}
}

func runSandboxCase(t *testing.T, c sandboxCase, port string) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { forceRemove(base) })
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var mark [6]byte
	rand.Read(mark[:])
	marker := "cwmark" + hex.EncodeToString(mark[:])
	sub := strings.NewReplacer("{ws}", ws, "{outside}", outside, "{marker}", marker, "{port}", port).Replace

	for rel, content := range c.OutsideFiles {
		path := filepath.Join(outside, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(sub(content)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range c.Files {
		makeFile(t, ws, f.rel, f.spec, outside, sub)
	}
	if _, set := c.HostEnv[ProcessHostEnv]; !set {
		t.Setenv(ProcessHostEnv, "")
		os.Unsetenv(ProcessHostEnv)
	}
	for k, v := range c.HostEnv {
		t.Setenv(k, v)
	}
	if c.Native == "unavailable" {
		withoutBwrap(t)
	}
	e := c.Expect
	workspace := ws
	if c.Workspace != "" {
		workspace = sub(c.Workspace)
	}
	opts := SandboxOptions{
		AllowProcessHostSandbox: c.Select.AllowProcessHostSandbox,
		Strict:                  c.Select.Strict,
		OneShot:                 c.Select.Reuse != nil && !*c.Select.Reuse,
		NoLandlock:              c.Select.NoLandlock,
		Limits: Limits{
			MemoryMaxBytes:     c.Select.Limits.MemoryMaxBytes,
			MaxProcesses:       c.Select.Limits.MaxProcesses,
			TmpfsMaxBytes:      c.Select.Limits.TmpfsMaxBytes,
			InotifyWatchBudget: c.Select.Limits.InotifyWatchBudget,
			IdleStop:           msDuration(c.Select.Limits.IdleStopMs),
		},
	}
	sb, err := SelectSandbox(context.Background(), workspace, opts)
	var out CommandOutput
	if err == nil {
		if e.Backend != nil && sb.Backend() != *e.Backend {
			t.Errorf("backend %q, want %q", sb.Backend(), *e.Backend)
		}
		if e.Sandboxed != nil && sb.Sandboxed() != *e.Sandboxed {
			t.Errorf("sandboxed %v, want %v", sb.Sandboxed(), *e.Sandboxed)
		}
		env := map[string]string{}
		for k, v := range c.Exec.Env {
			env[sub(k)] = sub(v)
		}
		var rules *ExecRules
		if r := c.Exec.ExecRules; r != nil { // the exec check's lists, placeholders filled
			subs := func(list []string) []string {
				out := make([]string, len(list))
				for i, v := range list {
					out[i] = sub(v)
				}
				return out
			}
			rules = &ExecRules{Deny: subs(r.Deny), Ask: subs(r.Ask), Approved: subs(r.Approved)}
		}
		opts := ExecOptions{
			Timeout:        msDuration(c.Exec.TimeoutMs),
			KillGrace:      msDuration(c.Exec.KillGraceMs),
			MaxOutputBytes: c.Exec.MaxOutputBytes,
			Env:            env,
			Dir:            sub(c.Exec.Cwd),
			ExecRules:      rules,
		}
		if c.Exec.Stdin != nil {
			repeat := c.Exec.StdinRepeat
			if repeat == 0 {
				repeat = 1
			}
			opts.Stdin = strings.NewReader(strings.Repeat(sub(*c.Exec.Stdin), repeat))
		}
		var streamed [2]bytes.Buffer
		if c.Exec.Stream {
			opts.Stdout, opts.Stderr = &streamed[0], &streamed[1]
		}
		out, err = sb.Exec(context.Background(), sub(c.Exec.Command), opts)
		sb.Close()
		if c.Exec.Stream && err == nil {
			if n := e.StreamedStdoutBytes; n != nil && streamed[0].Len() != *n {
				t.Errorf("streamed %d bytes of stdout, want %d", streamed[0].Len(), *n)
			}
			if p := e.StreamedStdoutStart; p != nil && !strings.HasPrefix(streamed[0].String(), sub(*p)) {
				t.Errorf("streamed stdout %.40q does not start with %q", streamed[0].String(), sub(*p))
			}
			if want := e.StreamedStderr; want != nil && streamed[1].String() != sub(*want) {
				t.Errorf("streamed stderr %q, want %q", streamed[1].String(), sub(*want))
			}
		}
	} else if e.Error == nil || e.Error.At != "select" {
		t.Fatalf("SelectSandbox: %v", err)
	}
	if e.Error != nil {
		checkVectorError(t, err, e, sub)
		if out.Ran || out.OK() { // fail closed: an error's output never says the command ran
			t.Errorf("with error %v the output says ran=%v ok=%v", err, out.Ran, out.OK())
		}
	} else if err != nil {
		t.Fatalf("Exec: %v", err)
	} else {
		checkVectorOutput(t, out, e, sub)
	}
	if e.NoSurvivors {
		deadline := time.Now().Add(5 * time.Second)
		for len(survivors(marker)) > 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if left := survivors(marker); len(left) > 0 {
			t.Errorf("survivors: %v", left)
		}
	}
	for rel, want := range e.Files {
		path := sub(rel)
		if !filepath.IsAbs(path) {
			path = filepath.Join(ws, path)
		}
		st, err := os.Lstat(path)
		switch {
		case want == nil && err == nil:
			t.Errorf("%s exists", path)
		case want == nil:
		case err != nil || !st.Mode().IsRegular():
			t.Errorf("%s: not a regular file (%v)", path, err)
		default:
			if got, _ := os.ReadFile(path); string(got) != sub(*want) {
				t.Errorf("%s holds %q, want %q", path, got, sub(*want))
			}
		}
	}
}

func makeFile(t *testing.T, ws, rel string, raw json.RawMessage, outside string, sub func(string) string) {
	t.Helper()
	path := filepath.Join(ws, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var content string
	if json.Unmarshal(raw, &content) == nil {
		if err := os.WriteFile(path, []byte(sub(content)), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	var spec struct {
		Dir             bool    `json:"dir"`
		Symlink         *string `json:"symlink"`
		Hardlink        *string `json:"hardlink"`
		HardlinkOutside *string `json:"hardlink_outside"`
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	var err error
	switch {
	case spec.Dir:
		err = os.Mkdir(path, 0o755)
	case spec.Symlink != nil:
		err = os.Symlink(sub(*spec.Symlink), path)
	case spec.Hardlink != nil:
		err = os.Link(filepath.Join(ws, *spec.Hardlink), path)
	case spec.HardlinkOutside != nil:
		target := filepath.Join(outside, "linked-"+filepath.Base(path))
		if err = os.WriteFile(target, []byte(sub(*spec.HardlinkOutside)), 0o644); err == nil {
			err = os.Link(target, path)
		}
	default:
		t.Fatalf("unknown file spec %s", raw)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// msDuration is a vector's milliseconds as a Duration; the C ABI's
// A3S_NO_LIMIT (never) is a negative one.
func msDuration(ms uint64) time.Duration {
	if ms == Unlimited {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

func checkVectorError(t *testing.T, err error, e sandboxExpect, sub func(string) string) {
	t.Helper()
	var arg *SandboxArgumentError
	switch e.Error.Kind {
	case "argument":
		if !errors.As(err, &arg) {
			t.Fatalf("got %v (%T), want a *SandboxArgumentError", err, err)
		}
	case "sandbox_unavailable":
		if !errors.Is(err, ErrSandboxUnavailable) {
			t.Fatalf("got %v (%T), want ErrSandboxUnavailable", err, err)
		}
	default:
		t.Fatalf("unknown error kind %q", e.Error.Kind)
	}
	for _, part := range e.Error.Contains {
		if !strings.Contains(err.Error(), sub(part)) {
			t.Errorf("error %q lacks %q", err, sub(part))
		}
	}
}

func checkVectorOutput(t *testing.T, out CommandOutput, e sandboxExpect, sub func(string) string) {
	t.Helper()
	fail := func(what string, got, want any) { t.Errorf("%s: got %#v, want %#v\n%+v", what, got, want, out) }
	if e.ExitCode != nil && out.ExitCode != *e.ExitCode {
		fail("exit code", out.ExitCode, *e.ExitCode)
	}
	for _, b := range []struct {
		name      string
		got, want *bool
	}{
		{"timed out", &out.TimedOut, e.TimedOut}, {"truncated", &out.Truncated, e.Truncated},
		{"sandboxed", &out.Sandboxed, e.Sandboxed}, {"oom killed", &out.OOMKilled, e.OOMKilled},
	} {
		if b.want != nil && *b.got != *b.want {
			fail(b.name, *b.got, *b.want)
		}
	}
	if len(e.ExecStopped) > 0 {
		var want *ExecStop
		if err := json.Unmarshal(e.ExecStopped, &want); err != nil {
			t.Fatalf("exec_stopped: %v", err)
		}
		if want != nil {
			want.Rule, want.Command = sub(want.Rule), sub(want.Command)
		}
		if (want == nil) != (out.ExecStopped == nil) || (want != nil && *want != *out.ExecStopped) {
			fail("exec stopped", out.ExecStopped, want)
		}
	}
	if e.NeutralizedContains != nil {
		found := false
		for _, line := range out.Neutralized {
			found = found || strings.Contains(line, sub(*e.NeutralizedContains))
		}
		if !found {
			fail("neutralized", out.Neutralized, *e.NeutralizedContains)
		}
	}
	if e.TotalBytes != nil && out.TotalBytes != *e.TotalBytes {
		fail("total bytes", out.TotalBytes, *e.TotalBytes)
	}
	if e.Backend != nil && out.Backend != *e.Backend {
		fail("backend", out.Backend, *e.Backend)
	}
	if e.SetupErrorContains != nil {
		if out.SetupError == "" || !strings.Contains(out.SetupError, sub(*e.SetupErrorContains)) {
			fail("setup error", out.SetupError, *e.SetupErrorContains)
		}
	} else if out.SetupError != "" {
		fail("setup error", out.SetupError, "")
	}
	if e.Stdout != nil && out.Stdout != sub(*e.Stdout) {
		fail("stdout", out.Stdout, sub(*e.Stdout))
	}
	if e.Stderr != nil && out.Stderr != sub(*e.Stderr) {
		fail("stderr", out.Stderr, sub(*e.Stderr))
	}
	for _, part := range e.StdoutContains {
		if !strings.Contains(out.Stdout, sub(part)) {
			fail("stdout contains", out.Stdout, sub(part))
		}
	}
	for _, part := range e.StderrContains {
		if !strings.Contains(out.Stderr, sub(part)) {
			fail("stderr contains", out.Stderr, sub(part))
		}
	}
	for _, part := range e.StdoutLacks {
		if strings.Contains(out.Stdout, sub(part)) {
			fail("stdout lacks", out.Stdout, sub(part))
		}
	}
	if e.StdoutStarts != nil && !strings.HasPrefix(out.Stdout, sub(*e.StdoutStarts)) {
		fail("stdout starts", out.Stdout, sub(*e.StdoutStarts))
	}
	if e.StdoutEnds != nil && !strings.HasSuffix(out.Stdout, sub(*e.StdoutEnds)) {
		fail("stdout ends", out.Stdout, sub(*e.StdoutEnds))
	}
	if e.StdoutMaxBytes != nil && len(out.Stdout) > *e.StdoutMaxBytes {
		fail("stdout bytes", len(out.Stdout), *e.StdoutMaxBytes)
	}
	if e.StderrMaxBytes != nil && len(out.Stderr) > *e.StderrMaxBytes {
		fail("stderr bytes", len(out.Stderr), *e.StderrMaxBytes)
	}
}
