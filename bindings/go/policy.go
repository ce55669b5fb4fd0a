package codeward

/*
#include <a3s/a3s.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// Decision is what a policy says about one call.
type Decision string

// The three decisions.
const (
	// Allow lets the call run.
	Allow Decision = "allow"
	// Deny refuses the call.
	Deny Decision = "deny"
	// Ask defers the call to the user.
	Ask Decision = "ask"
)

// String returns the decision's name.
func (d Decision) String() string { return string(d) }

// PolicyOptions describes a permission policy. The zero value is a valid,
// empty, enabled policy whose every call is [Ask].
type PolicyOptions struct {
	// Deny, Allow and Ask are rule lists: "Tool(pattern)" or a bare "Tool".
	Deny, Allow, Ask []string
	// DefaultDecision applies when no rule matches; "" means [Ask].
	DefaultDecision Decision
	// Disabled switches the policy off (default false: enabled). A
	// disabled policy allows every call (Python's enabled=False).
	Disabled bool
}

// RuleFlags describe a compiled rule (the C core's A3S_RULE_* bits).
type RuleFlags uint64

// The rule flags.
const (
	// RuleAnyArgs: a bare tool or the pattern "*".
	RuleAnyArgs RuleFlags = 1 << 0
	// RuleToolGlob: the tool part contains '*'.
	RuleToolGlob RuleFlags = 1 << 1
	// RuleMCPServer: the tool part is "mcp__server" and covers its tools.
	RuleMCPServer RuleFlags = 1 << 2
	// RuleRewritten: a grep, glob or bm25 rule rewritten to that mode of search.
	RuleRewritten RuleFlags = 1 << 3
	// RulePrefix: the pattern ends in ":*".
	RulePrefix RuleFlags = 1 << 4
)

// Compile-time check that the flags equal the header's: a constant index
// out of range fails the build.
var _ = [1]struct{}{}[RuleAnyArgs^C.A3S_RULE_ANY_ARGS|RuleToolGlob^C.A3S_RULE_TOOL_GLOB|
	RuleMCPServer^C.A3S_RULE_MCP_SERVER|RuleRewritten^C.A3S_RULE_REWRITTEN|RulePrefix^C.A3S_RULE_PREFIX]

// RuleView is one compiled rule: where it came from and its canonical form.
type RuleView struct {
	// Index is the rule's position in evaluation order (deny, allow, ask).
	Index int
	// List is "deny", "allow" or "ask".
	List string
	// Raw is the rule as written.
	Raw string
	// Tool is the canonical tool part: lower-case, grep/glob/bm25 rewritten
	// to search.
	Tool string
	// Pattern is the canonical argument pattern, "*" for any arguments.
	Pattern string
	// Flags describe the rule.
	Flags RuleFlags
}

// coversTool reports whether the rule's tool part names tool (already
// canonical): a tool glob by matching, an MCP server rule the server and its
// tools, any other rule by equality.
func (r RuleView) coversTool(tool string) (bool, error) {
	switch {
	case r.Flags&RuleToolGlob != 0:
		g, err := CompileGlob(r.Tool, true)
		if err != nil {
			return false, err
		}
		defer g.Close()
		return g.Match(tool), nil
	case r.Flags&RuleMCPServer != 0:
		return tool == r.Tool || strings.HasPrefix(tool, r.Tool+"__"), nil
	default:
		return tool == r.Tool, nil
	}
}

// MatchingRules are the raw rules that match one call, per list, in policy
// order.
type MatchingRules struct {
	// Deny, Allow and Ask hold the matching rules of each list, as written.
	Deny  []string `json:"deny"`
	Allow []string `json:"allow"`
	Ask   []string `json:"ask"`
}

// PermissionPolicy holds deny, allow and ask rules compiled once into the C
// core's rule set. Evaluation is deny, then allow, then ask, then the default
// decision. It is safe for concurrent use.
//
// Close frees the C rule set; a finalizer does so if Close is never called.
// After Close, methods that return an error return [ErrClosed].
type PermissionPolicy struct {
	mu       sync.RWMutex
	rs       *C.a3s_ruleset // nil once closed
	enabled  bool
	fallback Decision
	rules    []RuleView
}

// listNames maps A3S_LIST_* codes to list names.
var listNames = [...]string{C.A3S_LIST_DENY: "deny", C.A3S_LIST_ALLOW: "allow", C.A3S_LIST_ASK: "ask"}

// listDecisions maps A3S_LIST_* codes to decisions.
var listDecisions = [...]Decision{C.A3S_LIST_DENY: Deny, C.A3S_LIST_ALLOW: Allow, C.A3S_LIST_ASK: Ask}

// listCodes maps decisions to A3S_LIST_* codes.
var listCodes = map[Decision]C.int{Deny: C.A3S_LIST_DENY, Allow: C.A3S_LIST_ALLOW, Ask: C.A3S_LIST_ASK}

// NewPermissionPolicy parses and compiles the rules of opts. A malformed
// rule is a *[PolicyError] naming it (Rule, List) whose message includes the
// C core's explanation; an invalid DefaultDecision is a *[PolicyError] too.
func NewPermissionPolicy(opts PolicyOptions) (*PermissionPolicy, error) {
	fallback := opts.DefaultDecision
	switch fallback {
	case "":
		fallback = Ask
	case Allow, Deny, Ask:
	default:
		return nil, &PolicyError{
			Message: fmt.Sprintf("default_decision must be 'allow', 'deny' or 'ask', not %q",
				string(opts.DefaultDecision)),
		}
	}
	var cerr C.a3s_error
	var rs *C.a3s_ruleset
	if rc := C.a3s_ruleset_new(&rs, &cerr); rc != C.A3S_OK {
		return nil, coreError(rc, &cerr)
	}
	p := &PermissionPolicy{
		rs:       rs,
		enabled:  !opts.Disabled,
		fallback: fallback,
	}
	runtime.SetFinalizer(p, (*PermissionPolicy).Close)
	// A bash line is decided per simple command in the C core, which needs the default.
	if rc := C.a3s_ruleset_set_default(rs, listCodes[fallback], &cerr); rc != C.A3S_OK {
		p.Close()
		return nil, coreError(rc, &cerr)
	}
	lists := []struct {
		code  C.int
		rules []string
	}{{C.A3S_LIST_DENY, opts.Deny}, {C.A3S_LIST_ALLOW, opts.Allow}, {C.A3S_LIST_ASK, opts.Ask}}
	for _, l := range lists {
		for _, raw := range l.rules {
			if err := p.add(l.code, raw); err != nil {
				p.Close()
				return nil, err
			}
		}
	}
	return p, nil
}

// add compiles one rule into the rule set and records its view.
func (p *PermissionPolicy) add(list C.int, raw string) error {
	index := len(p.rules)
	var cerr C.a3s_error
	r, n := borrow(raw)
	rc := C.a3s_ruleset_add(p.rs, list, r, n, C.uint32_t(index), &cerr)
	if rc != C.A3S_OK {
		if rc == C.A3S_E_SYNTAX || rc == C.A3S_E_TOO_LARGE {
			return &PolicyError{
				Rule:    raw,
				List:    listNames[list],
				Message: fmt.Sprintf("%s rule %q: %s", listNames[list], raw, errorMessage(&cerr)),
			}
		}
		return coreError(rc, &cerr)
	}
	view := C.a3s_rule_view{struct_size: C.size_t(unsafe.Sizeof(C.a3s_rule_view{}))}
	if rc := C.a3s_ruleset_rule(p.rs, C.size_t(index), &view, &cerr); rc != C.A3S_OK {
		return coreError(rc, &cerr)
	}
	p.rules = append(p.rules, RuleView{
		Index:   index,
		List:    listNames[list],
		Raw:     raw,
		Tool:    C.GoStringN(view.tool, C.int(view.tool_len)),
		Pattern: C.GoStringN(view.pattern, C.int(view.pattern_len)),
		Flags:   RuleFlags(view.flags),
	})
	return nil
}

// Check returns the decision for one call: [Allow] if the policy is
// disabled, else the list of the first matching rule (deny, then allow, then
// ask), else the default decision. It fails only on arguments that are not
// representable as JSON (*[PolicyError]), a closed policy or a C core
// failure.
//
// A multi-file read (files, no file_path) is decided per file: [Deny] if
// any file is denied, else [Ask] if any is asked or falls to an ask default,
// else [Allow]. Its joined argument string is never matched as a whole,
// because ** crosses newlines and read(src/**) would otherwise allow src/a
// together with /etc/shadow.
//
// A search's allow rules match only its strict form (spaces inside the
// mode, query and path as U+001F), so its query never satisfies a rule's
// path part; its deny and ask rules match either form.
func (p *PermissionPolicy) Check(tool string, args map[string]any) (Decision, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.rs == nil {
		return "", ErrClosed
	}
	if !p.enabled {
		return Allow, nil
	}
	name, each, err := subjects(tool, args)
	if err != nil {
		return "", err
	}
	if strict, ok, err := strictSearchSubject(tool, args); err != nil || ok {
		if err != nil {
			return "", err
		}
		matched, err := p.searchMatches(name, each[0], strict)
		if err != nil {
			return "", err
		}
		for _, d := range []Decision{Deny, Allow, Ask} {
			for _, i := range matched {
				if p.rules[i].List == string(d) {
					return d, nil
				}
			}
		}
		return p.fallback, nil
	}
	asked := false
	for _, subject := range each {
		d, err := p.checkOne(name, subject)
		if err != nil {
			return "", err
		}
		switch d {
		case Deny:
			return Deny, nil
		case Ask:
			asked = true
		}
	}
	if asked {
		return Ask, nil
	}
	return Allow, nil
}

// checkOne is the decision for one argument string: the list of the first
// matching rule, else the default. The caller holds p.mu.
func (p *PermissionPolicy) checkOne(name, subject string) (Decision, error) {
	m := C.a3s_match{struct_size: C.size_t(unsafe.Sizeof(C.a3s_match{}))}
	t, tn := borrow(name)
	s, sn := borrow(subject)
	rc := C.a3s_ruleset_check(p.rs, t, tn, s, sn, &m, nil)
	runtime.KeepAlive(p)
	if rc != C.A3S_OK {
		return "", coreError(rc, nil)
	}
	if m.list == C.A3S_LIST_NONE {
		return p.fallback, nil
	}
	return listDecisions[m.list], nil
}

// MatchingRules returns every rule that matches one call, as written, per
// list in policy order; for a multi-file read, every rule that matches any
// of its files. It ignores Enabled: it says what the rules match.
func (p *PermissionPolicy) MatchingRules(tool string, args map[string]any) (MatchingRules, error) {
	found := MatchingRules{Deny: []string{}, Allow: []string{}, Ask: []string{}}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.rs == nil {
		return found, ErrClosed
	}
	name, each, err := subjects(tool, args)
	if err != nil {
		return found, err
	}
	if len(p.rules) == 0 {
		return found, nil
	}
	matched := make([]bool, len(p.rules)) // by rule index, so the union is in policy order
	strict, isSearch, err := strictSearchSubject(tool, args)
	if err != nil {
		return found, err
	}
	for _, subject := range each {
		var indices []int
		if isSearch {
			indices, err = p.searchMatches(name, subject, strict)
		} else {
			indices, err = p.matches(name, subject)
		}
		if err != nil {
			return found, err
		}
		for _, i := range indices {
			matched[i] = true
		}
	}
	for i, r := range p.rules {
		if !matched[i] {
			continue
		}
		switch r.List {
		case "deny":
			found.Deny = append(found.Deny, r.Raw)
		case "allow":
			found.Allow = append(found.Allow, r.Raw)
		default:
			found.Ask = append(found.Ask, r.Raw)
		}
	}
	return found, nil
}

// matches is the indices of the rules matching one argument string. The
// caller holds p.mu.
func (p *PermissionPolicy) matches(name, subject string) ([]int, error) {
	if len(p.rules) == 0 {
		return nil, nil
	}
	// At most every rule matches, so this buffer is always large enough.
	indices := make([]C.size_t, len(p.rules))
	var count C.size_t
	t, tn := borrow(name)
	s, sn := borrow(subject)
	rc := C.a3s_ruleset_matches(p.rs, t, tn, s, sn, &indices[0], C.size_t(len(indices)),
		&count, nil)
	runtime.KeepAlive(p)
	if rc != C.A3S_OK {
		return nil, coreError(rc, nil)
	}
	out := make([]int, count)
	for i, index := range indices[:count] {
		out[i] = int(index)
	}
	return out, nil
}

// searchMatches is the indices of the rules matching a search, in policy
// order: deny and ask rules matching either form of its argument string,
// allow rules matching the strict form. The caller holds p.mu.
func (p *PermissionPolicy) searchMatches(name, subject, strict string) ([]int, error) {
	loose, err := p.matches(name, subject)
	if err != nil {
		return nil, err
	}
	inStrict, err := p.matches(name, strict)
	if err != nil {
		return nil, err
	}
	keep := make([]bool, len(p.rules))
	for _, i := range inStrict {
		keep[i] = true
	}
	for _, i := range loose {
		if p.rules[i].List != "allow" {
			keep[i] = true
		}
	}
	var out []int
	for i, k := range keep {
		if k {
			out = append(out, i)
		}
	}
	return out, nil
}

// ExposesToModel reports whether the tool should be offered to the model at
// all. It is false only if every call of the tool is denied before its
// arguments are known: a whole-tool deny (a bare rule or Tool(*)) covers it,
// or the default decision is deny and no allow or ask rule names it. A
// disabled policy exposes everything.
//
// A closed policy exposes nothing (false), failing closed.
func (p *PermissionPolicy) ExposesToModel(tool string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.rs == nil {
		return false
	}
	if !p.enabled {
		return true
	}
	name := canonicalTool(tool)
	if isSearchMode(name) {
		name = "search"
	}
	for _, r := range p.rules {
		if r.List == "deny" && r.Flags&RuleAnyArgs != 0 {
			if covered, err := r.coversTool(name); err != nil || covered {
				return false
			}
		}
	}
	if p.fallback != Deny {
		return true
	}
	for _, r := range p.rules {
		if r.List != "deny" {
			covered, err := r.coversTool(name)
			if err != nil {
				return false
			}
			if covered {
				return true
			}
		}
	}
	return false
}

// ExecRules returns what the exec check holds bash commands to
// (docs/policy.md, "The exec check"), for [ExecOptions].ExecRules: the
// patterns of every deny and ask rule that covers bash. A bare deny of bash
// is "*"; a bare ask is left out (it asks for the line, which is what the
// human approves). Set Approved (the line's simple commands) after an
// approval. A closed policy fails closed: a deny of every program.
func (p *PermissionPolicy) ExecRules() *ExecRules {
	p.mu.RLock()
	defer p.mu.RUnlock()
	rules := &ExecRules{}
	if p.rs == nil {
		rules.Deny = []string{"*"}
		return rules
	}
	if !p.enabled {
		return rules
	}
	for _, r := range p.rules {
		if r.List != "deny" && r.List != "ask" {
			continue
		}
		covered, err := r.coversTool("bash")
		if err != nil {
			return &ExecRules{Deny: []string{"*"}}
		}
		if !covered {
			continue
		}
		pattern := r.Pattern
		if r.Flags&RuleAnyArgs != 0 {
			if r.List != "deny" {
				continue
			}
			pattern = "*"
		}
		if r.List == "deny" {
			rules.Deny = append(rules.Deny, pattern)
		} else {
			rules.Ask = append(rules.Ask, pattern)
		}
	}
	return rules
}

// Rules returns every rule in evaluation order with its canonical form.
func (p *PermissionPolicy) Rules() []RuleView {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return append([]RuleView(nil), p.rules...)
}

// Enabled reports whether the policy is enabled.
func (p *PermissionPolicy) Enabled() bool { return p.enabled }

// DefaultDecision returns the decision for a call no rule matches.
func (p *PermissionPolicy) DefaultDecision() Decision { return p.fallback }

// Close frees the C rule set. It is safe to call more than once
// and always returns nil (an [io.Closer]).
func (p *PermissionPolicy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rs != nil {
		C.a3s_ruleset_free(p.rs)
		p.rs = nil
		runtime.SetFinalizer(p, nil)
	}
	return nil
}
