//go:build cgo

package codeward

import (
	"strings"
	"time"
	"unicode/utf8"
)

// CommandOutput is the outcome of one command, whichever sandbox ran it
// (Python's CommandOutput, Node's result object).
//
// Stdout and Stderr are decoded as UTF-8, each maximal invalid sequence
// replaced by U+FFFD (as Python's "replace" and the WHATWG decoder do, so the
// three bindings give the same text for the same bytes); past MaxOutputBytes
// per stream only a head and a tail are kept around a marker, Truncated is
// set and TotalBytes still counts everything the command wrote.
//
// The zero value means "not run": Ran is false and OK reports false, so a
// host that checks OK and forgets Exec's error still stops.
type CommandOutput struct {
	// Ran: the sandbox started the command (false in the zero value, which
	// every Exec error without a command's outcome returns, and when the
	// sandbox refused or failed to start it: SetupError says why).
	Ran bool
	// Stdout and Stderr are what the command wrote (bounded as above).
	Stdout, Stderr string
	// ExitCode is the command's status, 128+N when signal N ended it, 124 on
	// a timeout or a cancellation, 125 when the sandbox refused or failed to
	// start it (SetupError says why).
	ExitCode int
	// TimedOut: the command ran out of its time and was stopped, with every
	// process it started.
	TimedOut bool
	// Truncated: a stream went past MaxOutputBytes.
	Truncated bool
	// TotalBytes counts every byte written to both streams.
	TotalBytes uint64
	// Sandboxed is false only for the process host, which has no boundary.
	Sandboxed bool
	// Backend is "bwrap" (the native boundary) or "process-host".
	Backend string
	// SetupError is why the sandbox refused or failed to start the command
	// ("" when it ran).
	SetupError string
	// Cancelled: the context ended first and the command was stopped.
	Cancelled bool
	// Duration is how long the run took.
	Duration time.Duration
	// OOMKilled: the sandbox reached its memory bound and a process of the
	// command was killed for it (ExitCode is then usually 137).
	OOMKilled bool
	// Outlived: something of the command may have run after this result (a
	// process that could not be reaped after SIGKILL, or a sandbox killed by
	// force); a caller tracking the workspace treats it as changed.
	Outlived bool
	// Neutralized lists what the sandbox found hostile in the workspace and
	// did not follow or mount for this run, one line each (nil when nothing).
	Neutralized []string
	// PolicyChanged: the command was pinned to a sandbox policy digest (a
	// NetworkGrant's PolicyDigest) and the sandbox's policy had changed:
	// nothing ran (ExitCode 125, SetupError says to re-approve).
	PolicyChanged bool
	// NetworkGrant is what the command did with its grant (nil without one).
	NetworkGrant *NetworkGrantSummary
	// ExecStopped is what the exec check stopped ([ExecRules]; ExitCode is
	// then 126), nil when it stopped nothing.
	ExecStopped *ExecStop
}

// ExecStop is a program the exec check stopped before its first
// instruction: Decision "deny" or "ask", the Rule ("bash(git push**)") and
// the Command as it would have run ("git push origin").
type ExecStop struct {
	Decision, Rule, Command string
}

// OK reports whether the command ran and exited 0: false for the zero
// value, a refusal, a timeout, a cancellation and a non-zero exit.
func (o CommandOutput) OK() bool {
	return o.Ran && o.ExitCode == 0 && o.SetupError == "" && !o.TimedOut && !o.Cancelled
}

// decodeUTF8 decodes b as UTF-8, each maximal subpart of an invalid
// sequence (WHATWG Encoding, "U+FFFD substitution of maximal subparts")
// replaced by one U+FFFD.
func decodeUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var s strings.Builder
	s.Grow(len(b) + 16)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			s.Write(b[i : i+size])
			i += size
			continue
		}
		s.WriteRune(utf8.RuneError)
		i += invalidPrefix(b[i:])
	}
	return s.String()
}

// invalidPrefix is the length of the maximal subpart at the start of b,
// which does not start a valid sequence: the lead byte and the continuation
// bytes that could still have completed it.
func invalidPrefix(b []byte) int {
	lo, hi, need := byte(0x80), byte(0xBF), 0
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		lo, need = 0xA0, 2
	case c == 0xED:
		hi, need = 0x9F, 2
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		lo, need = 0x90, 3
	case c == 0xF4:
		hi, need = 0x8F, 3
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	}
	n := 1
	for ; n <= need && n < len(b) && b[n] >= lo && b[n] <= hi; n++ {
		lo, hi = 0x80, 0xBF
	}
	return n
}
