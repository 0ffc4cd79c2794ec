// Package sessiongen writes large, deterministic Pi v3 session files for
// contextd's benchmarks (bench/README.md): a Local-mode coding session with
// user/assistant/toolResult messages, thinking with signatures, tool calls
// (read, bash, edit, write, grep, ls and the flat `notes`/`history` router
// tools), tool results of varying size (a few of 1-11 MiB), note entries,
// context-window reminders and a codex-context-window boundary every ~N
// entries (docs/pi-facts.md "Session file"; docs/codex-contract.md "Window
// boundaries", "Notes entries").
// The same Options give the same bytes.
package sessiongen

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"time"
)

// NoMatchQuery is a search query that no generated text contains (its
// words are outside every vocabulary list below).
const NoMatchQuery = "reconcileQuarantinedWidgetV9("

// Options configure Generate.
type Options struct {
	Bytes       int64  // target size; the file ends after the turn that crosses it
	Seed        uint64 // random seed
	WindowEvery int    // entries per context window; 0 = one window
	// Big lists the sizes in bytes of the huge tool results, spread evenly
	// over the file. nil: DefaultBig(Bytes).
	Big []int
}

// DefaultBig is 4 huge results for 128 MiB (1, 3, 6, 11 MiB), one more per
// further 32 MiB (cycling 1..11 MiB), and one per 32 MiB below 128 MiB.
func DefaultBig(target int64) []int {
	cycle := []float64{1, 3, 6, 11, 2, 8, 4, 5}
	n := 4 + int((target-(128<<20))/(32<<20))
	if target < 128<<20 {
		n = int(target / (32 << 20))
	}
	var out []int
	for i := 0; i < n; i++ {
		out = append(out, int(cycle[i%len(cycle)]*(1<<20)))
	}
	return out
}

// Generate writes the session to w and describes it.
func Generate(w io.Writer, o Options) (*Manifest, error) {
	big := o.Big
	if big == nil {
		big = DefaultBig(o.Bytes)
	}
	g := newGen(o.Seed, o.Bytes, o.WindowEvery, big)
	if err := g.run(w); err != nil {
		return nil, err
	}
	return &g.man, nil
}

// Manifest describes a generated file for the load driver.
type Manifest struct {
	File        string       `json:"file,omitempty"`
	Bytes       int64        `json:"bytes"`
	Seed        uint64       `json:"seed"`
	SessionID   string       `json:"session_id"`
	Cwd         string       `json:"cwd"`
	Entries     int          `json:"entries"`
	Items       int          `json:"items"`
	LeafID      string       `json:"leaf_id"`
	FirstWindow string       `json:"first_window_id"`
	Windows     []string     `json:"windows"`
	Boundaries  []Boundary   `json:"boundaries"`
	Sample      []SampleItem `json:"sample_items"`
	Big         []SampleItem `json:"big_items"`
	NoMatch     string       `json:"no_match_query"`
	NotePaths   []string     `json:"note_paths"`
	LastTimeMs  int64        `json:"last_time_ms"`
}

// Boundary is a codex-context-window boundary entry.
type Boundary struct {
	ID       string `json:"id"`
	ParentID string `json:"parent_id"`
	WindowID string `json:"window_id"`
}

// SampleItem is one history item: its window and entry id, role and the
// length of its main text in bytes.
type SampleItem struct {
	WindowID string `json:"window_id"`
	ItemID   string `json:"item_id"`
	Role     string `json:"role"`
	Bytes    int    `json:"bytes"`
}

type gen struct {
	r       *rand.Rand
	target  int64
	every   int
	big     []int // remaining huge results, in order
	bigAt   []int64
	w       *bufio.Writer
	buf     []byte
	cw      *countWriter
	ids     map[uint32]bool
	parent  string
	now     time.Time
	man     Manifest
	winID   string
	winNum  int
	sinceWB int // entries since the last boundary
	notes   map[string]bool
	seen    int // items seen (reservoir)
	callSeq int
}

const sampleSize = 2000

func newGen(seed uint64, target int64, every int, big []int) *gen {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), target: target, every: every, big: big,
		ids: map[uint32]bool{}, notes: map[string]bool{}, now: time.Date(2026, 7, 6, 9, 0, 0, 0, time.UTC)}
	// Spread the huge results over the file.
	for i := range big {
		g.bigAt = append(g.bigAt, target*int64(2*i+1)/int64(2*len(big)+1))
	}
	g.man.Seed, g.man.NoMatch = seed, NoMatchQuery
	return g
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (g *gen) size() int64 { return g.cw.n + int64(g.w.Buffered()) }

func (g *gen) run(w io.Writer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if we, ok := r.(writeError); ok {
				err = we.err
				return
			}
			panic(r)
		}
	}()
	g.cw = &countWriter{w: w}
	g.w = bufio.NewWriterSize(g.cw, 1<<20)
	g.man.SessionID = g.uuid7()
	g.man.Cwd = "/home/maya/code/" + pick(g.r, projects)
	g.line(map[string]any{"type": "session", "version": 3, "id": g.man.SessionID, "timestamp": g.ts(), "cwd": g.man.Cwd})
	g.entry("model_change", map[string]any{"provider": "openai-codex", "modelId": "gpt-5.5"})
	g.entry("thinking_level_change", map[string]any{"thinkingLevel": "high"})
	g.man.FirstWindow = g.uuid4()
	g.boundary("")
	for g.size() < g.target {
		g.turn()
		if g.every > 0 && g.sinceWB >= g.every && g.size() < g.target {
			g.rollover()
		}
	}
	if err := g.w.Flush(); err != nil {
		return err
	}
	g.man.Bytes = g.cw.n
	g.man.LastTimeMs = g.now.UnixMilli()
	for p := range g.notes {
		g.man.NotePaths = append(g.man.NotePaths, p)
	}
	sortStrings(g.man.NotePaths)
	return nil
}

// ---- ids, time --------------------------------------------------------------

func (g *gen) newID() string {
	for {
		v := g.r.Uint32()
		if !g.ids[v] {
			g.ids[v] = true
			return fmt.Sprintf("%08x", v)
		}
	}
}

func (g *gen) uuid4() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (g *gen) uuid7() string {
	u := g.uuid4()
	ms := g.now.UnixMilli()
	return fmt.Sprintf("%08x-%04x-7%s", ms>>16, ms&0xffff, u[15:])
}

func (g *gen) tick(maxMs int) {
	g.now = g.now.Add(time.Duration(50+g.r.IntN(maxMs)) * time.Millisecond)
}
func (g *gen) ts() string { return g.now.Format("2006-01-02T15:04:05.000Z") }
func (g *gen) ms() int64  { return g.now.UnixMilli() }

// ---- writing ------------------------------------------------------------------

func (g *gen) line(v any) {
	g.buf = appendJSON(g.buf[:0], v)
	g.buf = append(g.buf, '\n')
	if _, err := g.w.Write(g.buf); err != nil {
		panic(writeError{err})
	}
}

type writeError struct{ err error }

// entry writes one tree entry of type typ with the fields of body, as the
// child of the previous entry, and returns its id.
func (g *gen) entry(typ string, body map[string]any) string {
	id := g.newID()
	m := map[string]any{"type": typ, "id": id, "timestamp": g.ts()}
	if g.parent == "" {
		m["parentId"] = nil
	} else {
		m["parentId"] = g.parent
	}
	for k, v := range body {
		m[k] = v
	}
	g.line(m)
	g.parent = id
	g.man.Entries++
	g.sinceWB++
	g.man.LeafID = id
	return id
}

// message writes a message entry and records it as a history item.
func (g *gen) message(role string, msg map[string]any, textBytes int) string {
	msg["role"] = role
	id := g.entry("message", map[string]any{"message": msg})
	hrole := role
	if role == "toolResult" {
		hrole = "tool"
	}
	g.item(SampleItem{WindowID: g.winID, ItemID: id, Role: hrole, Bytes: textBytes})
	return id
}

func (g *gen) item(it SampleItem) {
	g.man.Items++
	g.seen++
	if len(g.man.Sample) < sampleSize {
		g.man.Sample = append(g.man.Sample, it)
	} else if j := g.r.IntN(g.seen); j < sampleSize {
		g.man.Sample[j] = it
	}
}

// ---- session structure ----------------------------------------------------------

// boundary writes a codex-context-window custom_message opening a new window.
func (g *gen) boundary(prev string) {
	cur := g.man.FirstWindow
	if prev != "" {
		cur = g.uuid4()
		g.winNum++
	}
	var hint string
	if prev != "" {
		hint = fmt.Sprintf("Previous context window id: %s\nRecent notes (up to 5, most-recent first):\n- /root/notes/checkpoint.md (9 lines, 512 UTF-8 bytes)\nPrevious window history IDs: {\"window_id\":%q}\n", prev, prev)
	}
	content := "<context_window_guidance>\nCheckpoint the active request, known history IDs, decisions, progress, learnings and next steps in notes before new_context. After rollover, read hinted notes. Use history only for a missing detail.\nKeep deferred ideas and tasks\u2014including those unrelated to the current work\u2014in notes for later resumption. Update them as decisions change; recording is not permission to implement.\n</context_window_guidance>\n\n<context_window>\nAgent name: /root\nFirst context window id: " +
		g.man.FirstWindow + "\nCurrent context window id: " + cur + "\n" + hint + "</context_window>"
	cm := map[string]any{"protocol": 1, "kind": "window", "firstWindowId": g.man.FirstWindow, "currentWindowId": cur, "windowNumber": g.winNum}
	if prev != "" {
		cm["previousWindowId"] = prev
	}
	g.tick(400)
	parent := g.parent
	id := g.entry("custom_message", map[string]any{"customType": "codex-context-window", "content": content, "display": true,
		"details": map[string]any{"protocol": 1, "id": g.uuid4(), "contextManagement": cm}})
	g.man.Boundaries = append(g.man.Boundaries, Boundary{ID: id, ParentID: parent, WindowID: cur})
	g.winID = cur
	g.man.Windows = append(g.man.Windows, cur)
	g.sinceWB = 0 // the boundary itself is no item of its window (docs/codex-contract.md "Local history")
}

// rollover: reminder, checkpoint note, new_context call and result, boundary.
func (g *gen) rollover() {
	g.tick(300)
	content := fmt.Sprintf("<context_window_reminder>\n%d%% remaining. Checkpoint the active request, state and known history IDs in notes, then call new_context before continuing work.\n</context_window_reminder>", 8+g.r.IntN(10))
	id := g.entry("custom_message", map[string]any{"customType": "codex-context-window", "content": content, "display": true,
		"details": map[string]any{"protocol": 1, "id": g.uuid4(), "contextManagement": map[string]any{"protocol": 1, "kind": "reminder",
			"firstWindowId": g.man.FirstWindow, "currentWindowId": g.winID, "windowNumber": g.winNum}}})
	g.item(SampleItem{WindowID: g.winID, ItemID: id, Role: "developer", Bytes: len(content)})
	g.noteWrite("/root/notes/checkpoint.md", "write_file", g.checkpointText())
	call := g.callID()
	g.assistant([]map[string]any{g.thinking("Rolling over the context window", 1)}, []map[string]any{{"type": "toolCall", "id": call, "name": "new_context", "arguments": map[string]any{}}}, "toolUse")
	g.toolResult(call, "new_context", "A new context window will start without summarizing conversation history.", nil)
	g.boundary(g.winID)
	// Resume: read the hinted note.
	call = g.callID()
	g.assistant([]map[string]any{g.thinking("Resuming from notes", 1)}, []map[string]any{{"type": "toolCall", "id": call, "name": "notes",
		"arguments": map[string]any{"action": "read_file", "path": "/root/notes/checkpoint.md"}}}, "toolUse")
	g.toolResult(call, "notes", fmt.Sprintf(`{"source":"pi-session","file":{"path":"/root/notes/checkpoint.md","bytes":%d,"content":%q}}`, 400+g.r.IntN(400), g.checkpointText()), nil)
}

// turn: a user request, several tool steps, a final answer.
func (g *gen) turn() {
	g.tick(60000)
	req := g.sentence(pick(g.r, requests))
	g.message("user", map[string]any{"content": []map[string]any{{"type": "text", "text": req}}, "timestamp": g.ms()}, len(req))
	steps := 1 + g.r.IntN(12)
	for s := 0; s < steps && g.size() < g.target; s++ {
		g.step()
	}
	g.tick(20000)
	final := g.finalAnswer()
	g.assistant([]map[string]any{g.thinking(pick(g.r, thinkTitles), 2)}, []map[string]any{{"type": "text", "text": final,
		"textSignature": fmt.Sprintf(`{"v":1,"id":"msg_%s","phase":"final_answer"}`, g.hex(48))}}, "stop")
	if g.r.IntN(6) == 0 {
		cmd := pick(g.r, bashCmds)
		out := g.bashOutput(cmd, 200+g.r.IntN(2000))
		g.tick(3000)
		g.entry("message", map[string]any{"message": map[string]any{"role": "bashExecution", "command": cmd, "output": out, "exitCode": 0,
			"cancelled": false, "truncated": false, "timestamp": g.ms()}})
	}
}

// step: one assistant message with 1-3 tool calls and their results.
func (g *gen) step() {
	// A huge result is due?
	if len(g.bigAt) > 0 && g.size() >= g.bigAt[0] {
		n := g.big[0]
		g.big, g.bigAt = g.big[1:], g.bigAt[1:]
		g.bigResult(n)
		return
	}
	switch k := g.r.IntN(100); {
	case k < 6:
		g.noteWrite(g.notePath(), pick(g.r, []string{"write_file", "append_to_file"}), g.noteText())
		return
	case k < 9:
		g.historyCall()
		return
	}
	n := 1 + g.r.IntN(3)
	type call struct{ id, name, out string }
	var calls []call
	var parts []map[string]any
	for i := 0; i < n; i++ {
		id := g.callID()
		name, args, out := g.toolCall()
		calls = append(calls, call{id, name, out})
		parts = append(parts, map[string]any{"type": "toolCall", "id": id, "name": name, "arguments": args})
	}
	pre := []map[string]any{g.thinking(pick(g.r, thinkTitles), 1+g.r.IntN(3))}
	if g.r.IntN(3) == 0 {
		pre = append(pre, map[string]any{"type": "text", "text": "Next I'll inspect `" + g.path() + "`.",
			"textSignature": fmt.Sprintf(`{"v":1,"id":"msg_%s","phase":"commentary"}`, g.hex(48))})
	}
	g.tick(40000)
	g.assistant(pre, parts, "toolUse")
	for _, c := range calls {
		g.tick(4000)
		var details any
		if c.name == "edit" {
			details = map[string]any{"diff": g.diff(), "firstChangedLine": 1 + g.r.IntN(400)}
		}
		g.toolResult(c.id, c.name, c.out, details)
	}
}

func (g *gen) bigResult(n int) {
	id := g.callID()
	name := "read"
	args := map[string]any{"path": "dist/" + pick(g.r, nouns) + ".bundle.js"}
	if g.r.IntN(2) == 0 {
		name = "bash"
		args = map[string]any{"command": "cat logs/" + pick(g.r, nouns) + "-trace.log"}
	}
	g.assistant([]map[string]any{g.thinking("Reading the full output", 1)}, []map[string]any{{"type": "toolCall", "id": id, "name": name, "arguments": args}}, "toolUse")
	g.tick(9000)
	text := g.code(n)
	rid := g.toolResult(id, name, text, nil)
	g.man.Big = append(g.man.Big, SampleItem{WindowID: g.winID, ItemID: rid, Role: "tool", Bytes: len(text)})
}

func (g *gen) noteWrite(path, action, text string) {
	id := g.callID()
	g.tick(20000)
	g.assistant([]map[string]any{g.thinking("Checkpointing progress", 1)}, []map[string]any{{"type": "toolCall", "id": id, "name": "notes",
		"arguments": map[string]any{"action": action, "path": path, "text": text}}}, "toolUse")
	act := "write"
	if action == "append_to_file" {
		act = "append"
	}
	g.entry("custom", map[string]any{"customType": "codex-context-note", "data": map[string]any{"protocol": 1, "action": act, "path": path, "text": text, "timestamp": g.ms()}})
	g.notes[path] = true
	t := g.ts()
	res := fmt.Sprintf(`{"source":"pi-session","file":{"path":%q,"bytes":%d,"created_at":%q,"updated_at":%q}}`, path, len(text), t, t)
	g.tick(2000)
	g.toolResult(id, "notes", res, map[string]any{"source": "pi-session", "file": map[string]any{"path": path, "bytes": len(text), "created_at": t, "updated_at": t}})
}

func (g *gen) historyCall() {
	id := g.callID()
	action := pick(g.r, []string{"search_contents", "list_items", "read_item", "list_windows"})
	args := map[string]any{"action": action}
	switch action {
	case "search_contents":
		args["query"] = pick(g.r, verbs) + pick(g.r, nouns)
	case "read_item":
		args["item_id"] = g.hex(8)
		args["window_id"] = g.winID
	case "list_items":
		args["limit"] = 10
	}
	g.tick(20000)
	g.assistant([]map[string]any{g.thinking("Looking up earlier work", 1)}, []map[string]any{{"type": "toolCall", "id": id, "name": "history", "arguments": args}}, "toolUse")
	var sb strings.Builder
	sb.WriteString(`{"source":"pi-session","items":[`)
	for i, n := 0, g.r.IntN(6); i < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"window_id":%q,"item_id":%q,"role":"assistant","truncated_content":%q,"content_chars":%d}`, g.winID, g.hex(8), g.sentence(pick(g.r, findings)), 100+g.r.IntN(4000))
	}
	sb.WriteString("]}")
	g.tick(2000)
	g.toolResult(id, "history", sb.String(), nil)
}

func (g *gen) assistant(pre, parts []map[string]any, stop string) string {
	content := append(pre, parts...)
	n := 0
	for _, p := range content {
		for _, k := range []string{"thinking", "text"} {
			if s, ok := p[k].(string); ok {
				n += len(s)
			}
		}
	}
	in := 200 + g.r.IntN(20000)
	out := 50 + g.r.IntN(900)
	return g.message("assistant", map[string]any{"content": content, "api": "openai-codex-responses", "provider": "openai-codex", "model": "gpt-5.5",
		"usage": map[string]any{"input": in, "output": out, "cacheRead": g.r.IntN(60000), "cacheWrite": 0, "reasoning": g.r.IntN(out), "totalTokens": in + out,
			"cost": map[string]any{"input": float64(in) * 5e-6, "output": float64(out) * 3e-5, "cacheRead": 0.004, "cacheWrite": 0, "total": float64(in)*5e-6 + float64(out)*3e-5 + 0.004}},
		"stopReason": stop, "timestamp": g.ms(), "responseId": "resp_" + g.hex(48)}, n)
}

func (g *gen) toolResult(callID, name, text string, details any) string {
	msg := map[string]any{"toolCallId": callID, "toolName": name, "content": []map[string]any{{"type": "text", "text": text}}, "isError": false, "timestamp": g.ms()}
	if details != nil {
		msg["details"] = details
	}
	return g.message("toolResult", msg, len(text))
}

func (g *gen) thinking(title string, sentences int) map[string]any {
	var sb strings.Builder
	sb.WriteString("**" + title + "**\n\n")
	for i := 0; i < sentences; i++ {
		if i > 0 {
			sb.WriteString(" ")
		}
		sb.WriteString(g.sentence(pick(g.r, findings)))
	}
	th := sb.String()
	enc := make([]byte, 600+g.r.IntN(1600))
	for i := range enc {
		enc[i] = byte(g.r.Uint32())
	}
	sig, _ := json.Marshal(map[string]any{"id": "rs_" + g.hex(48), "type": "reasoning", "encrypted_content": "gAAAAA" + base64.StdEncoding.EncodeToString(enc),
		"summary": []map[string]any{{"type": "summary_text", "text": th}}})
	return map[string]any{"type": "thinking", "thinking": th, "thinkingSignature": string(sig)}
}

func (g *gen) callID() string {
	g.callSeq++
	return fmt.Sprintf("call_%s|fc_%s", g.alnum(24), g.hex(48))
}

// toolCall returns a tool name, its arguments and the text of its result.
func (g *gen) toolCall() (string, map[string]any, string) {
	switch k := g.r.IntN(100); {
	case k < 38:
		p := g.path()
		return "read", map[string]any{"path": p}, g.code(g.lognormal(6000, 40000))
	case k < 60:
		cmd := pick(g.r, bashCmds)
		return "bash", map[string]any{"command": cmd}, g.bashOutput(cmd, g.lognormal(800, 12000))
	case k < 78:
		p := g.path()
		return "edit", map[string]any{"path": p, "edits": []map[string]any{{"oldText": g.code(200 + g.r.IntN(600)), "newText": g.code(200 + g.r.IntN(800))}}},
			"Successfully replaced 1 block(s) in " + p + "."
	case k < 84:
		p := g.path()
		return "write", map[string]any{"path": p, "content": g.code(g.lognormal(2000, 12000))}, "Successfully wrote to " + p
	case k < 94:
		sym := pick(g.r, verbs) + pick(g.r, nouns)
		var sb strings.Builder
		for i, n := 0, 1+g.r.IntN(30); i < n; i++ {
			fmt.Fprintf(&sb, "%s:%d: \tconst x = %s(id);\n", g.path(), 1+g.r.IntN(400), sym)
		}
		return "grep", map[string]any{"pattern": sym, "path": pick(g.r, dirs)}, sb.String()
	default:
		var sb strings.Builder
		for i, n := 0, 2+g.r.IntN(20); i < n; i++ {
			sb.WriteString(strings.ToLower(pick(g.r, nouns)) + pick(g.r, exts) + "\n")
		}
		return "ls", map[string]any{"path": pick(g.r, dirs)}, sb.String()
	}
}

// ---- text ------------------------------------------------------------------------

// lognormal-ish size: mostly around typical, a tail up to max.
func (g *gen) lognormal(typical, max int) int {
	f := g.r.ExpFloat64()
	n := int(float64(typical) * (0.3 + f))
	if n > max {
		n = max
	}
	return n
}

func (g *gen) hex(n int) string {
	const d = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = d[g.r.IntN(16)]
	}
	return string(b)
}

func (g *gen) alnum(n int) string {
	const d = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = d[g.r.IntN(len(d))]
	}
	return string(b)
}

func (g *gen) path() string {
	return pick(g.r, dirs) + "/" + pick(g.r, verbs) + pick(g.r, nouns) + pick(g.r, exts)
}

func (g *gen) notePath() string {
	return "/root/notes/" + pick(g.r, []string{"plan", "progress", "decisions", "todo", "learnings", "checkpoint"}) + ".md"
}

// sentence fills a template: {V} verb, {N} noun, {P} path, {n} noun lower, {C} command.
func (g *gen) sentence(tpl string) string {
	var sb strings.Builder
	for i := 0; i < len(tpl); i++ {
		if tpl[i] == '{' && i+2 < len(tpl) && tpl[i+2] == '}' {
			switch tpl[i+1] {
			case 'V':
				sb.WriteString(pick(g.r, verbs))
			case 'N':
				sb.WriteString(pick(g.r, nouns))
			case 'n':
				sb.WriteString(strings.ToLower(pick(g.r, nouns)))
			case 'P':
				sb.WriteString(g.path())
			case 'C':
				sb.WriteString(pick(g.r, bashCmds))
			case 'a':
				sb.WriteString(pick(g.r, adjs))
			}
			i += 2
			continue
		}
		sb.WriteByte(tpl[i])
	}
	return sb.String()
}

func (g *gen) finalAnswer() string {
	var sb strings.Builder
	sb.WriteString(pick(g.r, []string{"Done.", "Fixed.", "Here's what I changed:"}))
	sb.WriteString("\n\nThe root cause was that " + g.sentence(pick(g.r, findings)) + "\n\n**Changes**\n")
	for i, n := 0, 1+g.r.IntN(4); i < n; i++ {
		sb.WriteString("- `" + g.path() + "`: " + g.sentence(pick(g.r, findings)) + "\n")
	}
	sb.WriteString("\n**Verification**\n- `npx vitest run` passes")
	return sb.String()
}

func (g *gen) checkpointText() string {
	var sb strings.Builder
	sb.WriteString("# Checkpoint\n\nActive request: " + g.sentence(pick(g.r, requests)) + "\nWindow: " + g.winID + "\n\n## State\n")
	sb.WriteString(g.sentence(pick(g.r, findings)) + "\n\n## Next\n1. " + g.sentence(pick(g.r, findings)) + "\n2. Run `npx vitest run` and update notes\n")
	return sb.String()
}

func (g *gen) noteText() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n## %s\n", g.now.Format("2006-01-02T15:04Z"))
	for i, n := 0, 1+g.r.IntN(4); i < n; i++ {
		sb.WriteString("- " + g.sentence(pick(g.r, findings)) + "\n")
	}
	return sb.String()
}

func (g *gen) diff() string {
	var sb strings.Builder
	l := 1 + g.r.IntN(400)
	for i, n := 0, 3+g.r.IntN(12); i < n; i++ {
		fmt.Fprintf(&sb, "%c%4d %s\n", " -+"[g.r.IntN(3)], l+i, g.codeLine())
	}
	return sb.String()
}

func (g *gen) bashOutput(cmd string, n int) string {
	var sb strings.Builder
	sb.Grow(n + 200)
	switch {
	case strings.HasPrefix(cmd, "git"):
		sb.WriteString("On branch feat/" + strings.ToLower(pick(g.r, nouns)) + "-" + strings.ToLower(pick(g.r, verbs)) + "\nChanges not staged for commit:\n")
		for sb.Len() < n {
			sb.WriteString("\tmodified:   " + g.path() + "\n")
		}
	default:
		sb.WriteString("\n RUN  v2.1.9 " + g.man.Cwd + "\n\n")
		for sb.Len() < n {
			fmt.Fprintf(&sb, " %s tests/%s.test.ts (%d tests) %dms\n", pick(g.r, []string{"✓", "✓", "✓", "❯", "×"}), strings.ToLower(pick(g.r, nouns)), 1+g.r.IntN(40), g.r.IntN(900))
			if g.r.IntN(8) == 0 {
				fmt.Fprintf(&sb, "   AssertionError: expected %s to equal %s\n     at %s:%d:%d\n", pick(g.r, adjs), pick(g.r, adjs), g.path(), g.r.IntN(400), g.r.IntN(80))
			}
		}
	}
	return sb.String()
}

func (g *gen) codeLine() string {
	switch g.r.IntN(7) {
	case 0:
		return fmt.Sprintf("  const %s%s = await fetchJson<%s[]>(`/api/%ss/${id}/%ss?limit=${limit}`, { signal: opts.signal });", pick(g.r, adjs), pick(g.r, nouns), pick(g.r, nouns), strings.ToLower(pick(g.r, nouns)), strings.ToLower(pick(g.r, nouns)))
	case 1:
		return fmt.Sprintf("  if (!%s%s.length) return [];", pick(g.r, adjs), pick(g.r, nouns))
	case 2:
		return fmt.Sprintf("export async function %s%s(id: string, opts: { signal?: AbortSignal; limit?: number } = {}): Promise<%s[]> {", pick(g.r, verbs), pick(g.r, nouns), pick(g.r, nouns))
	case 3:
		return fmt.Sprintf("  %s%s?: %s;", pick(g.r, adjs), pick(g.r, nouns), pick(g.r, []string{"string", "number", "boolean", "Date", "string[]"}))
	case 4:
		return fmt.Sprintf("/** %s */", g.sentence(pick(g.r, findings)))
	case 5:
		return fmt.Sprintf("    void %s%ss(id, { signal: ctrl.signal }).then((r) => setState(r[0] ?? null));", pick(g.r, verbs), pick(g.r, nouns))
	default:
		return "}"
	}
}

// code returns about n bytes of TypeScript-like source.
func (g *gen) code(n int) string {
	var sb strings.Builder
	sb.Grow(n + 256)
	sb.WriteString("import { useEffect, useMemo, useState } from \"react\";\nimport { fetchJson } from \"../lib/http\";\n\n")
	for sb.Len() < n {
		sb.WriteString(g.codeLine())
		sb.WriteByte('\n')
	}
	return sb.String()
}

func pick(r *rand.Rand, s []string) string { return s[r.IntN(len(s))] }

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// ---- vocabularies (none contains a word of NoMatchQuery) ------------------------

var (
	projects = []string{"ops-dashboard", "billing-api", "mobile-shell", "infra-tools", "docs-site"}
	verbs    = []string{"fetch", "resolve", "encode", "flush", "parse", "build", "validate", "record", "merge", "prune", "apply", "compute", "sync", "emit", "scan", "retry", "normalize", "collect", "index", "render"}
	nouns    = []string{"Widget", "Panel", "Query", "Alert", "Deploy", "Runbook", "Metric", "Timeline", "Owner", "Service", "Incident", "Filter", "Session", "Cache", "Token", "Route"}
	adjs     = []string{"active", "pending", "stale", "cached", "legacy", "nested", "batched", "orphan", "signed", "expired", "primary", "partial", "default", "duplicate", "archived"}
	exts     = []string{".ts", ".tsx", ".test.ts", ".go", ".md", ".json"}
	dirs     = []string{"src/components", "src/hooks", "src/api", "src/lib", "src/pages", "tests", "internal/store", "cmd/server"}
	bashCmds = []string{"npx vitest run", "git status", "git diff --stat", "npx tsc --noEmit", "npx eslint src --max-warnings 0", "go test ./...", "git log --oneline -20"}
	requests = []string{
		"Add a `use{N}Filters` hook that syncs the filter state with the URL query string, including back/forward navigation.",
		"The {n} list flickers when {V}{N} runs twice; can you find out why and fix it?",
		"Replace the hand-rolled {n} math in `{P}` with a shared helper and add tests.",
		"What about the {a} {n} case?",
		"Migrate `{N}Table` from the old context store to the zustand store we use elsewhere.",
		"Please make `{C}` pass again; it broke after the {n} refactor.",
	}
	thinkTitles = []string{"Verifying the {n} path", "Reviewing test failures", "Tracing edge cases", "Inspecting the fix", "Planning the change", "Checking {n} handling"}
	findings    = []string{
		"I need to look at `{P}` to see how {n}s are {V}ed before I change anything.",
		"The failing assertion suggests `{V}{N}` runs twice when the {n} is {a}.",
		"It looks like the {a} {n} case falls through to the default branch.",
		"{N} and {n} writes race when two workers {V} the same {n}.",
		"The fixture in `{P}` never exercised the {a} {n} branch.",
		"`{C}` is green except for one flaky {n} test.",
		"Kept the old {n} signature as a deprecated wrapper.",
		"The {n} offset math used a 32-bit integer.",
		"moved the {n} {V} into `{P}`.",
	}
)

// WriteFile is Generate into a new file at path (buffered, 1 MiB); the
// file is complete when it returns without error.
func WriteFile(path string, o Options) (*Manifest, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	m, err := Generate(w, o)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return m, err
}
