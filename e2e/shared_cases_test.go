package e2e

// The failing cases of the bug reports, copied into
// testdata/cases (testdata/cases/SOURCES.md), run as they are against this
// checkout: each prints PASS or FAIL last.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runCase runs script (a case's run.sh or pi-run.sh) with args and env and
// fails t unless its last line is PASS.
func runCase(t *testing.T, script string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	// The cases find node next to the Pi installs they are given.
	cmd.Env = append(cmd.Env, "PATH="+filepath.Dir(NodeBinary(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if last := lines[len(lines)-1]; last != "PASS" || err != nil {
		t.Errorf("%s: last line %q (%v), want PASS:\n%s", script, last, err, out)
	}
}

// TestSharedCases runs case-12 (input during new_context; Local, Local
// with steering "all", Tree), case-19 (two new_context calls in one Local
// message) and case-17 (rollovers of a session without rollovers: the HTTP
// case against a contextd started here, and /contextd in print mode), each
// on Pi 0.85.1 and 1.6.0.
func TestSharedCases(t *testing.T) {
	cases := filepath.Join(Dir(), "..", "testdata", "cases")
	bin := contextdBinary(t)
	nm := filepath.Join(Dir(), "node_modules")
	ext := filepath.Join(Dir(), "..", "extension")
	for _, c := range []string{"case-12", "case-19"} {
		t.Run(c, func(t *testing.T) { runCase(t, filepath.Join(cases, c, "run.sh"), nil, bin, nm, ext) })
	}
	t.Run("case-17-pi", func(t *testing.T) { runCase(t, filepath.Join(cases, "case-17", "pi-run.sh"), nil, bin, nm, ext) })
	t.Run("case-17-http", func(t *testing.T) {
		r := newRig(t, piVersions[0], "local", nil)
		r.startContextd()
		tok, err := os.ReadFile(filepath.Join(r.state, "token"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(r.sessions, 0o700); err != nil {
			t.Fatal(err)
		}
		runCase(t, filepath.Join(cases, "case-17", "run.sh"), []string{"BASE=http://" + r.addr, "TOKEN=" + strings.TrimSpace(string(tok)), "SESSIONS_DIR=" + r.sessions})
	})
}
