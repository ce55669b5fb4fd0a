//go:build cgo

package codeward

import (
	"errors"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// The expectations below were produced by the Python reference
// (codeward.policy.PermissionPolicy) for the same rules and calls.

func newTestPolicy(t *testing.T) *PermissionPolicy {
	t.Helper()
	p, err := NewPermissionPolicy(PolicyOptions{
		Deny:            []string{"Bash(rm -rf:*)", "Read(**/.env)", "mcp__evil", "Write"},
		Allow:           []string{"Bash(git status)", "Bash(git:*)", "Read", "Grep", "mcp__*__read*"},
		Ask:             []string{"Bash(git push:*)", "Glob(*.go)"},
		DefaultDecision: Deny,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestPolicyCheckAndMatchingRules(t *testing.T) {
	p := newTestPolicy(t)
	none := []string{}
	tests := []struct {
		tool     string
		args     map[string]any
		want     Decision
		matching MatchingRules
	}{
		{"Bash", map[string]any{"command": "rm -rf /"}, Deny, MatchingRules{[]string{"Bash(rm -rf:*)"}, none, none}},
		{"bash", map[string]any{"command": "git push origin"}, Allow,
			MatchingRules{none, []string{"Bash(git:*)"}, []string{"Bash(git push:*)"}}},
		{"Bash", map[string]any{"command": "git status"}, Allow,
			MatchingRules{none, []string{"Bash(git status)", "Bash(git:*)"}, none}},
		{"Read", map[string]any{"file_path": "a/b/.env"}, Deny,
			MatchingRules{[]string{"Read(**/.env)"}, []string{"Read"}, none}},
		{"Read", map[string]any{"file_path": "a/b/c"}, Allow, MatchingRules{none, []string{"Read"}, none}},
		{"Write", map[string]any{"file_path": "x"}, Deny, MatchingRules{[]string{"Write"}, none, none}},
		{"mcp__evil__x", nil, Deny, MatchingRules{[]string{"mcp__evil"}, none, none}},
		{"mcp__good__readfile", nil, Allow, MatchingRules{none, []string{"mcp__*__read*"}, none}},
		{"grep", map[string]any{"query": "x"}, Allow, MatchingRules{none, []string{"Grep"}, none}},
		{"search", map[string]any{"mode": "glob", "query": "a.go"}, Deny, MatchingRules{none, none, none}},
		{"search", map[string]any{"mode": "glob", "query": "x", "path": "a.go"}, Ask,
			MatchingRules{none, none, []string{"Glob(*.go)"}}},
		{"Edit", map[string]any{"file_path": "x"}, Deny, MatchingRules{none, none, none}},
	}
	for _, tt := range tests {
		got, err := p.Check(tt.tool, tt.args)
		if err != nil || got != tt.want {
			t.Errorf("Check(%q, %v) = %q, %v; want %q", tt.tool, tt.args, got, err, tt.want)
		}
		m, err := p.MatchingRules(tt.tool, tt.args)
		if err != nil || !reflect.DeepEqual(m, tt.matching) {
			t.Errorf("MatchingRules(%q, %v) = %v, %v; want %v", tt.tool, tt.args, m, err, tt.matching)
		}
	}
}

func TestPolicyExposesToModel(t *testing.T) {
	p := newTestPolicy(t)
	want := map[string]bool{
		"Bash": true, "Write": false, "write": false, "mcp__evil": false, "mcp__evil__x": false,
		"mcp__evilx": false, "mcp__good__readfile": true, "mcp__good__write": false, "Grep": true,
		"glob": true, "search": true, "Edit": false, "Read": true,
	}
	for tool, w := range want {
		if got := p.ExposesToModel(tool); got != w {
			t.Errorf("ExposesToModel(%q) = %v; want %v", tool, got, w)
		}
	}

	q, err := NewPermissionPolicy(PolicyOptions{Deny: []string{"*"}, Allow: []string{"Read"}})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if q.ExposesToModel("Read") || q.ExposesToModel("Bash") {
		t.Error("deny * must hide every tool")
	}
	if d, _ := q.Check("Read", nil); d != Deny {
		t.Errorf("deny * Check(Read) = %q", d)
	}

	// A rewritten search-mode deny is not a whole-tool deny (as in Python).
	r, err := NewPermissionPolicy(PolicyOptions{Deny: []string{"Bash(*)", "Grep"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.ExposesToModel("bash") || !r.ExposesToModel("grep") {
		t.Error("Bash(*) must hide bash; Grep must not hide search")
	}
}

func TestPolicyRules(t *testing.T) {
	p := newTestPolicy(t)
	rules := p.Rules()
	want := []struct {
		list, raw, tool, pattern string
		flags                    RuleFlags
	}{
		{"deny", "Bash(rm -rf:*)", "bash", "rm -rf:*", RulePrefix},
		{"deny", "Read(**/.env)", "read", "**/.env", 0},
		{"deny", "mcp__evil", "mcp__evil", "*", RuleAnyArgs | RuleMCPServer},
		{"deny", "Write", "write", "*", RuleAnyArgs},
		{"allow", "Bash(git status)", "bash", "git status", 0},
		{"allow", "Bash(git:*)", "bash", "git:*", RulePrefix},
		{"allow", "Read", "read", "*", RuleAnyArgs},
		{"allow", "Grep", "search", "grep **", RuleRewritten},
		{"allow", "mcp__*__read*", "mcp__*__read*", "*", RuleAnyArgs | RuleToolGlob},
		{"ask", "Bash(git push:*)", "bash", "git push:*", RulePrefix},
		{"ask", "Glob(*.go)", "search", "glob *.go", RuleRewritten},
	}
	if len(rules) != len(want) {
		t.Fatalf("%d rules; want %d", len(rules), len(want))
	}
	for i, w := range want {
		r := rules[i]
		if r.Index != i || r.List != w.list || r.Raw != w.raw || r.Tool != w.tool ||
			r.Pattern != w.pattern || r.Flags != w.flags {
			t.Errorf("rule %d = %+v; want %+v", i, r, w)
		}
	}
}

func TestPolicyZeroValueOptions(t *testing.T) {
	p, err := NewPermissionPolicy(PolicyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !p.Enabled() || p.DefaultDecision() != Ask {
		t.Errorf("zero options: enabled=%v default=%q; want true, ask", p.Enabled(), p.DefaultDecision())
	}
	for _, tool := range []string{"Bash", "read", "anything"} {
		if d, err := p.Check(tool, nil); err != nil || d != Ask {
			t.Errorf("Check(%q) = %q, %v; want ask", tool, d, err)
		}
		if !p.ExposesToModel(tool) {
			t.Errorf("ExposesToModel(%q) = false", tool)
		}
	}
	if len(p.Rules()) != 0 {
		t.Error("zero options have rules")
	}
	m, err := p.MatchingRules("Bash", nil)
	if err != nil || m.Deny == nil || len(m.Deny)+len(m.Allow)+len(m.Ask) != 0 {
		t.Errorf("MatchingRules = %#v, %v", m, err)
	}
}

func TestPolicyDisabled(t *testing.T) {
	p, err := NewPermissionPolicy(PolicyOptions{Deny: []string{"Bash"}, DefaultDecision: Deny, Disabled: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if d, err := p.Check("Bash", map[string]any{"command": "rm -rf /"}); err != nil || d != Allow {
		t.Errorf("disabled Check = %q, %v; want allow", d, err)
	}
	// Disabled policies decide before looking at the arguments.
	if d, err := p.Check("x", map[string]any{"bad": struct{}{}}); err != nil || d != Allow {
		t.Errorf("disabled Check with bad args = %q, %v; want allow", d, err)
	}
	if !p.ExposesToModel("Bash") {
		t.Error("disabled policy hides Bash")
	}
	// MatchingRules reports what the rules match, enabled or not.
	if m, err := p.MatchingRules("Bash", nil); err != nil || !reflect.DeepEqual(m.Deny, []string{"Bash"}) {
		t.Errorf("disabled MatchingRules = %v, %v", m, err)
	}
	q, err := NewPermissionPolicy(PolicyOptions{Deny: []string{"Bash"}, Disabled: false})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if d, _ := q.Check("Bash", nil); d != Deny {
		t.Errorf("enabled Check = %q; want deny", d)
	}
}

func TestPolicyErrors(t *testing.T) {
	tests := []struct {
		opts     PolicyOptions
		list     string
		rule     string
		contains string
	}{
		{PolicyOptions{Deny: []string{"Bash("}}, "deny", "Bash(", "missing ')'"},
		{PolicyOptions{Allow: []string{"Read", "Bash (x)"}}, "allow", "Bash (x)", "space before '('"},
		{PolicyOptions{Ask: []string{""}}, "ask", "", "empty rule"},
		{PolicyOptions{Deny: []string{"Bash()"}}, "deny", "Bash()", "empty pattern"},
		{PolicyOptions{Deny: []string{"Bash(x)y"}}, "deny", "Bash(x)y", "text after the closing ')' at offset 7"},
		{PolicyOptions{Deny: []string{"Baé"}}, "deny", "Baé", "non-ASCII byte in the tool name at offset 2"},
		{PolicyOptions{Deny: []string{"Ba\x00sh"}}, "deny", "Ba\x00sh", "control character"},
		{PolicyOptions{Deny: []string{"Bash(" + strings.Repeat("x", 70000) + ")"}}, "deny",
			"Bash(" + strings.Repeat("x", 70000) + ")", "exceeds the limit"},
	}
	for _, tt := range tests {
		p, err := NewPermissionPolicy(tt.opts)
		var pe *PolicyError
		if !errors.As(err, &pe) {
			t.Errorf("NewPermissionPolicy(%.40q) = %v, %v; want *PolicyError", tt.rule, p, err)
			continue
		}
		if pe.Rule != tt.rule || pe.List != tt.list || !strings.Contains(pe.Message, tt.contains) ||
			!strings.Contains(pe.Error(), tt.contains) {
			t.Errorf("PolicyError = {Rule: %.40q, List: %q, Message: %.120q}; want rule %.40q list %q containing %q",
				pe.Rule, pe.List, pe.Message, tt.rule, tt.list, tt.contains)
		}
	}

	_, err := NewPermissionPolicy(PolicyOptions{DefaultDecision: "maybe"})
	var pe *PolicyError
	if !errors.As(err, &pe) || pe.Rule != "" || !strings.Contains(pe.Message, "default_decision") {
		t.Errorf("invalid default decision: %v", err)
	}
	if _, err := NewPermissionPolicy(PolicyOptions{DefaultDecision: "ALLOW"}); err == nil {
		t.Error("default decision is case-sensitive, as in Python")
	}
}

func TestPolicyEmbeddedNUL(t *testing.T) {
	p, err := NewPermissionPolicy(PolicyOptions{
		Deny:  []string{"Bash(echo\x00*)"},
		Allow: []string{"Bash(echo*)", "Read(a\x00b)"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if r := p.Rules()[0]; r.Pattern != "echo\x00*" {
		t.Errorf("pattern %q lost its NUL", r.Pattern)
	}
	tests := []struct {
		tool, field, value string
		want               Decision
	}{
		{"bash", "command", "echo\x00 rm", Deny},
		{"bash", "command", "echo hi", Allow},
		{"bash", "command", "echo", Allow},
		{"read", "file_path", "a\x00b", Allow},
		{"read", "file_path", "a", Ask},
		{"read", "file_path", "a\x00", Ask},
	}
	for _, tt := range tests {
		if d, err := p.Check(tt.tool, map[string]any{tt.field: tt.value}); err != nil || d != tt.want {
			t.Errorf("Check(%q, %q) = %q, %v; want %q", tt.tool, tt.value, d, err, tt.want)
		}
	}
	// NUL in the tool name of a call: no rule names such a tool.
	if d, _ := p.Check("bash\x00", map[string]any{"command": "echo\x00"}); d != Ask {
		t.Errorf("tool with NUL = %q; want ask", d)
	}
}

func TestPolicyClose(t *testing.T) {
	p, err := NewPermissionPolicy(PolicyOptions{Deny: []string{"Bash"}})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	p.Close() // idempotent
	if _, err := p.Check("Bash", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Check after Close: %v; want ErrClosed", err)
	}
	if _, err := p.MatchingRules("Bash", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("MatchingRules after Close: %v; want ErrClosed", err)
	}
	if p.ExposesToModel("Read") {
		t.Error("a closed policy must expose nothing")
	}
}

func TestPolicyFinalizer(t *testing.T) {
	// Dropped policies are freed by their finalizer; this must not crash.
	for i := 0; i < 1000; i++ {
		if _, err := NewPermissionPolicy(PolicyOptions{Deny: []string{"Bash(x*)", "*"}}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.GC()
}

func TestPolicyConcurrent(t *testing.T) {
	p, err := NewPermissionPolicy(PolicyOptions{Deny: []string{"Bash(rm:*)"}, Allow: []string{"Bash"}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				d, err := p.Check("Bash", map[string]any{"command": "rm -f x"})
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil || d != Deny {
					t.Errorf("concurrent Check = %q, %v", d, err)
					return
				}
			}
		}()
	}
	p.Close() // races with the checks; they must see either a result or ErrClosed
	wg.Wait()
}

// A multi-file read is decided per file, strictest first; matching rules are
// the union over the files. Expectations from the Python reference.
func TestPolicyMultiFileRead(t *testing.T) {
	policy := func(d Decision) *PermissionPolicy {
		p, err := NewPermissionPolicy(PolicyOptions{
			Deny:            []string{"read(**/.env)"},
			Allow:           []string{"Read(src/**)", "read(docs/*.md)"},
			Ask:             []string{"read(docs/**)"},
			DefaultDecision: d,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	files := func(entries ...any) map[string]any { return map[string]any{"files": entries} }
	shadow := files("src/a", "/etc/shadow")
	allowAll, _ := NewPermissionPolicy(PolicyOptions{Allow: []string{"read(src/**)"}, DefaultDecision: Deny})
	defer allowAll.Close()
	tests := []struct {
		name string
		p    *PermissionPolicy
		args map[string]any
		want Decision
	}{
		// Regression: the joined "src/a\n/etc/shadow" matched src/** (** crosses newlines).
		{"shadow, ask default", policy(Ask), shadow, Ask},
		{"shadow, deny default", policy(Deny), shadow, Deny},
		{"shadow, allow default", policy(Allow), shadow, Allow},
		{"shadow as objects", policy(Deny),
			files(map[string]any{"path": "src/a"}, map[string]any{"path": "/etc/shadow"}), Deny},
		{"shadow as []string", policy(Deny), map[string]any{"files": []string{"src/a", "/etc/shadow"}}, Deny},
		{"shadow as []map", policy(Deny),
			map[string]any{"files": []map[string]any{{"path": "src/a"}, {"path": "/etc/shadow"}}}, Deny},
		{"shadow, only an allow rule", allowAll, shadow, Deny},
		{"all under src", policy(Deny), files("src/a", "src/b/c"), Allow},
		{"one denied among allowed, allow default", policy(Allow), files("src/a", "src/x/.env", "src/b"), Deny},
		{"one denied among allowed, ask default", policy(Ask), files("docs/r.md", map[string]any{"path": ".env"}), Deny},
		{"one asked among allowed, allow default", policy(Allow), files("src/a", "docs/x/y.md"), Ask},
		{"one asked among allowed, deny default", policy(Deny), files("docs/x/y.md", "src/a"), Ask},
		{"one falls to the ask default", policy(Ask), files("src/a", "elsewhere"), Ask},
		{"all allowed", policy(Ask), files("src/a", "docs/r.md"), Allow},
		{"string entries normalized", policy(Ask), files("./src//a/"), Allow},
		{"string entries normalized out of src", policy(Ask), files("src/../etc/shadow", "src/a"), Ask},
		{"backslashes normalized", policy(Ask), files(`src\x\.env`, "src/a"), Deny},
		{"empty files, deny default", policy(Deny), files(), Deny},
		{"a file_path wins over files", policy(Deny),
			map[string]any{"file_path": "src/a", "files": []any{"/etc/shadow"}}, Allow},
	}
	for _, tt := range tests {
		got, err := tt.p.Check("read", tt.args)
		if err != nil || got != tt.want {
			t.Errorf("%s: Check(read, %v) = %q, %v; want %q", tt.name, tt.args, got, err, tt.want)
		}
	}

	emptyRead, _ := NewPermissionPolicy(PolicyOptions{Allow: []string{"read(**)"}, DefaultDecision: Deny})
	defer emptyRead.Close()
	if got, err := emptyRead.Check("read", files()); err != nil || got != Allow {
		t.Errorf("empty files under read(**) = %q, %v; want allow (one subject \"\")", got, err)
	}

	none := []string{}
	matching := []struct {
		args map[string]any
		want MatchingRules
	}{
		{files("docs/r.md", "src/a", "src/.env"),
			MatchingRules{[]string{"read(**/.env)"}, []string{"Read(src/**)", "read(docs/*.md)"}, []string{"read(docs/**)"}}},
		{shadow, MatchingRules{none, []string{"Read(src/**)"}, none}},
		{files("/etc/shadow", "x"), MatchingRules{none, none, none}},
		{files("./src//a/"), MatchingRules{none, []string{"Read(src/**)"}, none}},
		{files(), MatchingRules{none, none, none}},
	}
	for _, tt := range matching {
		got, err := policy(Ask).MatchingRules("read", tt.args)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("MatchingRules(read, %v) = %v, %v; want %v", tt.args, got, err, tt.want)
		}
	}

	disabled, _ := NewPermissionPolicy(PolicyOptions{Deny: []string{"read"}, Disabled: true})
	defer disabled.Close()
	if got, err := disabled.Check("read", files("src/.env", "/etc/shadow")); err != nil || got != Allow {
		t.Errorf("disabled policy = %q, %v; want allow", got, err)
	}

	// An entry with no JSON form is an error, as for the joined argument string.
	type point struct{ X int }
	if _, err := policy(Ask).Check("read", files("src/a", point{1})); err == nil {
		t.Error("Check with an unrepresentable entry succeeded")
	}
	if _, err := policy(Ask).MatchingRules("read", files(point{1})); err == nil {
		t.Error("MatchingRules with an unrepresentable entry succeeded")
	}
}

func TestExecRulesAreTheBashDenyAndAskPatterns(t *testing.T) {
	p, err := NewPermissionPolicy(PolicyOptions{
		Deny:  []string{"bash(git push**)", "Read(**/.env)", "Bash"},
		Ask:   []string{"bash(npm publish:*)", "bash"},
		Allow: []string{"bash(*)"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got := p.ExecRules()
	if strings.Join(got.Deny, "|") != "git push**|*" || strings.Join(got.Ask, "|") != "npm publish:*" {
		t.Fatalf("exec rules %+v", got)
	}
}
