package api

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestConnMetricsHeaderPhase: contextd_http_connections counts a
// listener's open connections by phase (header, idle, active) and
// contextd_http_connections_shed_total those closed at the cap, by reason
// (docs/operations.md#metrics). With a cap of 5: three sockets that never
// finish their headers and one kept-alive client read header 3, idle 1; a
// held request fills the cap, so the idle one is shed (idle 1) and the
// request counts active; a fourth slow socket reads header 4; a second
// held request fills the cap again with no idle connection, so the four
// slow ones, all past their grace, are shed (slow_header 4). Each count
// follows from that sequence by hand. The server's own header deadline is
// lifted so that only the cap closes the slow sockets.
func TestConnMetricsHeaderPhase(t *testing.T) {
	reg := prometheus.NewRegistry()
	cm := NewConnMetrics(reg)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := inner.Addr().String()
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	hs := HTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			entered <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	}))
	hs.ReadHeaderTimeout = time.Minute
	ll := LimitListener(inner, 5, cm.Listener("tcp")).(*limitListener)
	go hs.Serve(ll)
	defer hs.Close()

	value := func(m prometheus.Metric) float64 {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		if d.Gauge != nil {
			return d.Gauge.GetValue()
		}
		return d.Counter.GetValue()
	}
	state := func(header, idle, active, shedSlow, shedIdle float64) string {
		return fmt.Sprintf("header %v idle %v active %v; shed slow_header %v idle %v", header, idle, active, shedSlow, shedIdle)
	}
	want := func(step string, header, idle, active, shedSlow, shedIdle float64) {
		t.Helper()
		got := func() string {
			g := func(phase string) float64 { return value(cm.conns.WithLabelValues("tcp", phase)) }
			c := func(reason string) float64 { return value(cm.shed.WithLabelValues("tcp", reason)) }
			return state(g("header"), g("idle"), g("active"), c("slow_header"), c("idle"))
		}
		w := state(header, idle, active, shedSlow, shedIdle)
		for deadline := time.Now().Add(10 * time.Second); got() != w; {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s, want %s", step, got(), w)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	want("before any connection", 0, 0, 0, 0, 0)

	slowSocket := func() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, "GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n") // headers never end
	}
	for range 3 {
		slowSocket()
	}
	want("3 slow sockets", 3, 0, 0, 0, 0)

	kept, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	io.WriteString(kept, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(kept), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	want("3 slow sockets and 1 kept-alive client", 3, 1, 0, 0, 0)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	held := func() chan error {
		done := make(chan error, 1)
		go func() {
			resp, err := client.Get("http://" + addr + "/block")
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		<-entered
		return done
	}
	done := held()
	want("a held request fills the cap", 3, 0, 1, 0, 1)
	release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want("the held request answered", 3, 0, 0, 0, 1)

	slowSocket()
	want("4 slow sockets", 4, 0, 0, 0, 1)
	// Until every slow socket's server waits in a read past its grace.
	for deadline := time.Now().Add(10 * time.Second); !allPastGrace(ll); {
		if time.Now().After(deadline) {
			t.Fatal("the slow sockets' reads never passed PartialHeaderGrace")
		}
		time.Sleep(5 * time.Millisecond)
	}
	done = held()
	want("a held request fills the cap with 4 slow sockets", 0, 0, 1, 4, 1)
	release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want("all answered", 0, 0, 0, 4, 1)
}

// allPastGrace reports whether every connection of l in the header phase
// has had part of its request and waited in a read for over twice
// PartialHeaderGrace.
func allPastGrace(l *limitListener) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for e := l.header.Front(); e != nil; e = e.Next() {
		c := e.Value.(*limitConn)
		r := c.readingSince.Load()
		if c.headerBytes.Load() == 0 || r == 0 || time.Now().UnixNano()-r < int64(2*PartialHeaderGrace) {
			return false
		}
	}
	return true
}
