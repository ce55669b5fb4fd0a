//go:build cgo && !linux

package codeward

import "context"

// Network grants need the native Linux sandbox: elsewhere no sandbox that
// could mediate one runs, and an Exec with a grant never gets here.
type admission struct{ peer int }

func openAdmission(context.Context, *grant) (*admission, error) {
	return nil, &NetworkGrantError{Message: "network grants need the native Linux sandbox"}
}

func (a *admission) close() NetworkGrantSummary { return NetworkGrantSummary{} }
