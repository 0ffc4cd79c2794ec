package main

// What a client command (healthcheck, sessions) says when nothing listens
// where contextd should be: one sentence naming the address and the
// command that starts contextd there, printed by main without its
// "contextd: " prefix (the sentence names contextd itself).

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"contextd/client"
)

// notRunning is the error of a client command whose contextd does not
// run: "contextd is not running at LABEL; start it with `SERVE`".
type notRunning struct {
	err   *client.NotRunningError
	serve string
}

func (e notRunning) Error() string {
	return e.err.Error() + "; start it with `" + e.serve + "`"
}

// Unwrap returns the *client.NotRunningError.
func (e notRunning) Unwrap() error { return e.err }

// explainNotRunning turns a *client.NotRunningError in err into
// notRunning, whose command starts contextd with stateDir and, when the
// address was given (--addr, CONTEXTD_ADDR), listening on addr; other
// errors are returned as they are. A contextd found through the discovery
// file writes a new one when started again, so its old address is not
// repeated.
func explainNotRunning(err error, stateDir, addr string, addrGiven bool) error {
	var nr *client.NotRunningError
	if !errors.As(err, &nr) {
		return err
	}
	if !addrGiven {
		addr = defaultAddr
	}
	home, _ := os.UserHomeDir()
	return notRunning{err: nr, serve: serveCommand(stateDir, addr, home)}
}

// shellSafe matches an argument a POSIX shell takes as it is
// (extension/src/client.ts serveCommand uses the same class).
var shellSafe = regexp.MustCompile(`^[\w@%+=:,./-]+$`)

// serveCommand is the command that starts contextd for stateDir on addr
// from any terminal: `contextd serve`, with `--addr ADDR` unless addr is
// defaultAddr and `--state-dir DIR` unless DIR is contextd's own default
// without environment, HOME/.pi/agent/contextd (another terminal may lack
// CONTEXTD_STATE_DIR or PI_CODING_AGENT_DIR). The rule is the extension's
// (extension/src/client.ts serveCommand); a DIR with characters a shell
// treats specially is single-quoted.
func serveCommand(stateDir, addr, home string) string {
	cmd := "contextd serve"
	if addr != defaultAddr {
		cmd += " --addr " + shellQuote(addr)
	}
	if stateDir != filepath.Join(home, ".pi", "agent", "contextd") {
		cmd += " --state-dir " + shellQuote(stateDir)
	}
	return cmd
}

// shellQuote returns s as a POSIX shell reads it back: as it is when
// shellSafe, else single-quoted.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// errorLine is the line main prints for err: a notRunning sentence as it
// is, anything else after "contextd: ".
func errorLine(err error) string {
	var nr notRunning
	if errors.As(err, &nr) {
		return err.Error()
	}
	return "contextd: " + err.Error()
}
