package api

import (
	"io"
	"net"
	"strings"
	"testing"
)

// TestHealthzHead: HEAD /healthz answers 200 with GET's headers and no
// body (no token needed, as GET), for probes that only look at the status.
func TestHealthzHead(t *testing.T) {
	s := newTestServer(t, serverOptions{})
	host := strings.TrimPrefix(s.URL, "http://")
	for _, method := range []string{"HEAD", "GET"} {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, method+" /healthz HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n")
		b, err := io.ReadAll(c)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		head, body, _ := strings.Cut(string(b), "\r\n\r\n")
		wantBody := `{"status":"ok"}`
		if method == "HEAD" {
			wantBody = ""
		}
		if !strings.HasPrefix(head, "HTTP/1.1 200 OK\r\n") || !strings.Contains(head, "\r\nContent-Type: application/json\r\n") || body != wantBody {
			t.Errorf("%s /healthz answered\n%s\nwant 200, Content-Type application/json and body %q", method, b, wantBody)
		}
	}
}
