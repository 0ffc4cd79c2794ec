package remote

// docs/security.md: nothing the backend sends and no user info of the base
// URL reaches a detail or the log.

import (
	"bufio"
	"net"
	"strings"
	"testing"

	"contextd"
)

// rawBackend answers every connection with raw bytes after reading the
// request head.
func rawBackend(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					l, err := br.ReadString('\n')
					if err != nil || l == "\r\n" {
						break
					}
				}
				c.Write([]byte(answer))
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestForwardMalformedResponseNotEchoed: a malformed header line, status
// line or chunk from the backend is named as a malformed response; its
// text never reaches the 502 detail or the log.
func TestForwardMalformedResponseNotEchoed(t *testing.T) {
	const secret = "UPSTREAM-SECRET-c0ffee"
	for _, answer := range []string{
		"HTTP/1.1 200 OK\r\nX-Bad " + secret + "\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 2x0 " + secret + "\r\n\r\n",
		secret + " garbage\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + secret + "\r\n",
	} {
		cl, _, logs := newClient(rawBackend(t, answer))
		_, err := cl.Forward(t.Context(), Call{Namespace: "history", Op: "list_items", Body: []byte(`{}`), Header: callerHeader()})
		msg := wantErr(t, err, contextd.EUpstream, "Unable to perform operation:")
		if strings.Contains(msg, secret) {
			t.Errorf("backend text reached the detail: %q", msg)
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("backend text reached the log: %s", logs)
		}
	}
}

// TestBaseURLUserInfoNeverEchoed: a --codex-base-url that does not parse
// is refused at start without its password, and a Forward with one never
// names it.
func TestBaseURLUserInfoNeverEchoed(t *testing.T) {
	for _, base := range []string{"http://user:hunter2@[::1", "http://user:hunter2@exa mple.com/x", "https://user:hunter2@%zz/"} {
		err := CheckBaseURL(base)
		if err == nil {
			t.Errorf("CheckBaseURL(%q) accepted it", base)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("CheckBaseURL error leaks the password: %v", err)
		}
		cl, _, logs := newClient(base)
		_, ferr := cl.Forward(t.Context(), Call{Namespace: "notes", Op: "read_file", Body: []byte(`{}`), Header: callerHeader()})
		if ferr == nil || strings.Contains(ferr.Error(), "hunter2") || strings.Contains(logs.String(), "hunter2") {
			t.Errorf("Forward with %q: %v (logs %s); want an error without the password", base, ferr, logs)
		}
	}
	for _, ok := range []string{DefaultBaseURL, "http://127.0.0.1:8080/backend-api/codex/", "https://user:pw@example.com/x"} {
		if err := CheckBaseURL(ok); err != nil {
			t.Errorf("CheckBaseURL(%q): %v", ok, err)
		}
	}
}

// TestBaseURLQueryFragmentRefused: a base URL with a query or fragment is
// refused at start without echoing them (at a03e7ac it was accepted and
// every operation went to one URL, or lost its path after "#"), and the
// operation path is joined to the base's path.
func TestBaseURLQueryFragmentRefused(t *testing.T) {
	for _, base := range []string{"https://h.example/codex?key=SECRETQ", "https://h.example/codex#SECRETF", "https://h.example/codex?", "https://h.example/codex/#"} {
		err := CheckBaseURL(base)
		if err == nil || !strings.Contains(err.Error(), "has a query or fragment") || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("CheckBaseURL(%q) = %v, want a refusal that does not echo the query or fragment", base, err)
		}
		if _, ok := New(base, nil, nil).endpoint("history", "list_windows"); ok {
			t.Errorf("endpoint of %q: ok, want refused", base)
		}
	}
	for base, want := range map[string]string{
		"https://chatgpt.com/backend-api/codex":  "https://chatgpt.com/backend-api/codex/alpha/history/v2/list_windows",
		"https://chatgpt.com/backend-api/codex/": "https://chatgpt.com/backend-api/codex/alpha/history/v2/list_windows",
		"http://127.0.0.1:9":                     "http://127.0.0.1:9/alpha/history/v2/list_windows",
		"http://127.0.0.1:9/a%20b":               "http://127.0.0.1:9/a%20b/alpha/history/v2/list_windows",
	} {
		got, ok := New(base, nil, nil).endpoint("history", "list_windows")
		if !ok || got != want {
			t.Errorf("endpoint(%q) = %q %v, want %q", base, got, ok, want)
		}
	}
}
