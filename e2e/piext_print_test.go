package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPiExtensionPrintModeUnreachable: in print mode (`pi -p`) Pi binds no
// UI, so ctx.ui.notify is a no-op; the extension's one-line "contextd not
// reachable" message must still reach the user, on stderr, exactly once,
// while stdout carries only the model's answer.
func TestPiExtensionPrintModeUnreachable(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{{Text: "answer without contextd"}})
		// No contextd is started: the rig's address answers nothing.
		stdout, stderr := r.printMode(t, v, "local", "hello")
		want := "contextd: contextd is not reachable at http://" + r.addr + "; run `contextd serve` in another terminal (or set \"autoStart\": true under \"contextd\" in Pi's settings.json), then /reload\n"
		if got := strings.Count(stderr, want); got != 1 {
			t.Errorf("stderr holds the unreachable message %d times, want once:\n%s\nwant line: %s", got, stderr, want)
		}
		if strings.TrimSpace(stdout) != "answer without contextd" {
			t.Errorf("stdout = %q, want only the model's answer", stdout)
		}
	})
}

// TestPiExtensionPrintModeInvalidMode: an unknown CONTEXTD_MODE in print
// mode (no UI: ctx.ui.notify is a no-op) is still reported, as one line
// on stderr exactly once; the extension stays inactive (it never tries to
// reach contextd, so no "not reachable" line), and stdout carries only the
// model's answer.
func TestPiExtensionPrintModeInvalidMode(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{{Text: "answer with the extension inactive"}})
		stdout, stderr := r.printMode(t, v, "bogus", "hello")
		want := "contextd: unknown contextd mode \"bogus\"; use off, local, tree or remote; the extension is inactive\n"
		if got := strings.Count(stderr, want); got != 1 {
			t.Errorf("stderr holds the invalid-mode message %d times, want once:\n%s\nwant line: %s", got, stderr, want)
		}
		if strings.Contains(stderr, "not reachable") {
			t.Errorf("the inactive extension tried to reach contextd:\n%s", stderr)
		}
		if strings.TrimSpace(stdout) != "answer with the extension inactive" {
			t.Errorf("stdout = %q, want only the model's answer", stdout)
		}
	})
}

// printMode runs `pi -p PROMPT` with the extension and the faux provider,
// CONTEXTD_MODE=mode and the rig's contextd URL, and returns its stdout
// and stderr; a non-zero exit fails the test.
func (r *rig) printMode(t *testing.T, v piVersion, mode, prompt string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(NodeBinary(t), v.cli(), "-p",
		"-e", filepath.Join(Dir(), "..", "extension"), "-e", filepath.Join(Dir(), "faux", "faux-provider.ts"), "--model", "faux/faux-1", prompt)
	cmd.Dir = r.work
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(r.dir, "home"), "PI_CODING_AGENT_DIR="+r.agent, "PI_OFFLINE=1",
		"CONTEXTD_MODE="+mode, "CONTEXTD_URL=http://"+r.addr, "CONTEXTD_E2E_SCRIPT="+r.script, "CONTEXTD_E2E_LOG="+r.logPath)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("pi -p: %v\nstderr:\n%s", err, errOut.String())
	}
	return out.String(), errOut.String()
}
