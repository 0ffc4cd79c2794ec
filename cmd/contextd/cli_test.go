package main

import (
	"bytes"
	"context"
	"contextd/client"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"contextd/internal/testkit"
)

// runCLI runs the command line with a fixed environment and returns
// stdout, stderr and the error main would exit 1 on.
func runCLI(t *testing.T, envm map[string]string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(t.Context(), args, env(envm), &out, &errb)
	return out.String(), errb.String(), err
}

// TestHelpListsCommands: contextd --help (and -h, help) lists every
// subcommand on stdout and exits 0.
func TestHelpListsCommands(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		out, _, err := runCLI(t, nil, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, c := range []string{"serve", "reindex", "sessions", "inspect", "stop", "healthcheck", "openapi", "version", "help"} {
			if !regexp.MustCompile(`(?m)^  ` + c + ` +\S`).MatchString(out) {
				t.Errorf("%v does not list %q:\n%s", args, c, out)
			}
		}
	}
}

// TestStateDirHelpNamesItsDefault: every command with --state-dir says
// where the directory is when neither the flag nor CONTEXTD_STATE_DIR is
// given (defaultStateDir: $PI_CODING_AGENT_DIR/contextd, else
// ~/.pi/agent/contextd), so `contextd sessions` and `contextd stop` read
// alike to a person whose Pi runs with PI_CODING_AGENT_DIR.
func TestStateDirHelpNamesItsDefault(t *testing.T) {
	const want = "(env CONTEXTD_STATE_DIR; default $PI_CODING_AGENT_DIR/contextd or ~/.pi/agent/contextd)"
	for _, cmd := range []string{"serve", "reindex", "sessions", "healthcheck", "stop"} {
		out, _, err := runCLI(t, nil, cmd, "--help")
		if err != nil {
			t.Fatalf("%s --help: %v", cmd, err)
		}
		i := strings.Index(out, "  -state-dir string\n")
		if i < 0 {
			t.Fatalf("%s --help has no -state-dir:\n%s", cmd, out)
		}
		block := out[i+2:]
		if j := strings.Index(block, "\n  -"); j >= 0 {
			block = block[:j]
		}
		if !strings.Contains(block, want) {
			t.Errorf("%s --help: -state-dir says\n%s\nwant it to contain %q", cmd, block, want)
		}
	}
}

// TestCommandHelpListsOnlyItsFlags: `contextd CMD --help` and `contextd
// help CMD` print the command's usage with exactly its own flags, on
// stdout, and exit 0.
func TestCommandHelpListsOnlyItsFlags(t *testing.T) {
	want := map[string][]string{
		"serve": {"addr", "allow-non-loopback", "allowed-hosts", "allowed-origins", "codex-base-url", "default-mode", "index-max-bytes", "log-format", "log-level",
			"max-body-bytes", "max-conns", "max-line-bytes", "memory-limit", "path-map", "sessions-dir", "socket", "state-dir"},
		"reindex":     {"log-format", "log-level", "max-line-bytes", "memory-limit", "sessions-dir", "state-dir"},
		"sessions":    {"addr", "state-dir"},
		"inspect":     {"expand", "max-line-bytes", "tree"},
		"eval":        {"json", "mode"},
		"healthcheck": {"addr", "quiet", "state-dir", "timeout"},
		"stop":        {"state-dir", "timeout"},
		"openapi":     {"format", "openapi-version"},
		"version":     nil,
	}
	flagLine := regexp.MustCompile(`(?m)^  -([a-z-]+)`)
	for cmd, flags := range want {
		for _, args := range [][]string{{cmd, "--help"}, {"help", cmd}} {
			out, _, err := runCLI(t, nil, args...)
			if err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			if !strings.HasPrefix(out, "Usage: contextd "+cmd+" [flags]") {
				t.Errorf("%v: usage line: %q", args, strings.SplitN(out, "\n", 2)[0])
			}
			var got []string
			for _, m := range flagLine.FindAllStringSubmatch(out, -1) {
				got = append(got, m[1])
			}
			slices.Sort(got)
			if !slices.Equal(got, flags) {
				t.Errorf("%v lists flags %v, want %v", args, got, flags)
			}
		}
	}
}

// TestExtraArgumentsRefused: no command accepts positional arguments it
// does not use; inspect takes exactly one file.
func TestExtraArgumentsRefused(t *testing.T) {
	dir := t.TempDir()
	fixture := filepath.Join("..", "..", "testdata", "pi-tree", "tree-basic.jsonl")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--sessions-dir", dir, "extra"}, `contextd serve takes no arguments, got ["extra"]`},
		{[]string{"--sessions-dir", dir, "extra"}, `contextd serve takes no arguments, got ["extra"]`},
		{[]string{"reindex", "--sessions-dir", dir, "--state-dir", dir, "x", "y"}, `contextd reindex takes no arguments, got ["x" "y"]`},
		{[]string{"sessions", "x"}, `contextd sessions takes no arguments`},
		{[]string{"healthcheck", "x"}, `contextd healthcheck takes no arguments`},
		{[]string{"openapi", "json"}, `contextd openapi takes no arguments`},
		{[]string{"version", "x"}, `contextd version takes no arguments`},
		{[]string{"--version", "x"}, `--version takes no arguments`},
		{[]string{"inspect"}, "inspect takes exactly one session file, got 0 arguments"},
		{[]string{"inspect", fixture, fixture}, "inspect takes exactly one session file, got 2 arguments"},
		{[]string{"help", "serve", "inspect"}, "help takes at most one command"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
	} {
		_, _, err := runCLI(t, nil, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want one containing %q", tc.args, err, tc.want)
		}
	}
	// Nothing was created by the refused commands.
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("refused commands wrote %d files into %s", len(ents), dir)
	}
}

// TestNonsenseValuesRefused: values that cannot work are refused before
// anything starts, with the flag named.
func TestNonsenseValuesRefused(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--sessions-dir", dir, "--state-dir", filepath.Join(dir, "state")}
	fixture := filepath.Join("..", "..", "testdata", "pi-tree", "tree-basic.jsonl")
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, append([]string{"serve", "--memory-limit", "-1"}, base...), "--memory-limit -1 is negative"},
		{nil, append([]string{"reindex", "--memory-limit", "-1"}, base...), "--memory-limit -1 is negative"},
		{nil, append([]string{"serve", "--memory-limit", "1000"}, base...), "--memory-limit 1000 is under 16 MiB"},
		{map[string]string{"CONTEXTD_MEMORY_LIMIT": "lots"}, append([]string{"serve"}, base...), `CONTEXTD_MEMORY_LIMIT="lots" is not a size`},
		{nil, append([]string{"serve", "--index-max-bytes", "lots"}, base...), `invalid value "lots" for flag -index-max-bytes: "lots" is not a size`},
		{nil, append([]string{"serve", "--index-max-bytes", "-2GiB"}, base...), `--index-max-bytes -2147483648 is negative`},
		{map[string]string{"CONTEXTD_INDEX_MAX_BYTES": "big"}, append([]string{"serve"}, base...), `CONTEXTD_INDEX_MAX_BYTES="big" is not a size`},
		{map[string]string{"CONTEXTD_MAX_CONNS": "many"}, append([]string{"serve"}, base...), `CONTEXTD_MAX_CONNS="many" is not an integer`},
		{map[string]string{"CONTEXTD_ALLOW_NON_LOOPBACK": "yes please"}, append([]string{"serve"}, base...), `CONTEXTD_ALLOW_NON_LOOPBACK="yes please": set 1 or 0`},
		{nil, append([]string{"serve", "--max-conns", "-1"}, base...), "--max-conns -1 is negative"},
		{nil, append([]string{"serve", "--max-body-bytes", "0"}, base...), "--max-body-bytes 0: use at least 1024"},
		{nil, append([]string{"serve", "--max-line-bytes", "10"}, base...), "--max-line-bytes 10: use at least 1024"},
		{nil, append([]string{"serve", "--addr", "7467"}, base...), `--addr "7467" is not host:port`},
		{nil, append([]string{"serve", "--default-mode", "weird"}, base...), `--default-mode "weird" is not a mode; use off, local, tree or remote`},
		{map[string]string{"CONTEXTD_DEFAULT_MODE": "weird"}, append([]string{"serve"}, base...), `CONTEXTD_DEFAULT_MODE="weird" is not a mode; use off, local, tree or remote`},
		{map[string]string{"CONTEXTD_DEFAULT_MODE": "TREE"}, append([]string{"serve"}, base...), `CONTEXTD_DEFAULT_MODE="TREE" is not a mode; use tree (mode names are lowercase)`},
		// The flag wins over the variable, and the message names the flag.
		{map[string]string{"CONTEXTD_DEFAULT_MODE": "tree"}, append([]string{"serve", "--default-mode", "weird"}, base...), `--default-mode "weird" is not a mode`},
		{map[string]string{"CONTEXTD_LOG_FORMAT": "xml"}, append([]string{"serve"}, base...), `CONTEXTD_LOG_FORMAT="xml": use text or json`},
		{map[string]string{"CONTEXTD_LOG_LEVEL": "loud"}, append([]string{"reindex"}, base...), `CONTEXTD_LOG_LEVEL="loud": use debug, info, warn or error`},
		{map[string]string{"CONTEXTD_MEMORY_LIMIT": "-1"}, append([]string{"serve"}, base...), "CONTEXTD_MEMORY_LIMIT=-1 is negative"},
		{map[string]string{"CONTEXTD_MAX_CONNS": "-2"}, append([]string{"serve"}, base...), "CONTEXTD_MAX_CONNS=-2 is negative"},
		{map[string]string{"CONTEXTD_ADDR": "7467"}, append([]string{"serve"}, base...), `CONTEXTD_ADDR="7467" is not host:port`},
		{map[string]string{"CONTEXTD_CODEX_BASE_URL": "ftp://x"}, append([]string{"serve"}, base...), `CONTEXTD_CODEX_BASE_URL (the value of --codex-base-url): --codex-base-url "ftp://x" is not an absolute http(s) URL`},
		{map[string]string{"CONTEXTD_PATH_MAP": "/a"}, append([]string{"serve"}, base...), `CONTEXTD_PATH_MAP (the value of --path-map): --path-map "/a": write HOST=CONTAINER`},
		{nil, append([]string{"serve", "--log-format", "xml"}, base...), `--log-format "xml": use text or json`},
		{nil, append([]string{"serve", "--log-level", "loud"}, base...), `--log-level "loud"`},
		{nil, append([]string{"serve", "--path-map", "/home/me/sessions"}, base...), `--path-map "/home/me/sessions": write HOST=CONTAINER`},
		{nil, append([]string{"serve", "--sessions-dir", ""}, "--state-dir", dir), "--sessions-dir and --state-dir must not be empty"},
		{nil, []string{"healthcheck", "--timeout", "0s"}, "--timeout 0s: use a positive duration"},
		{nil, []string{"healthcheck", "--addr", "localhost"}, `--addr "localhost"`},
		{map[string]string{"CONTEXTD_ADDR": "localhost"}, []string{"sessions"}, `CONTEXTD_ADDR (the value of --addr): --addr "localhost"`},
		{nil, []string{"openapi", "--format", "xml"}, `--format "xml": use yaml or json`},
		{nil, []string{"inspect", "--max-line-bytes", "5", fixture}, "--max-line-bytes 5: use at least 1024"},
		{nil, []string{"inspect", "--expand", fixture}, "--expand only applies to --tree"},
		{nil, []string{"serve", "--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
	} {
		_, _, err := runCLI(t, tc.env, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: err = %v, want one containing %q", tc.env, tc.args, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "state")); err == nil {
		t.Error("a refused serve created the state directory")
	}
}

// TestVersion: --version and `version` print one line with the Go
// toolchain of this build and the linked SQLite 3.x.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, _, err := runCLI(t, nil, args...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out, "contextd ") || !strings.Contains(out, " "+runtime.Version()+" sqlite 3.") || strings.Count(out, "\n") != 1 {
			t.Errorf("%v printed %q", args, out)
		}
	}
}

// TestInspectRefusesNonSession: inspect exits non-zero (run returns an
// error) on files that are not Pi sessions, naming the file.
func TestInspectRefusesNonSession(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"a.jsonl": `{"type":"message"}` + "\n", "b.jsonl": ""} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o600)
		for _, args := range [][]string{{"inspect", p}, {"inspect", "--tree", p}} {
			out, _, err := runCLI(t, nil, args...)
			if err == nil || !strings.Contains(err.Error(), p+": not a Pi session file") {
				t.Errorf("%v: err = %v, out %q", args, err, out)
			}
		}
	}
	if _, _, err := runCLI(t, nil, "inspect", dir); err == nil || !strings.Contains(err.Error(), "is not a regular file") {
		t.Errorf("inspect DIR: err = %v", err)
	}
}

// TestInspectTreeCLI: `contextd inspect --tree` prints the golden drawing
// of the inspect package (inspect/testdata), byte for byte.
func TestInspectTreeCLI(t *testing.T) {
	out, _, err := runCLI(t, nil, "inspect", "--tree", filepath.Join("..", "..", "testdata", "pi-tree", "tree-bad-manifests-small.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "inspect", "testdata", "tree-bad-manifests-small.tree.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("inspect --tree differs from the golden drawing:\n%s", out)
	}
}

// startServe runs serve in the background on 127.0.0.1:0 (args must not
// name --addr and must name --state-dir) and waits until it answers
// /healthz at the address its discovery file names. It returns the log,
// that address (host:port) and a stop function that waits for the
// graceful shutdown.
func startServe(t *testing.T, envm map[string]string, args ...string) (*testkit.LockedBuffer, string, func()) {
	t.Helper()
	state := ""
	for i, a := range args {
		switch a {
		case "--addr":
			t.Fatal("startServe picks the address itself")
		case "--state-dir":
			state = args[i+1]
		}
	}
	if state == "" {
		t.Fatal("startServe needs --state-dir (its discovery file names the address)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &testkit.LockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), env(envm), io.Discard, logs)
	}()
	stop := func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no shutdown within 10 s")
		}
	}
	url := testkit.WaitServing(t, state, os.Getpid(), 10*time.Second, logs.String)
	return logs, strings.TrimPrefix(url, "http://"), stop
}

// TestStartupLogAndMistypedSessionsDir: the start-up log names the token
// file, the state directory and the sessions directory with where it came
// from (a `contextd --sessions-dir /tmp` run by accident says what it
// uses); a sessions
// directory that does not exist is named in the warning, with the flag
// that set it.
func TestStartupLogAndMistypedSessionsDir(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "sesions")
	state := filepath.Join(dir, "state")
	logs, _, stop := startServe(t, nil, "--sessions-dir", typo, "--state-dir", state)
	stop()
	log := logs.String()
	for _, want := range []string{
		"level=WARN msg=\"sessions directory " + typo + " (from --sessions-dir) does not exist; it is indexed once Pi creates it. If that path is mistyped, pass the folder Pi writes sessions to with --sessions-dir\"",
		"token_file=" + filepath.Join(state, "token"),
		"state_dir=" + state,
		"sessions_dir=" + typo,
		"sessions_dir_from=--sessions-dir",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	// From the environment, the warning names the variable.
	logs, _, stop = startServe(t, map[string]string{"PI_CODING_AGENT_SESSION_DIR": typo}, "--state-dir", state)
	stop()
	if want := "sessions directory " + typo + " (from $PI_CODING_AGENT_SESSION_DIR) does not exist"; !strings.Contains(logs.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, logs.String())
	}
}

// TestHealthcheckAndSessions: healthcheck exits 0 against a running
// contextd (an address of 0.0.0.0 is called on 127.0.0.1) and 1 when
// nothing answers; sessions prints the README's table for the Tree
// fixtures (entry counts and archives from testdata/pi-tree/README.md).
func TestHealthcheckAndSessions(t *testing.T) {
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	os.MkdirAll(filepath.Join(sessions, "pi-tree"), 0o755)
	for _, f := range []string{"tree-basic.jsonl", "tree-bad-manifests-small.jsonl"} {
		b, _ := os.ReadFile(filepath.Join("..", "..", "testdata", "pi-tree", f))
		os.WriteFile(filepath.Join(sessions, "pi-tree", f), b, 0o600)
	}
	b, _ := os.ReadFile(filepath.Join("..", "..", "testdata", "pi-sessions", "compact.jsonl"))
	os.MkdirAll(filepath.Join(sessions, "pi-sessions"), 0o755)
	os.WriteFile(filepath.Join(sessions, "pi-sessions", "compact.jsonl"), b, 0o600)
	state := filepath.Join(dir, "state")
	_, addr, stop := startServe(t, nil, "--sessions-dir", sessions, "--state-dir", state)
	defer stop()

	out, _, err := runCLI(t, nil, "healthcheck", "--addr", addr)
	if err != nil || out != "ok: contextd at http://"+addr+" is healthy\n" {
		t.Errorf("healthcheck: %q, %v", out, err)
	}
	port := addr[strings.LastIndex(addr, ":"):]
	if out, _, err := runCLI(t, map[string]string{"CONTEXTD_ADDR": "0.0.0.0" + port}, "healthcheck", "--quiet"); err != nil || out != "" {
		t.Errorf("healthcheck via CONTEXTD_ADDR=0.0.0.0%s: %q, %v", port, out, err)
	}
	if _, _, err := runCLI(t, nil, "healthcheck", "--addr", closedAddr(t)); err == nil || !strings.Contains(err.Error(), "contextd is not running at http://") {
		t.Errorf("healthcheck on a closed port: %v", err)
	}

	// The listing indexes nothing: each file by its header and size.
	out, _, err = runCLI(t, map[string]string{"CONTEXTD_STATE_DIR": state}, "sessions", "--addr", addr)
	if err != nil {
		t.Fatal(err)
	}
	unused := `pi-sessions/compact.jsonl               v1  local     not indexed  1.5 MiB
pi-tree/tree-bad-manifests-small.jsonl  v3  local     not indexed  227 KiB
pi-tree/tree-basic.jsonl                v3  local     not indexed  130 KiB
`
	if out != unused {
		t.Errorf("sessions printed before use\n%s\nwant\n%s", out, unused)
	}
	// Once used (each read by GET /v1/sessions/{id}), each is summarized
	// whole.
	token, err := client.ReadToken(filepath.Join(state, "token"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"2638daee-0588-4baa-bd33-68b4c002818e", "019f4c92-9f78-7955-a120-9eba5b90f6f1", "019f3d67-b1fd-7c0a-87d5-9b46277407ba"} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/sessions/"+id, nil)
		req.Header.Set(client.TokenHeader, token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/sessions/%s: %d", id, resp.StatusCode)
		}
	}
	out, _, err = runCLI(t, map[string]string{"CONTEXTD_STATE_DIR": state}, "sessions", "--addr", addr)
	if err != nil {
		t.Fatal(err)
	}
	want := `pi-sessions/compact.jsonl               v1  local    1011 entries  skipped {"invalid_json":1}, problem line 1013
pi-tree/tree-bad-manifests-small.jsonl  v3  tree      118 entries  1 archive, 4 invalid_archive problems (e.g. "35464eaa: from_id_mismatch")
pi-tree/tree-basic.jsonl                v3  tree       62 entries  1 archive
`
	if out != want {
		t.Errorf("sessions printed\n%s\nwant\n%s", out, want)
	}
	if _, _, err := runCLI(t, nil, "sessions", "--addr", addr, "--state-dir", dir); err == nil || !strings.Contains(err.Error(), "(no token file "+filepath.Join(dir, "token")+"); start one with `contextd serve`, or pass the --state-dir of the running contextd") {
		t.Errorf("sessions without a token file: %v", err)
	}
	// Without --addr, the client commands call what the discovery file of
	// --state-dir names: its Unix socket (contextd listens on a port the
	// kernel chose, not 7467, and on <state-dir>/contextd.sock).
	if out, _, err := runCLI(t, nil, "sessions", "--state-dir", state); err != nil || out != want {
		t.Errorf("sessions --state-dir %s: %q, %v; want the table", state, out, err)
	}
	// The discovery file names the Unix socket too: it is preferred.
	if out, _, err := runCLI(t, map[string]string{"CONTEXTD_STATE_DIR": state}, "healthcheck"); err != nil || out != "ok: contextd at unix:"+filepath.Join(state, "contextd.sock")+" is healthy\n" {
		t.Errorf("healthcheck with CONTEXTD_STATE_DIR: %q, %v", out, err)
	}
	// --addr still wins over the discovery file.
	if _, _, err := runCLI(t, nil, "healthcheck", "--state-dir", state, "--addr", closedAddr(t)); err == nil || !strings.Contains(err.Error(), "contextd is not running at http://") {
		t.Errorf("healthcheck --addr of a closed port beside --state-dir: %v", err)
	}
	bad := filepath.Join(dir, "bad")
	os.MkdirAll(bad, 0o700)
	os.WriteFile(filepath.Join(bad, "contextd.json"), []byte("not json"), 0o600)
	if _, _, err := runCLI(t, nil, "healthcheck", "--state-dir", bad); err == nil || !strings.Contains(err.Error(), "read the discovery file "+filepath.Join(bad, "contextd.json")) {
		t.Errorf("healthcheck with a broken discovery file: %v", err)
	}
}

// TestREADMETreeDrawing: the drawing docs/operations.md "Inspecting a
// session" shows is the current output of the command it names.
func TestREADMETreeDrawing(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, nil, "inspect", "--tree", filepath.Join("..", "..", "testdata", "pi-tree", "tree-basic.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "contextd inspect --tree testdata/pi-tree/tree-basic.jsonl\n```\n\n```text\n"+out+"```\n") {
		t.Errorf("docs/operations.md does not show the current drawing of tree-basic.jsonl:\n%s", out)
	}
}

// TestStateDirNotADirectory: a --state-dir that is a file, or below a
// file, is refused naming the flag, before anything is written.
func TestStateDirNotADirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "README.md")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, state := range []string{file, filepath.Join(file, "state")} {
		for _, cmd := range []string{"serve", "reindex"} {
			_, _, err := runCLI(t, nil, cmd, "--addr", "127.0.0.1:0", "--sessions-dir", dir, "--state-dir", state)
			if cmd == "reindex" {
				_, _, err = runCLI(t, nil, cmd, "--sessions-dir", dir, "--state-dir", state)
			}
			want := `--state-dir "` + state + `" is not a directory; pass a directory for the index, state database and token (created if missing)`
			if err == nil || err.Error() != want {
				t.Errorf("%s --state-dir %s: %v, want %q", cmd, state, err, want)
			}
		}
	}
	_, _, err := runCLI(t, map[string]string{"CONTEXTD_STATE_DIR": file}, "reindex", "--sessions-dir", dir)
	if want := `CONTEXTD_STATE_DIR="` + file + `" is not a directory`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("CONTEXTD_STATE_DIR=%s: %v, want %q", file, err, want)
	}
	_, _, err = runCLI(t, nil, "serve", "--addr", "127.0.0.1:0", "--sessions-dir", file, "--state-dir", filepath.Join(dir, "s"))
	if want := "--sessions-dir " + file + " (from --sessions-dir) is not a directory; pass the folder Pi writes sessions to"; err == nil || err.Error() != want {
		t.Errorf("--sessions-dir a file: %v, want %q", err, want)
	}
}

// TestFlagsAfterPositional: flags may follow the positional argument
// (contextd inspect FILE --tree draws the same tree as inspect --tree
// FILE); after "--" everything is positional.
func TestFlagsAfterPositional(t *testing.T) {
	p := filepath.Join("..", "..", "testdata", "pi-tree", "tree-basic.jsonl")
	before, _, err := runCLI(t, nil, "inspect", "--tree", p)
	if err != nil {
		t.Fatal(err)
	}
	after, _, err := runCLI(t, nil, "inspect", p, "--tree")
	if err != nil || after != before {
		t.Errorf("inspect FILE --tree: %v\n%s\nwant the drawing of inspect --tree FILE", err, after)
	}
	if !strings.Contains(before, "*") {
		t.Errorf("inspect --tree drew no active path:\n%s", before)
	}
	evalJSON, _, err := runCLI(t, nil, "eval", p, "--json")
	if err != nil || !strings.Contains(evalJSON, `"dropped": 46,`) {
		t.Errorf("eval FILE --json: %v\n%s", err, evalJSON)
	}
	if _, _, err := runCLI(t, nil, "inspect", "--", p, "--tree"); err == nil || err.Error() != "inspect takes exactly one session file, got 2 arguments; usage: contextd inspect [--tree [--expand]] FILE.jsonl" {
		t.Errorf("inspect -- FILE --tree: %v, want the 2-arguments refusal", err)
	}
	if _, _, err := runCLI(t, nil, "inspect", p, "--expand"); err == nil || err.Error() != "--expand only applies to --tree" {
		t.Errorf("inspect FILE --expand: %v", err)
	}
}

// TestHelpHelp: contextd help --help (and -h) prints the top-level help
// and exits 0.
func TestHelpHelp(t *testing.T) {
	var want bytes.Buffer
	usage(&want)
	for _, h := range []string{"--help", "-h"} {
		out, _, err := runCLI(t, nil, "help", h)
		if err != nil || out != want.String() {
			t.Errorf("help %s: %v\n%s\nwant the top-level help", h, err, out)
		}
	}
}

// TestUnknownFlagOneLine: a mistyped flag is said once, with the command
// that lists the flags, instead of the error, the whole flag list, and
// the error again (Go's flag package prints the error and the usage on
// its own before run returns the error that main prints).
func TestUnknownFlagOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "flag provided but not defined: -bogus; `contextd serve --help` lists the flags"},
		{[]string{"sessions", "--bogus"}, "flag provided but not defined: -bogus; `contextd sessions --help` lists the flags"},
		{[]string{"healthcheck", "--timeout", "soon"}, "invalid value \"soon\" for flag -timeout: \"soon\" is not a duration; write a number with a unit, such as 5s, 1m30s or 500ms (units ns, us, ms, s, m, h); `contextd healthcheck --help` lists the flags"},
		{[]string{"stop", "--timeout", "15"}, "invalid value \"15\" for flag -timeout: \"15\" is not a duration; write a number with a unit, such as 5s, 1m30s or 500ms (units ns, us, ms, s, m, h); `contextd stop --help` lists the flags"},
		{[]string{"--memory-limit", "lots"}, "invalid value \"lots\" for flag -memory-limit: \"lots\" is not a size; write a number of bytes with an optional unit, such as 134217728, 128MiB or \"128 MiB\" (KiB, MiB, GiB: powers of 1024; kB, MB, GB: powers of 1000); `contextd serve --help` lists the flags"},
	} {
		out, stderr, err := runCLI(t, nil, tc.args...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
		if out != "" || stderr != "" {
			t.Errorf("%v: stdout %q, stderr %q; want both empty (main prints the error once)", tc.args, out, stderr)
		}
	}
}

// TestSessionsWithoutContextd: contextd sessions on a state directory no
// contextd ever used says so, as contextd stop does, and what to run,
// instead of the token file's open error.
func TestSessionsWithoutContextd(t *testing.T) {
	state := t.TempDir()
	_, _, err := runCLI(t, nil, "sessions", "--state-dir", state)
	want := "no contextd has run with state directory " + state + " (no token file " + filepath.Join(state, "token") + "); start one with `contextd serve`, or pass the --state-dir of the running contextd"
	if err == nil || err.Error() != want {
		t.Errorf("sessions: err = %v, want %q", err, want)
	}
}

// TestSessionsNoDefaultPortFallback: contextd sessions sends the token,
// so without --addr it calls only the address the discovery file names:
// after contextd stop (the token file stays, the discovery file is gone)
// it says no contextd is running, as contextd stop does, instead of
// sending the token to whatever listens on 127.0.0.1:7467
// (docs/security.md: the token goes only to its own contextd).
func TestSessionsNoDefaultPortFallback(t *testing.T) {
	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(state, "token"), []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := runCLI(t, nil, "sessions", "--state-dir", state)
	want := "no contextd is running for " + state + " (no " + filepath.Join(state, "contextd.json") + "); start one with `contextd serve`, or pass --addr of the running contextd"
	if err == nil || err.Error() != want {
		t.Errorf("sessions: err = %v, want %q", err, want)
	}
}

// TestHelpNamesBounds: the help of a flag with a bound or a format says
// it: --memory-limit its 16 MiB minimum (checked in main.go), --timeout
// how a duration is written.
func TestHelpNamesBounds(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--help"}, "at least 16MiB, or 0 = none (env CONTEXTD_MEMORY_LIMIT)"},
		{[]string{"healthcheck", "--help"}, "how long to wait for the answer, such as 3s or 500ms (default 3s)"},
		{[]string{"stop", "--help"}, "how long to wait for it to exit, such as 15s or 1m (default 15s)"},
	} {
		out, _, _ := runCLI(t, nil, tc.args...)
		if !strings.Contains(out, tc.want) {
			t.Errorf("%v printed\n%s\nwant it to contain %q", tc.args, out, tc.want)
		}
	}
}
