package sharedrules

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"contextd/coordinator"
)

// TestTypeScriptIsCurrent: the committed extension/src/generated/rules.ts
// is what TypeScript renders from the Go sources now.
func TestTypeScriptIsCurrent(t *testing.T) {
	want, err := TypeScript()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../extension/src/generated/rules.ts")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("extension/src/generated/rules.ts is stale: run `go generate ./internal/sharedrules`")
	}
}

// TestCases: the entries judged by Go include boundaries and non-boundaries,
// so the extension's agreement test can fail both ways; the samples hold
// the guidance text.
func TestCases(t *testing.T) {
	cases, err := Cases()
	if err != nil {
		t.Fatal(err)
	}
	yes, no := 0, 0
	for _, c := range cases {
		if c.Boundary {
			yes++
		} else {
			no++
		}
	}
	if yes != 1 || no != len(cases)-1 {
		t.Errorf("boundaries %d, non-boundaries %d; want 1 and %d", yes, no, len(cases)-1)
	}
	for _, s := range Samples() {
		if !strings.HasPrefix(s.Content, "<context_window_guidance>\n"+coordinator.Guidance+"\n</context_window_guidance>\n\n<context_window>\nAgent name: "+s.Agent+"\n") {
			t.Errorf("sample for %s does not start with the guidance block: %q", s.Agent, s.Content)
		}
	}
}
