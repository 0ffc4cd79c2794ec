package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadmeFauxRecipe runs the README's "Try it without a model" block as
// a person pastes it (bash, from the repository root), on a free port
// instead of 127.0.0.1:7469, once with each Pi (the block names Pi 0.85.1's
// cli.js; the 1.6.0 run points PI at pi-coding-agent-1.6 as the README
// says), and compares everything it prints with the README's block for
// that Pi ("Pi 0.85.1 prints:" and the one after "Pi 1.6.0"), entry ids,
// window ids and session ids aside (recipeIDs).
func TestReadmeFauxRecipe(t *testing.T) {
	NodeBinary(t) // fails with what to run when the harness is not installed
	root := filepath.Join(Dir(), "..")
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	m := regexp.MustCompile("(?s)### Try it without a model\n.*?```sh\n(.*?)```").FindStringSubmatch(readme)
	if m == nil {
		t.Fatal(`README.md has no "### Try it without a model" section with a sh block`)
	}
	recipe := m[1]
	want := map[string]string{}
	for _, v := range piVersions {
		w := regexp.MustCompile("(?s)Pi " + regexp.QuoteMeta(v.Semver) + "[^\n]*?prints:\n\n```text\n(.*?)```").FindStringSubmatch(readme)
		if w == nil {
			t.Fatalf("README.md shows no output block for Pi %s (\"Pi %s … prints:\" then a text block)", v.Semver, v.Semver)
		}
		want[v.Name] = w[1]
	}
	const pi085 = "@earendil-works/pi-coding-agent/dist/cli.js"
	if !strings.Contains(recipe, pi085) {
		t.Fatalf("the recipe no longer runs %s; update this test", pi085)
	}
	eachPi(t, func(t *testing.T, v piVersion) {
		// Only the PI= line names the Pi; its comment names the other.
		script := regexp.MustCompile(`(?m)^PI=\$PWD/e2e/node_modules/`+regexp.QuoteMeta(pi085)).ReplaceAllString(recipe, "PI=$$PWD/e2e/node_modules/"+v.CLI)
		out := runRecipe(t, root, script)
		if got, exp := recipeIDs(out), recipeIDs(want[v.Name]); got != exp {
			t.Errorf("the recipe on Pi %s prints (ids replaced):\n%s\nthe README shows (ids replaced):\n%s", v.Semver, got, exp)
		}
	})
}

// runRecipe runs script with bash -e from root on a free port instead of
// 127.0.0.1:7469 and returns its combined output; it fails the test when the
// script fails or takes over 4 minutes.
func runRecipe(t *testing.T, root, script string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := strings.ReplaceAll(script, "127.0.0.1:7469", addr)
	if s == script {
		t.Fatal("the recipe no longer names 127.0.0.1:7469; update this test")
	}
	cmd := exec.Command("bash", "-e", "-c", s)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	// Its own process group: a contextd the block started in the
	// background is stopped with it, even when a step fails before kill.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	t.Cleanup(func() {
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	done := make(chan struct{})
	var out []byte
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(4 * time.Minute):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("the recipe did not finish in 4 minutes:\n%s", out)
	}
	if err != nil {
		t.Fatalf("the recipe failed: %v\n%s", err, out)
	}
	return string(out)
}

var (
	uuidRE    = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	entryIDRE = regexp.MustCompile(`\b[0-9a-f]{8}\b`)
)

// recipeIDs replaces what differs from run to run in the recipe's output:
// UUIDs (session and window ids) by <uuid>, then 8-hex entry ids by <id>.
// Both are fixed-width, so the drawing's layout is kept.
func recipeIDs(s string) string {
	return entryIDRE.ReplaceAllString(uuidRE.ReplaceAllString(s, "<uuid>"), "<id>")
}
