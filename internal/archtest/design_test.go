package archtest

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// designImports reads the table of docs/design.md §3 "Packages and their
// imports": for each row, the package's import path (first column) and
// the module packages its Imports column names ("nothing": none); a row
// whose Imports column names no package and is not "nothing" ("everything
// it wires") maps to nil, which the caller skips.
func designImports(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## 3. Packages and their imports\n")
	if !ok {
		t.Fatal(`docs/design.md has no "## 3. Packages and their imports" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	tick := regexp.MustCompile("`([^`]+)`")
	rows := map[string][]string{}
	for line := range strings.SplitSeq(sec, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(line, "|") {
			continue
		}
		m := tick.FindStringSubmatch(cells[1])
		if m == nil {
			continue // the header and its rule
		}
		path := modulePath(m[1])
		imports := strings.TrimSpace(cells[3])
		switch names := tick.FindAllStringSubmatch(imports, -1); {
		case imports == "nothing":
			rows[path] = []string{}
		case names == nil:
			rows[path] = nil
		default:
			for _, n := range names {
				rows[path] = append(rows[path], modulePath(n[1]))
			}
		}
	}
	if len(rows) < 15 {
		t.Fatalf("docs/design.md §3: %d rows read: the check would pass vacuously", len(rows))
	}
	return rows
}

// modulePath is the import path of a package as the table names it:
// `contextd` is the root, `store/` or `internal/testkit` a directory.
func modulePath(name string) string {
	name = strings.TrimSuffix(name, "/")
	if name == "contextd" {
		return name
	}
	return "contextd/" + name
}

// TestImportsAsDesigned: every package of the module but the tooling
// (tool) has a row in the table of docs/design.md §3, and its imports
// inside the module (non-test files, go list) are exactly those its row
// names; cmd/contextd's row says "everything it wires" and is not
// compared. Every row names a package that exists.
func TestImportsAsDesigned(t *testing.T) {
	rows := designImports(t)
	seen := map[string]bool{}
	for _, p := range modulePackages(t) {
		if tool(p.ImportPath) {
			continue
		}
		seen[p.ImportPath] = true
		want, ok := rows[p.ImportPath]
		if !ok {
			t.Errorf("%s has no row in docs/design.md §3 (it imports %v)", p.ImportPath, inModule(p.Imports))
			continue
		}
		if want == nil {
			continue
		}
		got := inModule(p.Imports)
		slices.Sort(got)
		want = slices.Sorted(slices.Values(want))
		if !slices.Equal(got, want) {
			t.Errorf("%s imports %v; docs/design.md §3 says %v", p.ImportPath, got, want)
		}
	}
	for path := range rows {
		if !seen[path] {
			t.Errorf("docs/design.md §3 has a row for %s, which is no package of the module", path)
		}
	}
}
