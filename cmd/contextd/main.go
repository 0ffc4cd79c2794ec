// Command contextd serves Codex-style context management for Pi sessions.
// This file only wires: flags and environment, the databases, the
// coordinator, the HTTP server and signals.
//
// Subcommands (cli.go): serve (default), reindex, sessions, inspect
// FILE.jsonl, stop (stop.go), healthcheck, openapi, version, help.
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
	"contextd/buildinfo"
	"contextd/coordinator"
	"contextd/discovery"
	"contextd/remote"
	"contextd/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, errorLine(err))
		os.Exit(1)
	}
}

// config is every setting, each with a flag and an environment variable.
type config struct {
	Addr           string
	Socket         string
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
	// IndexMaxBytes is the derived index's disk budget (-1: auto,
	// autoIndexBudget; 0: none).
	IndexMaxBytes int64
	PathMap       []store.PathMapping
	// sessionsFrom says where SessionsDir came from (--sessions-dir, an
	// environment variable, or Pi's default), for the start-up log.
	sessionsFrom string
	// flags are the flags given on the command line and getenv the
	// environment, for origin.
	flags  map[string]bool
	getenv func(string) string
}

// flagEnv is the environment variable of each flag that has one.
var flagEnv = map[string]string{
	"sessions-dir": "CONTEXTD_SESSIONS_DIR", "state-dir": "CONTEXTD_STATE_DIR", "memory-limit": "CONTEXTD_MEMORY_LIMIT", "index-max-bytes": "CONTEXTD_INDEX_MAX_BYTES",
	"log-format": "CONTEXTD_LOG_FORMAT", "log-level": "CONTEXTD_LOG_LEVEL", "addr": "CONTEXTD_ADDR", "socket": "CONTEXTD_SOCKET",
	"default-mode": "CONTEXTD_DEFAULT_MODE", "allow-non-loopback": "CONTEXTD_ALLOW_NON_LOOPBACK",
	"allowed-hosts": "CONTEXTD_ALLOWED_HOSTS", "allowed-origins": "CONTEXTD_ALLOWED_ORIGINS",
	"max-conns": "CONTEXTD_MAX_CONNS", "codex-base-url": "CONTEXTD_CODEX_BASE_URL", "path-map": "CONTEXTD_PATH_MAP",
}

// origin names a setting and its value as the user wrote it, for error
// messages: `--default-mode "weird"` when the flag was given (or neither
// was), `CONTEXTD_DEFAULT_MODE="weird"` when the value came from the
// environment variable.
// A string value is quoted, a number is not.
func (c *config) origin(name string, value any) string {
	v := fmt.Sprint(value)
	if s, ok := value.(string); ok {
		v = strconv.Quote(s)
	}
	if env := flagEnv[name]; env != "" && !c.flags[name] && c.getenv != nil && c.getenv(env) != "" {
		return env + "=" + v
	}
	return "--" + name + " " + v
}

// fromEnv prefixes err, whose message names the flag, with the
// environment variable the value came from, if it did.
func (c *config) fromEnv(name string, err error) error {
	if env := flagEnv[name]; env != "" && !c.flags[name] && c.getenv != nil && c.getenv(env) != "" {
		return fmt.Errorf("%s (the value of --%s): %w", env, name, err)
	}
	return err
}

// defaultStateDir is $CONTEXTD_STATE_DIR, else $PI_CODING_AGENT_DIR/contextd,
// else ~/.pi/agent/contextd.
func defaultStateDir(getenv func(string) string) string {
	if v := getenv("CONTEXTD_STATE_DIR"); v != "" {
		return v
	}
	return filepath.Join(agentDir(getenv), "contextd")
}

// pathMapFlag is the repeatable --path-map HOST=CONTAINER.
type pathMapFlag []string

func (p *pathMapFlag) String() string { return strings.Join(*p, ",") }
func (p *pathMapFlag) Set(v string) error {
	*p = append(*p, v)
	return nil
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

// parseFlags parses the flags of serve (all of them) or reindex (the
// index's: paths, line cap, memory, logs), each with its environment
// variable, and refuses nonsense values with a sentence saying what to pass.
func parseFlags(cmd command, args []string, getenv func(string) string, stdout, stderr io.Writer) (*config, *flag.FlagSet, error) {
	serve := cmd.name == "serve"
	env := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	sessions, sessionsFrom := filepath.Join(agentDir(getenv), "sessions"), "default"
	if getenv("PI_CODING_AGENT_DIR") != "" {
		sessionsFrom = "PI_CODING_AGENT_DIR"
	}
	if d := getenv("PI_CODING_AGENT_SESSION_DIR"); d != "" {
		sessions, sessionsFrom = d, "PI_CODING_AGENT_SESSION_DIR"
	}
	if getenv("CONTEXTD_SESSIONS_DIR") != "" {
		sessionsFrom = "CONTEXTD_SESSIONS_DIR"
	}
	maxConns := api.DefaultMaxConns
	if v := getenv("CONTEXTD_MAX_CONNS"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return nil, nil, fmt.Errorf("CONTEXTD_MAX_CONNS=%q is not an integer; set a connection count such as %d (0 = no limit)", v, api.DefaultMaxConns)
		}
		maxConns = n
	}
	memLimit := int64(128 << 20)
	if v := getenv("CONTEXTD_MEMORY_LIMIT"); v != "" {
		n, err := parseSize(v)
		if err != nil {
			return nil, nil, fmt.Errorf("CONTEXTD_MEMORY_LIMIT=%w (0 = no limit)", err)
		}
		memLimit = n
	}
	indexMax := int64(-1)
	if v := getenv("CONTEXTD_INDEX_MAX_BYTES"); v != "" && !strings.EqualFold(strings.TrimSpace(v), "auto") {
		n, err := parseSize(v)
		if err != nil {
			return nil, nil, fmt.Errorf("CONTEXTD_INDEX_MAX_BYTES=%w; or auto, or 0 for no budget", err)
		}
		indexMax = n
	}
	allowNonLocal := false
	if v := getenv("CONTEXTD_ALLOW_NON_LOOPBACK"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, nil, fmt.Errorf("CONTEXTD_ALLOW_NON_LOOPBACK=%q: set 1 or 0", v)
		}
		allowNonLocal = b
	}
	var pathMap pathMapFlag
	if v := getenv("CONTEXTD_PATH_MAP"); v != "" {
		pathMap = splitList(v)
	}
	c := &config{sessionsFrom: sessionsFrom, flags: map[string]bool{}, getenv: getenv}
	fs := newFlagSet(cmd, stderr)
	fs.StringVar(&c.SessionsDir, "sessions-dir", env("CONTEXTD_SESSIONS_DIR", sessions), "Pi sessions directory (env CONTEXTD_SESSIONS_DIR; default $PI_CODING_AGENT_SESSION_DIR or $PI_CODING_AGENT_DIR/sessions or ~/.pi/agent/sessions)")
	fs.StringVar(&c.StateDir, "state-dir", defaultStateDir(getenv), "state directory: index, state database, token (env CONTEXTD_STATE_DIR; default $PI_CODING_AGENT_DIR/contextd or ~/.pi/agent/contextd)")
	sizeVar(fs, &c.MaxLineBytes, "max-line-bytes", 64<<20, "longest JSONL line indexed, in bytes or with a unit (64MiB); longer lines are skipped and reported")
	sizeVar(fs, &c.MemoryLimit, "memory-limit", memLimit, "soft limit of the Go heap, in bytes or with a unit (128MiB, \"128 MiB\", 134217728; runtime/debug.SetMemoryLimit); the GC works harder near it, which keeps indexing a 1 GB session under ~200 MB RSS; a session with more entries than 3/4 of it at 352 bytes each (285,975 at 128 MiB) is not indexed (session_too_large); at least 16MiB, or 0 = none (env CONTEXTD_MEMORY_LIMIT)")
	fs.StringVar(&c.LogFormat, "log-format", env("CONTEXTD_LOG_FORMAT", "text"), "text or json (env CONTEXTD_LOG_FORMAT)")
	fs.StringVar(&c.LogLevel, "log-level", env("CONTEXTD_LOG_LEVEL", "info"), "debug, info, warn, error (env CONTEXTD_LOG_LEVEL)")
	c.Addr, c.DefaultMode, c.MaxBodyBytes, c.MaxConns = "127.0.0.1:7467", "local", api.DefaultMaxBodyBytes, maxConns
	if !serve {
		if err := parseArgs(fs, args, stdout); err != nil {
			return nil, nil, err
		}
		if err := noArgs(fs); err != nil {
			return nil, nil, err
		}
		c.visited(fs)
		return c, fs, c.check()
	}
	fs.StringVar(&c.Addr, "addr", env("CONTEXTD_ADDR", "127.0.0.1:7467"), "listen address (env CONTEXTD_ADDR); loopback only unless --allow-non-loopback")
	fs.StringVar(&c.Socket, "socket", env("CONTEXTD_SOCKET", ""), "Unix domain socket served besides --addr, named in the discovery file; the Pi extension prefers it (env CONTEXTD_SOCKET; default <state-dir>/contextd.sock; off = TCP only)")
	fs.StringVar(&c.DefaultMode, "default-mode", env("CONTEXTD_DEFAULT_MODE", "local"), "mode of unregistered sessions: off, local, tree, remote (env CONTEXTD_DEFAULT_MODE)")
	fs.BoolVar(&c.AllowNonLocal, "allow-non-loopback", allowNonLocal, "allow --addr on a non-loopback address, e.g. 0.0.0.0 in a container (env CONTEXTD_ALLOW_NON_LOOPBACK=1); the token stays required")
	fs.StringVar(&c.AllowedHosts, "allowed-hosts", env("CONTEXTD_ALLOWED_HOSTS", ""), "comma-separated Host names accepted besides loopback (env CONTEXTD_ALLOWED_HOSTS)")
	fs.StringVar(&c.AllowedOrigins, "allowed-origins", env("CONTEXTD_ALLOWED_ORIGINS", ""), "comma-separated Origin values accepted (env CONTEXTD_ALLOWED_ORIGINS); other Origins get 403")
	sizeVar(fs, &c.MaxBodyBytes, "max-body-bytes", api.DefaultMaxBodyBytes, "largest POST/PUT body, in bytes or with a unit (8MiB)")
	c.IndexMaxBytes = indexMax
	fs.Var(autoSizeValue{&c.IndexMaxBytes}, "index-max-bytes", "disk budget of the derived index (index.db and texts/), in bytes or with a unit (4GiB); past it the least recently used sessions' index is evicted and rebuilt from the JSONL when next used; auto = a quarter of the free disk space at start, between 256 MiB and 4 GiB; 0 = no budget (env CONTEXTD_INDEX_MAX_BYTES)")
	fs.IntVar(&c.MaxConns, "max-conns", maxConns, "most connections served at once (env CONTEXTD_MAX_CONNS); more wait in the kernel's accept queue; 0 = no limit")
	fs.StringVar(&c.CodexBaseURL, "codex-base-url", env("CONTEXTD_CODEX_BASE_URL", remote.DefaultBaseURL), "Codex backend base URL for Remote mode (env CONTEXTD_CODEX_BASE_URL)")
	fs.Var(&pathMap, "path-map", "HOST=CONTAINER: a session_file registered under HOST (a Pi outside the container) is read under CONTAINER; repeatable (env CONTEXTD_PATH_MAP, comma-separated)")
	if err := parseArgs(fs, args, stdout); err != nil {
		return nil, nil, err
	}
	if err := noArgs(fs); err != nil {
		return nil, nil, err
	}
	c.visited(fs)
	var err error
	if c.PathMap, err = store.ParsePathMap(pathMap); err != nil {
		return nil, nil, c.fromEnv("path-map", err)
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return nil, nil, fmt.Errorf("%s is not host:port; pass e.g. 127.0.0.1:7467", c.origin("addr", c.Addr))
	}
	if _, err := contextd.ParseMode(c.DefaultMode); err != nil {
		return nil, nil, fmt.Errorf("%s is not a mode; %s", c.origin("default-mode", c.DefaultMode), contextd.ModeAdvice(c.DefaultMode))
	}
	if err := remote.CheckBaseURL(c.CodexBaseURL); err != nil {
		return nil, nil, c.fromEnv("codex-base-url", err)
	}
	if c.Socket == "" {
		c.Socket = filepath.Join(c.StateDir, SocketName)
	}
	if c.Socket != "off" && !filepath.IsAbs(c.Socket) {
		return nil, nil, fmt.Errorf("%s is not an absolute path; pass one, or off to serve TCP only", c.origin("socket", c.Socket))
	}
	if c.MaxConns < 0 {
		return nil, nil, fmt.Errorf("%s is negative; pass a connection count such as %d, or 0 for no limit", c.origin("max-conns", c.MaxConns), api.DefaultMaxConns)
	}
	if c.IndexMaxBytes < -1 {
		return nil, nil, fmt.Errorf("%s is negative; pass a size such as 4GiB, auto, or 0 for no budget", c.origin("index-max-bytes", c.IndexMaxBytes))
	}
	if c.MaxBodyBytes < 1024 {
		return nil, nil, fmt.Errorf("--max-body-bytes %d: use at least 1024 (default %d)", c.MaxBodyBytes, api.DefaultMaxBodyBytes)
	}
	return c, fs, c.check()
}

// check refuses nonsense values of the flags serve and reindex share.
func (c *config) check() error {
	if c.SessionsDir == "" || c.StateDir == "" {
		return errors.New("--sessions-dir and --state-dir must not be empty")
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("%s: use text or json", c.origin("log-format", c.LogFormat))
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return fmt.Errorf("%s: use debug, info, warn or error", c.origin("log-level", c.LogLevel))
	}
	if c.MaxLineBytes < 1024 {
		return fmt.Errorf("--max-line-bytes %d: use at least 1024 (default %d)", c.MaxLineBytes, 64<<20)
	}
	mem := c.origin("memory-limit", c.MemoryLimit)
	if c.MemoryLimit < 0 {
		return fmt.Errorf("%s is negative; pass a size such as 128MiB, or 0 for no limit", mem)
	}
	if c.MemoryLimit > 0 && c.MemoryLimit < 16<<20 {
		return fmt.Errorf("%s is under 16 MiB, too little to index a session; pass at least 16MiB, or 0 for no limit", mem)
	}
	return nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	err := dispatch(ctx, args, getenv, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // -h: the flag set printed the command's usage
	}
	return err
}

// dispatch runs one command (cli.go commands).
func dispatch(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	command, args, done, err := split(args, stdout)
	if done || err != nil {
		return err
	}
	cmd := command.name
	switch cmd {
	case "help":
		return runHelp(args, getenv, stdout)
	case "version":
		return runVersion(command, args, stdout, stderr)
	case "openapi":
		return runOpenAPI(command, args, stdout, stderr)
	case "inspect":
		return runInspect(command, args, stdout, stderr)
	case "eval":
		return runEval(ctx, command, args, stdout, stderr)
	case "healthcheck":
		return runHealthcheck(ctx, command, args, getenv, stdout, stderr)
	case "sessions":
		return runSessions(ctx, command, args, getenv, stdout, stderr)
	case "stop":
		return runStop(ctx, command, args, getenv, stdout, stderr)
	}
	c, _, err := parseFlags(command, args, getenv, stdout, stderr)
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	if c.MemoryLimit > 0 && getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(c.MemoryLimit)
		if getenv("GOGC") == "" {
			// The limit bounds the heap, so the GC need not also keep it
			// within 2x of the live data: indexing allocates about twice
			// the file's size in short-lived strings, and at GOGC=100 a
			// small live heap meant a GC cycle every few MiB (a quarter
			// of the CPU of indexing a 128 MiB session; 6% at 400).
			debug.SetGCPercent(400)
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var mreg prometheus.Registerer = reg
	if wrapRegisterer != nil {
		mreg = wrapRegisterer(reg)
	}
	if fi, err := os.Stat(c.SessionsDir); (err == nil && !fi.IsDir()) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("--sessions-dir %s (from %s) is not a directory; pass the folder Pi writes sessions to", c.SessionsDir, c.sessionsFromFlag())
	} else if errors.Is(err, fs.ErrNotExist) {
		log.Warn(fmt.Sprintf("sessions directory %s (from %s) does not exist; it is indexed once Pi creates it. If that path is mistyped, pass the folder Pi writes sessions to with --sessions-dir", c.SessionsDir, c.sessionsFromFlag()), "sessions_dir", c.SessionsDir)
	} else if err := readableDir(c.SessionsDir); err != nil {
		log.Warn(fmt.Sprintf("sessions directory %s (from %s) cannot be listed (%v); routes that need it answer 503 until the user contextd runs as has read and execute permission on it (chmod u+rx %s)", c.SessionsDir, c.sessionsFromFlag(), err, c.SessionsDir), "sessions_dir", c.SessionsDir)
	}
	if err := stateDirUsable(c, log); err != nil {
		return err
	}
	// Bind before touching the state directory: a refused or busy address
	// leaves nothing behind.
	var ln net.Listener
	if cmd == "serve" {
		l, err := listen(c.Addr, c.origin("addr", c.Addr), c.AllowNonLocal)
		if err != nil {
			return err
		}
		ln = l
	}
	serving := false // once Serve owns ln, Shutdown closes it
	defer func() {
		if ln != nil && !serving {
			ln.Close()
		}
	}()
	// An earlier run leaves the index directory behind: with a token, an
	// index and no state.db, the state database was lost. A token without
	// an index may be one the user wrote before the first start; a state.db
	// with no registration is a run the extension never reached.
	stateLost := exists(filepath.Join(c.StateDir, "index")) && !exists(filepath.Join(c.StateDir, "state.db"))
	unlock, err := store.LockStateDir(c.StateDir)
	if err != nil {
		return fmt.Errorf("--state-dir %s: %w", c.StateDir, err)
	}
	defer unlock()
	var sockLn net.Listener
	if cmd == "serve" && c.Socket != "off" {
		l, err := listenUnix(c.Socket, log)
		if err != nil {
			return fmt.Errorf("%s: %w", c.origin("socket", c.Socket), err)
		}
		sockLn = l
	}
	defer func() {
		if sockLn != nil && !serving {
			sockLn.Close()
		}
	}()
	budget := c.IndexMaxBytes
	if budget < 0 {
		budget = autoIndexBudget(c.StateDir)
	}
	index, err := store.OpenIndex(ctx, c.SessionsDir, filepath.Join(c.StateDir, "index"), store.Options{MaxLineBytes: c.MaxLineBytes, Logger: log, Metrics: store.NewMetrics(mreg), PathMap: c.PathMap, MaxIndexBytes: budget, MemoryLimit: c.MemoryLimit})
	if err != nil {
		return fmt.Errorf("open index: %w", err)
	}
	defer index.Close()
	if cmd == "reindex" {
		if err := index.Rebuild(ctx); err != nil {
			return err
		}
		// The command asks for every session file, not only those a
		// running contextd had indexed (Rebuild's set): index them all
		// (no budget applies here; the next serve applies its own).
		if _, err := index.SyncAll(ctx); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "reindexed %d session files under %s\n", len(index.Sessions()), index.Root())
		return nil
	}
	_, tokenErr := os.Stat(filepath.Join(c.StateDir, "token"))
	state, err := store.OpenState(ctx, filepath.Join(c.StateDir, "state.db"))
	if err != nil {
		return fmt.Errorf("open state database: %w", err)
	}
	defer state.Close()
	if tokenErr == nil && stateLost {
		warnEmptyState(ctx, log, state, c.StateDir)
	}
	token, err := api.LoadToken(filepath.Join(c.StateDir, "token"))
	if err != nil {
		return err
	}
	cm := coordinator.NewMetrics(mreg)
	svc := coordinator.New(index, state, contextd.Mode(c.DefaultMode), log, cm)
	rc := remote.New(c.CodexBaseURL, mreg, log)
	srv := api.New(api.Config{Token: token, TokenFile: filepath.Join(c.StateDir, "token"), AllowedHosts: splitList(c.AllowedHosts), AllowedOrigins: splitList(c.AllowedOrigins),
		MaxBodyBytes: c.MaxBodyBytes, Logger: log, Registry: reg}, svc, rc)
	registerIndexGauges(mreg, index)

	// The discovery file is written before the first request is served, so
	// a client that reaches /healthz also finds it.
	info := discovery.Info{URL: "http://" + ln.Addr().String(), PID: os.Getpid(), Version: buildinfo.Read().Version}
	if sockLn != nil {
		info.Socket = c.Socket
	}
	if err := discovery.Write(c.StateDir, info); err != nil {
		return err
	}
	hs := api.HTTPServer(srv.Handler())
	conns := api.NewConnMetrics(mreg)
	errc := make(chan error, 2)
	serving = true
	go func() { errc <- hs.Serve(api.LimitListener(ln, c.MaxConns, conns.Listener("tcp"))) }()
	if sockLn != nil {
		// A cap of its own: slow or many TCP clients, which any local
		// user can open, never starve the socket only the user can open.
		go func() { errc <- hs.Serve(api.LimitListener(sockLn, c.MaxConns, conns.Listener("unix"))) }()
	}
	log.Info("contextd listening", "addr", ln.Addr().String(), "socket", info.Socket, "sessions_dir", index.Root(), "sessions_dir_from", c.sessionsFromFlag(), "index_max_bytes", budget,
		"token_file", filepath.Join(c.StateDir, "token"), "state_dir", c.StateDir, "default_mode", c.DefaultMode, "version", buildinfo.Read().Version)
	defer discovery.Remove(c.StateDir, os.Getpid())
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

// wrapRegisterer, when set (tests), wraps the registry the collectors of
// store, coordinator, remote and the index gauges register on, so that a
// test can list every metric serve exports, also those not yet observed.
var wrapRegisterer func(prometheus.Registerer) prometheus.Registerer

// listen refuses a non-loopback address unless allowed explicitly. name
// is the address as the user set it (origin), for the messages.
func listen(addr, name string, allowNonLoopback bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !api.IsLoopbackHost(host) && !allowNonLoopback {
		return nil, fmt.Errorf("%s is not a loopback address; contextd serves local tools only. Pass --allow-non-loopback to bind it anyway (e.g. in a container); the token stays required", name)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w; stop what uses %s or pass another --addr", err, addr)
	}
	return ln, nil
}

// SocketName is the Unix domain socket's name in the state directory,
// the default of --socket.
const SocketName = "contextd.sock"

// maxSocketPath is the longest socket path every platform binds: sun_path
// holds 108 bytes on Linux and 104 on macOS, the terminating NUL included.
const maxSocketPath = 103

// listenUnix serves the Unix domain socket at path, mode 0600 (its
// directory, the state directory, is 0700 and the user's). The caller
// holds the state directory's lock, so a socket left at path is one a
// crashed contextd left: it is removed. Anything else there is refused. A
// path too long for sun_path is logged and served TCP only (nil, nil).
func listenUnix(path string, log *slog.Logger) (net.Listener, error) {
	if len(path) > maxSocketPath {
		log.Warn(fmt.Sprintf("socket path %s is longer than %d bytes, which Unix domain sockets cannot bind; serving TCP only. Pass a shorter --socket, or --socket off to silence this", path, maxSocketPath), "socket", path)
		return nil, nil
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket; remove it or pass another --socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// exists reports whether path exists (any type).
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// stateDirUsable refuses a --state-dir that is a file, or below one, with
// a sentence naming the flag (LockStateDir creates a missing directory).
// A state directory of another user is refused when others may write it
// (its owner, or anyone, could replace the discovery file the extension
// trusts and delete the user's files, as SSH refuses such key
// directories), and warned about otherwise (a volume mounted into a
// container); one of the user's own is narrowed to 0700 by LockStateDir.
func stateDirUsable(c *config, log *slog.Logger) error {
	fi, err := os.Stat(c.StateDir)
	if (err == nil && !fi.IsDir()) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%s is not a directory; pass a directory for the index, state database and token (created if missing)", c.origin("state-dir", c.StateDir))
	}
	st, ok := statOwner(fi, err)
	if !ok || st == os.Geteuid() {
		return nil
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%s belongs to uid %d, not to you (uid %d), and others may write it (mode %04o): they could replace the discovery file the Pi extension trusts and delete your files. Pass a directory of your own (e.g. the default ~/.pi/agent/contextd), or have its owner run `chown %d %s && chmod 700 %s`",
			c.origin("state-dir", c.StateDir), st, os.Geteuid(), perm, os.Geteuid(), c.StateDir, c.StateDir)
	}
	log.Warn(fmt.Sprintf("state directory %s belongs to uid %d, not to uid %d that contextd runs as: its owner can replace the discovery file and the token. Use a directory of your own, or `chown %d %s` (a container's volume: chown it to the container's user)", c.StateDir, st, os.Geteuid(), os.Geteuid(), c.StateDir), "state_dir", c.StateDir)
	return nil
}

// statOwner returns the owner uid of fi (from os.Stat with error err);
// ok is false when there is no such file or no owner to read.
func statOwner(fi os.FileInfo, err error) (int, bool) {
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// warnEmptyState logs at error level when the state database was lost:
// the state directory has a token file and the index of an earlier run but
// no state.db (deleted by hand, or lost with its disk), so the new one
// holds no registration and no rollover. A token file alone is no sign of
// an earlier run (docs/security.md suggests writing one before the first
// start), and an existing state.db with no registration is a run the
// extension never registered with. What the session files hold is still
// served: unregistered sessions get the mode their file shows
// (coordinator.ModeHint) and a rollover cut short is reported from the
// file (GET /v1/sessions/{id} incomplete_rollover).
func warnEmptyState(ctx context.Context, log *slog.Logger, state *store.State, dir string) {
	empty, err := state.Empty(ctx)
	if err != nil {
		log.Error("cannot read the state database", "state_dir", dir, "error", err)
		return
	}
	if empty {
		log.Error(fmt.Sprintf("state database %s is empty although %s and the index of an earlier run exist: the registrations, modes and rollovers of an earlier run are gone (state.db lost). Sessions are served with the mode their file shows until the extension registers them again; rollovers cut short are reported from the session files",
			filepath.Join(dir, "state.db"), filepath.Join(dir, "token")), "state_dir", dir)
	}
}

// readableDir checks that dir can be opened and listed.
func readableDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Readdirnames(1); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// visited records that --sessions-dir was given on the command line.
func (c *config) visited(fs *flag.FlagSet) {
	fs.Visit(func(f *flag.Flag) {
		c.flags[f.Name] = true
		if f.Name == "sessions-dir" {
			c.sessionsFrom = "flag"
		}
	})
}

// sessionsFromFlag names where the sessions directory came from.
func (c *config) sessionsFromFlag() string {
	if c.sessionsFrom == "flag" {
		return "--sessions-dir"
	}
	if c.sessionsFrom == "default" {
		return "the default ~/.pi/agent/sessions"
	}
	return "$" + c.sessionsFrom
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
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "contextd_sessions", Help: "Sessions whose derived index is loaded (used since contextd started, not evicted since)."},
		func() float64 {
			n := 0
			for _, s := range x.Sessions() {
				if s.Indexed() {
					n++
				}
			}
			return float64(n)
		}))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "contextd_entries", Help: "Entries indexed over all sessions."},
		func() float64 {
			n := 0
			for _, s := range x.Sessions() {
				n += s.Len()
			}
			return float64(n)
		}))
}

func printOpenAPI(w io.Writer, format, version string) error {
	build := map[[2]string]func() ([]byte, error){
		{"yaml", "3.1"}: api.SpecYAML, {"json", "3.1"}: api.SpecJSON,
		{"yaml", "3.0"}: api.Spec30YAML, {"json", "3.0"}: api.Spec30JSON,
	}[[2]string{format, version}]
	b, err := build()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
