//go:build cgo

package codeward

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// The expected strings below were produced by the Python reference,
// codeward.policy.argument_string and canonical_json.

func TestArgumentString(t *testing.T) {
	tests := []struct {
		tool     string
		args     string // JSON; "" means nil args
		wantTool string
		want     string
	}{
		{"Bash", `{"command":"git status"}`, "bash", "git status"},
		{"bash", `{}`, "bash", ""},
		{"bash", ``, "bash", ""},
		{"bash", `{"command":null}`, "bash", ""},
		{"bash", `{"command":["ls","-l"]}`, "bash", `["ls","-l"]`},
		{"bash", `{"command":3.0}`, "bash", "3"},
		{"Read", `{"file_path":"./src//a/../b.py"}`, "read", "src/b.py"},
		{"read", `{"file_path":"C:\\Users\\x\\..\\y"}`, "read", "C:/Users/y"},
		{"read", `{"files":[{"path":"a//b"},"c//d",null,7,{"path":null},{}]}`, "read", "a/b\nc/d\n\n7\n\n"},
		{"read", `{"files":["./x/../y/","\\etc\\shadow"]}`, "read", "y\n/etc/shadow"},
		{"read", `{"files":[]}`, "read", ""},
		{"read", `{"files":"x//y"}`, "read", `"x//y"`},
		{"read", `{"files":null}`, "read", ""},
		{"read", `{"file_path":null,"files":[{"path":"a"}]}`, "read", ""},
		{"write", `{"file_path":"/etc/../etc/passwd/"}`, "write", "/etc/passwd"},
		{"edit", `{"file_path":{"b":1,"a":[true,null]}}`, "edit", `{"a":[true,null],"b":1}`},
		{"download", `{"file_path":""}`, "download", ""},
		{"download", `{"file_path":"//srv/./x"}`, "download", "/srv/x"},
		{"Grep", `{"query":"TODO","path":"src/"}`, "search", "grep TODO src"},
		{"glob", `{"query":"*.go"}`, "search", "glob *.go "},
		{"BM25", `{"query":1e21,"path":1}`, "search", "bm25 1e+21 1"},
		{"search", `{"mode":"grep","query":"x","path":"."}`, "search", "grep x ."},
		{"search", `{}`, "search", "  "},
		{"search", `{"mode":null,"query":["a"],"path":".."}`, "search", ` ["a"] ..`},
		{"ls", `{"path":"a/b/../../.."}`, "ls", ".."},
		{"ls", `{}`, "ls", ""},
		{"WebFetch",
			`{"url":"https://example.com/?a=<b>&c","z":1,"a":"\u2028\u007f\u0000\u001f\"\\","😀":1,"\uffff":2}`,
			"webfetch",
			"{\"a\":\"\u2028\x7f\\u0000\\u001f\\\"\\\\\",\"url\":\"https://example.com/?a=<b>&c\",\"z\":1,\"\uffff\":2,\"😀\":1}"},
		{"mcp__srv__tool", `{"n":[0.1,-0.0,1e-7,123456789.125,1.5e300,9007199254740992,-1]}`,
			"mcp__srv__tool", `{"n":[0.1,0,1e-7,123456789.125,1.5e+300,9007199254740992,-1]}`},
		{"Other", `{}`, "other", "{}"},
		{"Other", ``, "other", "{}"},
		{"ÉDIT", `{"file_path":"a"}`, "Édit", `{"file_path":"a"}`},
	}
	for _, tt := range tests {
		for _, useNumber := range []bool{true, false} {
			var args map[string]any
			if tt.args != "" {
				args = decodeArgs(t, tt.args, useNumber)
			}
			tool, got, err := ArgumentString(tt.tool, args)
			if err != nil {
				t.Errorf("ArgumentString(%q, %s) [UseNumber=%v]: %v", tt.tool, tt.args, useNumber, err)
				continue
			}
			if tool != tt.wantTool || got != tt.want {
				t.Errorf("ArgumentString(%q, %s) [UseNumber=%v] = %q, %q; want %q, %q",
					tt.tool, tt.args, useNumber, tool, got, tt.wantTool, tt.want)
			}
		}
	}
}

// Python prints an integer beyond 2^53 exactly; only json.Number keeps it.
// Decoded into float64 it is a double printed the ECMAScript way.
func TestArgumentStringLargeIntegers(t *testing.T) {
	text := `{"n":[1152921504606846976,-12345678901234567890123]}`
	_, got, err := ArgumentString("x", decodeArgs(t, text, true))
	if want := text; err != nil || got != want {
		t.Errorf("UseNumber: %q, %v; want %q (Python)", got, err, want)
	}
	_, got, err = ArgumentString("x", decodeArgs(t, text, false))
	if want := `{"n":[1152921504606847000,-1.2345678901234568e+22]}`; err != nil || got != want {
		t.Errorf("float64: %q, %v; want %q (Node)", got, err, want)
	}
}

func TestArgumentStringGoTypes(t *testing.T) {
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read", map[string]any{"files": []string{"a//b", "c"}}, "a/b\nc"},
		{"read", map[string]any{"files": []string{}}, ""},
		{"read", map[string]any{"files": []any{"./p/", map[string]any{"path": "q//"}}}, "p\nq"},
		{"read", map[string]any{"files": []map[string]any{{"path": "a//b"}, {"path": 1}}}, "a/b\n1"},
		{"read", map[string]any{"files": []any{map[string]string{"path": "./x/"}, map[string]string{}}}, "x\n"},
		{"bash", map[string]any{"command": int64(-7)}, "-7"},
		{"x", map[string]any{"a": uint8(255), "b": float32(0.5), "c": map[string]string{"k": "v"}},
			`{"a":255,"b":0.5,"c":{"k":"v"}}`},
		{"x", map[string]any{"l": []any(nil), "m": map[string]any(nil)}, `{"l":[],"m":{}}`},
		{"x", map[string]any{"n": json.Number("-0"), "m": json.Number("1e400"), "k": json.Number("1E-400")},
			`{"k":0,"m":Infinity,"n":0}`},
	}
	for _, tt := range tests {
		_, got, err := ArgumentString(tt.tool, tt.args)
		if err != nil || got != tt.want {
			t.Errorf("ArgumentString(%q, %v) = %q, %v; want %q", tt.tool, tt.args, got, err, tt.want)
		}
	}
}

func TestArgumentStringEmbeddedNUL(t *testing.T) {
	_, got, err := ArgumentString("bash", map[string]any{"command": "echo\x00hi"})
	if err != nil || got != "echo\x00hi" {
		t.Errorf("bash command with NUL = %q, %v", got, err)
	}
	_, got, err = ArgumentString("read", map[string]any{"file_path": "a\x00b//./c\x00/"})
	if err != nil || got != "a\x00b/c\x00" {
		t.Errorf("path with NUL = %q, %v", got, err)
	}
	_, got, err = ArgumentString("x", map[string]any{"k\x00": "v\x00"})
	if err != nil || got != `{"k\u0000":"v\u0000"}` {
		t.Errorf("JSON with NUL = %q, %v", got, err)
	}
}

func TestArgumentStringErrors(t *testing.T) {
	type point struct{ X int }
	bad := []map[string]any{
		{"a": point{1}},
		{"a": []byte("x")},
		{"a": []any{map[string]any{"b": make(chan int)}}},
		{"a": json.Number("12abc")},
		{"a": &struct{}{}},
	}
	for _, args := range bad {
		for _, tool := range []string{"other", "bash", "read", "search"} {
			a := map[string]any{"command": args["a"], "file_path": args["a"], "query": args["a"], "a": args["a"]}
			_, _, err := ArgumentString(tool, a)
			var pe *PolicyError
			if !errors.As(err, &pe) {
				t.Errorf("ArgumentString(%q, %#v) error = %v; want *PolicyError", tool, a, err)
			}
		}
	}
}

func TestCanonicalJSONNumbers(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{0.0, "0"}, {math.Copysign(0, -1), "0"}, {1.0, "1"}, {-1.5, "-1.5"},
		{1e21, "1e+21"}, {1e20, "100000000000000000000"}, {123456789012345678901.0, "123456789012345680000"},
		{1e-6, "0.000001"}, {1e-7, "1e-7"}, {1.5e-7, "1.5e-7"}, {0.1, "0.1"}, {5e-324, "5e-324"},
		{1.7976931348623157e308, "1.7976931348623157e+308"}, {9007199254740993.0, "9007199254740992"},
		{math.NaN(), "NaN"}, {math.Inf(1), "Infinity"}, {math.Inf(-1), "-Infinity"},
		{json.Number("1.0"), "1"}, {json.Number("12345678901234567890123"), "12345678901234567890123"},
		{json.Number("-12.50e1"), "-125"}, {json.Number("NaN"), "NaN"},
		{uint64(math.MaxUint64), "18446744073709551615"}, {int64(math.MinInt64), "-9223372036854775808"},
	}
	for _, tt := range tests {
		got, err := CanonicalJSON(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("CanonicalJSON(%v) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestCanonicalJSONStrings(t *testing.T) {
	in := "\"\\/\b\f\n\r\t\x00\x01\x1f\x7f<>&\u2028\u2029é😀\xff"
	want := `"\"\\/\b\f\n\r\t\u0000\u0001\u001f` + "\x7f<>&\u2028\u2029é😀\xff" + `"`
	got, err := CanonicalJSON(in)
	if err != nil || got != want {
		t.Errorf("CanonicalJSON(%q) = %q, %v; want %q", in, got, err, want)
	}
}

func TestCanonicalJSONDepth(t *testing.T) {
	var v any = "x"
	for i := 0; i < maxDepth; i++ {
		v = []any{v}
	}
	if _, err := CanonicalJSON(v); err != nil {
		t.Errorf("depth %d: %v", maxDepth, err)
	}
	if _, err := CanonicalJSON([]any{v}); err == nil {
		t.Errorf("depth %d: no error", maxDepth+1)
	}
	cycle := map[string]any{}
	cycle["self"] = cycle
	if _, err := CanonicalJSON(cycle); err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Errorf("cyclic value: %v", err)
	}
}

func TestNormalizePath(t *testing.T) {
	tests := map[string]string{
		"": "", ".": ".", "./": ".", "a/..": ".", "/": "/", "//": "/", "///a//b/": "/a/b",
		"/..": "/", "../a/../..": "../..", `a\b\..\c`: "a/c", "a/./b/.": "a/b", ".hidden": ".hidden",
		"plain/path.txt": "plain/path.txt",
	}
	for in, want := range tests {
		got, err := NormalizePath(in)
		if err != nil || got != want {
			t.Errorf("NormalizePath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// decodeArgs decodes a JSON object as encoding/json would, with numbers as
// json.Number or as float64.
func decodeArgs(t testing.TB, text string, useNumber bool) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(text))
	if useNumber {
		d.UseNumber()
	}
	var args map[string]any
	if err := d.Decode(&args); err != nil {
		t.Fatalf("decoding %s: %v", text, err)
	}
	return args
}

func TestSubjects(t *testing.T) {
	tests := []struct {
		tool     string
		args     map[string]any
		wantTool string
		want     []string
	}{
		{"READ", map[string]any{"files": []any{"src/a", map[string]any{"path": "/etc//shadow"}, "./b/", 7.0, nil,
			map[string]any{"p": 1.0}}}, "read", []string{"src/a", "/etc/shadow", "b", "7", "", ""}},
		{"read", map[string]any{"files": []any{"a\nb"}}, "read", []string{"a\nb"}},
		{"read", map[string]any{"files": []any{}}, "read", []string{""}},
		{"read", map[string]any{"files": []string(nil)}, "read", []string{""}},
		{"read", map[string]any{"files": []string{"x//y", "./z"}}, "read", []string{"x/y", "z"}},
		{"read", map[string]any{"files": nil}, "read", []string{""}},
		{"read", map[string]any{"files": "a//b"}, "read", []string{`"a//b"`}},
		{"read", map[string]any{"files": map[string]any{"path": "a"}}, "read", []string{`{"path":"a"}`}},
		{"read", map[string]any{"file_path": "x", "files": []any{"a", "b"}}, "read", []string{"x"}},
		{"read", map[string]any{"file_path": nil, "files": []any{"a", "b"}}, "read", []string{""}},
		{"write", map[string]any{"files": []any{"a", "b"}}, "write", []string{""}},
		{"read", map[string]any{"file_path": "a\nb"}, "read", []string{"a\nb"}},
		{"Grep", map[string]any{"query": "x", "path": "./s/"}, "search", []string{"grep x s"}},
		{"bash", nil, "bash", []string{""}},
		{"foo", map[string]any{"a": []any{1.0}}, "foo", []string{`{"a":[1]}`}},
	}
	for _, tt := range tests {
		name, got, err := subjects(tt.tool, tt.args)
		if err != nil || name != tt.wantTool || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("subjects(%q, %v) = %q, %q, %v; want %q, %q", tt.tool, tt.args, name, got, err,
				tt.wantTool, tt.want)
		}
		// The joined subjects are the argument string.
		aname, subject, err := ArgumentString(tt.tool, tt.args)
		if err != nil || aname != name || subject != strings.Join(got, "\n") {
			t.Errorf("ArgumentString(%q, %v) = %q, %q, %v; want the joined subjects", tt.tool, tt.args,
				aname, subject, err)
		}
	}
	type point struct{ X int }
	if _, _, err := subjects("read", map[string]any{"files": []any{point{1}}}); err == nil {
		t.Error("subjects with an unrepresentable entry succeeded")
	}
}
