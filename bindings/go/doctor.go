//go:build cgo

package codeward

/*
#include <a3s/a3s.h>

// The running kernel's A3S_FEATURE_* bits and Landlock ABI (0, 0 when it cannot tell).
static void doctor_features(uint64_t *flags, int *landlock_abi) {
	a3s_features_info f = {.struct_size = sizeof f};
	int ok = a3s_features(&f, NULL) == A3S_OK;
	*flags = ok ? f.flags : 0;
	*landlock_abi = ok ? (int)f.landlock_abi : 0;
}
*/
import "C"

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Check is one line of [Doctor]'s report (one line of `codeward doctor`).
type Check struct {
	// Name is the check's stable name ("bubblewrap", "user namespaces" ...).
	Name string `json:"name"`
	// OK: the machine has what the check looks for.
	OK bool `json:"ok"`
	// Required: the native sandbox cannot run without it.
	Required bool `json:"required"`
	// Detail says what was found.
	Detail string `json:"detail"`
	// Fix says what to do when OK is false ("" when there is nothing to say).
	Fix string `json:"fix"`
}

// Report is what `codeward doctor --json` prints.
type Report struct {
	// Ready: every required check passed, so SelectSandbox gives the native
	// boundary.
	Ready bool `json:"ready"`
	// Checks in the order `codeward doctor` prints them.
	Checks []Check `json:"checks"`
}

// Doctor checks what this machine offers the native sandbox (bubblewrap,
// user and pid namespaces, seccomp, Landlock, pidfd, cgroup kill) and, when
// every required part is there, runs a fresh self-test through the real
// boundary (never a verdict an earlier selection kept). The checks are
// Python's (tests/vectors/doctor.json pins their names for every binding).
// The error is ctx's, when it ends first.
func Doctor(ctx context.Context) (Report, error) {
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}
	var checks []Check
	add := func(name string, ok, required bool, detail, fix string) {
		checks = append(checks, Check{Name: name, OK: ok, Required: required, Detail: detail, Fix: fix})
	}
	pick := func(ok bool, yes, no string) string {
		if ok {
			return yes
		}
		return no
	}
	linux := runtime.GOOS == "linux"
	add("platform", linux, true, runtime.GOOS, pick(linux, "", "the native sandbox needs Linux"))
	cwd, _ := os.Getwd()
	bwrap := findBwrap(cwd)
	version := []int(nil)
	if bwrap != "" {
		version = bwrapVersion(bwrap)
	}
	switch {
	case bwrap == "":
		add("bubblewrap", false, true,
			"not found (or not owned by root in a directory only root can write)",
			"install it: apt-get install bubblewrap")
	case version == nil || versionBelow(version, minBwrap):
		shown := "unknown"
		if version != nil {
			shown = joinInts(version)
		}
		add("bubblewrap", false, true, fmt.Sprintf("%s version %s", bwrap, shown),
			"bubblewrap 0.8 or newer is required")
	default:
		add("bubblewrap", true, true, bwrap+" "+joinInts(version), "")
	}
	var f C.uint64_t
	var cabi C.int
	C.doctor_features(&f, &cabi)
	has := func(bit C.uint64_t) bool { return f&bit != 0 }
	userns := has(C.A3S_FEATURE_USER_NAMESPACES)
	add("user namespaces", userns, true, pick(userns, "available", "cannot create one"),
		pick(userns, "", "enable them: sysctl kernel.unprivileged_userns_clone=1 "+
			"(and user.max_user_namespaces > 0), or allow them in your container runtime"))
	pidns := has(C.A3S_FEATURE_PID_NAMESPACES)
	add("pid namespaces", pidns, true, pick(pidns, "available", "unavailable"), "")
	seccomp := has(C.A3S_FEATURE_SECCOMP_FILTER)
	add("seccomp filter", seccomp, true, pick(seccomp, "available", "unavailable"),
		pick(seccomp, "", "the kernel must be built with CONFIG_SECCOMP_FILTER"))
	abi := int(cabi)
	add("landlock", abi > 0, false,
		pick(abi > 0, fmt.Sprintf("ABI %d", abi), "unavailable (optional: extra defence in depth)"), "")
	pidfd := has(C.A3S_FEATURE_PIDFD)
	add("pidfd", pidfd, false, pick(pidfd, "available", "unavailable (optional)"), "")
	kill := has(C.A3S_FEATURE_CGROUP_KILL)
	add("cgroup kill", kill, false, pick(kill, "available", "unavailable (optional)"), "")
	emulated := has(C.A3S_FEATURE_NAMES_EMULATED) && !placeholdersForced()
	add("protected names", true, false, pick(emulated,
		"kept missing inside the sandbox (call emulation): nothing appears in the workspace",
		"read-only placeholders in the workspace while a sandbox lives"), "")
	if ready(checks) {
		done := make(chan string, 1)
		go func() { done <- runProbe(bwrap) }()
		select {
		case cause := <-done:
			add("sandbox self-test", cause == "", true,
				pick(cause == "", "passed through the real boundary", cause),
				pick(cause == "", "", "see docs/security.md (readiness)"))
		case <-ctx.Done():
			return Report{}, ctx.Err()
		}
	}
	return Report{Ready: ready(checks), Checks: checks}, nil
}

func ready(checks []Check) bool {
	for _, c := range checks {
		if c.Required && !c.OK {
			return false
		}
	}
	return true
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ".")
}

// placeholdersForced reports A3S_CODE_PROTECT_NAMES=placeholders, which makes
// the core use the placeholder fallback even where the kernel can emulate.
func placeholdersForced() bool {
	return os.Getenv("A3S_CODE_PROTECT_NAMES") == "placeholders"
}

// namesEmulated reports whether a sandbox made now keeps missing protected
// names missing inside it (Linux 5.14), leaving nothing in the workspace.
func namesEmulated() bool {
	var f C.uint64_t
	var cabi C.int
	C.doctor_features(&f, &cabi)
	return f&C.A3S_FEATURE_NAMES_EMULATED != 0 && !placeholdersForced()
}
