package e2e

// The extension's settings as a person writes them in Pi's settings.json
// (docs/pi-extension.md, settings table), read by real Pi in print mode.

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestPiExtensionSettingsUnknownKey: a typo in a key of the "contextd"
// object ("mdoe" for "mode") is not dropped without a word: one line on
// stderr names the key, the setting it is closest to and every setting,
// and the extension stays inactive (never another mode than the one the
// person meant); stdout is only the model's answer.
func TestPiExtensionSettingsUnknownKey(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{{Text: "answer with the extension inactive"}})
		r.writeSettings(map[string]any{"contextd": map[string]any{"mdoe": "tree"}})
		stdout, stderr := r.printMode(t, v, "", "hello")
		want := `contextd: "contextd": {"mdoe": …} in ` + filepath.Join(r.agent, "settings.json") + ` is not a setting; did you mean "mode"? ` +
			"use mode, url, stateDir, tokenFile, binary, autoStart, agentName, notesGuard, reminderThresholds or codexSchemaFile; the extension is inactive\n"
		checkInactive(t, stdout, stderr, want)
	})
}

// TestPiExtensionSettingsModeCase: "mode": "Tree" in settings.json is
// refused as CONTEXTD_MODE=TREE and /contextd mode TREE are (mode names
// are read exactly, lowercase: contextd.ModeAdvice): one line on stderr
// names the lowercase mode, the extension stays inactive (never Tree
// without a word, never Local), stdout is only the model's answer.
func TestPiExtensionSettingsModeCase(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{{Text: "answer with the extension inactive"}})
		r.writeSettings(map[string]any{"contextd": map[string]any{"mode": "Tree"}})
		stdout, stderr := r.printMode(t, v, "", "hello")
		want := "contextd: unknown mode \"Tree\"; use tree (mode names are lowercase); the extension is inactive\n"
		checkInactive(t, stdout, stderr, want)
	})
}

// TestPiExtensionSettingsHomeStateDir: "stateDir": "~/cdstate" in
// settings.json is the home directory's cdstate, as Pi reads its own paths
// (a leading ~/ expanded): the extension finds the contextd serving that
// state directory through its discovery file and token, registers the
// session and sends window 0 first, with nothing said on stderr.
func TestPiExtensionSettingsHomeStateDir(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{{Text: "answer in window 0"}})
		r.state = filepath.Join(r.dir, "home", "cdstate")
		r.writeSettings(map[string]any{"contextd": map[string]any{"stateDir": "~/cdstate"}})
		// No explicit URL: the discovery file of the state directory is the address.
		r.env = append(r.env, "CONTEXTD_URL=")
		r.startContextd()
		stdout, stderr := r.printMode(t, v, "", "hello")
		if strings.Contains(stderr, "contextd") {
			t.Errorf("stderr names contextd:\n%s", stderr)
		}
		if strings.TrimSpace(stdout) != "answer in window 0" {
			t.Errorf("stdout = %q, want only the model's answer", stdout)
		}
		reqs := r.requests()
		if len(reqs) != 1 || len(reqs[0].conversation()) == 0 || !strings.Contains(reqs[0].conversation()[0].text(), "<context_window>") {
			t.Fatalf("the request does not start with window 0: %d requests", len(reqs))
		}
		var list struct {
			Sessions []struct {
				ID string `json:"id"`
			} `json:"sessions"`
		}
		r.api("GET", "/v1/sessions", nil, &list)
		if len(list.Sessions) != 1 {
			t.Errorf("contextd knows %d sessions, want the one Pi registered", len(list.Sessions))
		}
	})
}

// TestPiExtensionSettingsStateDirServe: with "stateDir" set to a directory
// of the person's choosing and no contextd, the one stderr line names the
// command that starts contextd for that directory from any terminal
// (`contextd serve --state-dir DIR`: a plain `contextd serve` would serve
// ~/.pi/agent/contextd, which the extension does not read); after running
// exactly that, the next Pi connects.
func TestPiExtensionSettingsStateDirServe(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{{Text: "answer"}}) // each Pi process plays the script from its start
		r.state = filepath.Join(r.dir, "mystate")
		r.writeSettings(map[string]any{"contextd": map[string]any{"stateDir": r.state}})
		r.env = append(r.env, "CONTEXTD_URL=")
		stdout, stderr := r.printMode(t, v, "", "hello")
		want := "contextd is not running for the state directory " + r.state + " (no " + filepath.Join(r.state, "contextd.json") + "); run `contextd serve --state-dir " + r.state + "` in another terminal"
		if got := strings.Count(stderr, want); got != 1 {
			t.Errorf("stderr holds the line %d times, want once:\n%s\nwant: %s", got, stderr, want)
		}
		if strings.TrimSpace(stdout) != "answer" {
			t.Errorf("stdout = %q, want only the model's answer", stdout)
		}
		r.startContextd() // contextd serve --state-dir r.state (and the rig's address and sessions directory)
		stdout, stderr = r.printMode(t, v, "", "hello again")
		if strings.Contains(stderr, "contextd") || strings.TrimSpace(stdout) != "answer" {
			t.Errorf("after contextd serve --state-dir: stdout %q, stderr:\n%s", stdout, stderr)
		}
		// The first Pi ran without contextd; the second starts with window 0.
		reqs := r.requests()
		if len(reqs) != 2 || strings.Contains(reqs[0].conversation()[0].text(), "<context_window>") || !strings.Contains(reqs[1].conversation()[0].text(), "<context_window>") {
			t.Errorf("want the second request only to start with window 0; %d requests", len(reqs))
		}
	})
}
