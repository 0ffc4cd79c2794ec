// Package testkit holds the helpers contextd's tests share: one builder
// of the service stack below the HTTP API (derived index, state database,
// coordinator, wired as cmd/contextd wires them), a log buffer safe for
// concurrent writes, a loopback listener on port 0 that stays open, and a
// wait for a `contextd serve` started on port 0 (its discovery file names
// the port it bound). Only tests import it.
//
// It imports coordinator and store, so the internal tests of those
// packages (and of the packages below them) cannot use it; api's and
// reliability's tests and the coordinator's external tests do.
package testkit

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"contextd"
	"contextd/coordinator"
	"contextd/discovery"
	"contextd/store"
)

// LockedBuffer is an io.Writer that several goroutines may write (a
// server's log) while the test reads String.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Listen opens a TCP listener on 127.0.0.1 port 0 (the kernel picks a
// free port) and keeps it open until the test ends: serve on it and read
// its address, instead of asking for a free port, closing it and binding
// it again (another process may take it in between).
func Listen(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen on 127.0.0.1:0: %v", err)
	}
	tb.Cleanup(func() { ln.Close() })
	return ln
}

// Options tune OpenBackend. The zero value is a Local-mode service with
// the store's default batch size, no metrics and a discarded log.
type Options struct {
	// DefaultMode is the mode of unregistered sessions ("" = local).
	DefaultMode contextd.Mode
	// BatchBytes is the store's ingest batch (0 = its default, 8 MiB).
	BatchBytes int64
	// MemoryLimit is the store's memory limit (store.Options; 0 = none):
	// a session with more than store.EntryBudget(MemoryLimit) entries is
	// refused as too large.
	MemoryLimit int64
	// Registry, when set, receives the store's and the coordinator's
	// metrics (cmd/contextd registers both); nil = no metrics.
	Registry *prometheus.Registry
	// Log, when set, receives the text log of the store and the
	// coordinator at LogLevel; nil = discarded.
	Log      *LockedBuffer
	LogLevel slog.Level
	// Metrics, when set, are the coordinator's metrics (a test that
	// reopens the backend keeps counting on one set); nil = new ones on
	// Registry.
	Metrics *coordinator.Metrics
	// Coordinator are extra options of coordinator.New (a clock, ids).
	Coordinator []coordinator.Option
}

// Backend is contextd's service stack below the HTTP API.
type Backend struct {
	Index   *store.Index
	State   *store.State
	Svc     *coordinator.Service
	Metrics *coordinator.Metrics // the coordinator's metrics (never nil)
	Logger  *slog.Logger
	closed  bool
}

// OpenBackend opens the derived index (stateDir/index) over the sessions
// directory and the state database (stateDir/state.db), and builds the
// coordinator on them. Both databases are closed when the test ends,
// unless Close ran before.
func OpenBackend(tb testing.TB, sessions, stateDir string, o Options) *Backend {
	tb.Helper()
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if o.Log != nil {
		log = slog.New(slog.NewTextHandler(o.Log, &slog.HandlerOptions{Level: o.LogLevel}))
	}
	var sm *store.Metrics
	cm := o.Metrics
	if o.Registry != nil {
		sm = store.NewMetrics(o.Registry)
		if cm == nil {
			cm = coordinator.NewMetrics(o.Registry)
		}
	} else if cm == nil {
		cm = coordinator.NewMetrics(nil) // unregistered
	}
	ctx := tb.Context()
	b := &Backend{Logger: log, Metrics: cm}
	var err error
	b.Index, err = store.OpenIndex(ctx, sessions, filepath.Join(stateDir, "index"), store.Options{BatchBytes: o.BatchBytes, MemoryLimit: o.MemoryLimit, Logger: log, Metrics: sm})
	if err != nil {
		tb.Fatalf("open index: %v", err)
	}
	b.State, err = store.OpenState(ctx, filepath.Join(stateDir, "state.db"))
	if err != nil {
		b.Index.Close()
		tb.Fatalf("open state: %v", err)
	}
	b.Svc = coordinator.New(b.Index, b.State, o.DefaultMode, log, cm, o.Coordinator...)
	tb.Cleanup(b.Close)
	return b
}

// Close closes both databases (idempotent; not safe for concurrent use).
func (b *Backend) Close() {
	if b.closed {
		return
	}
	b.closed = true
	b.Index.Close()
	b.State.Close()
}

// WaitServing waits until the `contextd serve` of process pid that uses
// stateDir has written its discovery file and answers GET /healthz at the
// URL the file names (start it with --addr 127.0.0.1:0), and returns that
// URL. A file another process left (one killed before it could remove
// it) is not taken for it. After timeout it fails tb with log(), the
// server's log so far.
func WaitServing(tb testing.TB, stateDir string, pid int, timeout time.Duration, log func() string) string {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	var last error
	for time.Now().Before(deadline) {
		info, err := discovery.Read(stateDir)
		if err == nil && info.PID != pid {
			err = fmt.Errorf("the discovery file names process %d, not %d", info.PID, pid)
		}
		if err == nil {
			var resp *http.Response
			if resp, err = client.Get(info.URL + "/healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return info.URL
				}
				err = fmt.Errorf("GET /healthz: %s", resp.Status)
			}
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("contextd did not start serving within %v (%v)\n%s", timeout, last, log())
	return ""
}
