//go:build cgo

package codeward

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	v := Version()
	if want := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch); v.String != want {
		t.Errorf("Version().String = %q; want %q", v.String, want)
	}
	if v.ABI != 1 || ABIVersion() != v.ABI {
		t.Errorf("ABI: Version().ABI = %d, ABIVersion() = %d; want 1", v.ABI, ABIVersion())
	}
}

// TestEveryCoreSourceIsCompiled checks that each native/src/*.c file has a
// wrapper in this directory that includes it, so a new core file cannot be
// forgotten (go generate writes them), and that no wrapper is stale.
func TestEveryCoreSourceIsCompiled(t *testing.T) {
	sources, err := filepath.Glob("../../native/src/*.c")
	if err != nil || len(sources) == 0 {
		t.Fatalf("no core sources found: %v", err)
	}
	for _, src := range sources {
		name := filepath.Base(src)
		wrapper := "core_" + name
		text, err := os.ReadFile(wrapper)
		if err != nil {
			t.Errorf("%s has no wrapper (run go generate): %v", src, err)
			continue
		}
		if !strings.Contains(string(text), `#include "../../native/src/`+name+`"`) {
			t.Errorf("%s does not include %s (run go generate)", wrapper, src)
		}
	}
	wrappers, _ := filepath.Glob("core_*.c")
	if len(wrappers) != len(sources) {
		t.Errorf("%d wrappers for %d core sources (run go generate)", len(wrappers), len(sources))
	}
}
