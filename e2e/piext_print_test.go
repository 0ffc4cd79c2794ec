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
		// The command listens where CONTEXTD_URL points, with the state
		// directory that holds the token; print mode has no /reload (the
		// next run connects).
		want := "contextd is not reachable at http://" + r.addr + "; run `contextd serve --addr " + r.addr + " --state-dir " + r.state + "` in another terminal (or set \"autoStart\": true under \"contextd\" in Pi's settings.json)\n"
		if got := strings.Count(stderr, want); got != 1 || strings.Contains(stderr, "contextd: contextd") {
			t.Errorf("stderr holds the unreachable message %d times, want once, naming contextd once:\n%s\nwant line: %s", got, stderr, want)
		}
		if strings.TrimSpace(stdout) != "answer without contextd" {
			t.Errorf("stdout = %q, want only the model's answer", stdout)
		}
	})
}

// TestPiExtensionPrintModeInvalidMode: an unknown CONTEXTD_MODE (bogus,
// or TREE: a mode in another case) in print
// mode (no UI: ctx.ui.notify is a no-op) is still reported, as one line
// on stderr exactly once; the extension stays inactive (it never tries to
// reach contextd, so no "not reachable" line), and stdout carries only the
// model's answer.
func TestPiExtensionPrintModeInvalidMode(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		// A mode in another case is no mode either: mode names are read
		// exactly, lowercase, wherever they are read (contextd.ModeAdvice).
		for mode, advice := range map[string]string{"bogus": "use off, local, tree or remote", "TREE": "use tree (mode names are lowercase)"} {
			t.Run(mode, func(t *testing.T) {
				r := newRig(t, v, "local", []step{{Text: "answer with the extension inactive"}})
				stdout, stderr := r.printMode(t, v, mode, "hello")
				checkInactive(t, stdout, stderr, "contextd: unknown mode \""+mode+"\"; "+advice+"; the extension is inactive\n")
			})
		}
	})
}

// checkInactive checks a print-mode run whose settings left the extension
// inactive: stderr holds want (one line) once, no attempt to reach
// contextd, and stdout is only the model's answer ("answer with the
// extension inactive", the rig's one step).
func checkInactive(t *testing.T, stdout, stderr, want string) {
	t.Helper()
	if got := strings.Count(stderr, want); got != 1 {
		t.Errorf("stderr holds the line %d times, want once:\n%s\nwant line: %s", got, stderr, want)
	}
	if strings.Contains(stderr, "not reachable") {
		t.Errorf("the inactive extension tried to reach contextd:\n%s", stderr)
	}
	if strings.TrimSpace(stdout) != "answer with the extension inactive" {
		t.Errorf("stdout = %q, want only the model's answer", stdout)
	}
}

// printMode runs `pi -p PROMPT` with the extension and the faux provider,
// CONTEXTD_MODE=mode and the rig's contextd URL, and returns its stdout
// and stderr; a non-zero exit fails the test.
func (r *rig) printMode(t *testing.T, v piVersion, mode, prompt string) (stdout, stderr string) {
	t.Helper()
	return r.printArgs(t, v, mode, prompt)
}

// printArgs is printMode with Pi arguments before the prompt (the last
// argument), such as -c.
func (r *rig) printArgs(t *testing.T, v piVersion, mode string, args ...string) (stdout, stderr string) {
	t.Helper()
	argv := append([]string{v.cli(), "-p",
		"-e", filepath.Join(Dir(), "..", "extension"), "-e", filepath.Join(Dir(), "faux", "faux-provider.ts"), "--model", "faux/faux-1"}, args...)
	cmd := exec.Command(NodeBinary(t), argv...)
	cmd.Dir = r.work
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(r.dir, "home"), "PI_CODING_AGENT_DIR="+r.agent, "PI_OFFLINE=1",
		"CONTEXTD_MODE="+mode, "CONTEXTD_URL=http://"+r.addr, "CONTEXTD_E2E_SCRIPT="+r.script, "CONTEXTD_E2E_LOG="+r.logPath,
		"CONTEXTD_E2E_ANSWERS="+r.answers)
	cmd.Env = append(cmd.Env, r.env...) // the rig's extra env wins (exec takes the last of duplicate keys)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("pi -p: %v\nstderr:\n%s", err, errOut.String())
	}
	return out.String(), errOut.String()
}

// TestPiExtensionStatusWithoutRollovers (case-17): `pi -p hello`, then
// `pi -c -p /contextd` in that session, which has no rollover yet: the
// status reaches the person on stderr and ends with "no rollovers yet"
// (GET …/rollovers answers "rollovers": [], never null; every answer the
// extension got is checked against openapi/openapi.yaml, answers_test.go).
func TestPiExtensionStatusWithoutRollovers(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{{Text: "hello back"}, {Text: "again"}})
		r.startContextd()
		if out, _ := r.printMode(t, v, "local", "hello"); strings.TrimSpace(out) != "hello back" {
			t.Fatalf("pi -p hello: stdout %q", out)
		}
		before := len(r.loggedAnswers())
		_, stderr := r.printArgs(t, v, "local", "-c", "/contextd")
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		want := []string{"contextd mode: local", "contextd: http://" + r.addr + " (healthy)", "window 0 (", "context used in this window: ", "no pending rollover", "no rollovers yet"}
		if len(lines) != len(want) {
			t.Fatalf("stderr has %d lines, want %d:\n%s", len(lines), len(want), stderr)
		}
		for i, w := range want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("stderr line %d = %q, want %q…", i, lines[i], w)
			}
		}
		got := r.loggedAnswers()[before:]
		rollovers := false
		for _, a := range got {
			rollovers = rollovers || (a.Method == "GET" && strings.HasSuffix(a.Path, "/rollovers") && a.Status == 200)
		}
		if !rollovers {
			t.Errorf("the /contextd run logged no GET …/rollovers answer: %+v", got)
		}
	})
}

// TestPiExtensionPrintModeURLWithoutScheme: CONTEXTD_URL=localhost:PORT (no
// http://) is refused at session start with one stderr line saying to add
// http://, and the model still answers on stdout.
func TestPiExtensionPrintModeURLWithoutScheme(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{{Text: "answer without contextd"}})
		bare := strings.Replace(r.addr, "127.0.0.1", "localhost", 1)
		r.env = append(r.env, "CONTEXTD_URL="+bare)
		stdout, stderr := r.printMode(t, v, "local", "hello")
		want := `contextd: the contextd URL (CONTEXTD_URL, or "url" under "contextd" in Pi's settings.json) "` + bare + `" has no http://; write it with one: http://` + bare + "\n"
		if got := strings.Count(stderr, want); got != 1 {
			t.Errorf("stderr holds the no-scheme message %d times, want once:\n%s\nwant line: %s", got, stderr, want)
		}
		if strings.TrimSpace(stdout) != "answer without contextd" {
			t.Errorf("stdout = %q, want only the model's answer", stdout)
		}
	})
}
