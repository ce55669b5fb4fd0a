//go:build cgo

package codeward_test

import (
	"errors"
	"fmt"

	"github.com/codeward/codeward/bindings/go"
)

func Example() {
	policy, err := codeward.NewPermissionPolicy(codeward.PolicyOptions{
		Deny:  []string{"bash(rm -rf**)", "write(**/.env*)"},
		Ask:   []string{"bash(git push**)"},
		Allow: []string{"read(*)", "search(*)", "bash(cargo test**)"},
	})
	if err != nil {
		panic(err)
	}
	defer policy.Close()

	d, _ := policy.Check("Bash", map[string]any{"command": "cargo test --all"})
	fmt.Println(d)
	d, _ = policy.Check("bash", map[string]any{"command": "rm -rf /tmp/x"})
	fmt.Println(d)
	m, _ := policy.MatchingRules("bash", map[string]any{"command": "git push"})
	fmt.Println(m.Ask)
	fmt.Println(policy.ExposesToModel("write"))
	// Output:
	// allow
	// deny
	// [bash(git push**)]
	// true
}

func ExampleNewPermissionPolicy_error() {
	_, err := codeward.NewPermissionPolicy(codeward.PolicyOptions{Deny: []string{"Bash (ls)"}})
	var pe *codeward.PolicyError
	if errors.As(err, &pe) {
		fmt.Printf("list=%s rule=%q\n", pe.List, pe.Rule)
		fmt.Println(err)
	}
	// Output:
	// list=deny rule="Bash (ls)"
	// codeward: deny rule "Bash (ls)": space before '(': write Tool(pattern) with no space
}

func ExampleArgumentString() {
	tool, subject, _ := codeward.ArgumentString("Grep", map[string]any{"query": "TODO", "path": "./src/"})
	fmt.Printf("%s %q\n", tool, subject)
	_, subject, _ = codeward.ArgumentString("WebFetch", map[string]any{"url": "https://x.dev", "max": 1e21})
	fmt.Println(subject)
	// Output:
	// search "grep TODO src"
	// {"max":1e+21,"url":"https://x.dev"}
}

func ExampleCompileGlob() {
	g, _ := codeward.CompileGlob("**/.env", false)
	defer g.Close()
	fmt.Println(g.Match(".env"), g.Match("a/b/.env"), g.Match("x.env"))
	// Output: true true false
}
