package api

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSecuritySlowClients: 2,500 sockets that connect and never finish
// their request headers, reconnecting 2 s after they are closed, do not
// keep anyone else out: with the default cap (DefaultMaxConns) a token
// holder and /healthz get their answers within 1 s each while the slow
// sockets run, because at the cap the connections stuck in their headers
// are closed first (docs/security.md; at a03e7ac every client waited for
// the 5 s header deadline). Loopback only, bounded to a few seconds. The
// sockets reconnect after a pause because all of them, the server and the
// race detector share this process: without one the test measures how
// fast this process can accept, not whom the server serves.
func TestSecuritySlowClients(t *testing.T) {
	const slow = 2500
	s := newHXStack(t, hxOptions{Serve: true, MaxConns: DefaultMaxConns})
	addr := strings.TrimPrefix(s.URL, "http://")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var dials, opened atomic.Int64
	for range slow {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{Timeout: time.Second}
			for ctx.Err() == nil {
				c, err := d.DialContext(ctx, "tcp", addr)
				dials.Add(1)
				if err != nil {
					select {
					case <-ctx.Done():
					case <-time.After(50 * time.Millisecond):
					}
					continue
				}
				opened.Add(1)
				io.WriteString(c, "GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n") // headers never end
				stop := context.AfterFunc(ctx, func() { c.Close() })
				io.Copy(io.Discard, c) // until the server (or the test) closes it
				stop()
				c.(*net.TCPConn).SetLinger(0)
				c.Close()
				select { // reconnect after 2 s, as a client that retries
				case <-ctx.Done():
				case <-time.After(2 * time.Second):
				}
			}
		}()
	}
	defer func() {
		cancel()
		wg.Wait()
	}()
	// Let the slow sockets fill the cap.
	deadline := time.Now().Add(10 * time.Second)
	for opened.Load() < slow && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if opened.Load() < DefaultMaxConns {
		t.Fatalf("only %d slow sockets connected; the test did not reach the cap %d", opened.Load(), DefaultMaxConns)
	}
	time.Sleep(300 * time.Millisecond)
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 5 {
		for _, path := range []string{"/healthz", "/v1/sessions"} {
			req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
			req.Header.Set(TokenHeader, s.Token)
			start := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				t.Errorf("request %d %s with %d slow sockets open: %v", i, path, slow, err)
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("request %d %s: %d, want 200", i, path, resp.StatusCode)
			}
			t.Logf("%s answered in %v", path, time.Since(start))
		}
	}
	t.Logf("%d slow sockets, %d dials", slow, dials.Load())
}
