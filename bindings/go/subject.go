package codeward

/*
#include <a3s/a3s.h>
*/
import "C"

import (
	"slices"
	"strings"
	"unsafe"
)

// This file builds the argument string a rule's pattern is matched against.
// It must stay byte-identical to python/codeward/policy/_subject.py, the
// reference; tests/vectors/policy.json pins it for every binding.

// isFilePathTool reports the tools whose argument string is file_path.
func isFilePathTool(name string) bool {
	switch name {
	case "read", "write", "edit", "download":
		return true
	}
	return false
}

// isSearchMode reports the tools that are a mode of search.
func isSearchMode(name string) bool {
	return name == "grep" || name == "glob" || name == "bm25"
}

// canonicalTool is the ASCII lower-case of a tool name, the only case folding
// tool names get.
func canonicalTool(tool string) string {
	for i := 0; i < len(tool); i++ {
		if c := tool[i]; c >= 'A' && c <= 'Z' {
			b := []byte(tool)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return tool
}

// NormalizePath returns the lexical normal form of a file path used in
// argument strings (the C core's a3s_path_normalize): '\' becomes '/', then
// the path is normalized like POSIX normpath, except that "" stays "" and a
// leading "//" becomes "/". It never touches the file system.
func NormalizePath(path string) (string, error) {
	// Fast path, as in Python: a path with none of these is already normal.
	if !strings.Contains(path, `\`) && !strings.Contains(path, "//") &&
		!strings.Contains(path, "/.") && !strings.HasPrefix(path, ".") &&
		!strings.HasSuffix(path, "/") {
		return path, nil
	}
	// The result is never longer than the input.
	out := make([]byte, len(path))
	var outLen C.size_t
	var cerr C.a3s_error
	p, n := borrow(path)
	rc := C.a3s_path_normalize(p, n, (*C.char)(unsafe.Pointer(&out[0])), C.size_t(len(out)),
		&outLen, &cerr)
	if rc != C.A3S_OK {
		return "", coreError(rc, &cerr)
	}
	return string(out[:outLen]), nil
}

// ArgumentString returns the canonical tool name and the argument string of
// one call: what a rule's tool part and pattern are matched against.
//
//   - The tool name is ASCII lower-cased; grep, glob and bm25 become search.
//   - bash: the command.
//   - read, write, edit, download: file_path, normalized with
//     [NormalizePath]. A read call without file_path but with files (a
//     multi-file read) gives each entry's path, joined by "\n": the path
//     field of an object entry or a string entry itself, normalized, and the
//     text of any other entry. This joined string is only displayed: such a
//     call is decided per file (see [PermissionPolicy.Check]).
//   - search: "<mode> <query> <path>", the mode being the tool name for
//     grep, glob and bm25 calls.
//   - ls: path, normalized.
//   - any other tool: the canonical JSON of all arguments ([CanonicalJSON]).
//
// A missing or null field gives ""; a field of another JSON type gives its
// canonical JSON, so no value slips past a rule by its type. Arguments that
// cannot be represented as JSON give a *[PolicyError].
//
// The result is byte-identical to Python's codeward.policy.argument_string
// for arguments decoded from the same JSON, with json.Decoder.UseNumber or
// into float64. The one exception needs UseNumber: Python prints an integer
// literal beyond 2^53 exactly, while a float64 holds only a nearby double,
// printed the ECMAScript way (1152921504606846976 becomes
// 1152921504606847000, as in Node).
func ArgumentString(tool string, args map[string]any) (name, subject string, err error) {
	name = canonicalTool(tool)
	switch {
	case name == "bash":
		subject, err = text(args["command"])
	case isFilePathTool(name):
		if isMultiRead(name, args) {
			var paths []string
			if paths, err = readPaths(args["files"]); err == nil {
				subject = strings.Join(paths, "\n")
			}
		} else {
			subject, err = pathField(args, "file_path")
		}
	case name == "search" || isSearchMode(name):
		subject, err = searchString(name, args)
		name = "search"
	case name == "ls":
		subject, err = pathField(args, "path")
	default:
		var e encoder
		err = e.object(args)
		subject = string(e.buf)
	}
	if err != nil {
		return name, "", err
	}
	return name, subject, nil
}

// separatorStandIn stands for a space inside the mode, query or path of a
// search in the strict form an allow rule is matched on (Python's
// SEPARATOR_STAND_IN).
const separatorStandIn = "\x1f"

// searchString is "<mode> <query> <path>" for a search call or a call of
// the search-mode tool name (grep, glob, bm25), which is its mode.
func searchString(name string, args map[string]any) (string, error) {
	parts, err := searchParts(name, args)
	if err != nil {
		return "", err
	}
	return strings.Join(parts, " "), nil
}

// strictSearchSubject is the strict form of a search call's argument
// string, and false for any other tool: every space inside the mode, the
// query and the path replaced by separatorStandIn. Deny and ask rules match
// either form, allow rules only the strict one, where a literal space can
// only be a separator: text in the query never stands in for the path.
func strictSearchSubject(tool string, args map[string]any) (string, bool, error) {
	name := canonicalTool(tool)
	if name != "search" && !isSearchMode(name) {
		return "", false, nil
	}
	parts, err := searchParts(name, args)
	if err != nil {
		return "", false, err
	}
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, " ", separatorStandIn)
	}
	return strings.Join(parts, " "), true, nil
}

// searchParts is [mode, query, path] of a search call.
func searchParts(name string, args map[string]any) ([]string, error) {
	mode := name
	if name == "search" {
		var err error
		if mode, err = text(args["mode"]); err != nil {
			return nil, err
		}
	}
	query, err := text(args["query"])
	if err != nil {
		return nil, err
	}
	path, err := pathField(args, "path")
	if err != nil {
		return nil, err
	}
	return []string{mode, query, path}, nil
}

// text is a field as text: a string as is, null or missing as "", anything
// else as canonical JSON.
func text(v any) (string, error) {
	switch s := v.(type) {
	case nil:
		return "", nil
	case string:
		return s, nil
	}
	return CanonicalJSON(v)
}

// pathField is a path field: a string normalized, null or missing as "",
// anything else as canonical JSON.
func pathField(m map[string]any, key string) (string, error) {
	return pathValue(m[key])
}

// pathValue is pathField for a value already looked up.
func pathValue(v any) (string, error) {
	switch s := v.(type) {
	case nil:
		return "", nil
	case string:
		return NormalizePath(s)
	}
	return CanonicalJSON(v)
}

// isMultiRead reports a read of several files: a read call without
// file_path but with files (either possibly null). Each of its paths is
// checked on its own (see subjects).
func isMultiRead(name string, args map[string]any) bool {
	if name != "read" {
		return false
	}
	_, hasPath := args["file_path"]
	_, hasFiles := args["files"]
	return !hasPath && hasFiles
}

// subjects returns the canonical tool name and the argument strings a call
// is decided on: its argument string, or for a multi-file read one per file;
// a git call whose target is REV:path also with the path in its normal form
// (see gitTargetSpellings).
//
// Joining the paths with newlines would let read(src/**) allow src/a plus
// /etc/shadow in one call, since ** crosses newlines; so a multi-file read
// is decided per file, strictest first. It mirrors Python's
// codeward.policy._subject.decision_subjects.
func subjects(tool string, args map[string]any) (string, []string, error) {
	if name := canonicalTool(tool); isMultiRead(name, args) {
		paths, err := readPaths(args["files"])
		if err != nil {
			return name, nil, err
		}
		return name, paths, nil
	}
	name, subject, err := ArgumentString(tool, args)
	if err != nil {
		return name, nil, err
	}
	each := []string{subject}
	if target, ok := args["target"].(string); ok && name == "git" {
		for _, t := range gitTargetSpellings(target) {
			other := make(map[string]any, len(args))
			for k, v := range args {
				other[k] = v
			}
			other["target"] = t
			spelled, err := CanonicalJSON(other)
			if err != nil {
				return name, nil, err
			}
			each = append(each, spelled)
		}
	}
	return name, each, nil
}

// treePath is a path inside a tree as git resolves it: "." and empty parts
// dropped, ".." applied; a ".." above the top stays at the top (the
// strictest reading).
func treePath(path string) string {
	parts := []string{}
	for _, part := range strings.Split(path, "/") {
		switch part {
		case "", ".":
		case "..":
			if len(parts) > 0 {
				parts = parts[:len(parts)-1]
			}
		default:
			parts = append(parts, part)
		}
	}
	return strings.Join(parts, "/")
}

// gitTargetSpellings is the other spellings of a git REV:path target, with
// the path normalized (HEAD:./secrets/k and HEAD:a/../secrets/k are
// HEAD:secrets/k), for every ':' that could end the revision: a deny or ask
// rule must not be passed by writing the path another way. It mirrors
// Python's git_target_spellings.
func gitTargetSpellings(target string) []string {
	var out []string
	for i := 0; i < len(target); i++ {
		if target[i] != ':' {
			continue
		}
		rev, path := target[:i], target[i+1:]
		if strings.HasPrefix(path, "/") {
			continue
		}
		if normal := treePath(path); normal != path {
			spelled := rev + ":" + normal
			if !slices.Contains(out, spelled) {
				out = append(out, spelled)
			}
		}
	}
	return out
}

// readPaths is the paths of a multi-file read, one per entry of files: an
// object entry's path field and a string entry, each normalized, or the
// text of any other entry. An empty list gives one "", and files that is
// not a list one string, its canonical JSON ("" if null).
func readPaths(files any) ([]string, error) {
	var parts []string
	switch list := files.(type) {
	case nil:
		return []string{""}, nil
	case []string:
		parts = make([]string, len(list))
		for i, entry := range list {
			p, err := NormalizePath(entry)
			if err != nil {
				return nil, err
			}
			parts[i] = p
		}
	case []map[string]any:
		parts = make([]string, len(list))
		for i, entry := range list {
			p, err := pathField(entry, "path")
			if err != nil {
				return nil, err
			}
			parts[i] = p
		}
	case []any:
		parts = make([]string, len(list))
		for i, entry := range list {
			var p string
			var err error
			switch m := entry.(type) {
			case map[string]any:
				p, err = pathField(m, "path")
			case map[string]string:
				if v, ok := m["path"]; ok {
					p, err = NormalizePath(v)
				}
			case string:
				p, err = NormalizePath(m)
			default:
				p, err = text(entry)
			}
			if err != nil {
				return nil, err
			}
			parts[i] = p
		}
	default:
		s, err := CanonicalJSON(files)
		if err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
	if len(parts) == 0 {
		return []string{""}, nil
	}
	return parts, nil
}
