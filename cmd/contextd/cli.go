package main

// The command line: the subcommand table, top-level and per-command help,
// --version, and the commands that talk to a running contextd or read one
// file (healthcheck, sessions, inspect, openapi, version); all that talk
// to contextd find it through clientEndpoint. The logic lives
// in packages: buildinfo, client, inspect, api.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"path/filepath"
	"strings"
	"time"

	"contextd/buildinfo"
	"contextd/client"
	"contextd/discovery"
	"contextd/inspect"
	"contextd/session"
)

// command is one subcommand: its usage line, a one-line summary, and
// whether it takes positional arguments (args: the word shown in usage;
// "" = none, and any positional argument is refused).
type command struct {
	name, args, summary string
}

var commands = []command{
	{"serve", "", "run the HTTP service (the default when no command is given)"},
	{"reindex", "", "drop and rebuild the derived index from the session files, then exit"},
	{"sessions", "", "list the sessions a running contextd knows, as a table"},
	{"inspect", "FILE.jsonl", "describe one session file; --tree draws its entry tree"},
	{"eval", "FILE.jsonl", "recoverability of a session file: per archived window, the share of dropped identifiers history search_contents and read_item give back"},
	{"stop", "", "stop the contextd running for the state directory (found through its discovery file) and wait for it to exit"},
	{"healthcheck", "", "exit 0 when a running contextd answers /healthz (container HEALTHCHECK, service managers)"},
	{"openapi", "", "print the OpenAPI 3.1 spec (YAML, or --format json; --openapi-version 3.0 for its 3.0.3 downgrade)"},
	{"version", "", "print the version, commit, Go and SQLite versions (also --version)"},
	{"help", "[COMMAND]", "print this help, or the flags of COMMAND"},
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usage is the top-level help (contextd --help).
func usage(w io.Writer) {
	fmt.Fprint(w, "contextd serves Codex-style context management (history, notes, context windows) for Pi sessions.\n\n")
	fmt.Fprint(w, "Usage:\n  contextd [COMMAND] [flags] [args]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nFlags:\n  -h, --help     this help\n  --version      print the version\n\nRun `contextd COMMAND --help` for the flags of one command.\n")
}

// newFlagSet returns the flag set of cmd, whose -h prints only its flags.
func newFlagSet(cmd command, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("contextd "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		w := fs.Output()
		u := "contextd " + cmd.name + " [flags]"
		if cmd.args != "" {
			u += " " + cmd.args
		}
		fmt.Fprintf(w, "Usage: %s\n\n%s.\n", u, upperFirst(cmd.summary))
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprint(w, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// parseArgs parses args into fs, with flags before or after the
// positional arguments (contextd inspect FILE --tree is contextd inspect
// --tree FILE); after "--" every argument is positional. Go's flag stops
// at the first non-flag, so the rest is parsed again after each
// positional argument, and fs.Args() is left holding the positional
// arguments in order. A -h/--help before any "--" prints the command's
// usage and flags to stdout (so it can be piped) and returns flag.ErrHelp,
// which run turns into exit 0. A flag that is not defined or a value
// that does not parse is returned as one error naming `contextd CMD
// --help` (main prints it once), without the usage Go's flag package
// would print first.
func parseArgs(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(stdout)
			fs.Usage()
			return flag.ErrHelp
		}
	}
	out := fs.Output()
	fs.SetOutput(io.Discard)
	defer fs.SetOutput(out)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("%w; `%s --help` lists the flags", err, fs.Name())
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			pos = append(pos, rest...) // the flags ended at "--"
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	return fs.Parse(append([]string{"--"}, pos...))
}

// noArgs refuses positional arguments left after the flags.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("%s takes no arguments, got %q; see `%s --help`", fs.Name(), fs.Args(), fs.Name())
	}
	return nil
}

// split separates the subcommand from its arguments: no command, or a
// first argument that is a flag, means serve (as before subcommands). It
// answers --help and --version itself (done = true).
func split(args []string, stdout io.Writer) (cmd command, rest []string, done bool, err error) {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			usage(stdout)
			return command{}, nil, true, nil
		case "-version", "--version":
			if len(args) > 1 {
				return command{}, nil, true, fmt.Errorf("--version takes no arguments, got %q", args[1:])
			}
			fmt.Fprintln(stdout, buildinfo.Read())
			return command{}, nil, true, nil
		}
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		c, _ := lookup("serve")
		return c, args, false, nil
	}
	c, ok := lookup(args[0])
	if !ok {
		names := make([]string, len(commands))
		for i, c := range commands {
			names[i] = c.name
		}
		return command{}, nil, true, fmt.Errorf("unknown command %q; use one of %s (contextd --help)", args[0], strings.Join(names, ", "))
	}
	return c, args[1:], false, nil
}

// runHelp is `contextd help [COMMAND]`.
func runHelp(args []string, getenv func(string) string, stdout io.Writer) error {
	switch len(args) {
	case 0:
		usage(stdout)
		return nil
	case 1:
		if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
			usage(stdout) // contextd help --help
			return nil
		}
		if _, ok := lookup(args[0]); !ok || args[0] == "help" {
			return fmt.Errorf("no help for %q; contextd --help lists the commands", args[0])
		}
		// The command's own -h prints its usage and flags.
		return dispatch(context.Background(), []string{args[0], "-h"}, getenv, stdout, stdout)
	}
	return fmt.Errorf("help takes at most one command, got %q", args)
}

// runVersion is `contextd version`.
func runVersion(cmd command, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(cmd, stderr)
	if err := parseArgs(fs, args, stdout); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	_, err := fmt.Fprintln(stdout, buildinfo.Read())
	return err
}

// runOpenAPI is `contextd openapi [--format yaml|json] [--openapi-version 3.1|3.0]`.
func runOpenAPI(cmd command, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(cmd, stderr)
	format := fs.String("format", "yaml", "yaml or json")
	version := fs.String("openapi-version", "3.1", "OpenAPI version: 3.1 (the document), or 3.0 (its 3.0.3 downgrade, for generators such as oapi-codegen)")
	if err := parseArgs(fs, args, stdout); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *format != "yaml" && *format != "json" {
		return fmt.Errorf("--format %q: use yaml or json", *format)
	}
	if *version != "3.1" && *version != "3.0" {
		return fmt.Errorf("--openapi-version %q: use 3.1 or 3.0", *version)
	}
	return printOpenAPI(stdout, *format, *version)
}

// runInspect is `contextd inspect [--tree [--expand]] FILE.jsonl`: it exits
// non-zero (returns an error) for a file that is not a Pi session.
func runInspect(cmd command, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(cmd, stderr)
	tree := fs.Bool("tree", false, "draw the entry tree: active path (*), branches, windows and boundaries, archives with their summaries, invalid manifests with reasons, labels")
	expand := fs.Bool("expand", false, "with --tree: draw every entry instead of collapsing runs of ordinary entries")
	var maxLineBytes int
	maxLine := &maxLineBytes
	sizeVar(fs, maxLine, "max-line-bytes", session.DefaultMaxLineBytes, "longest JSONL line read, in bytes or with a unit (64MiB); longer lines are skipped and reported")
	if err := parseArgs(fs, args, stdout); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("inspect takes exactly one session file, got %d arguments; usage: contextd inspect [--tree [--expand]] FILE.jsonl", fs.NArg())
	}
	if *expand && !*tree {
		return errors.New("--expand only applies to --tree")
	}
	if *maxLine < 1024 {
		return fmt.Errorf("--max-line-bytes %d: use at least 1024 (default %d)", *maxLine, session.DefaultMaxLineBytes)
	}
	f, err := inspect.Load(fs.Arg(0), *maxLine)
	if err != nil {
		return err
	}
	if *tree {
		return inspect.Tree(stdout, f, inspect.TreeOptions{Expand: *expand})
	}
	return inspect.Summary(stdout, f)
}

// defaultAddr is contextd's listen address when --addr is not given.
const defaultAddr = "127.0.0.1:7467"

// addrFlag registers --addr (env CONTEXTD_ADDR) for the client commands.
func addrFlag(fs *flag.FlagSet, getenv func(string) string) *string {
	def := defaultAddr
	if v := getenv("CONTEXTD_ADDR"); v != "" {
		def = v
	}
	return fs.String("addr", def, "address of the running contextd (env CONTEXTD_ADDR); default: the URL in the discovery file of --state-dir, else "+defaultAddr+"; 0.0.0.0 is called as 127.0.0.1")
}

// stateDirFlag registers --state-dir (env CONTEXTD_STATE_DIR) for the
// client commands.
func stateDirFlag(fs *flag.FlagSet, getenv func(string) string) *string {
	return fs.String("state-dir", defaultStateDir(getenv), "state directory of the running contextd: its discovery file (contextd.json) names the address, its token file authenticates (env CONTEXTD_STATE_DIR; default $PI_CODING_AGENT_DIR/contextd or ~/.pi/agent/contextd)")
}

// clientEndpoint is where a client command (healthcheck, sessions; stop
// through client.Locate) reaches contextd: --addr or CONTEXTD_ADDR when
// given (TCP; given is true); else what the discovery file of stateDir
// names, its Unix socket before its URL, once the file, the state
// directory and the socket passed the owner and mode checks
// (client.Locate; docs/design.md §7 "Discovery": a contextd on another
// port, or on port 0, is found there). Errors: fs.ErrNotExist (wrapped)
// when there is no discovery file and no address was given, for the
// caller to decide (healthcheck calls defaultAddr, sessions refuses);
// otherwise one sentence saying what to do.
func clientEndpoint(fs *flag.FlagSet, getenv func(string) string, addr, stateDir string) (ep client.Endpoint, given bool, err error) {
	given = getenv("CONTEXTD_ADDR") != ""
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "addr" })
	if !given {
		ep, _, err := client.Locate(stateDir)
		return ep, false, err
	}
	base, err := client.BaseURL(addr)
	if err != nil {
		return client.Endpoint{}, true, addrFromEnv(fs, getenv, err)
	}
	return client.TCP(base), true, nil
}

// addrFromEnv prefixes err, a refusal of --addr, with CONTEXTD_ADDR when
// the value came from it.
func addrFromEnv(fs *flag.FlagSet, getenv func(string) string, err error) error {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "addr" })
	if !given && getenv("CONTEXTD_ADDR") != "" {
		return fmt.Errorf("CONTEXTD_ADDR (the value of --addr): %w", err)
	}
	return err
}

// runHealthcheck is `contextd healthcheck`: GET /healthz, exit 0 on 200 ok.
func runHealthcheck(ctx context.Context, cmd command, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet(cmd, stderr)
	addr := addrFlag(fs, getenv)
	state := stateDirFlag(fs, getenv)
	timeout := durationFlag(fs, "timeout", 3*time.Second, "how long to wait for the answer, such as 3s or 500ms")
	quiet := fs.Bool("quiet", false, "print nothing on success")
	if err := parseArgs(fs, args, stdout); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *timeout <= 0 {
		return fmt.Errorf("--timeout %s: use a positive duration such as 3s", *timeout)
	}
	ep, given, err := clientEndpoint(fs, getenv, *addr, *state)
	if errors.Is(err, iofs.ErrNotExist) {
		// Nothing secret is sent: without a discovery file, the default port.
		base, _ := client.BaseURL(defaultAddr)
		ep, err = client.TCP(base), nil
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := client.Health(ctx, ep.OneConnection(), ep); err != nil {
		return explainNotRunning(err, *state, *addr, given)
	}
	if !*quiet {
		fmt.Fprintf(stdout, "ok: contextd at %s is healthy\n", ep.Label)
	}
	return nil
}

// runSessions is `contextd sessions`: GET /v1/sessions as a table.
func runSessions(ctx context.Context, cmd command, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet(cmd, stderr)
	addr := addrFlag(fs, getenv)
	state := stateDirFlag(fs, getenv)
	if err := parseArgs(fs, args, stdout); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	// The discovery file names where the token goes: only one of the
	// user's, writable by nobody else, is read, and only a socket of the
	// user's in a directory nobody else may write is used
	// (docs/security.md).
	ep, given, locateErr := clientEndpoint(fs, getenv, *addr, *state)
	if locateErr != nil && !errors.Is(locateErr, iofs.ErrNotExist) {
		return locateErr
	}
	tokenFile := filepath.Join(*state, "token")
	token, err := client.ReadToken(tokenFile)
	if errors.Is(err, iofs.ErrNotExist) {
		return noContextd(fmt.Sprintf("no contextd has run with state directory %s (no token file %s); start one with `contextd serve`, or pass the --state-dir of the running contextd", *state, tokenFile))
	}
	if err != nil {
		return err
	}
	if err := client.CheckTokenFile(tokenFile); err != nil {
		return err
	}
	// The token goes only to the endpoint the discovery file or --addr
	// names, never to the default port.
	if locateErr != nil && !given {
		return noContextd(fmt.Sprintf("no contextd is running for %s (no %s); start one with `contextd serve`, or pass --addr of the running contextd", *state, discovery.Path(*state)))
	}
	// Over TCP, only once the listener proved on that connection that it
	// holds the token; over the user's socket no proof is needed
	// (client.Endpoint.NeedsProof says why).
	hc := ep.OneConnection()
	if ep.NeedsProof() {
		if err := client.Prove(ctx, hc, ep, token, tokenFile); err != nil {
			return explainNotRunning(err, *state, *addr, given)
		}
	}
	rows, err := client.Sessions(ctx, hc, ep, token)
	if err != nil {
		return explainNotRunning(err, *state, *addr, given)
	}
	return client.WriteSessionsTable(stdout, rows)
}

// serveCmd is the serve entry of commands.
var serveCmd, _ = lookup("serve")

// noContextd is the error of a command that found no contextd to talk to:
// its sentence says what to run, and errors.Is(err, fs.ErrNotExist) holds
// (the file that names a contextd is missing).
type noContextd string

func (e noContextd) Error() string { return string(e) }

// Unwrap makes errors.Is(e, fs.ErrNotExist) true.
func (noContextd) Unwrap() error { return iofs.ErrNotExist }
