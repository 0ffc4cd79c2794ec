package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"contextd/client"
	"contextd/discovery"
)

// squatter is a listener that does not know the token: it answers the
// proof route with a wrong proof and every other request with 200, and
// records the requests and whether one carried the token header.
type squatter struct {
	*httptest.Server
	mu       sync.Mutex
	paths    []string
	gotToken bool
}

func newSquatter(t *testing.T) *squatter {
	sq := &squatter{}
	sq.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sq.mu.Lock()
		sq.paths = append(sq.paths, r.URL.Path)
		sq.gotToken = sq.gotToken || r.Header.Get(client.TokenHeader) != ""
		sq.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/proof" {
			w.Write([]byte(`{"proof":"00"}`))
			return
		}
		w.Write([]byte(`{"sessions":[]}`))
	}))
	t.Cleanup(sq.Close)
	return sq
}

// squatState is a state directory (0700) with a token file (0600) and a
// discovery file naming url.
func squatState(t *testing.T, url string) string {
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "token"), []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := discovery.Write(state, discovery.Info{URL: url, PID: 1}); err != nil {
		t.Fatal(err)
	}
	return state
}

// TestSessionsRefusesSquatter: contextd sessions asks the listener the
// discovery file (or --addr) names to prove it holds the token before
// sending it (GET /v1/proof, api.Proof; docs/security.md); a squatter that
// cannot never receives the token header and the command says so in one
// sentence.
func TestSessionsRefusesSquatter(t *testing.T) {
	sq := newSquatter(t)
	state := squatState(t, sq.URL)
	tokenFile := filepath.Join(state, "token")
	want := "the server at " + sq.URL + " did not prove it holds the token of " + tokenFile + " (200 OK), so the token was not sent: it is another program, an older contextd or a contextd with another state directory; start contextd (`contextd serve`) for this state directory or pass --state-dir of the running one"
	for _, args := range [][]string{
		{"sessions", "--state-dir", state},
		{"sessions", "--state-dir", state, "--addr", strings.TrimPrefix(sq.URL, "http://")},
	} {
		_, _, err := runCLI(t, nil, args...)
		if err == nil || err.Error() != want {
			t.Errorf("%v: err = %v, want %q", args, err, want)
		}
	}
	sq.mu.Lock()
	defer sq.mu.Unlock()
	if sq.gotToken || strings.Join(sq.paths, " ") != "/v1/proof /v1/proof" {
		t.Errorf("squatter saw requests %v, token header %v; want only two proof requests and no token", sq.paths, sq.gotToken)
	}
}

// TestSessionsRefusesUntrustedFiles: a discovery file or state directory
// others may write, or a token file others may read, is refused before
// anything is sent, with one sentence saying what to do (the extension's
// rules, extension/src/transport.ts readDiscovery and readToken).
func TestSessionsRefusesUntrustedFiles(t *testing.T) {
	sq := newSquatter(t)
	for _, tc := range []struct {
		name  string
		chmod func(state string) error
		want  func(state string) string
	}{
		{"discovery file 0666", func(s string) error { return os.Chmod(discovery.Path(s), 0o666) },
			func(s string) string {
				return "the discovery file " + discovery.Path(s) + " cannot be trusted: others may write it (mode 0666); stop contextd, delete the file and start contextd again"
			}},
		{"state directory 0777", func(s string) error { return os.Chmod(s, 0o777) },
			func(s string) string {
				return "the contextd state directory " + s + " cannot be trusted: others may write it (mode 0777), so another user could redirect contextd sessions; `chmod 700 " + s + "` if it is yours, else pass a --state-dir of your own"
			}},
		{"token file 0644", func(s string) error { return os.Chmod(filepath.Join(s, "token"), 0o644) },
			func(s string) string {
				f := filepath.Join(s, "token")
				return "the contextd token file " + f + " cannot be trusted: others may read or write it (mode 0644); `chmod 600 " + f + "` if it is yours, else delete it and restart contextd"
			}},
	} {
		state := squatState(t, sq.URL)
		if err := tc.chmod(state); err != nil {
			t.Fatal(err)
		}
		_, _, err := runCLI(t, nil, "sessions", "--state-dir", state)
		if want := tc.want(state); err == nil || err.Error() != want {
			t.Errorf("%s: err = %v, want %q", tc.name, err, want)
		}
	}
	sq.mu.Lock()
	defer sq.mu.Unlock()
	if len(sq.paths) != 0 {
		t.Errorf("squatter saw requests %v; want none", sq.paths)
	}
}
