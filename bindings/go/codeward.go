package codeward

//go:generate go run gen_core.go

/*
#cgo CFLAGS: -std=c11 -Wall -Wextra -Werror -I${SRCDIR}/../../native/include
#cgo linux LDFLAGS: -lpthread
#include <a3s/a3s.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// VersionInfo is the version of the compiled-in C core.
type VersionInfo struct {
	// Major, Minor and Patch are the library version numbers.
	Major, Minor, Patch uint32
	// ABI is the C ABI version the library was built with.
	ABI uint32
	// String is "major.minor.patch".
	String string
}

// Version returns the version of the C core.
func Version() VersionInfo {
	v := C.a3s_version()
	return VersionInfo{
		Major:  uint32(v.major),
		Minor:  uint32(v.minor),
		Patch:  uint32(v.patch),
		ABI:    uint32(v.abi),
		String: C.GoString(v.string),
	}
}

// ABIVersion returns the ABI version of the running C core. Because the core
// is compiled into this package it always equals the header's
// A3S_ABI_VERSION; it is exposed for diagnostics and parity with the other
// bindings.
func ABIVersion() uint32 {
	return uint32(C.a3s_abi_version())
}

// The sentinel errors of the package: every error it returns matches one
// of them with errors.Is (or is a context's error), and carries its details
// in a typed error errors.As finds:
//
//	ErrClosed              a method of a closed handle (no details)
//	ErrInvalidArgument     *SandboxArgumentError: an argument no sandbox can honour
//	ErrSandboxUnavailable  *SandboxUnavailableError: no boundary can run here
//	ErrPolicy              *PolicyError: a malformed rule, policy or argument
//	ErrCore                *CoreError: a failure of the C core no input explains
//	ErrNetworkGrant        *NetworkGrantError: a malformed grant, or one the sandbox cannot mediate
//	                       (it matches ErrInvalidArgument too)
var (
	// ErrClosed is returned by methods called on a closed handle.
	ErrClosed = errors.New("codeward: use of a closed handle")
	// ErrPolicy is matched by every *[PolicyError].
	ErrPolicy = errors.New("codeward: malformed policy")
	// ErrCore is matched by every *[CoreError].
	ErrCore = errors.New("codeward: C core error")
)

// PolicyError reports a malformed rule, policy or tool-call argument: a rule
// that does not parse, an invalid default decision, or arguments that cannot
// be represented as JSON. It corresponds to Python's codeward.PolicyError.
type PolicyError struct {
	// Rule is the offending rule text when one rule is at fault, else "".
	Rule string
	// List is "deny", "allow" or "ask" when Rule is set, else "".
	List string
	// Message says what is wrong; for a rule it includes the C core's
	// a3s_error message.
	Message string
}

// Error returns the message.
func (e *PolicyError) Error() string { return "codeward: " + e.Message }

// Is makes errors.Is(err, ErrPolicy) true.
func (e *PolicyError) Is(target error) bool { return target == ErrPolicy }

// CoreError reports a failure of the C core that no input explains, such as
// running out of memory. It corresponds to Python's NativeCoreError.
type CoreError struct {
	// Status is the stable status name ("nomem", "invalid", "system", ...).
	Status string
	// Code is the negative A3S_E_* code.
	Code int
	// Errno is the errno of a failing system call, 0 if none.
	Errno int
	// Message is the C core's message ("" when the core gave none).
	Message string
}

// Error returns the status and message.
func (e *CoreError) Error() string {
	if e.Message == "" {
		return "codeward: C core error: " + e.Status
	}
	return fmt.Sprintf("codeward: C core error (%s): %s", e.Status, e.Message)
}

// Is makes errors.Is(err, ErrCore) true.
func (e *CoreError) Is(target error) bool { return target == ErrCore }

// statusName is the stable identifier of a status code.
func statusName(rc C.int) string {
	return C.GoString(C.a3s_status_name(rc))
}

// errorMessage copies the NUL-terminated message out of a C error struct.
func errorMessage(e *C.a3s_error) string {
	return C.GoString((*C.char)(unsafe.Pointer(&e.message[0])))
}

// coreError converts a failed call's status (and error struct, if one was
// passed) into a *CoreError.
func coreError(rc C.int, e *C.a3s_error) *CoreError {
	ce := &CoreError{Status: statusName(rc), Code: int(rc)}
	if e != nil {
		ce.Errno = int(e.sys_errno)
		ce.Message = errorMessage(e)
	}
	return ce
}

// borrow returns s as a borrowed (pointer, length) pair for the C core. The
// core never retains or writes the pointer and treats every byte, NUL
// included, as data; the string's bytes contain no Go pointers, so passing
// them satisfies the cgo pointer rules. An empty string is (NULL, 0), which
// every core function accepts.
func borrow(s string) (*C.char, C.size_t) {
	if len(s) == 0 {
		return nil, 0
	}
	return (*C.char)(unsafe.Pointer(unsafe.StringData(s))), C.size_t(len(s))
}
