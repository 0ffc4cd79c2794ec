package archtest

import (
	"reflect"
	"slices"
	"testing"

	"contextd/coordinator"
)

// upper are the packages that compose the coordinator or the API (the
// application core, the HTTP layer, the command, its client, and the
// helpers that wire the stack for tests and for the generated rules);
// every other package of the module but the tooling (tool) is a lower
// one, a new package included, and may depend on no upper one, directly
// or through another package. Only coordinator and api are forbidden:
// the others import them and nothing imports the others from below.
var (
	upper     = []string{"contextd/coordinator", "contextd/api", "contextd/client", "contextd/cmd/contextd", "contextd/internal/testkit", "contextd/internal/sharedrules", "contextd/internal/sharedrules/gen", "contextd/internal/archtest"}
	forbidden = []string{"contextd/coordinator", "contextd/api"}
	// mustBeLower are packages the check must find among the lower ones
	// (it would otherwise pass vacuously, or a package moved to upper
	// would escape it).
	mustBeLower = []string{"contextd", "contextd/session", "contextd/history", "contextd/notes", "contextd/store", "contextd/archive", "contextd/cut", "contextd/remote", "contextd/migrations", "contextd/inspect", "contextd/discovery", "contextd/buildinfo", "contextd/openapi"}
)

// TestOneWayImports: no lower package (every package of the module but the
// upper ones and the tooling) depends on contextd/coordinator or
// contextd/api, directly or through another package (go list's Deps).
func TestOneWayImports(t *testing.T) {
	var lower []string
	for _, p := range modulePackages(t) {
		if slices.Contains(upper, p.ImportPath) || tool(p.ImportPath) {
			continue
		}
		lower = append(lower, p.ImportPath)
		for _, d := range p.Deps {
			if slices.Contains(forbidden, d) {
				t.Errorf("%s depends on %s: the packages below the coordinator must not import the coordinator or the api (docs/design.md §3)", p.ImportPath, d)
			}
		}
	}
	for _, p := range mustBeLower {
		if !slices.Contains(lower, p) {
			t.Errorf("%s is not among the lower packages checked (%v)", p, lower)
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
