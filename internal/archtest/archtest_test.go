package archtest

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"contextd/coordinator"
)

// lower are the library packages under the coordinator; upper the packages
// that compose them. No lower package may depend on an upper one, directly
// or through another package.
var (
	lower = []string{"archive", "cut", "store", "history", "notes", "session", "remote", "migrations", "inspect", "discovery", "buildinfo"}
	upper = []string{"contextd/coordinator", "contextd/api"}
)

// TestOneWayImports: `go list -deps` of each lower package names neither
// contextd/coordinator nor contextd/api.
func TestOneWayImports(t *testing.T) {
	for _, p := range lower {
		cmd := exec.Command("go", "list", "-tags", "sqlite_fts5", "-deps", "-f", "{{.ImportPath}}", "contextd/"+p)
		cmd.Dir = "../.."
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps contextd/%s: %v\n%s", p, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) == 0 || deps[len(deps)-1] != "contextd/"+p {
			t.Fatalf("go list -deps contextd/%s: the package itself is not listed last: %q", p, deps)
		}
		for _, d := range deps {
			for _, u := range upper {
				if d == u {
					t.Errorf("contextd/%s depends on %s: the lower packages must not import the coordinator or the api (docs/design.md §2)", p, u)
				}
			}
		}
	}
}

// TestServiceHasNoHookFields: coordinator.Service has no exported field of
// function type (a hook another package sets after coordinator.New).
func TestServiceHasNoHookFields(t *testing.T) {
	typ := reflect.TypeFor[coordinator.Service]()
	if typ.NumField() == 0 {
		t.Fatal("coordinator.Service has no fields: the check would pass vacuously")
	}
	for f := range typ.Fields() {
		if f.IsExported() && f.Type.Kind() == reflect.Func {
			t.Errorf("coordinator.Service.%s is an exported %s: pass it to coordinator.New instead", f.Name, f.Type)
		}
	}
}
