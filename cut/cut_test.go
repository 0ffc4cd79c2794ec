package cut

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Each case's expected list was written by hand from the extraction rules
// in the package doc.
func TestExtract(t *testing.T) {
	cases := []struct {
		name string
		text string
		tool bool
		want []Identifier
	}{
		{"bash output", "cache at /srv/cache/shard-4711.db\n", true, []Identifier{{KindPath, "/srv/cache/shard-4711.db"}}},
		{"urls, paths, commit", "See https://github.com/x/y/pull/12. Edited src/app/main.go and ./notes, commit 3f9a2c1d.", false, []Identifier{
			{KindURL, "https://github.com/x/y/pull/12"}, {KindPath, "src/app/main.go"}, {KindCommit, "3f9a2c1d"},
		}},
		{"uuid is no commit", "window 019f3776-3d33-70c6-baa2-5155ff71613c and a1b2c3d4e5 but not abcdefa nor 12345678", false, []Identifier{{KindCommit, "a1b2c3d4e5"}}},
		{"quantities", "took 350 ms, used 1.5 GB and 42% of 2048 tokens; 3 apples", false, []Identifier{
			{KindQuantity, "350 ms"}, {KindQuantity, "1.5 GB"}, {KindQuantity, "42%"}, {KindQuantity, "2048 tokens"},
		}},
		{"errors", "ok\n  Error: ENOENT: no such file or directory, open 'x'\nerror\n", true, []Identifier{
			{KindError, "Error: ENOENT: no such file or directory, open 'x'"},
		}},
		{"names in tool results only", "func (s *Service) Rollovers(ctx) {}\nexport function settleRollover() {}\nclass Foo {}\nlet ab = 1", true, []Identifier{
			{KindName, "Rollovers"}, {KindName, "settleRollover"}, {KindName, "Foo"},
		}},
		{"errors, not error handling code", "--- FAIL: TestRollover (0.02s)\nreturn nil, fmt.Errorf(\"emit %s: %w\", id, err)\npanic: runtime error: index out of range [3] with length 3\nTypeError: x is not a function", false, []Identifier{
			{KindQuantity, "0.02s"}, {KindError, "--- FAIL: TestRollover (0.02s)"}, {KindError, "panic: runtime error: index out of range [3] with length 3"}, {KindError, "TypeError: x is not a function"},
		}},
		{"no names outside tools", "func Hidden() {}", false, nil},
		{"and/or is no path, /tmp alone neither", "and/or /tmp is fine, /etc/hosts is a path", false, []Identifier{{KindPath, "/etc/hosts"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if d := cmp.Diff(c.want, Extract(c.text, c.tool)); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}
