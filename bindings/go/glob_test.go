//go:build cgo

package codeward

import (
	"errors"
	"strings"
	"testing"
)

// Expectations produced by the Python binding over the same C core.
func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, subject string
		toolName, want   bool
	}{
		{"*", "", false, true},
		{"*", "a/b", false, true},
		{"a*", "abc", false, true},
		{"a*", "a/b", false, false},
		{"a**", "a/b", false, true},
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"a/**/b", "a/xb", false, false},
		{"git:*", "git", false, true},
		{"git:*", "git status", false, true},
		{"git:*", "gitx", false, true},
		{`a\*b`, "a*b", false, true},
		{`a\*b`, "axb", false, false},
		{`a\b`, `a\b`, false, true},
		{"*.go", "x.go", false, true},
		{"*.go", "d/x.go", false, false},
		{"**.go", "d/x.go", false, true},
		{"Bash", "bash", false, false},
		{"Bash", "bash", true, true},
		{"mcp__*", "mcp__a/b", true, true},
		{"MCP__*__read*", "mcp__s__readfile", true, true},
		{"a\x00*", "a\x00b", false, true},
		{"a\x00*", "a", false, false},
		{"x:*", "x:", false, true},
		{"é*", "éa", false, true},
		{"", "", false, true},
		{"", "a", false, false},
		{"***/x", "x", false, true},
		{"**/x", "a/b/x", false, true},
		{"*:*", "a:b", true, true},
	}
	for _, tt := range tests {
		g, err := CompileGlob(tt.pattern, tt.toolName)
		if err != nil {
			t.Errorf("CompileGlob(%q, %v): %v", tt.pattern, tt.toolName, err)
			continue
		}
		if got := g.Match(tt.subject); got != tt.want {
			t.Errorf("Glob(%q, toolName=%v).Match(%q) = %v; want %v", tt.pattern, tt.toolName, tt.subject, got, tt.want)
		}
		g.Close()
	}
}

func TestGlobTooLarge(t *testing.T) {
	_, err := CompileGlob(strings.Repeat("a", MaxPatternLength+1), false)
	var pe *PolicyError
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "exceeds the limit") {
		t.Errorf("oversized pattern: %v; want *PolicyError", err)
	}
	g, err := CompileGlob(strings.Repeat("a*", MaxPatternLength/2), false) // exactly the limit
	if err != nil {
		t.Fatalf("pattern at the limit: %v", err)
	}
	defer g.Close()
	long := strings.Repeat("a", 3*MaxPatternLength)
	if !g.Match(long) || g.Match(long+"/") {
		t.Error("large NFA pattern matched wrongly")
	}
}

func TestGlobClose(t *testing.T) {
	g, err := CompileGlob("*", false)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Match("x") {
		t.Fatal("* must match")
	}
	g.Close()
	g.Close()
	if g.Match("x") {
		t.Error("a closed Glob must match nothing")
	}
}
