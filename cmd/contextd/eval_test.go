package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEval: contextd eval on the committed Tree fixtures: every dropped
// identifier is recovered (coordinator.TestRecoverabilityFixtures pins
// the per-window counts; tree-basic's 46 were checked by hand there).
func TestEval(t *testing.T) {
	p := filepath.Join("..", "..", "testdata", "pi-tree", "tree-basic.jsonl")
	out, _, err := runCLI(t, nil, "eval", p)
	if err != nil {
		t.Fatal(err)
	}
	want := "WINDOW                                  DROPPED  RECOVERED   SHARE\n" +
		"93e1557d-7342-47d3-970c-2383fd5384d7         46         46  100.0%\n" +
		"overall (tree)                               46         46  100.0%\n"
	if out != want {
		t.Errorf("eval output:\n%s\nwant:\n%s", out, want)
	}
	out, _, err = runCLI(t, nil, "eval", "--json", filepath.Join("..", "..", "testdata", "pi-tree", "tree-multi.jsonl"))
	if err != nil || !strings.Contains(out, `"dropped": 182,`) || !strings.Contains(out, `"share": 1`) {
		t.Errorf("eval --json: %v\n%s", err, out)
	}
	// Nothing to evaluate: compact.jsonl has no window boundary, and in
	// Local mode tree-basic's Tree archive closes no Local window. Exit 0,
	// share n/a (JSON null), never 100%.
	noWindows := "WINDOW                                  DROPPED  RECOVERED   SHARE\n" +
		"(no closed windows to evaluate: in local mode no rollover of this branch closed a window)\n" +
		"overall (local)                               0          0     n/a\n"
	for _, args := range [][]string{
		{"eval", filepath.Join("..", "..", "testdata", "pi-sessions", "compact.jsonl")},
		{"eval", "--mode", "local", p},
	} {
		out, _, err = runCLI(t, nil, args...)
		if err != nil || out != noWindows {
			t.Errorf("%v: %v\n%s\nwant:\n%s", args, err, out, noWindows)
		}
	}
	out, _, err = runCLI(t, nil, "eval", "--json", filepath.Join("..", "..", "testdata", "pi-sessions", "compact.jsonl"))
	if want := `  "windows": [],
  "dropped": 0,
  "recovered": 0,
  "share": null
}
`; err != nil || !strings.HasSuffix(out, want) {
		t.Errorf("eval --json with no closed windows: %v\n%s\nwant it to end with\n%s", err, out, want)
	}
	if _, _, err := runCLI(t, nil, "eval"); err == nil || !strings.Contains(err.Error(), "eval takes exactly one session file, got 0 arguments") {
		t.Errorf("no file: %v", err)
	}
	if _, _, err := runCLI(t, nil, "eval", "--mode", "cloud", p); err == nil || !strings.Contains(err.Error(), `--mode "cloud": use auto, local or tree`) {
		t.Errorf("bad mode: %v", err)
	}
}

// TestREADMEEval: the eval table docs/rollover-quality.md shows is what
// contextd eval prints for tree-multi.jsonl.
func TestREADMEEval(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "rollover-quality.md"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, nil, "eval", filepath.Join("..", "..", "testdata", "pi-tree", "tree-multi.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "$ contextd eval testdata/pi-tree/tree-multi.jsonl\n"+out) {
		t.Errorf("docs/rollover-quality.md does not show the current eval of tree-multi.jsonl:\n%s", out)
	}
}
