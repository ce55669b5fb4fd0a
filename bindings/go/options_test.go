//go:build cgo

package codeward

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// native/abi/options.json is the canonical option list: every Go spelling
// it gives exists, and every option the Go API takes is listed there, so
// the three bindings cannot drift apart.
func TestOptionsMatchOptionsJSON(t *testing.T) {
	path := filepath.Join("..", "..", "native", "abi", "options.json")
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("%s is not here", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Options []struct {
			Name string `json:"name"`
			Go   string `json:"go"`
		} `json:"options"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	owners := map[string]reflect.Type{
		"": reflect.TypeOf(SandboxOptions{}), "Limits": reflect.TypeOf(Limits{}),
	}
	exec := reflect.TypeOf(ExecOptions{})
	listed := map[string]bool{}
	for _, o := range file.Options {
		if o.Go == "" { // null: an option of another binding only
			continue
		}
		if o.Go == "Exec(ctx)" { // the idiom: Exec's context
			if _, ok := reflect.TypeOf((*Sandbox)(nil)).Elem().MethodByName("Exec"); !ok {
				t.Errorf("%s: Sandbox has no Exec", o.Name)
			}
			continue
		}
		if strings.Contains(o.Go, ", ") { // writers: one field per stream
			for _, field := range strings.Split(o.Go, ", ") {
				if _, ok := exec.FieldByName(field); !ok {
					t.Errorf("%s: no field %s in ExecOptions", o.Name, field)
				}
				listed[exec.Name()+"."+field] = true
			}
			continue
		}
		owner, field, nested := strings.Cut(o.Go, ".")
		if !nested {
			owner, field = "", o.Go
		}
		typ := owners[owner]
		if _, ok := typ.FieldByName(field); !ok && owner == "" {
			typ = exec
		}
		if _, ok := typ.FieldByName(field); !ok {
			t.Errorf("%s: no field %s in the Go API", o.Name, o.Go)
		}
		listed[typ.Name()+"."+field] = true
	}
	for _, typ := range []reflect.Type{owners[""], owners["Limits"], exec} {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			if f.Name == "Limits" && typ == owners[""] {
				continue // the group of the Limits.* options
			}
			if !listed[typ.Name()+"."+f.Name] {
				t.Errorf("%s.%s is not in %s", typ.Name(), f.Name, path)
			}
		}
	}
}
