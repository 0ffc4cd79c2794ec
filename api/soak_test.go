package api

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// soakDuration bounds TestSecuritySoak: a few seconds in CI.
const soakDuration = 4 * time.Second

// TestSecuritySoak is a bounded fuzz/soak run against a served contextd on
// loopback (docs/security.md): for soakDuration, 8 workers send random
// methods (RFC 9110 ones and made-up tokens), paths (every route, route
// patterns with random ids, random garbage), headers (random names and
// values, foreign Host and Origin, right, wrong and missing tokens, odd
// Content-Types), bodies (valid Codex bodies, random JSON, random bytes)
// and connections (kept alive or not, raw garbage request lines, requests
// cut off mid-way, connections closed at once). It asserts that no answer
// is a 5xx, that the live heap after the run is within 16 MiB of the heap
// after a warm-up (flat memory: refused and made-up requests keep
// nothing), and that the HTTP metrics keep a bounded number of series.
func TestSecuritySoak(t *testing.T) {
	s := newHXStack(t, hxOptions{Serve: true, MaxConns: 64})
	addr := strings.TrimPrefix(s.URL, "http://")
	routes := []string{
		"/healthz", "/metrics", "/openapi.json", "/openapi.yaml", "/v1/sessions", "/v1/sessions/" + hxSessionID,
		"/v1/sessions/" + hxSessionID + "/branch", "/v1/sessions/" + hxSessionID + "/context", "/v1/sessions/" + hxSessionID + "/windows",
		"/v1/sessions/" + hxSessionID + "/rollovers", "/v1/sessions/" + hxSessionID + "/compaction",
		"/alpha/history/v2/list_windows", "/alpha/history/v2/list_items", "/alpha/history/v2/read_item", "/alpha/history/v2/search_contents",
		"/alpha/notes/v2/list_files_by_prefix", "/alpha/notes/v2/read_file", "/alpha/notes/v2/search_contents", "/alpha/notes/v2/thread_hint",
	}
	methods := []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE"}
	bodies := []string{
		`{"context":{"session_id":"` + hxSessionID + `"}}`,
		`{"query":"the","limit":3,"context":{"session_id":"` + hxSessionID + `"}}`,
		`{"window_id":"x","item_id":"y","limit_chars":1e309,"context":{"session_id":"` + hxSessionID + `"}}`,
		`{"path":"../../etc/passwd","context":{"session_id":"` + hxSessionID + `"}}`,
		`{"session_file":"/proc/self/root/etc/passwd","mode":"local"}`,
		`{"session_file":"local-basic.jsonl","mode":"local"}`,
		`[`, `null`, `{"a":` + strings.Repeat("[", 300) + `}`, "\xff\xfe", ``,
	}
	var (
		fives    atomic.Int64
		requests atomic.Int64
		first5xx atomic.Value
	)
	record := func(code int, what string) {
		requests.Add(1)
		if code >= 500 {
			if fives.Add(1) == 1 {
				first5xx.Store(fmt.Sprintf("%d for %s", code, what))
			}
		}
	}
	worker := func(seed uint64, until time.Time) {
		r := rand.New(rand.NewPCG(seed, 12))
		keep := &http.Transport{MaxIdleConnsPerHost: 2}
		defer keep.CloseIdleConnections()
		once := &http.Transport{DisableKeepAlives: true}
		client := func() *http.Client {
			if r.IntN(2) == 0 {
				return &http.Client{Transport: keep, Timeout: 10 * time.Second}
			}
			return &http.Client{Transport: once, Timeout: 10 * time.Second}
		}
		for time.Now().Before(until) {
			switch k := r.IntN(10); {
			case k < 7: // an HTTP request with random parts
				method := methods[r.IntN(len(methods))]
				if r.IntN(4) == 0 {
					method = randToken(r, 1+r.IntN(200))
				}
				path := routes[r.IntN(len(routes))]
				switch r.IntN(4) {
				case 0:
					path = "/" + randToken(r, r.IntN(100))
				case 1:
					path = strings.Replace(path, hxSessionID, randToken(r, 1+r.IntN(40)), 1)
				}
				var body io.Reader
				if r.IntN(3) > 0 {
					b := bodies[r.IntN(len(bodies))]
					if r.IntN(5) == 0 {
						raw := make([]byte, r.IntN(2000))
						for i := range raw {
							raw[i] = byte(r.IntN(256))
						}
						b = string(raw)
					}
					body = strings.NewReader(b)
				}
				req, err := http.NewRequest(method, s.URL+path, body)
				if err != nil {
					continue
				}
				switch r.IntN(4) {
				case 0: // no token
				case 1:
					req.Header.Set(TokenHeader, randToken(r, 40))
				default:
					req.Header.Set(TokenHeader, s.Token)
				}
				if body != nil && r.IntN(5) > 0 {
					req.Header.Set("Content-Type", []string{"application/json", "text/plain", "application/json; charset=utf-8", randToken(r, 20)}[r.IntN(4)])
				}
				for range r.IntN(6) {
					req.Header.Set("X-"+randToken(r, 1+r.IntN(30)), randToken(r, r.IntN(1000)))
				}
				if r.IntN(8) == 0 {
					req.Host = randToken(r, 1+r.IntN(50)) + ".example"
				}
				if r.IntN(8) == 0 {
					req.Header.Set("Origin", "https://"+randToken(r, 10)+".example")
				}
				resp, err := client().Do(req)
				if err != nil {
					continue // e.g. a connection closed at the cap
				}
				io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<20))
				resp.Body.Close()
				record(resp.StatusCode, method+" "+path)
			case k < 9: // raw bytes: garbage, or a request cut off
				c, err := net.DialTimeout("tcp", addr, 2*time.Second)
				if err != nil {
					continue
				}
				c.SetDeadline(time.Now().Add(2 * time.Second))
				var msg []byte
				switch r.IntN(3) {
				case 0:
					msg = make([]byte, 1+r.IntN(3000))
					for i := range msg {
						msg[i] = byte(r.IntN(256))
					}
					msg = append(msg, "\r\n\r\n"...)
				case 1:
					msg = fmt.Appendf(nil, "%s /%s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s: %s\r\n\r\n", randToken(r, 1+r.IntN(100)), randToken(r, r.IntN(100)), randToken(r, 10), randToken(r, 100))
				default:
					msg = fmt.Appendf(nil, "POST /alpha/history/v2/list_windows HTTP/1.1\r\nHost: 127.0.0.1\r\n%s: %s\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"context\":", TokenHeader, s.Token)
				}
				c.Write(msg)
				if cut := bytes.HasSuffix(msg, []byte(`{"context":`)); cut || r.IntN(3) == 0 {
					c.Close() // gone before the answer
					continue
				}
				if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					record(resp.StatusCode, "raw "+string(bytes.SplitN(msg, []byte(" "), 2)[0]))
				}
				c.Close()
			default: // a connection opened and closed at once
				if c, err := net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
					c.Close()
				}
			}
		}
	}
	run := func(d time.Duration, seed uint64) {
		until := time.Now().Add(d)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() { defer wg.Done(); worker(seed+uint64(i), until) }()
		}
		wg.Wait()
	}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	run(soakDuration/4, 100) // warm-up: index loaded, pools filled
	before := heap()
	run(soakDuration*3/4, 200)
	time.Sleep(200 * time.Millisecond) // let aborted handlers finish
	after := heap()
	series := len(s.metricSeries("contextd_http_requests_total"))
	t.Logf("%d answers, %d 5xx; heap %.1f MiB after warm-up, %.1f MiB after the run; %d request series",
		requests.Load(), fives.Load(), float64(before)/(1<<20), float64(after)/(1<<20), series)
	if fives.Load() > 0 {
		t.Errorf("%d answers were 5xx; first: %v", fives.Load(), first5xx.Load())
	}
	if requests.Load() < 100 {
		t.Errorf("only %d answers in %v; the soak did not run", requests.Load(), soakDuration)
	}
	if after > before+16<<20 {
		t.Errorf("live heap grew from %d to %d bytes during the run; want flat (within 16 MiB)", before, after)
	}
	// operations (~30 patterns + unmatched) × 10 methods × observed codes
	// would be the ceiling; in practice far fewer.
	if series > 400 {
		t.Errorf("%d contextd_http_requests_total series; want a bounded set", series)
	}
}
