package archtest

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// pkg is what the tests read of one package of the module from go list:
// its import path, its direct imports and every package it depends on,
// test files left out.
type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// modulePackages lists every package of the module (go list ./... from the
// repository root, build tag sqlite_fts5), in go list's order.
func modulePackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", "sqlite_fts5", "-json=ImportPath,Imports,Deps", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list ./...: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list ./...: %v", err)
	}
	var ps []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list ./... output: %v", err)
		}
		ps = append(ps, p)
	}
	if len(ps) < 20 {
		t.Fatalf("go list ./... listed %d packages: the checks would pass vacuously", len(ps))
	}
	return ps
}

// inModule returns the imports of the module among paths (contextd and
// contextd/…), in their order.
func inModule(paths []string) []string {
	var in []string
	for _, p := range paths {
		if p == "contextd" || strings.HasPrefix(p, "contextd/") {
			in = append(in, p)
		}
	}
	return in
}

// tool reports whether p is test or benchmark tooling (bench/…, e2e,
// reliability): programs and tests that drive contextd from outside,
// importing what they drive, with no place in the layering.
func tool(p string) bool {
	return strings.HasPrefix(p, "contextd/bench/") || p == "contextd/e2e" || p == "contextd/reliability"
}
