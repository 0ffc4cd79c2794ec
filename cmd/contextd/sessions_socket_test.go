package main

import (
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"contextd/discovery"
)

// TestClientCommandsPreferSocket: with the discovery file's URL pointing
// at a port nothing listens on but its socket served by a real contextd,
// `contextd sessions` prints the table (over the socket: the TCP URL
// cannot answer), healthcheck names the socket, and stop stops contextd
// through it (docs/operations.md "Commands"; client.Locate, the rule of
// extension/src/transport.ts readDiscovery).
func TestClientCommandsPreferSocket(t *testing.T) {
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	os.MkdirAll(sessions, 0o755)
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "pi-tree", "tree-basic.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(sessions, "tree-basic.jsonl"), b, 0o600)
	state := filepath.Join(dir, "state")
	c := startChild(t, sessions, state)
	info, err := discovery.Read(state)
	if err != nil || info.Socket != filepath.Join(state, "contextd.sock") {
		t.Fatalf("discovery %+v (%v), want the socket %s", info, err, filepath.Join(state, "contextd.sock"))
	}
	dead := "http://" + closedAddr(t)
	info.URL = dead
	if err := discovery.Write(state, info); err != nil {
		t.Fatal(err)
	}
	// The listing of TestHealthcheckAndSessions's tree-basic row: not
	// indexed yet, 130 KiB, the only file so named without a directory.
	want := "tree-basic.jsonl  v3  local     not indexed  130 KiB\n"
	if out, _, err := runCLI(t, nil, "sessions", "--state-dir", state); err != nil || out != want {
		t.Errorf("sessions with %s unreachable: %q, %v; want %q", dead, out, err, want)
	}
	if out, _, err := runCLI(t, nil, "healthcheck", "--state-dir", state); err != nil || out != "ok: contextd at unix:"+info.Socket+" is healthy\n" {
		t.Errorf("healthcheck: %q, %v; want ok over unix:%s", out, err, info.Socket)
	}
	if out, _, err := runCLI(t, nil, "stop", "--state-dir", state); err != nil || !strings.HasPrefix(out, "stopped contextd pid "+strconv.Itoa(c.cmd.Process.Pid)+" ") {
		t.Errorf("stop over the socket: %q, %v; want stopped pid %d", out, err, c.cmd.Process.Pid)
	}
	if _, err := os.Lstat(info.Socket); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket after stop: %v, want removed by contextd's shutdown", err)
	}
}

// TestSessionsRefusesSocketOthersMayWrite: a discovery file naming a
// socket whose directory others may write is refused with one sentence
// saying what to do, and a socket path holding a regular file likewise;
// the listener at the first socket is never connected to, and the TCP
// URL beside it is not tried in its place (docs/security.md).
func TestSessionsRefusesSocketOthersMayWrite(t *testing.T) {
	sq := newSquatter(t)
	state := squatState(t, sq.URL)
	open := filepath.Join(filepath.Dir(state), "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	sock := filepath.Join(open, "contextd.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reqs []string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reqs = append(reqs, r.URL.Path)
		mu.Unlock()
		w.Write([]byte(`{"sessions":[]}`))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	if err := discovery.Write(state, discovery.Info{URL: sq.URL, Socket: sock, PID: 1}); err != nil {
		t.Fatal(err)
	}
	want := "the directory " + open + " of the contextd socket " + sock + " cannot be trusted: others may write it (mode 0777), so another user could put a socket of their own there; `chmod 700 " + open + "` if it is yours, else restart contextd with a --socket in a directory of your own"
	if _, _, err := runCLI(t, nil, "sessions", "--state-dir", state); err == nil || err.Error() != want {
		t.Errorf("socket in a directory others may write: err = %v, want %q", err, want)
	}

	file := filepath.Join(state, "contextd.sock")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := discovery.Write(state, discovery.Info{URL: sq.URL, Socket: file, PID: 1}); err != nil {
		t.Fatal(err)
	}
	want = "the contextd socket " + file + " cannot be trusted: it is not a socket; stop contextd, delete it and start contextd again"
	if _, _, err := runCLI(t, nil, "sessions", "--state-dir", state); err == nil || err.Error() != want {
		t.Errorf("regular file at the socket path: err = %v, want %q", err, want)
	}
	mu.Lock()
	defer mu.Unlock()
	sq.mu.Lock()
	defer sq.mu.Unlock()
	if len(reqs) != 0 || len(sq.paths) != 0 {
		t.Errorf("socket listener saw %v, TCP listener %v; want nothing", reqs, sq.paths)
	}
}
