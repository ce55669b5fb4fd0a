//go:build cgo

package codeward

import "testing"

func BenchmarkCheckBash(b *testing.B) {
	p, err := NewPermissionPolicy(PolicyOptions{
		Deny:  []string{"bash(rm -rf**)", "write(**/.env*)"},
		Ask:   []string{"bash(git push**)"},
		Allow: []string{"read(*)", "search(*)", "bash(cargo test**)"},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	args := map[string]any{"command": "cargo test --all --release"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := p.Check("Bash", args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkArgumentStringJSON(b *testing.B) {
	args := map[string]any{"url": "https://example.com/a?b=c", "n": 1.5, "tags": []any{"a", "b", 3.0}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := ArgumentString("webfetch", args); err != nil {
			b.Fatal(err)
		}
	}
}
