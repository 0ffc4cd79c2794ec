package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"contextd/api"
	"contextd/session"
)

// TestPairingPropertyPi is the tool-call pairing property (docs/modes.md "Tool-call pairing") over
// real Pi: random sessions — parallel calls, errored and aborted
// assistants, tool errors, missing, duplicated and misplaced results,
// Local boundaries (some written between a call and its results), Tree
// rollovers run through contextd's API, user navigation with branch
// summaries, compactions (some cutting inside a pair) and, on Pi 1.x,
// context_edit entries omitting or rewriting assistants — are indexed by
// an in-process contextd; at every entry as leaf, /context's projection is
// applied by the extension's own applyProjection to Pi's
// buildSessionContext messages, converted with Pi's convertToLlm and
// pi-ai's transformMessages (pairing-check.mjs), and every request must be
// well paired. Runs on every Pi of PiVersions; seed fixed so a failure
// replays.
func TestPairingPropertyPi(t *testing.T) {
	forEachPi(t, func(t *testing.T, pv PiVersion) {
		start := time.Now()
		dir := t.TempDir()
		c := startContextd(t, dir)
		rng := rand.New(rand.NewSource(int64(len(pv.Name)) * 7919))
		jobs := filepath.Join(t.TempDir(), "jobs.jsonl")
		jf, err := os.Create(jobs)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(jf)
		leaves, problems, rollovers, hiddenDrops, edits := 0, map[string]int{}, 0, 0, 0
		for s := 0; s < 120; s++ {
			g := newPairGen(t, c, rng, dir, fmt.Sprintf("pair-%s-%03d", pv.Line, s), pv, s%2 == 1)
			g.run(10 + rng.Intn(30))
			rollovers += g.rollovers
			edits += g.editsWritten
			for _, id := range g.ids {
				var ans struct {
					Projection json.RawMessage `json:"projection"`
					Problems   []struct {
						Reason string `json:"reason"`
					} `json:"problems"`
				}
				if code := c.status("POST", "/v1/sessions/"+g.sid+"/context", map[string]string{"leaf_id": id}, &ans); code != 200 {
					b, _ := os.ReadFile(g.file)
					keep := filepath.Join(os.TempDir(), g.sid+".jsonl")
					_ = os.WriteFile(keep, b, 0o600)
					t.Fatalf("POST /context at leaf %s of %s: HTTP %d (file kept as %s)", id, g.sid, code, keep)
				}
				for _, p := range ans.Problems {
					problems[p.Reason]++
				}
				if strings.Contains(string(ans.Projection), `"role":"branchSummary"`) {
					hiddenDrops++
				}
				line, _ := json.Marshal(map[string]any{"file": g.file, "leaf": id, "projection": ans.Projection})
				w.Write(append(line, '\n'))
				leaves++
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		jf.Close()
		out := RunScriptEnv(t, 2*time.Minute, []string{pv.Env()}, "pairing-check.mjs", jobs)
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		var sum struct{ Checked, Failed int }
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
			t.Fatalf("pairing-check.mjs: %v\n%s", err, out)
		}
		for i, l := range lines[:len(lines)-1] {
			if i == 10 {
				break
			}
			t.Errorf("broken request: %s", l)
		}
		if sum.Checked != leaves || sum.Failed != 0 {
			t.Errorf("pairing-check.mjs checked %d of %d leaves, %d failed", sum.Checked, leaves, sum.Failed)
		}
		// Control: without contextd's repairs the same requests break.
		out = RunScriptEnv(t, 2*time.Minute, []string{pv.Env(), "PAIRING_CHECK_UNREPAIRED=1"}, "pairing-check.mjs", jobs)
		lines = strings.Split(strings.TrimSpace(string(out)), "\n")
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
			t.Fatalf("pairing-check.mjs: %v\n%s", err, out)
		}
		if sum.Failed < leaves/10 {
			t.Errorf("without the repairs only %d of %d requests break; the generator does not exercise the rule", sum.Failed, leaves)
		}
		if pv.Rules == session.RulesPi16 && edits < 50 {
			t.Errorf("only %d context_edit entries written on Pi %s", edits, pv.Name)
		}
		if rollovers < 50 || hiddenDrops < 100 {
			t.Errorf("%d Tree rollovers, %d leaves hiding summaries; want at least 50 and 100", rollovers, hiddenDrops)
		}
		// The generator must produce the damage it is meant to: each kind
		// of repair happens many times.
		for _, r := range []string{"orphaned_tool_result", "duplicate_tool_result", "boundary_inside_tool_call"} {
			if problems[r] < 20 {
				t.Errorf("only %d %s problems over %d leaves; the generator does not exercise the rule", problems[r], r, leaves)
			}
		}
		if leaves < 2000 {
			t.Errorf("only %d leaves", leaves)
		}
		t.Logf("Pi %s: %d leaves checked in %v; %d Tree rollovers, %d context edits, %d leaves hiding summaries, %d broken without repairs; repairs %v",
			pv.Name, leaves, time.Since(start).Round(time.Millisecond), rollovers, edits, hiddenDrops, sum.Failed, problems)
	})
}

// pairGen writes one random session file the way Pi appends entries.
type pairGen struct {
	t            *testing.T
	c            *liveContextd
	rng          *rand.Rand
	sid          string
	file         string
	tree         bool
	ids          []string
	parent       string
	calls        []string // every call id written so far
	open         []string // calls of the last assistant, not yet answered
	win          int
	first        string
	boundary     string   // current boundary entry id on the branch
	cur          string   // its window id
	rollovers    int      // Tree rollovers completed
	edits        bool     // the Pi writes context_edit entries (1.x)
	assistants   []string // assistant entry ids written
	editsWritten int
	n            int
}

func newPairGen(t *testing.T, c *liveContextd, rng *rand.Rand, dir, sid string, pv PiVersion, tree bool) *pairGen {
	g := &pairGen{t: t, c: c, rng: rng, sid: sid, file: filepath.Join(dir, sid+".jsonl"), tree: tree, edits: pv.Rules == session.RulesPi16}
	hdr := fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-11-30T10:00:00.000Z","cwd":"/tmp/pair"}`+"\n", sid)
	if err := os.WriteFile(g.file, []byte(hdr), 0o600); err != nil {
		t.Fatal(err)
	}
	mode := "local"
	if tree {
		mode = "tree"
	}
	c.do("PUT", "/v1/sessions/"+sid, map[string]string{"mode": mode, "session_file": g.file, "pi_version": pv.Name}, nil)
	return g
}

func (g *pairGen) append(e map[string]any) string {
	g.n++
	id := fmt.Sprintf("%08x", g.rng.Uint32())
	e["id"] = id
	if g.parent == "" {
		e["parentId"] = nil
	} else {
		e["parentId"] = g.parent
	}
	e["timestamp"] = time.Date(2026, 11, 30, 10, 0, g.n, 0, time.UTC).Format("2006-01-02T15:04:05.000Z")
	b, err := json.Marshal(e)
	if err != nil {
		g.t.Fatal(err)
	}
	f, err := os.OpenFile(g.file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		g.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		g.t.Fatal(err)
	}
	g.ids = append(g.ids, id)
	g.parent = id
	return id
}

func (g *pairGen) msg(m map[string]any) string {
	m["timestamp"] = 1785578400000 + g.n
	return g.append(map[string]any{"type": "message", "message": m})
}

func (g *pairGen) user() {
	g.msg(map[string]any{"role": "user", "content": "do the next step"})
	g.open = nil
}

func (g *pairGen) assistant() {
	content := []map[string]any{{"type": "text", "text": "working"}}
	var calls []string
	for k := g.rng.Intn(4); k > 0; k-- {
		id := fmt.Sprintf("call_%d_%d", g.n, k)
		name := []string{"bash", "read", "edit"}[g.rng.Intn(3)]
		content = append(content, map[string]any{"type": "toolCall", "id": id, "name": name, "arguments": map[string]any{}})
		calls = append(calls, id)
	}
	stop := "stop"
	if len(calls) > 0 {
		stop = "toolUse"
	}
	if g.rng.Intn(8) == 0 {
		stop = []string{"error", "aborted"}[g.rng.Intn(2)]
	}
	g.msg(map[string]any{"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic", "model": "claude-check",
		"usage":      map[string]any{"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15, "cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
		"stopReason": stop})
	g.calls = append(g.calls, calls...)
	g.open = calls
	g.assistants = append(g.assistants, g.parent)
}

func (g *pairGen) result(id string) {
	text, isErr := "ok", g.rng.Intn(6) == 0
	if isErr {
		text = "Operation aborted"
	}
	g.msg(map[string]any{"role": "toolResult", "toolCallId": id, "toolName": "bash", "content": []map[string]any{{"type": "text", "text": text}}, "isError": isErr})
}

// results answers the open calls: usually all in order; sometimes one is
// missing, one is duplicated, or the order is shuffled.
func (g *pairGen) results() {
	ids := append([]string(nil), g.open...)
	g.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	for i, id := range ids {
		if g.rng.Intn(10) == 0 && i == len(ids)-1 {
			continue // never answered
		}
		g.result(id)
		if g.rng.Intn(10) == 0 {
			g.result(id) // duplicated
		}
	}
	g.open = nil
}

func (g *pairGen) localBoundary() {
	if g.tree && g.boundary != "" {
		return
	}
	id := fmt.Sprintf("%08x-0000-4000-8000-%012x", g.rng.Uint32(), g.n)
	cm := map[string]any{"protocol": 1, "kind": "window", "firstWindowId": id, "currentWindowId": id, "windowNumber": 0}
	if g.first != "" {
		g.win++
		cm = map[string]any{"protocol": 1, "kind": "window", "firstWindowId": g.first, "currentWindowId": id, "previousWindowId": g.cur, "windowNumber": g.win}
	} else {
		g.first = id
	}
	g.cur = id
	g.boundary = g.append(map[string]any{"type": "custom_message", "customType": "codex-context-window", "content": "<context_window>\nCurrent context window id: " + id + "\n</context_window>",
		"display": true, "details": map[string]any{"protocol": 1, "id": "m" + id, "contextManagement": cm}})
}

// treeRollover runs a Tree rollover through contextd as the extension
// does: create at the leaf, settle (refused while calls are open: then
// the open calls are answered first, as Pi would before agent_settled),
// navigate (the branch summary), commit and append the planned entries.
func (g *pairGen) treeRollover() {
	if g.boundary == "" {
		return
	}
	var r struct {
		RolloverID string `json:"rollover_id"`
	}
	g.c.do("POST", "/v1/sessions/"+g.sid+"/rollovers", map[string]any{"leaf_id": g.parent, "command_context_ready": true}, &r)
	if len(g.open) > 0 {
		g.results()
	}
	var st struct {
		SummaryParentID *string `json:"summary_parent_id"`
		ArchivedLeafID  string  `json:"archived_leaf_id"`
	}
	if code := g.c.status("POST", "/v1/sessions/"+g.sid+"/rollovers/"+r.RolloverID+"/settle", map[string]any{"leaf_id": g.parent}, &st); code != 200 {
		// An unanswered call left by results(): Pi's next message closes it.
		g.user()
		g.c.do("POST", "/v1/sessions/"+g.sid+"/rollovers/"+r.RolloverID+"/settle", map[string]any{"leaf_id": g.parent}, &st)
	}
	g.parent = ""
	if st.SummaryParentID != nil {
		g.parent = *st.SummaryParentID
	}
	sum := g.append(map[string]any{"type": "branch_summary", "fromId": st.ArchivedLeafID, "summary": fmt.Sprintf("Window %d summary %d", g.win, g.n), "details": map[string]any{"readFiles": []string{}, "modifiedFiles": []string{}}, "fromHook": false})
	var plan struct {
		Append []map[string]any `json:"append"`
	}
	g.c.do("POST", "/v1/sessions/"+g.sid+"/rollovers/"+r.RolloverID+"/commit", map[string]any{"summary_entry_id": sum}, &plan)
	for _, e := range plan.Append {
		if e["type"] == "custom_message" {
			g.win++
			g.boundary = g.append(e)
		} else {
			g.append(e)
		}
	}
	g.c.do("POST", "/v1/sessions/"+g.sid+"/rollovers/"+r.RolloverID+"/complete", map[string]any{}, nil)
	g.open = nil
	g.rollovers++
}

func (g *pairGen) run(steps int) {
	g.localBoundary()
	g.user()
	for i := 0; i < steps; i++ {
		switch k := g.rng.Intn(20); {
		case k < 6:
			g.assistant()
			if len(g.open) > 0 && g.rng.Intn(5) == 0 && !g.tree {
				g.localBoundary() // misplaced: between the calls and their results
			}
			if g.rng.Intn(4) != 0 {
				g.results()
			}
		case k < 8:
			g.user()
		case k < 10 && len(g.calls) > 0:
			g.result(g.calls[g.rng.Intn(len(g.calls))]) // stray or late result
		case k < 12:
			if g.tree && g.boundary != "" {
				g.treeRollover()
			} else {
				g.localBoundary()
			}
		case k < 14 && len(g.ids) > 2:
			// A compaction keeping from a random entry of the file (it may
			// be off the branch, a result, or inside a pair).
			g.append(map[string]any{"type": "compaction", "summary": "compacted", "firstKeptEntryId": g.ids[g.rng.Intn(len(g.ids))], "tokensBefore": 1000})
		case k < 15 && g.edits && len(g.assistants) > 0 && g.rng.Intn(2) == 0:
			// Pi 1.x context_edit of an earlier assistant: omitted (its
			// results lose their call) or its content replaced by text
			// (its calls disappear from the request).
			var repl any
			if g.rng.Intn(2) == 0 {
				repl = map[string]any{"content": []map[string]any{{"type": "text", "text": "[edited]"}}}
			}
			g.append(map[string]any{"type": "context_edit", "targetId": g.assistants[g.rng.Intn(len(g.assistants))], "replacement": repl})
			g.editsWritten++
		case k < 15 && len(g.ids) > 3:
			// User navigation to an earlier entry, sometimes with a summary.
			from := g.parent
			g.parent = g.ids[g.rng.Intn(len(g.ids)-1)]
			g.boundary = "" // the generator no longer knows the current boundary
			if g.rng.Intn(2) == 0 {
				g.append(map[string]any{"type": "branch_summary", "fromId": from, "summary": "abandoned branch", "details": map[string]any{}, "fromHook": false})
			}
			g.open = nil
		default:
			if len(g.open) > 0 {
				g.results()
			} else {
				g.assistant()
			}
		}
	}
}

// status is do without failing: it returns the HTTP status and decodes a
// 200 answer into out.
func (c *liveContextd) status(method, path string, body, out any) int {
	c.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		c.t.Fatal(err)
	}
	req, err := http.NewRequest(method, c.http.URL+path, bytes.NewReader(b))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set(api.TokenHeader, rolloverToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Client().Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := json.Unmarshal(rb, out); err != nil {
			c.t.Fatalf("%s %s: %v\n%s", method, path, err, rb)
		}
	}
	return resp.StatusCode
}

// testLogger logs contextd's errors to stderr when CONTEXTD_E2E_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("CONTEXTD_E2E_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
