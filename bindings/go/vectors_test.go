//go:build cgo

package codeward

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The shared test vectors every binding runs: tests/vectors in the
// repository root, or the directory named by $A3S_VECTORS_DIR.
var (
	policyVectorsPath = filepath.Join(vectorsDir(), "policy.json")
	globVectorsPath   = filepath.Join(vectorsDir(), "glob.json")
	// a bash line decided per simple command by the C core: the same format
	bashVectorsPath = filepath.Join(vectorsDir(), "bash_policy.json")
	// the bash reader's corpus (tests/bash_reader_corpus.py): the same format
	bashReaderVectorsPath = filepath.Join(vectorsDir(), "bash_reader.json")
)

func vectorsDir() string {
	if dir := os.Getenv("A3S_VECTORS_DIR"); dir != "" {
		return dir
	}
	return filepath.Join("..", "..", "tests", "vectors")
}

// readVectors reads a vector file, skipping the test only if it is missing.
func readVectors(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("shared vectors %s do not exist (yet); binding tests still run", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// decodeStrict decodes JSON with numbers as json.Number.
func decodeStrict(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}

type globVectors struct {
	Schema int `json:"schema"`
	Cases  []struct {
		Name     string `json:"name"`
		Pattern  string `json:"pattern"`
		Subject  string `json:"subject"`
		Match    *bool  `json:"match"`
		ToolName bool   `json:"tool_name"`
	} `json:"cases"`
}

func TestGlobVectors(t *testing.T) {
	var v globVectors
	if err := decodeStrict(readVectors(t, globVectorsPath), &v); err != nil {
		t.Fatalf("%s: %v", globVectorsPath, err)
	}
	if v.Schema != 1 {
		t.Fatalf("%s: schema %d; this runner reads schema 1", globVectorsPath, v.Schema)
	}
	if len(v.Cases) == 0 {
		t.Fatalf("%s: no cases", globVectorsPath)
	}
	for i, c := range v.Cases {
		label := fmt.Sprintf("case %d %q: Glob(%q, toolName=%v).Match(%q)", i, c.Name, c.Pattern, c.ToolName, c.Subject)
		if c.Match == nil {
			t.Errorf("%s: no \"match\"", label)
			continue
		}
		g, err := CompileGlob(c.Pattern, c.ToolName)
		if err != nil {
			t.Errorf("%s: %v", label, err)
			continue
		}
		if got := g.Match(c.Subject); got != *c.Match {
			t.Errorf("%s = %v; want %v", label, got, *c.Match)
		}
		g.Close()
	}
	t.Logf("%d glob vectors", len(v.Cases))
}

type policyVectors struct {
	Schema   int                        `json:"schema"`
	Policies map[string]json.RawMessage `json:"policies"`
	Cases    []json.RawMessage          `json:"cases"`
}

// policyCase is any of the three case kinds; which fields are set tells them
// apart: "error" (an error case), "decision" (a decision case), else a
// subject case.
type policyCase struct {
	Name            string          `json:"name"`
	Policy          json.RawMessage `json:"policy"`
	Tool            *string         `json:"tool"`
	Args            json.RawMessage `json:"args"`
	Decision        *Decision       `json:"decision"`
	Subject         *string         `json:"subject"`
	Matching        *MatchingRules  `json:"matching"`
	Error           string          `json:"error"`
	MessageContains string          `json:"message_contains"`
}

func TestPolicyVectors(t *testing.T) { runPolicyVectors(t, policyVectorsPath) }

func TestBashPolicyVectors(t *testing.T) { runPolicyVectors(t, bashVectorsPath) }

func TestBashReaderVectors(t *testing.T) { runPolicyVectors(t, bashReaderVectorsPath) }

func runPolicyVectors(t *testing.T, path string) {
	var v policyVectors
	if err := decodeStrict(readVectors(t, path), &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if v.Schema != 1 {
		t.Fatalf("%s: schema %d; this runner reads schema 1", path, v.Schema)
	}
	if len(v.Cases) == 0 {
		t.Fatalf("%s: no cases", path)
	}
	named := map[string]*PermissionPolicy{}
	defer func() {
		for _, p := range named {
			p.Close()
		}
	}()
	for name, raw := range v.Policies {
		p, err := policyFromJSON(raw)
		if err != nil {
			t.Fatalf("policies[%q]: %v", name, err)
		}
		named[name] = p
	}

	counts := map[string]int{}
	for i, raw := range v.Cases {
		var c policyCase
		if err := decodeStrict(raw, &c); err != nil {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		label := fmt.Sprintf("case %d %q", i, c.Name)
		switch {
		case c.Error != "":
			counts["error"]++
			runErrorCase(t, label, c)
		case c.Decision != nil:
			counts["decision"]++
			runDecisionCase(t, label, c, named)
		case c.Subject != nil && len(c.Policy) == 0:
			counts["subject"]++
			runSubjectCase(t, label, c)
		default:
			t.Errorf("%s: not a decision, error or subject case: %s", label, raw)
		}
	}
	t.Logf("%d policy vectors: %d decision, %d error, %d subject",
		len(v.Cases), counts["decision"], counts["error"], counts["subject"])
}

func runErrorCase(t *testing.T, label string, c policyCase) {
	t.Helper()
	if c.Error != "policy" {
		t.Errorf("%s: unknown error kind %q", label, c.Error)
		return
	}
	p, err := policyFromJSON(c.Policy)
	if err == nil {
		p.Close()
		t.Errorf("%s: policy %s built; want a PolicyError", label, c.Policy)
		return
	}
	var pe *PolicyError
	if !errors.As(err, &pe) {
		t.Errorf("%s: error %v (%T); want *PolicyError", label, err, err)
	}
	if c.MessageContains != "" && !strings.Contains(err.Error(), c.MessageContains) {
		t.Errorf("%s: error %q does not contain %q", label, err, c.MessageContains)
	}
}

func runDecisionCase(t *testing.T, label string, c policyCase, named map[string]*PermissionPolicy) {
	t.Helper()
	var p *PermissionPolicy
	var name string
	if err := json.Unmarshal(c.Policy, &name); err == nil {
		if p = named[name]; p == nil {
			t.Errorf("%s: unknown policy %q", label, name)
			return
		}
	} else {
		built, err := policyFromJSON(c.Policy)
		if err != nil {
			t.Errorf("%s: policy %s: %v", label, c.Policy, err)
			return
		}
		defer built.Close()
		p = built
	}
	if c.Tool == nil {
		t.Errorf("%s: no tool", label)
		return
	}
	forEachDecoding(t, label, c.Args, func(mode string, args map[string]any) {
		got, err := p.Check(*c.Tool, args)
		if err != nil || got != *c.Decision {
			t.Errorf("%s [%s]: Check(%q, %s) = %q, %v; want %q", label, mode, *c.Tool, c.Args, got, err, *c.Decision)
		}
		if c.Subject != nil {
			checkSubject(t, label, mode, *c.Tool, c.Args, args, *c.Subject)
		}
		if c.Matching != nil {
			m, err := p.MatchingRules(*c.Tool, args)
			if err != nil || !sameRules(m, *c.Matching) {
				t.Errorf("%s [%s]: MatchingRules(%q, %s) = %v, %v; want %v",
					label, mode, *c.Tool, c.Args, m, err, *c.Matching)
			}
		}
	})
}

func runSubjectCase(t *testing.T, label string, c policyCase) {
	t.Helper()
	if c.Tool == nil {
		t.Errorf("%s: no tool", label)
		return
	}
	forEachDecoding(t, label, c.Args, func(mode string, args map[string]any) {
		checkSubject(t, label, mode, *c.Tool, c.Args, args, *c.Subject)
	})
}

func checkSubject(t *testing.T, label, mode, tool string, raw json.RawMessage, args map[string]any, want string) {
	t.Helper()
	_, got, err := ArgumentString(tool, args)
	if err != nil || got != want {
		t.Errorf("%s [%s]: ArgumentString(%q, %s) = %q, %v; want %q", label, mode, tool, raw, got, err, want)
	}
}

// forEachDecoding runs f with the case's args decoded with json.Number and
// decoded into float64. The float64 run is skipped when it cannot agree with
// Python: for integer literals beyond 2^53 (Python prints them exactly; a
// float64 holds a nearby double) and for numbers a float64 cannot hold at
// all, which encoding/json refuses.
func forEachDecoding(t *testing.T, label string, raw json.RawMessage, f func(mode string, args map[string]any)) {
	t.Helper()
	var exact, approx map[string]any
	if len(raw) > 0 {
		if err := decodeStrict(raw, &exact); err != nil {
			t.Errorf("%s: args %s: %v", label, raw, err)
			return
		}
	}
	f("UseNumber", exact)
	if !float64Faithful(exact) {
		t.Logf("%s: float64 decoding skipped: integers beyond 2^53", label)
		return
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &approx); err != nil {
			t.Logf("%s: float64 decoding skipped: %v", label, err)
			return
		}
	}
	f("float64", approx)
}

// float64Faithful reports whether decoding into float64 keeps what Python
// prints: whether every integer literal in a json.Number-decoded value is at
// most 2^53 in magnitude (below that every integer is exact and printed in
// full; beyond, Python prints the int and Go the nearest double).
func float64Faithful(v any) bool {
	switch x := v.(type) {
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return true // a float for Python too
		}
		n, ok := new(big.Int).SetString(string(x), 10)
		return ok && n.CmpAbs(big.NewInt(1<<53)) <= 0
	case map[string]any:
		for _, e := range x {
			if !float64Faithful(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !float64Faithful(e) {
				return false
			}
		}
	}
	return true
}

// sameRules compares matching rules, nil and empty lists alike.
func sameRules(a, b MatchingRules) bool {
	eq := func(x, y []string) bool { return len(x) == len(y) && (len(x) == 0 || reflect.DeepEqual(x, y)) }
	return eq(a.Deny, b.Deny) && eq(a.Allow, b.Allow) && eq(a.Ask, b.Ask)
}

// policyFromJSON builds a policy from the vector (and policy file) format
// {deny, allow, ask, default_decision, enabled}, validating it as Python's
// PermissionPolicy.from_dict does: unknown keys, rules that are not strings
// or {"rule": string}, a non-string default_decision or a non-boolean
// enabled are a *PolicyError.
func policyFromJSON(raw json.RawMessage) (*PermissionPolicy, error) {
	var obj map[string]any
	if err := decodeStrict(raw, &obj); err != nil || obj == nil {
		return nil, &PolicyError{Message: fmt.Sprintf("a policy is a JSON object, not %s", raw)}
	}
	var opts PolicyOptions
	for key, value := range obj {
		var err error
		switch key {
		case "deny":
			opts.Deny, err = ruleList(key, value)
		case "allow":
			opts.Allow, err = ruleList(key, value)
		case "ask":
			opts.Ask, err = ruleList(key, value)
		case "default_decision":
			// Only an absent key means ask: Python rejects "" and null.
			s, _ := value.(string)
			if s == "" {
				err = &PolicyError{Message: fmt.Sprintf("default_decision must be 'allow', 'deny' or 'ask', not %v", value)}
			}
			opts.DefaultDecision = Decision(s)
		case "enabled":
			b, ok := value.(bool)
			if !ok {
				err = &PolicyError{Message: fmt.Sprintf("enabled must be true or false, not %v", value)}
			}
			opts.Disabled = !b
		default:
			err = &PolicyError{Message: fmt.Sprintf("unknown key %q", key)}
		}
		if err != nil {
			return nil, err
		}
	}
	return NewPermissionPolicy(opts)
}

// ruleList reads a rule list: null, or a list of strings or {"rule": string}.
func ruleList(name string, value any) ([]string, error) {
	if value == nil {
		return nil, nil
	}
	list, ok := value.([]any)
	if !ok {
		return nil, &PolicyError{Message: fmt.Sprintf("%s must be a list of rules, not %v", name, value)}
	}
	rules := make([]string, len(list))
	for i, entry := range list {
		switch e := entry.(type) {
		case string:
			rules[i] = e
		case map[string]any:
			rule, ok := e["rule"].(string)
			if !ok || len(e) != 1 {
				return nil, &PolicyError{Message: fmt.Sprintf("%s[%d]: a rule object is {\"rule\": string}", name, i)}
			}
			rules[i] = rule
		default:
			return nil, &PolicyError{Message: fmt.Sprintf("%s[%d]: a rule is a string or {\"rule\": ...}", name, i)}
		}
	}
	return rules, nil
}
