//go:build linux && cgo

package codeward

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
)

// Doctor reports the checks of `codeward doctor`, by the shared list.
func TestDoctorReportsTheSharedChecks(t *testing.T) {
	var want struct {
		Checks []struct {
			Name     string `json:"name"`
			Required bool   `json:"required"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(readVectors(t, filepath.Join(vectorsDir(), "doctor.json")), &want); err != nil {
		t.Fatal(err)
	}
	r, err := Doctor(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Ready || len(r.Checks) != len(want.Checks) { // this machine runs the sandbox vectors
		t.Fatalf("report %+v", r)
	}
	for i, c := range r.Checks {
		if c.Name != want.Checks[i].Name || c.Required != want.Checks[i].Required {
			t.Errorf("check %d: %+v, want %+v", i, c, want.Checks[i])
		}
		if c.Required && (!c.OK || c.Detail == "") {
			t.Errorf("required check %+v failed on a machine that runs the sandbox", c)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Doctor(ctx); err != context.Canceled {
		t.Errorf("Doctor with a cancelled context: %v", err)
	}
}
