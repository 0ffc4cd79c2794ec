// Command contextd serves Codex-style context management for Pi sessions.
// This file only wires: flags and environment, the databases, the
// coordinator, the HTTP server and signals.
//
// Subcommands: serve (default), reindex, openapi, inspect FILE.jsonl.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"contextd"
	"contextd/api"
	"contextd/archive"
	"contextd/coordinator"
	"contextd/remote"
	"contextd/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "contextd:", err)
		os.Exit(1)
	}
}

// config is every setting, each with a flag and an environment variable.
type config struct {
	Addr           string
	SessionsDir    string
	StateDir       string
	DefaultMode    string
	AllowNonLocal  bool
	AllowedHosts   string
	AllowedOrigins string
	MaxBodyBytes   int64
	MaxLineBytes   int
	MaxConns       int
	CodexBaseURL   string
	LogFormat      string
	LogLevel       string
	MemoryLimit    int64
}

// agentDir is Pi's agent directory: $PI_CODING_AGENT_DIR (leading ~
// expanded) or ~/.pi/agent (Pi src/config.ts getAgentDir).
func agentDir(getenv func(string) string) string {
	home, _ := os.UserHomeDir()
	if d := getenv("PI_CODING_AGENT_DIR"); d != "" {
		if d == "~" {
			return home
		}
		if strings.HasPrefix(d, "~/") {
			return filepath.Join(home, d[2:])
		}
		return d
	}
	return filepath.Join(home, ".pi", "agent")
}

func parseFlags(name string, args []string, getenv func(string) string, stderr io.Writer) (*config, *flag.FlagSet, error) {
	env := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	sessions := filepath.Join(agentDir(getenv), "sessions")
	if d := getenv("PI_CODING_AGENT_SESSION_DIR"); d != "" {
		sessions = d
	}
	maxConns := api.DefaultMaxConns
	if v := getenv("CONTEXTD_MAX_CONNS"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return nil, nil, fmt.Errorf("CONTEXTD_MAX_CONNS=%q is not an integer; set a connection count such as %d (0 = no limit)", v, api.DefaultMaxConns)
		}
		maxConns = n
	}
	c := &config{}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Addr, "addr", env("CONTEXTD_ADDR", "127.0.0.1:7467"), "listen address (env CONTEXTD_ADDR); loopback only unless --allow-non-loopback")
	fs.StringVar(&c.SessionsDir, "sessions-dir", env("CONTEXTD_SESSIONS_DIR", sessions), "Pi sessions directory (env CONTEXTD_SESSIONS_DIR; default $PI_CODING_AGENT_SESSION_DIR or $PI_CODING_AGENT_DIR/sessions or ~/.pi/agent/sessions)")
	fs.StringVar(&c.StateDir, "state-dir", env("CONTEXTD_STATE_DIR", filepath.Join(agentDir(getenv), "contextd")), "state directory: index, state database, token (env CONTEXTD_STATE_DIR)")
	fs.StringVar(&c.DefaultMode, "default-mode", env("CONTEXTD_DEFAULT_MODE", "local"), "mode of unregistered sessions: off, local, tree, remote (env CONTEXTD_DEFAULT_MODE)")
	fs.BoolVar(&c.AllowNonLocal, "allow-non-loopback", getenv("CONTEXTD_ALLOW_NON_LOOPBACK") == "1", "allow --addr on a non-loopback address, e.g. 0.0.0.0 in a container (env CONTEXTD_ALLOW_NON_LOOPBACK=1); the token stays required")
	fs.StringVar(&c.AllowedHosts, "allowed-hosts", env("CONTEXTD_ALLOWED_HOSTS", ""), "comma-separated Host names accepted besides loopback (env CONTEXTD_ALLOWED_HOSTS)")
	fs.StringVar(&c.AllowedOrigins, "allowed-origins", env("CONTEXTD_ALLOWED_ORIGINS", ""), "comma-separated Origin values accepted (env CONTEXTD_ALLOWED_ORIGINS); other Origins get 403")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", api.DefaultMaxBodyBytes, "largest POST/PUT body in bytes")
	fs.IntVar(&c.MaxLineBytes, "max-line-bytes", 64<<20, "longest JSONL line indexed, in bytes; longer lines are skipped and reported")
	fs.IntVar(&c.MaxConns, "max-conns", maxConns, "most connections served at once (env CONTEXTD_MAX_CONNS); more wait in the kernel's accept queue; 0 = no limit")
	fs.StringVar(&c.CodexBaseURL, "codex-base-url", env("CONTEXTD_CODEX_BASE_URL", remote.DefaultBaseURL), "Codex backend base URL for Remote mode (env CONTEXTD_CODEX_BASE_URL)")
	fs.Int64Var(&c.MemoryLimit, "memory-limit", envInt64(getenv, "CONTEXTD_MEMORY_LIMIT", 128<<20), "soft limit of the Go heap in bytes (runtime/debug.SetMemoryLimit); the GC works harder near it, which keeps indexing a 1 GB session under ~200 MB RSS; 0 = none (env CONTEXTD_MEMORY_LIMIT)")
	fs.StringVar(&c.LogFormat, "log-format", env("CONTEXTD_LOG_FORMAT", "text"), "text or json")
	fs.StringVar(&c.LogLevel, "log-level", env("CONTEXTD_LOG_LEVEL", "info"), "debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if _, err := contextd.ParseMode(c.DefaultMode); err != nil {
		return nil, nil, err
	}
	if c.MaxConns < 0 {
		return nil, nil, fmt.Errorf("--max-conns %d is negative; pass a connection count such as %d, or 0 for no limit", c.MaxConns, api.DefaultMaxConns)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return nil, nil, fmt.Errorf("--log-format %q: use text or json", c.LogFormat)
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return nil, nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", c.LogLevel)
	}
	if c.MaxBodyBytes < 1024 {
		return nil, nil, fmt.Errorf("--max-body-bytes %d: use at least 1024 (default %d)", c.MaxBodyBytes, api.DefaultMaxBodyBytes)
	}
	if err := remote.CheckBaseURL(c.CodexBaseURL); err != nil {
		return nil, nil, err
	}
	if c.MaxLineBytes < 1024 {
		return nil, nil, fmt.Errorf("--max-line-bytes %d: use at least 1024 (default %d)", c.MaxLineBytes, 64<<20)
	}
	return c, fs, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve", "reindex", "openapi", "inspect":
	case "help":
		fmt.Fprintln(stdout, "usage: contextd [serve|reindex|openapi|inspect FILE.jsonl] [flags]; contextd serve -h lists the flags")
		return nil
	default:
		return fmt.Errorf("unknown subcommand %q; use serve, reindex, openapi or inspect", cmd)
	}
	c, fset, err := parseFlags("contextd "+cmd, args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if cmd != "inspect" && cmd != "openapi" && fset.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q; %s takes only flags", fset.Args(), cmd)
	}
	switch cmd {
	case "openapi":
		return printOpenAPI(stdout, fset.Args())
	case "inspect":
		if fset.NArg() != 1 {
			return errors.New("usage: contextd inspect FILE.jsonl")
		}
		return inspect(stdout, fset.Arg(0), c.MaxLineBytes)
	}
	log := newLogger(c, stderr)
	if c.MemoryLimit > 0 && getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(c.MemoryLimit)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if fi, err := os.Stat(c.SessionsDir); err == nil && !fi.IsDir() {
		return fmt.Errorf("--sessions-dir %s is not a directory; pass the folder Pi writes sessions to", c.SessionsDir)
	} else if errors.Is(err, fs.ErrNotExist) {
		log.Warn("sessions directory does not exist yet; it is indexed once Pi creates it (or pass --sessions-dir)", "sessions_dir", c.SessionsDir)
	}
	unlock, err := store.LockStateDir(c.StateDir)
	if err != nil {
		return err
	}
	defer unlock()
	index, err := store.OpenIndex(ctx, c.SessionsDir, filepath.Join(c.StateDir, "index"), store.Options{MaxLineBytes: c.MaxLineBytes, Logger: log, Metrics: store.NewMetrics(reg)})
	if err != nil {
		return fmt.Errorf("open index: %w", err)
	}
	defer index.Close()
	if cmd == "reindex" {
		if err := index.Rebuild(ctx); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "reindexed %d session files under %s\n", len(index.Sessions()), index.Root())
		return nil
	}
	state, err := store.OpenState(ctx, filepath.Join(c.StateDir, "state.db"))
	if err != nil {
		return fmt.Errorf("open state database: %w", err)
	}
	defer state.Close()
	token, err := api.LoadToken(filepath.Join(c.StateDir, "token"))
	if err != nil {
		return err
	}
	cm := coordinator.NewMetrics(reg)
	svc := coordinator.New(index, state, contextd.Mode(c.DefaultMode), log, cm)
	archive.Install(svc)
	rc := remote.New(c.CodexBaseURL, reg, log)
	srv := api.New(api.Config{Token: token, AllowedHosts: splitList(c.AllowedHosts), AllowedOrigins: splitList(c.AllowedOrigins),
		MaxBodyBytes: c.MaxBodyBytes, Logger: log, Registry: reg}, svc, rc)
	api.InstallRollovers(srv)
	registerIndexGauges(reg, index)

	ln, err := listen(c.Addr, c.AllowNonLocal)
	if err != nil {
		return err
	}
	hs := api.HTTPServer(srv.Handler())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(api.LimitListener(ln, c.MaxConns)) }()
	log.Info("contextd listening", "addr", ln.Addr().String(), "sessions_dir", index.Root(), "state_dir", c.StateDir, "default_mode", c.DefaultMode)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(sctx)
}

// listen refuses a non-loopback address unless allowed explicitly.
func listen(addr string, allowNonLoopback bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--addr %q: %w", addr, err)
	}
	if !api.IsLoopbackHost(host) && !allowNonLoopback {
		return nil, fmt.Errorf("--addr %q is not a loopback address; contextd serves local tools only. Pass --allow-non-loopback to bind it anyway (e.g. in a container); the token stays required", addr)
	}
	return net.Listen("tcp", addr)
}

func envInt64(getenv func(string) string, key string, def int64) int64 {
	if v := getenv(key); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return def
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func newLogger(c *config, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.LogLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// registerIndexGauges exports the sessions and entries counts, read from
// the index when scraped.
func registerIndexGauges(reg prometheus.Registerer, x *store.Index) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "contextd_sessions", Help: "Session files known to the index."},
		func() float64 { return float64(len(x.Sessions())) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "contextd_entries", Help: "Entries indexed over all sessions."},
		func() float64 {
			n := 0
			for _, s := range x.Sessions() {
				n += s.Len()
			}
			return float64(n)
		}))
}

func printOpenAPI(w io.Writer, args []string) error {
	b, err := api.SpecYAML()
	if err != nil {
		return err
	}
	if len(args) > 0 && args[0] == "json" {
		b, err = api.SpecJSON()
		if err != nil {
			return err
		}
	}
	_, err = w.Write(b)
	return err
}
