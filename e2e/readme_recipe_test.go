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
// instead of 127.0.0.1:7469, and checks what the README says it prints:
// Pi's answer, the request log whose fourth model call holds only the new
// boundary, and two windows on the session's active path.
func TestReadmeFauxRecipe(t *testing.T) {
	NodeBinary(t) // fails with what to run when the harness is not installed
	root := filepath.Join(Dir(), "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)### Try it without a model\n.*?```sh\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal(`README.md has no "### Try it without a model" section with a sh block`)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	script := strings.ReplaceAll(string(m[1]), "127.0.0.1:7469", addr)
	if script == string(m[1]) {
		t.Fatal("the recipe no longer names 127.0.0.1:7469; update this test")
	}
	cmd := exec.Command("bash", "-e", "-c", script)
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
	text := string(out)
	for _, want := range []string{
		"The port is 8443.\n",
		"turn 0 user user\nturn 1 user user assistant toolResult\nturn 2 user user assistant toolResult assistant toolResult\nturn 3 user\nturn 4 user assistant toolResult\n",
		"windows on the active path: 2\n",
		"── window #0 ", "── window #1 ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the recipe's output lacks %q:\n%s", want, text)
		}
	}
}
