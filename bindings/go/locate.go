//go:build cgo

package codeward

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What the boundary needs on the host, found as python/codeward/sandbox/_locate.py finds it.

// minBwrap is the oldest bubblewrap the boundary runs with.
var minBwrap = [3]int{0, 8, 0}

// systemBwrap are the fixed places bubblewrap is looked for before PATH, and
// lookPath how PATH is searched (variables so that the package's tests can
// take bubblewrap away).
var (
	systemBwrap = []string{"/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"}
	lookPath    = exec.LookPath
)

// trusted reports whether path is a bubblewrap we may run: owned by root,
// not writable by others, in a root-owned directory others cannot write,
// and not inside the workspace.
func trusted(path, workspace string) bool {
	var st, parent syscall.Stat_t
	if syscall.Stat(path, &st) != nil || syscall.Stat(filepath.Dir(path), &parent) != nil {
		return false
	}
	if st.Uid != 0 || st.Mode&0o022 != 0 || parent.Uid != 0 || parent.Mode&0o022 != 0 {
		return false
	}
	if workspace != "" {
		root, err := filepath.EvalSymlinks(workspace)
		if err != nil {
			root = workspace
		}
		// the workspace / holds every program, and no sandbox takes it (the
		// core refuses it, which selection reports), as in Python and Node
		if root != "/" && strings.HasPrefix(path+"/", strings.TrimSuffix(root, "/")+"/") {
			return false
		}
	}
	return true
}

// findBwrap is the system bubblewrap: the fixed system paths first, then
// PATH, never one a repository ships. Nothing else is ever executed, not
// even for --version. "" when there is none.
func findBwrap(workspace string) string {
	var found []string
	for _, c := range systemBwrap {
		if syscall.Access(c, 1 /* X_OK */) == nil {
			found = append(found, c)
		}
	}
	if which, err := lookPath("bwrap"); err == nil {
		found = append(found, which)
	}
	for _, c := range found {
		real, err := filepath.EvalSymlinks(c)
		if err == nil && filepath.IsAbs(real) && trusted(real, workspace) {
			return real
		}
	}
	return ""
}

var versionPattern = regexp.MustCompile(`(\d+)\.(\d+)(?:\.(\d+))?`)

// bwrapVersion runs `bwrap --version` (at most 5 s); nil if it cannot tell.
func bwrapVersion(path string) []int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, path, "--version").Output()
	m := versionPattern.FindStringSubmatch(string(out))
	if m == nil {
		return nil
	}
	v := make([]int, 3)
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v
}

// versionBelow reports whether v is older than min.
func versionBelow(v []int, min [3]int) bool {
	for i := range min {
		if v[i] != min[i] {
			return v[i] < min[i]
		}
	}
	return false
}

// absWorkspace makes workspace absolute (against the working directory).
func absWorkspace(workspace string) (string, error) {
	if filepath.IsAbs(workspace) {
		return workspace, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return filepath.Join(wd, workspace), nil
}
