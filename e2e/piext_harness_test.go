package e2e

// Harness of the Pi extension suite (piext_test.go): the contextd binary
// built from this tree, real Pi 0.85.1 and 1.6.0 from e2e/node_modules in
// RPC mode on the pinned Node, the extension in ../extension and the
// test-only faux provider in faux/faux-provider.ts. No network: Pi runs with
// PI_OFFLINE=1, HOME and PI_CODING_AGENT_DIR in temp dirs.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// piVersion is one installed Pi.
type piVersion struct {
	Name   string // subtest name
	Semver string // what the extension registers as pi_version
	CLI    string // dist/cli.js, relative to e2e/node_modules (or absolute)
}

var piVersions = []piVersion{
	{"pi-0.85", "0.85.1", "@earendil-works/pi-coding-agent/dist/cli.js"},
	{"pi-1.6", "1.6.0", "pi-coding-agent-1.6/dist/cli.js"},
}

// cli is the absolute path of v's dist/cli.js.
func (v piVersion) cli() string {
	if filepath.IsAbs(v.CLI) {
		return v.CLI
	}
	return filepath.Join(Dir(), "node_modules", v.CLI)
}

// before086 reports whether v is a Pi below 0.86.0 (Semver "0.85.1"), the
// line whose ctx.abort() in the TUI leaves a branch summary running and
// whose /reload is not deferred while agent_settled handlers run.
func (v piVersion) before086() bool {
	var major, minor int
	if _, err := fmt.Sscanf(v.Semver, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major == 0 && minor < 86
}

// eachPi runs fn as one subtest per Pi version: piVersions, or the Pis PiDirsEnv names
// (e2e/pi-versions.sh).
func eachPi(t *testing.T, fn func(t *testing.T, v piVersion)) {
	vs := piVersions
	if names, dirs := piDirs(t); names != nil {
		vs = nil
		for i, name := range names {
			vs = append(vs, piVersion{"pi-" + name, name, filepath.Join(dirs[i], "dist", "cli.js")})
		}
	}
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) { fn(t, v) })
	}
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// contextdBinary builds ./cmd/contextd once per test process.
func contextdBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "contextd-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "contextd")
		cmd := exec.Command("go", "build", "-tags", "sqlite_fts5", "-o", buildPath, "./cmd/contextd")
		cmd.Dir = filepath.Join(Dir(), "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// step is one scripted model reply (faux-provider.ts).
type step struct {
	Text  string `json:"text,omitempty"`
	Calls []call `json:"calls,omitempty"`
}

type call struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

func tool(name string, args map[string]any) step {
	if args == nil {
		args = map[string]any{}
	}
	return step{Calls: []call{{Name: name, Arguments: args}}}
}

// rig is one contextd plus one Pi agent directory.
type rig struct {
	t        *testing.T
	v        piVersion
	mode     string
	dir      string
	agent    string // PI_CODING_AGENT_DIR
	work     string // Pi's cwd
	state    string // contextd state dir = agent/contextd (the extension's default)
	sessions string // agent/sessions (Pi's and contextd's default)
	addr     string // fixed, so a restarted contextd answers at the same URL
	logPath  string
	answers  string // CONTEXTD_E2E_ANSWERS: every answer the extension got (answers_test.go)
	// plainForwards: the test's fake Codex backend answers plain JSON
	// objects, which Remote mode forwards unchanged (checkAnswers).
	plainForwards bool
	script        string
	env           []string // extra Pi env
	// installed: the extension was installed with `pi install`, so Pi
	// loads it from settings.json instead of -e.
	installed bool
	// model: Pi's --model; "" means the faux provider's faux/faux-1.
	model string

	cd  *exec.Cmd
	cdN int
	pi  *piProc
}

func newRig(t *testing.T, v piVersion, mode string, steps []step) *rig {
	t.Helper()
	dir := t.TempDir()
	r := &rig{t: t, v: v, mode: mode, dir: dir, agent: filepath.Join(dir, "agent"), work: filepath.Join(dir, "work"),
		logPath: filepath.Join(dir, "requests.jsonl"), script: filepath.Join(dir, "script.json"), answers: filepath.Join(dir, "answers.jsonl")}
	r.state = filepath.Join(r.agent, "contextd")
	r.sessions = filepath.Join(r.agent, "sessions")
	for _, d := range []string{r.agent, r.work, filepath.Join(dir, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.Marshal(steps)
	if err := os.WriteFile(r.script, b, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = l.Addr().String()
	l.Close()
	// Registered first, so it runs last: after Pi is gone.
	t.Cleanup(func() { r.checkAnswers() })
	t.Cleanup(func() {
		if r.pi != nil {
			r.pi.kill()
		}
		r.stopContextd(false)
	})
	r.env = append(r.env, "CONTEXTD_E2E_ANSWERS="+r.answers)
	return r
}

// startContextd runs the binary on the rig's state and sessions dirs and
// waits for its discovery file and /healthz.
func (r *rig) startContextd(args ...string) {
	r.t.Helper()
	r.cdN++
	logf, err := os.Create(filepath.Join(r.dir, fmt.Sprintf("contextd-%d.log", r.cdN)))
	if err != nil {
		r.t.Fatal(err)
	}
	cmd := exec.Command(contextdBinary(r.t), append([]string{"serve", "--addr", r.addr, "--state-dir", r.state, "--sessions-dir", r.sessions}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(r.dir, "home"), "PI_CODING_AGENT_DIR="+r.agent)
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.cd = cmd
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(r.state, "contextd.json")); err == nil && bytes.Contains(b, []byte(r.addr)) {
			if resp, err := http.Get("http://" + r.addr + "/healthz"); err == nil {
				resp.Body.Close()
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("contextd did not start: %s", r.readFile(logf.Name()))
}

// stopContextd ends contextd: SIGKILL when kill, else SIGTERM (graceful).
func (r *rig) stopContextd(kill bool) {
	if r.cd == nil {
		return
	}
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = r.cd.Process.Signal(sig)
	_ = r.cd.Wait()
	r.cd = nil
}

func (r *rig) readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// api calls contextd with its token and decodes the JSON answer into out.
func (r *rig) api(method, path string, body, out any) int {
	r.t.Helper()
	tok, err := os.ReadFile(filepath.Join(r.state, "token"))
	if err != nil {
		r.t.Fatal(err)
	}
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+r.addr+path, rd)
	req.Header.Set("X-Contextd-Token", strings.TrimSpace(string(tok)))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			r.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	if resp.StatusCode/100 != 2 && out != nil {
		r.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// piProc is a Pi process in RPC mode.
type piProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr lockedBuffer // Pi's stderr, written by exec's copying goroutine while tests read it
	mu     sync.Mutex
	events []map[string]any
	done   chan struct{}
}

// startPi starts Pi in RPC mode with the extension and the faux provider.

// summaryHold pauses the faux branch summary of a Tree rollover
// (CONTEXTD_E2E_HOLD_SUMMARY in e2e/faux): the summarizer writes
// "summary-started" into the hold directory and waits for
// "summary-continue".
type summaryHold struct{ dir string }

// holdSummary makes the next Pi started by r pause its branch summary.
func (r *rig) holdSummary() summaryHold {
	h := summaryHold{filepath.Join(r.dir, "hold")}
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		r.t.Fatal(err)
	}
	r.env = append(r.env, "CONTEXTD_E2E_HOLD_SUMMARY="+h.dir)
	return h
}

// waitStarted waits up to 60 s for the summary to start.
func (h summaryHold) waitStarted(t *testing.T, p *piProc) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for _, err := os.Stat(filepath.Join(h.dir, "summary-started")); err != nil; _, err = os.Stat(filepath.Join(h.dir, "summary-started")) {
		if time.Now().After(deadline) {
			t.Fatalf("no summarization started; events %s", summarizeEvents(p.snapshot()))
		}
		time.Sleep(30 * time.Millisecond)
	}
}

// release lets the held summary finish.
func (h summaryHold) release(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, "summary-continue"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// commitHold pauses a Local rollover between its settle and its commit
// (CONTEXTD_E2E_HOLD_LOCAL_COMMIT in extension/src/e2e_hold.ts): the
// extension writes "commit-held" into the hold directory and waits for
// "commit-continue".
type commitHold struct{ dir string }

// holdLocalCommit makes the next Pi started by r pause its Local commit.
func (r *rig) holdLocalCommit() commitHold {
	h := commitHold{filepath.Join(r.dir, "hold-commit")}
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		r.t.Fatal(err)
	}
	r.env = append(r.env, "CONTEXTD_E2E_HOLD_LOCAL_COMMIT="+h.dir)
	return h
}

// waitHeld waits up to 60 s for the Local rollover to be settled and held.
func (h commitHold) waitHeld(t *testing.T, p *piProc) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for _, err := os.Stat(filepath.Join(h.dir, "commit-held")); err != nil; _, err = os.Stat(filepath.Join(h.dir, "commit-held")) {
		if time.Now().After(deadline) {
			t.Fatalf("no Local commit was held; events %s", summarizeEvents(p.snapshot()))
		}
		time.Sleep(30 * time.Millisecond)
	}
}

func (r *rig) startPi(args ...string) *piProc {
	r.t.Helper()
	node := NodeBinary(r.t)
	cli := r.v.cli()
	argv := []string{cli, "--mode", "rpc"}
	if !r.installed {
		argv = append(argv, "-e", filepath.Join(Dir(), "..", "extension"))
	}
	model := r.model
	if model == "" {
		model = "faux/faux-1"
	}
	argv = append(append(argv, "-e", filepath.Join(Dir(), "faux", "faux-provider.ts"), "--model", model), args...)
	cmd := exec.Command(node, argv...)
	cmd.Dir = r.work
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(r.dir, "home"), "PI_CODING_AGENT_DIR="+r.agent, "PI_OFFLINE=1",
		"CONTEXTD_MODE="+r.mode, "CONTEXTD_E2E_SCRIPT="+r.script, "CONTEXTD_E2E_LOG="+r.logPath)
	cmd.Env = append(cmd.Env, r.env...)
	p := &piProc{t: r.t, cmd: cmd, done: make(chan struct{})}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		r.t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	cmd.Stderr = &p.stderr
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		br := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				var ev map[string]any
				if json.Unmarshal(line, &ev) == nil {
					p.mu.Lock()
					p.events = append(p.events, ev)
					p.mu.Unlock()
				}
			}
			if err != nil {
				return
			}
		}
	}()
	r.pi = p
	// Session start (registration, window 0, capture) is done once Pi
	// answers a command.
	p.send(map[string]any{"type": "get_state", "id": "ready"})
	p.waitFor("get_state response", 60*time.Second, func(evs []map[string]any) bool {
		for _, e := range evs {
			if e["type"] == "response" && e["id"] == "ready" {
				return true
			}
		}
		return false
	})
	return p
}

func (p *piProc) send(cmd map[string]any) {
	p.t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("write to pi: %v\nstderr:\n%s", err, p.stderr.String())
	}
}

// snapshot returns the events seen so far.
func (p *piProc) snapshot() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]any(nil), p.events...)
}

// waitFor polls until cond holds for the events seen so far.
func (p *piProc) waitFor(what string, timeout time.Duration, cond func([]map[string]any) bool) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond(p.snapshot()) {
			return
		}
		select {
		case <-p.done:
			if cond(p.snapshot()) {
				return
			}
			p.t.Fatalf("pi exited while waiting for %s\nstderr:\n%s", what, p.stderr.String())
		case <-time.After(30 * time.Millisecond):
		}
	}
	p.t.Fatalf("timed out waiting for %s; events: %s\nstderr:\n%s", what, summarizeEvents(p.snapshot()), p.stderr.String())
}

// count returns how many events have type typ.
func count(evs []map[string]any, typ string) int {
	n := 0
	for _, e := range evs {
		if e["type"] == typ {
			n++
		}
	}
	return n
}

// prompt sends a prompt and waits until Pi has settled runs more agent
// runs in total and stays quiet (no new agent_start) for a moment.
func (p *piProc) prompt(msg string, runs int) {
	p.t.Helper()
	p.send(map[string]any{"type": "prompt", "message": msg})
	p.waitSettled(runs)
}

// waitSettled waits for the runs-th agent_settled event and a quiet period.
func (p *piProc) waitSettled(runs int) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf("%d agent_settled", runs), 60*time.Second, func(evs []map[string]any) bool {
		return count(evs, "agent_settled") >= runs
	})
	time.Sleep(400 * time.Millisecond)
	if n := count(p.snapshot(), "agent_start"); n != count(p.snapshot(), "agent_settled") {
		p.waitFor("runs to settle", 60*time.Second, func(evs []map[string]any) bool {
			return count(evs, "agent_start") == count(evs, "agent_settled")
		})
	}
}

// notices returns the messages of extension notify requests of the given
// level ("" = all).
func (p *piProc) notices(level string) []string {
	var out []string
	for _, e := range p.snapshot() {
		if e["type"] == "extension_ui_request" && e["method"] == "notify" && (level == "" || e["notifyType"] == level) {
			out = append(out, fmt.Sprint(e["message"]))
		}
	}
	return out
}

// stop closes stdin and waits for Pi to exit.
// notice is the first info notice that starts with prefix (the /contextd
// report: the extension also says "context window N started" after a Tree
// rollover), or "".
func (p *piProc) notice(prefix string) string {
	for _, n := range p.notices("info") {
		if strings.HasPrefix(n, prefix) {
			return n
		}
	}
	return ""
}

func (p *piProc) stop() {
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.kill()
	}
	_ = p.cmd.Wait()
}

func (p *piProc) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}

func summarizeEvents(evs []map[string]any) string {
	var b strings.Builder
	for _, e := range evs {
		switch e["type"] {
		case "message_update", "tool_execution_update":
			continue
		}
		fmt.Fprintf(&b, "%v", e["type"])
		if m, ok := e["method"]; ok {
			fmt.Fprintf(&b, "(%v %v)", m, e["message"])
		}
		b.WriteString(" ")
	}
	return b.String()
}

// request is one provider request recorded by the faux provider.
type request struct {
	Kind     string `json:"kind"` // turn or summary
	Step     int    `json:"step"`
	Messages []pmsg `json:"messages"`
}

// pmsg is a provider message (pi-ai Message).
type pmsg struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"toolCallId"`
	IsError    bool            `json:"isError"`
}

type block struct {
	Type      string         `json:"type"`
	Text      string         `json:"text"`
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

func (m pmsg) blocks() []block {
	var bs []block
	if json.Unmarshal(m.Content, &bs) == nil {
		return bs
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	return nil
}

// text is the message's text blocks joined.
func (m pmsg) text() string {
	var b strings.Builder
	for _, c := range m.blocks() {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// conversation drops the system messages 1.6 puts in the transcript.
func (q request) conversation() []pmsg {
	var out []pmsg
	for _, m := range q.Messages {
		if m.Role != "system" && m.Role != "developer" {
			out = append(out, m)
		}
	}
	return out
}

// requests reads the faux provider's request log.
func (r *rig) requests() []request {
	r.t.Helper()
	b, err := os.ReadFile(r.logPath)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []request
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var q request
		if err := json.Unmarshal(line, &q); err != nil {
			r.t.Fatalf("request log: %v", err)
		}
		out = append(out, q)
	}
	return out
}

// turn returns the agent request that asked for script step n.
func turn(t *testing.T, reqs []request, n int) request {
	t.Helper()
	for _, q := range reqs {
		if q.Kind == "turn" && q.Step == n {
			return q
		}
	}
	t.Fatalf("no provider request for step %d", n)
	return request{}
}

// checkClean asserts what every scenario ends with: Pi showed no UI error
// and every provider request kept tool calls and results paired.
func checkClean(t *testing.T, p *piProc, reqs []request) {
	t.Helper()
	if n := p.notices("error"); len(n) != 0 {
		t.Errorf("UI errors: %q", n)
	}
	checkPairing(t, reqs)
}

// checkPairing asserts scenario 4 on every request: each toolResult follows
// the assistant message holding its toolCall (before any other assistant
// message), once, and each toolCall has its result.
func checkPairing(t *testing.T, reqs []request) {
	t.Helper()
	for i, q := range reqs {
		if q.Kind != "turn" {
			continue
		}
		ms := q.conversation()
		open := map[string]bool{}
		seen := map[string]bool{}
		for j, m := range ms {
			switch m.Role {
			case "assistant":
				if len(open) > 0 {
					t.Errorf("request %d (step %d): assistant message %d while tool calls %v have no result", i, q.Step, j, keys(open))
				}
				open = map[string]bool{}
				for _, c := range m.blocks() {
					if c.Type == "toolCall" {
						open[c.ID] = true
					}
				}
			case "toolResult":
				if !open[m.ToolCallID] || seen[m.ToolCallID] {
					t.Errorf("request %d (step %d): toolResult %d (%s) without its toolCall before it", i, q.Step, j, m.ToolCallID)
				}
				delete(open, m.ToolCallID)
				seen[m.ToolCallID] = true
			}
		}
		if len(open) > 0 {
			t.Errorf("request %d (step %d): tool calls %v without results", i, q.Step, keys(open))
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// entry is one session file entry, decoded loosely.
type entry struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	ParentID   *string         `json:"parentId"`
	CustomType string          `json:"customType"`
	Data       json.RawMessage `json:"data"`
	Content    json.RawMessage `json:"content"`
	Details    json.RawMessage `json:"details"`
	FromID     string          `json:"fromId"`
	Summary    string          `json:"summary"`
	FirstKept  string          `json:"firstKeptEntryId"`
	TargetID   string          `json:"targetId"`
	Label      string          `json:"label"`
	Message    *pmsg           `json:"message"`
	SessionID  string          `json:"-"`
}

func (e entry) parent() string {
	if e.ParentID == nil {
		return ""
	}
	return *e.ParentID
}

// windowIdentity is details.contextManagement of a boundary.
type windowIdentity struct {
	Kind             string `json:"kind"`
	FirstWindowID    string `json:"firstWindowId"`
	CurrentWindowID  string `json:"currentWindowId"`
	PreviousWindowID string `json:"previousWindowId"`
	WindowNumber     int    `json:"windowNumber"`
}

func (e entry) window() (windowIdentity, bool) {
	if e.Type != "custom_message" || e.CustomType != "codex-context-window" {
		return windowIdentity{}, false
	}
	var d struct {
		ContextManagement windowIdentity `json:"contextManagement"`
	}
	if json.Unmarshal(e.Details, &d) != nil || d.ContextManagement.Kind != "window" {
		return windowIdentity{}, false
	}
	return d.ContextManagement, true
}

// session reads the one session file Pi wrote; the header's id is
// returned with the entries.
func (r *rig) session() (string, string, []entry) {
	r.t.Helper()
	files, _ := filepath.Glob(filepath.Join(r.sessions, "*", "*.jsonl"))
	if len(files) != 1 {
		r.t.Fatalf("session files: %v, want exactly one", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		r.t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	var hdr struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(lines[0], &hdr); err != nil {
		r.t.Fatal(err)
	}
	var out []entry
	for _, l := range lines[1:] {
		var e entry
		if err := json.Unmarshal(l, &e); err != nil {
			r.t.Fatalf("session line: %v", err)
		}
		out = append(out, e)
	}
	return files[0], hdr.ID, out
}

// byID indexes entries.
func byID(es []entry) map[string]entry {
	m := map[string]entry{}
	for _, e := range es {
		m[e.ID] = e
	}
	return m
}

// chain returns the entries from root to leafID.
func chain(es []entry, leafID string) []entry {
	m := byID(es)
	var out []entry
	for id := leafID; id != ""; id = m[id].parent() {
		out = append([]entry{m[id]}, out...)
	}
	return out
}

// boundaries returns the window boundaries in file order.
func boundaries(es []entry) []entry {
	var out []entry
	for _, e := range es {
		if _, ok := e.window(); ok {
			out = append(out, e)
		}
	}
	return out
}

func windowOf(t *testing.T, e entry) windowIdentity {
	t.Helper()
	w, ok := e.window()
	if !ok {
		t.Fatalf("entry %s is not a window boundary", e.ID)
	}
	return w
}

// lastToolResult returns the last toolResult message of a request.
func lastToolResult(t *testing.T, q request) pmsg {
	t.Helper()
	ms := q.conversation()
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == "toolResult" {
			return ms[i]
		}
	}
	t.Fatalf("request for step %d has no toolResult", q.Step)
	return pmsg{}
}

// anyContains reports whether some message of q holds s.
func anyContains(q request, s string) bool {
	for _, m := range q.conversation() {
		if strings.Contains(string(m.Content), s) {
			return true
		}
	}
	return false
}

// lockedBuffer is a bytes.Buffer safe for one writer goroutine (exec's
// copy of a child's output) and readers in the test at the same time.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is what was written so far.
func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
