// Command codeward-consumer calls the codeward Go API the way the README
// shows and prints one line per answer, which ci/go_module.py compares with
// what the policy says.
package main

import (
	"errors"
	"fmt"
	"os"

	codeward "github.com/codeward/codeward/bindings/go"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "codeward-consumer:", err)
		os.Exit(1)
	}
}

func run() error {
	policy, err := codeward.NewPermissionPolicy(codeward.PolicyOptions{
		Deny:  []string{"bash(rm -rf**)", "write(**/.env*)"},
		Ask:   []string{"bash(git push**)"},
		Allow: []string{"read(*)", "bash(cargo test**)"},
	})
	if err != nil {
		return err
	}
	defer policy.Close()
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"bash", map[string]any{"command": "cargo test --all"}},
		{"bash", map[string]any{"command": "rm -rf /"}},
		{"bash", map[string]any{"command": "git push origin main"}},
		{"write", map[string]any{"file_path": "app/.env.local"}},
		{"webfetch", map[string]any{"url": "https://example.com"}},
	} {
		d, err := policy.Check(call.tool, call.args)
		if err != nil {
			return err
		}
		fmt.Printf("%s %v: %s\n", call.tool, call.args, d)
	}
	_, err = codeward.NewPermissionPolicy(codeward.PolicyOptions{Deny: []string{"Bash("}})
	var pe *codeward.PolicyError
	if !errors.As(err, &pe) {
		return fmt.Errorf("a malformed rule gave %v, not a *PolicyError", err)
	}
	fmt.Printf("malformed rule: %s\n", pe.Rule)
	fmt.Printf("version %s abi %d\n", codeward.Version().String, codeward.ABIVersion())
	return nil
}
