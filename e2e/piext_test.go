package e2e

// The Pi extension end to end (docs/pi-extension.md): real Pi 0.85.1 and 1.6.0 in RPC
// mode with ../extension and the faux provider, against the contextd binary
// built from this tree. Each scenario asserts what lands in the session file
// and what the provider was sent; every scenario checks the tool call/result
// pairing of every provider request (scenario 4).

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The fact only a tool output of an earlier window holds: the command
// prints it from two pieces, so the call's arguments do not contain it.
const (
	fact        = "secret-fact-4711"
	factCommand = "printf 'secret-%s\\n' fact-4711"
)

var (
	searchPrevious = map[string]any{"action": "search_contents", "query": fact, "window_id": "{{re:Previous context window id: ([0-9a-f-]+)}}"}
	readFirstHit   = map[string]any{"action": "read_item", "window_id": `{{re:"window_id":"([^"]+)"}}`, "item_id": `{{re:"item_id":"([^"]+)"}}`}
)

type sessionState struct {
	Window *struct {
		FirstWindowID   string `json:"firstWindowId"`
		CurrentWindowID string `json:"currentWindowId"`
		WindowNumber    int    `json:"windowNumber"`
	} `json:"window"`
	Registration *struct {
		Mode      string `json:"mode"`
		PiVersion string `json:"pi_version"`
		AgentName string `json:"agent_name"`
	} `json:"registration"`
	Rollover   json.RawMessage `json:"rollover"`
	Incomplete json.RawMessage `json:"incomplete_rollover"`
}

// TestPiExtensionNewSession (scenario 1): before the first model call the
// session holds window 0 and the extension registered the session with its
// mode and Pi's version; the first request starts with the boundary.
func TestPiExtensionNewSession(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		for _, mode := range []string{"local", "tree"} {
			t.Run(mode, func(t *testing.T) {
				r := newRig(t, v, mode, []step{{Text: "hello back"}})
				r.startContextd()
				p := r.startPi()
				p.prompt("hello", 1)
				_, sid, es := r.session()
				bs := boundaries(es)
				if len(bs) != 1 {
					t.Fatalf("boundaries = %d, want 1 (window 0)", len(bs))
				}
				w := windowOf(t, bs[0])
				if w.WindowNumber != 0 || w.FirstWindowID != w.CurrentWindowID || w.PreviousWindowID != "" {
					t.Errorf("window 0 identity = %+v", w)
				}
				// The boundary precedes the first user message, on its branch.
				var user entry
				for _, e := range es {
					if e.Message != nil && e.Message.Role == "user" {
						user = e
						break
					}
				}
				// Pi 1.6 writes its system message between them.
				m := byID(es)
				up := m[user.parent()]
				for up.Message != nil && up.Message.Role == "system" {
					up = m[up.parent()]
				}
				if up.ID != bs[0].ID {
					t.Errorf("first user message's parent = %q, want the boundary %s", up.ID, bs[0].ID)
				}
				reqs := r.requests()
				first := turn(t, reqs, 0).conversation()
				if len(first) != 2 || first[0].Role != "user" || !strings.Contains(first[0].text(), "Current context window id: "+w.CurrentWindowID) ||
					first[1].text() != "hello" {
					t.Errorf("first request = %d messages, first %q", len(first), first[0].text())
				}
				var st sessionState
				r.api("GET", "/v1/sessions/"+sid, nil, &st)
				if st.Registration == nil || st.Registration.Mode != mode || st.Registration.PiVersion != v.Semver || st.Registration.AgentName != "/root" {
					t.Errorf("registration = %+v, want mode %s pi_version %s", st.Registration, mode, v.Semver)
				}
				if st.Window == nil || st.Window.CurrentWindowID != w.CurrentWindowID {
					t.Errorf("contextd window = %+v, want %s", st.Window, w.CurrentWindowID)
				}
				checkClean(t, p, reqs)
			})
		}
	})
}

// TestPiExtensionLocal (scenario 2): notes in window 0, new_context, the
// next request starts at the new boundary with the thread hint; history
// search_contents then read_item recover a fact only window 0's tool output
// held.
func TestPiExtensionLocal(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{
			tool("notes", map[string]any{"action": "write_file", "path": "plan.md", "text": "- find the fact\n"}), // 0
			tool("bash", map[string]any{"command": factCommand}),                                                  // 1
			tool("new_context", nil),        // 2
			tool("history", searchPrevious), // 3
			tool("history", readFirstHit),   // 4
			{Text: "done"},                  // 5
		})
		r.startContextd()
		p := r.startPi()
		p.prompt("find the fact", 1)
		_, _, es := r.session()
		m := byID(es)
		bs := boundaries(es)
		if len(bs) != 2 {
			t.Fatalf("boundaries = %d, want 2", len(bs))
		}
		w0, w1 := windowOf(t, bs[0]), windowOf(t, bs[1])
		if w1.WindowNumber != 1 || w1.FirstWindowID != w0.CurrentWindowID || w1.PreviousWindowID != w0.CurrentWindowID {
			t.Errorf("window 1 identity = %+v after %+v", w1, w0)
		}
		// The note entry lands before the notes tool result; the new
		// boundary right after new_context's result.
		var noteEntry entry
		for _, e := range es {
			if e.CustomType == "codex-context-note" {
				noteEntry = e
			}
		}
		if noteEntry.ID == "" {
			t.Fatal("no codex-context-note entry")
		}
		var afterNote entry
		for _, e := range es {
			if e.parent() == noteEntry.ID {
				afterNote = e
			}
		}
		if afterNote.Message == nil || afterNote.Message.Role != "toolResult" {
			t.Errorf("entry after the note = %+v, want the notes tool result", afterNote)
		}
		if pe := m[bs[1].parent()]; pe.Message == nil || pe.Message.Role != "toolResult" || !strings.Contains(pe.Message.text(), "A new context window will start") {
			t.Errorf("boundary 1's parent = %+v, want new_context's result", pe)
		}
		reqs := r.requests()
		next := turn(t, reqs, 3).conversation()
		if len(next) != 1 || !strings.Contains(next[0].text(), "Current context window id: "+w1.CurrentWindowID) ||
			!strings.Contains(next[0].text(), "Previous context window id: "+w0.CurrentWindowID) || !strings.Contains(next[0].text(), "/root/notes/plan.md") {
			t.Errorf("request after new_context: %d messages, first %q; want only the window-1 boundary with the plan.md hint", len(next), next[0].text())
		}
		if anyContains(turn(t, reqs, 3), fact) {
			t.Errorf("request after new_context still holds the fact")
		}
		search := lastToolResult(t, turn(t, reqs, 4))
		if search.IsError || !strings.Contains(search.text(), fact) || !strings.Contains(search.text(), `"window_id":"`+w0.CurrentWindowID+`"`) {
			t.Errorf("search_contents result: %s", search.text())
		}
		read := lastToolResult(t, turn(t, reqs, 5))
		if read.IsError || !strings.Contains(read.text(), fact) {
			t.Errorf("read_item result: %s", read.text())
		}
		checkClean(t, p, reqs)
	})
}

// treeRollover checks one Tree rollover in es: the summary after the old
// window's boundary bOld archives exactly the old window (fromId = the
// archived leaf, parentId = the boundary's parent) and is labelled
// "contextd window N archive" by the label entry Pi appends right after it
// (navigateTree's label, what /tree shows), then manifest, note snapshot
// and the new boundary land in that order (1.6 may put its system message
// before the boundary). It returns the summary and new boundary.
func treeRollover(t *testing.T, es []entry, bOld entry, archivedLeaf string) (summary, bNew entry) {
	t.Helper()
	m := byID(es)
	var idx int
	for i, e := range es {
		if e.Type == "branch_summary" && e.FromID == archivedLeaf {
			summary, idx = e, i
		}
	}
	if summary.ID == "" {
		t.Fatalf("no branch_summary from %s", archivedLeaf)
	}
	if summary.parent() != bOld.parent() {
		t.Errorf("summary parent = %s, want the old boundary's parent %s", summary.parent(), bOld.parent())
	}
	if wantLabel := fmt.Sprintf("contextd window %d archive", windowOf(t, bOld).WindowNumber); idx+1 >= len(es) ||
		es[idx+1].Type != "label" || es[idx+1].TargetID != summary.ID || es[idx+1].Label != wantLabel || es[idx+1].parent() != summary.ID {
		t.Errorf("entry after the summary %s = %+v, want the label %q on it", summary.ID, es[min(idx+1, len(es)-1)], wantLabel)
	}
	var order []string
	for _, e := range es[idx+1:] {
		if (e.Message != nil && e.Message.Role == "system") || e.Type == "label" {
			continue
		}
		order = append(order, e.CustomType)
		if _, ok := e.window(); ok {
			bNew = e
			break
		}
	}
	if want := []string{"codex-context-tree-archive", "codex-context-note-snapshot", "codex-context-window"}; !slices.Equal(order, want) {
		t.Errorf("entries after the summary = %v, want %v", order, want)
	}
	var man struct {
		WindowID, BoundaryEntryID, SummaryEntryID, ArchivedLeafID, BranchBaseID string
	}
	for _, e := range es[idx+1:] {
		if e.CustomType == "codex-context-tree-archive" {
			_ = json.Unmarshal(e.Data, &man)
			break
		}
	}
	if man.SummaryEntryID != summary.ID || man.ArchivedLeafID != archivedLeaf || man.BoundaryEntryID != bOld.ID || man.BranchBaseID != summary.parent() ||
		man.WindowID != windowOf(t, bOld).CurrentWindowID {
		t.Errorf("manifest = %+v", man)
	}
	// The archived interval is exactly the old window: the chain from the
	// old boundary to the archived leaf.
	c := chain(es, archivedLeaf)
	if i := slices.IndexFunc(c, func(e entry) bool { return e.ID == bOld.ID }); i < 0 {
		t.Errorf("the archived leaf %s does not descend from the old boundary", archivedLeaf)
	}
	_ = m
	return summary, bNew
}

// TestPiExtensionTree (scenario 3): new_context ends the run; exactly one
// settled rollover follows; the archived interval, the order of manifest,
// snapshot and boundary; only the boundary starts a turn; the next request
// holds the boundary and current work only; the model searches and reads
// the archived fact.
func TestPiExtensionTree(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "tree", []step{
			tool("notes", map[string]any{"action": "write_file", "path": "plan.md", "text": "- find the fact\n"}), // 0
			tool("bash", map[string]any{"command": factCommand}),                                                  // 1
			tool("new_context", nil),        // 2: ends the run
			tool("history", searchPrevious), // 3: the boundary's turn
			tool("history", readFirstHit),   // 4
			{Text: "done"},                  // 5
		})
		r.startContextd()
		p := r.startPi()
		p.prompt("find the fact", 2)
		evs := p.snapshot()
		if n := count(evs, "agent_start"); n != 2 {
			t.Errorf("agent runs = %d, want 2 (the prompt, then the boundary's turn)", n)
		}
		file, sid, es := r.session()
		bs := boundaries(es)
		if len(bs) != 2 {
			t.Fatalf("boundaries = %d, want 2", len(bs))
		}
		// The run ended at new_context's result: it is the archived leaf.
		var ncResult entry
		for _, e := range es {
			if e.Message != nil && e.Message.Role == "toolResult" && strings.Contains(e.Message.text(), "new context") {
				ncResult = e
			}
		}
		for _, e := range es {
			if e.parent() == ncResult.ID && e.Type == "message" {
				t.Errorf("entry %s (%s) follows new_context's result on the old branch", e.ID, e.Message.Role)
			}
		}
		summary, b1 := treeRollover(t, es, bs[0], ncResult.ID)
		if b1.ID != bs[1].ID {
			t.Errorf("new boundary = %s, want %s", b1.ID, bs[1].ID)
		}
		reqs := r.requests()
		summaries := 0
		for _, q := range reqs {
			if q.Kind == "summary" {
				summaries++
			}
		}
		if summaries != 1 {
			t.Errorf("summarization requests = %d, want exactly 1 rollover", summaries)
		}
		// Only the boundary starts a turn: the second run's first request
		// ends with it, and its answer's parent is the boundary.
		next := turn(t, reqs, 3).conversation()
		w0, w1 := windowOf(t, bs[0]), windowOf(t, bs[1])
		if len(next) != 1 || !strings.Contains(next[0].text(), "Current context window id: "+w1.CurrentWindowID) ||
			!strings.Contains(next[0].text(), "Previous context window id: "+w0.CurrentWindowID) || !strings.Contains(next[0].text(), "/root/notes/plan.md") {
			t.Errorf("request after the rollover: %d messages, first %q", len(next), next[0].text())
		}
		if anyContains(turn(t, reqs, 3), fact) || anyContains(turn(t, reqs, 3), summary.Summary) {
			t.Errorf("request after the rollover holds an archived entry or the hidden summary")
		}
		for _, e := range es {
			if e.Message != nil && e.Message.Role == "assistant" && strings.Contains(string(e.Message.Content), "search_contents") && e.parent() != b1.ID {
				t.Errorf("the boundary's turn answers entry %s, want the boundary %s", e.parent(), b1.ID)
			}
		}
		search := lastToolResult(t, turn(t, reqs, 4))
		if search.IsError || !strings.Contains(search.text(), fact) || !strings.Contains(search.text(), `"window_id":"`+w0.CurrentWindowID+`"`) {
			t.Errorf("search_contents result: %s", search.text())
		}
		read := lastToolResult(t, turn(t, reqs, 5))
		if read.IsError || !strings.Contains(read.text(), fact) {
			t.Errorf("read_item result: %s", read.text())
		}
		// The rollover completed in contextd.
		var st sessionState
		r.api("GET", "/v1/sessions/"+sid, nil, &st)
		if st.Window == nil || st.Window.CurrentWindowID != w1.CurrentWindowID || string(st.Rollover) != "null" || string(st.Incomplete) != "null" {
			t.Errorf("state after the rollover: window %+v rollover %s incomplete %s", st.Window, st.Rollover, st.Incomplete)
		}
		if n := p.notices("error"); len(n) != 0 {
			t.Errorf("UI errors: %q", n)
		}
		// /contextd shows mode, window, rollovers and health.
		p.command(map[string]any{"type": "prompt", "message": "/contextd"})
		p.waitFor("the /contextd status", 30*time.Second, func([]map[string]any) bool { return p.notice("contextd mode:") != "" })
		status := p.notice("contextd mode:")
		for _, want := range []string{"contextd mode: tree", r.address() + " (healthy)", fmt.Sprintf("window 1 (%s)", w1.CurrentWindowID), "no pending rollover"} {
			if !strings.Contains(status, want) {
				t.Errorf("/contextd status lacks %q:\n%s", want, status)
			}
		}
		checkPairing(t, reqs)
		_ = file
	})
}

// TestPiExtensionFiveRollovers (scenario 5): five Tree rollovers in a row,
// then the session resumed in a new Pi process: the window identity
// continues and the history tools find items of the first window.
func TestPiExtensionFiveRollovers(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		var steps []step
		for i := range 5 {
			steps = append(steps, tool("bash", map[string]any{"command": fmt.Sprintf("printf 'wfact-%%s\\n' %d", i)}), tool("new_context", nil))
		}
		steps = append(steps, step{Text: "window 5 ready"})
		r := newRig(t, v, "tree", steps)
		r.startContextd()
		p := r.startPi()
		p.prompt("roll five times", 6)
		_, sid, es := r.session()
		bs := boundaries(es)
		if len(bs) != 6 {
			t.Fatalf("boundaries = %d, want 6; UI errors %q", len(bs), p.notices("error"))
		}
		w0 := windowOf(t, bs[0])
		for i, b := range bs {
			w := windowOf(t, b)
			if w.WindowNumber != i || w.FirstWindowID != w0.CurrentWindowID || (i > 0 && w.PreviousWindowID != windowOf(t, bs[i-1]).CurrentWindowID) {
				t.Errorf("window %d identity = %+v", i, w)
			}
		}
		// Each rollover archived its window: the new_context result of
		// window i is the archived leaf of the i-th summary.
		var results []entry
		for _, e := range es {
			if e.Message != nil && e.Message.Role == "toolResult" && strings.Contains(e.Message.text(), "new context") {
				results = append(results, e)
			}
		}
		if len(results) != 5 {
			t.Fatalf("new_context results = %d, want 5", len(results))
		}
		for i := range 5 {
			_, bNew := treeRollover(t, es, bs[i], results[i].ID)
			if bNew.ID != bs[i+1].ID {
				t.Errorf("rollover %d opened %s, want %s", i, bNew.ID, bs[i+1].ID)
			}
		}
		checkPairing(t, r.requests())
		p.stop()

		// A new Pi process continues the session.
		os.Remove(r.logPath)
		b, _ := json.Marshal([]step{
			tool("history", map[string]any{"action": "search_contents", "query": "wfact-0", "window_id": "{{re:First context window id: ([0-9a-f-]+)}}"}),
			tool("history", readFirstHit),
			{Text: "found it"},
		})
		if err := os.WriteFile(r.script, b, 0o600); err != nil {
			t.Fatal(err)
		}
		p = r.startPi("--continue")
		p.prompt("what did window 0 print?", 1)
		_, sid2, es := r.session()
		if sid2 != sid {
			t.Fatalf("resumed session %s, want %s", sid2, sid)
		}
		if n := len(boundaries(es)); n != 6 {
			t.Errorf("boundaries after resume = %d, want still 6", n)
		}
		reqs := r.requests()
		first := turn(t, reqs, 0).conversation()
		if len(first) != 3 || !strings.Contains(first[0].text(), "Current context window id: "+windowOf(t, bs[5]).CurrentWindowID) ||
			first[1].text() != "window 5 ready" || first[2].text() != "what did window 0 print?" {
			t.Errorf("first request after resume: %d messages, first %.200q", len(first), first[0].text())
		}
		for i := range 5 {
			if anyContains(turn(t, reqs, 0), fmt.Sprintf("wfact-%d", i)) {
				t.Errorf("request after resume holds window %d's output", i)
			}
		}
		search := lastToolResult(t, turn(t, reqs, 1))
		if search.IsError || !strings.Contains(search.text(), "wfact-0") || !strings.Contains(search.text(), `"window_id":"`+w0.CurrentWindowID+`"`) {
			t.Errorf("search after resume: %s", search.text())
		}
		if read := lastToolResult(t, turn(t, reqs, 2)); read.IsError || !strings.Contains(read.text(), "wfact-0") {
			t.Errorf("read_item after resume: %s", read.text())
		}
		var wins struct {
			Windows []struct {
				WindowID string `json:"window_id"`
			} `json:"windows"`
		}
		r.api("POST", "/alpha/history/v2/list_windows", map[string]any{"context": map[string]any{"session_id": sid}}, &wins)
		if len(wins.Windows) != 6 || wins.Windows[0].WindowID != w0.CurrentWindowID {
			t.Errorf("list_windows = %+v, want 6 windows from %s", wins.Windows, w0.CurrentWindowID)
		}
		checkClean(t, p, reqs)
	})
}

// TestPiExtensionContextdStopped (scenario 7a): contextd stops after the
// session registered; the model's history call gets a tool error that says
// what is wrong and what to do, and the session goes on.
func TestPiExtensionContextdStopped(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{
			tool("history", map[string]any{"action": "list_windows"}), {Text: "carrying on"},
			tool("history", map[string]any{"action": "list_windows"}), {Text: "managed again"},
		})
		r.startContextd()
		p := r.startPi()
		r.stopContextd(false)
		p.prompt("list windows", 1)
		reqs := r.requests()
		res := lastToolResult(t, turn(t, reqs, 1))
		// contextd removed its discovery file on the way out: the
		// extension, looking it up again, says no contextd runs for its
		// state directory.
		if !res.IsError || !strings.Contains(res.text(), "contextd is not running for the state directory "+r.state) || !strings.Contains(res.text(), "contextd serve") {
			t.Errorf("tool result = error %v %q, want an error naming the state directory and how to start contextd", res.IsError, res.text())
		}
		// One sentence, true in Pi terms: the session is connected, so a
		// restarted contextd is found by the next request, no /reload.
		if n := p.notices("error"); len(n) != 1 || !strings.Contains(n[0], "not running") ||
			!strings.Contains(n[0], "this request goes without context management until contextd answers") || strings.Contains(n[0], "/reload") {
			t.Errorf("UI errors = %q, want one line saying contextd is not running, without /reload", n)
		}
		// contextd serve again, no /reload: the next prompt's tool call is answered.
		r.startContextd()
		p.prompt("list windows again", 2)
		reqs = r.requests()
		if res := lastToolResult(t, turn(t, reqs, 3)); res.IsError || !strings.Contains(res.text(), "window") {
			t.Errorf("after contextd serve, tool result = error %v %q, want the window list", res.IsError, res.text())
		}
		if n := p.notices("error"); len(n) != 1 {
			t.Errorf("UI errors after contextd serve = %q, want only the first", n)
		}
		checkPairing(t, reqs)
	})
}

// TestPiExtensionKilledMidRollover (scenario 7b): contextd is killed after
// the settle, while Pi summarizes. Restarted before the commit, the
// rollover completes; not restarted, the extension reports one error, no
// turn starts, and the restarted contextd reports the incomplete rollover.
func TestPiExtensionKilledMidRollover(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		for _, restart := range []bool{true, false} {
			t.Run(map[bool]string{true: "restarted", false: "left-down"}[restart], func(t *testing.T) {
				r := newRig(t, v, "tree", []step{tool("bash", map[string]any{"command": factCommand}), tool("new_context", nil), {Text: "new window"}})
				hold := r.holdSummary()
				r.startContextd()
				p := r.startPi()
				p.send(map[string]any{"type": "prompt", "message": "roll over"})
				hold.waitStarted(t, p)
				r.stopContextd(true)
				if restart {
					r.startContextd()
				}
				hold.release(t)
				_, sid, es := func() (string, string, []entry) {
					if restart {
						p.waitSettled(2)
					} else {
						p.waitFor("the rollover error", 60*time.Second, func([]map[string]any) bool { return len(p.notices("error")) > 0 })
						time.Sleep(500 * time.Millisecond)
						r.startContextd()
					}
					return r.session()
				}()
				bs := boundaries(es)
				var st sessionState
				r.api("GET", "/v1/sessions/"+sid, nil, &st)
				if restart {
					if len(bs) != 2 {
						t.Fatalf("boundaries = %d, want 2; UI errors %q", len(bs), p.notices("error"))
					}
					if string(st.Rollover) != "null" || string(st.Incomplete) != "null" {
						t.Errorf("after restart: rollover %s incomplete %s, want both null", st.Rollover, st.Incomplete)
					}
					if n := p.notices("error"); len(n) != 0 {
						t.Errorf("UI errors: %q", n)
					}
					return
				}
				if n := p.notices("error"); len(n) != 1 || !strings.Contains(n[0], "no turn was started") {
					t.Errorf("UI errors = %q, want one saying the window was archived and no turn started", n)
				}
				if len(bs) != 1 || count(p.snapshot(), "agent_start") != 1 {
					t.Errorf("boundaries %d, runs %d: want 1 and 1 (no turn without the recovery state)", len(bs), count(p.snapshot(), "agent_start"))
				}
				if string(st.Incomplete) == "null" || !strings.Contains(string(st.Incomplete), "summary_entry_id") {
					t.Errorf("incomplete_rollover = %s, want the rollover whose summary landed", st.Incomplete)
				}
			})
		}
	})
}

// TestPiExtensionSecondNewContext (scenario 7c): two new_context calls in
// one message while the first is pending make one rollover.
func TestPiExtensionSecondNewContext(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "tree", []step{
			{Calls: []call{{Name: "new_context", Arguments: map[string]any{}}, {Name: "new_context", Arguments: map[string]any{}}}},
			{Text: "one new window"},
		})
		r.startContextd()
		p := r.startPi()
		p.prompt("roll over twice", 2)
		_, _, es := r.session()
		if n := len(boundaries(es)); n != 2 {
			t.Errorf("boundaries = %d, want 2 (one rollover)", n)
		}
		summaries := 0
		for _, e := range es {
			if e.Type == "branch_summary" {
				summaries++
			}
		}
		if summaries != 1 {
			t.Errorf("branch summaries = %d, want 1", summaries)
		}
		var results []pmsg
		for _, e := range es {
			if e.Message != nil && e.Message.Role == "toolResult" {
				results = append(results, *e.Message)
			}
		}
		if len(results) != 2 || results[0].IsError || results[1].IsError {
			t.Errorf("new_context results = %+v, want two successes", results)
		}
		if n := p.notices("error"); len(n) != 0 {
			t.Errorf("UI errors: %q", n)
		}
		checkPairing(t, r.requests())
	})
}

// fakeCodex is a local stand-in for the Codex history/notes backend.
type fakeCodex struct {
	mu   sync.Mutex
	reqs []codexCall
	srv  *httptest.Server
}

type codexCall struct {
	Path   string
	Header http.Header
	Body   map[string]any
}

func newFakeCodex(t *testing.T) *fakeCodex {
	f := &fakeCodex{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.reqs = append(f.reqs, codexCall{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/alpha/history/v2/list_windows":
			w.Write([]byte(`{"windows":[{"window_id":"remote-window-1","item_count":3}]}`))
		case "/alpha/notes/v2/thread_hint":
			w.Write([]byte(`{"text":"Recent notes (up to 5, most-recent first):\n- /root/notes/remote.md (1 lines, 7 UTF-8 bytes)"}`))
		default:
			w.Write([]byte(`{"encrypted_output":"opaque-remote-result"}`))
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// codexToken is a ChatGPT-style access token (a JWT) whose account claim
// is acct-e2e.
func codexToken() string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return strings.TrimRight(base64URL(b), "=")
	}
	return enc(map[string]any{"alg": "none"}) + "." + enc(map[string]any{"https://api.openai.com/auth": map[string]any{"chatgpt_account_id": "acct-e2e"}}) + ".sig"
}

// TestPiExtensionRemote (scenario 8, off the Codex transport): Remote mode
// works only on the Codex transport (docs/codex-contract.md "Modes",
// "Remote wire shaping": no fallback), so on another provider the tools refuse and say what
// to do, and without a Codex login they refuse too. The Codex transport
// itself is TestPiExtensionRemoteCodexTransport.
func TestPiExtensionRemote(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		t.Run("not-codex-transport", func(t *testing.T) {
			codex := newFakeCodex(t)
			r := newRig(t, v, "remote", []step{tool("history", map[string]any{"action": "list_windows"}), {Text: "refused"}})
			auth := map[string]any{"openai-codex": map[string]any{"type": "oauth", "access": codexToken(), "refresh": "refresh-e2e",
				"expires": time.Now().Add(24 * time.Hour).UnixMilli(), "accountId": "acct-e2e"}}
			b, _ := json.Marshal(auth)
			if err := os.WriteFile(filepath.Join(r.agent, "auth.json"), b, 0o600); err != nil {
				t.Fatal(err)
			}
			r.startContextd("--codex-base-url", codex.srv.URL)
			p := r.startPi()
			p.prompt("use remote history", 1)
			res := lastToolResult(t, turn(t, r.requests(), 1))
			if !res.IsError || res.text() != "remote mode works only on the Codex transport (an openai-codex model); the current model is faux/faux-1; pick an openai-codex model with /model, or switch the contextd mode to local or tree" {
				t.Errorf("faux model in remote mode: error %v %q", res.IsError, res.text())
			}
			codex.mu.Lock()
			defer codex.mu.Unlock()
			for _, c := range codex.reqs {
				if c.Path != "/alpha/notes/v2/thread_hint" {
					t.Errorf("backend called off the Codex transport: %s", c.Path)
				}
			}
		})
		t.Run("no-login", func(t *testing.T) {
			r := newRig(t, v, "remote", []step{tool("history", map[string]any{"action": "list_windows"}), {Text: "no login"}})
			r.startContextd()
			p := r.startPi()
			p.prompt("use remote history", 1)
			res := lastToolResult(t, turn(t, r.requests(), 1))
			if !res.IsError || !strings.Contains(res.text(), "remote mode needs Pi's ChatGPT/Codex login") {
				t.Errorf("without a login: error %v %s", res.IsError, res.text())
			}
		})
	})
}

// command sends an RPC command and waits for its response.
func (p *piProc) command(cmd map[string]any) map[string]any {
	p.t.Helper()
	id := fmt.Sprintf("cmd-%d", time.Now().UnixNano())
	cmd["id"] = id
	p.send(cmd)
	var resp map[string]any
	p.waitFor("response to "+fmt.Sprint(cmd["type"]), 60*time.Second, func(evs []map[string]any) bool {
		for _, e := range evs {
			if e["type"] == "response" && e["id"] == id {
				resp = e
				return true
			}
		}
		return false
	})
	return resp
}

// TestPiExtensionTreeNavigationAndCompact (scenario 6): a user's /tree
// navigation into an archived branch is ordinary navigation (the branch's
// own work is the context, no new boundary, no error); a manual /compact in
// Tree mode stores contextd's cumulative summary.
func TestPiExtensionTreeNavigationAndCompact(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "tree", []step{
			tool("bash", map[string]any{"command": factCommand}), // 0
			tool("new_context", nil),                             // 1
			{Text: "window 1"},                                   // 2: the boundary's turn
			{Text: "back in window 0"},                           // 3: after /tree into the archive
		})
		// Pi refuses /compact when the branch fits in keepRecentTokens
		// (default 20k); the faux session is tiny.
		if err := os.WriteFile(filepath.Join(r.agent, "settings.json"), []byte(`{"compaction":{"keepRecentTokens":1}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		r.startContextd()
		p := r.startPi()
		p.prompt("find the fact", 2)
		_, sid, es := r.session()
		bs := boundaries(es)
		if len(bs) != 2 {
			t.Fatalf("boundaries = %d, want 2", len(bs))
		}
		var factResult, w1Reply entry
		for _, e := range es {
			if e.Message != nil && e.Message.Role == "toolResult" && strings.Contains(e.Message.text(), fact) {
				factResult = e
			}
			if e.Message != nil && e.Message.Role == "assistant" && e.Message.text() == "window 1" {
				w1Reply = e
			}
		}
		// /tree into the archived window, at the fact's tool result.
		if resp := p.command(map[string]any{"type": "prompt", "message": "/e2e-navigate " + factResult.ID}); resp["success"] != true {
			t.Fatalf("navigate: %v", resp)
		}
		p.prompt("continue here", 3)
		reqs := r.requests()
		got := turn(t, reqs, 3).conversation()
		var roles []string
		for _, m := range got {
			roles = append(roles, m.Role)
		}
		if !slices.Equal(roles, []string{"user", "user", "assistant", "toolResult", "user"}) || !strings.Contains(got[0].text(), windowOf(t, bs[0]).CurrentWindowID) ||
			!strings.Contains(got[3].text(), fact) || got[4].text() != "continue here" {
			t.Errorf("request in the archived branch: roles %v, first %.120q", roles, got[0].text())
		}
		if anyContains(turn(t, reqs, 3), "Summary 1") {
			t.Errorf("the archive's own summary reached the model")
		}
		_, _, es = r.session()
		if n := len(boundaries(es)); n != 2 {
			t.Errorf("boundaries after /tree = %d, want 2 (the archived branch has its own)", n)
		}

		// Back to window 1, then /compact.
		if resp := p.command(map[string]any{"type": "prompt", "message": "/e2e-navigate " + w1Reply.ID}); resp["success"] != true {
			t.Fatalf("navigate back: %v", resp)
		}
		var want struct {
			Summary          string `json:"summary"`
			FirstKeptEntryID string `json:"first_kept_entry_id"`
		}
		r.api("POST", "/v1/sessions/"+sid+"/compaction", map[string]any{"leaf_id": w1Reply.ID}, &want)
		if !strings.Contains(want.Summary, "Summary 1") {
			t.Errorf("contextd's cumulative summary lacks the archived window's summary: %.300q", want.Summary)
		}
		resp := p.command(map[string]any{"type": "compact"})
		if resp["success"] != true {
			t.Fatalf("compact: %v", resp)
		}
		_, _, es = r.session()
		var comp entry
		for _, e := range es {
			if e.Type == "compaction" {
				comp = e
			}
		}
		var details struct {
			Strategy string `json:"strategy"`
		}
		_ = json.Unmarshal(comp.Details, &details)
		if comp.Summary != want.Summary || comp.FirstKept != bs[1].ID || want.FirstKeptEntryID != bs[1].ID || details.Strategy != "codex-context-tree" {
			t.Errorf("compaction entry: kept %s (want %s), strategy %q, summary equal %v", comp.FirstKept, bs[1].ID, details.Strategy, comp.Summary == want.Summary)
		}
		checkClean(t, p, reqs)
	})
}

// TestPiExtensionInstallAndAutoStart: `pi install ./extension`, run as the
// README says from the repository root, records the package in the
// agent's settings.json as a path relative to the agent directory (Pi's
// package manager, normalizePackageSourceForSettings: resolved against the
// cwd, stored relative to the user scope's base dir, and resolved against
// that base dir when loading), so Pi started from another cwd loads it
// (no -e); with auto-start on and no contextd running, the extension
// starts the configured binary, waits for /healthz and registers the
// session.
func TestPiExtensionInstallAndAutoStart(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{{Text: "hello back"}})
		repo, err := filepath.Abs(filepath.Join(Dir(), ".."))
		if err != nil {
			t.Fatal(err)
		}
		install := exec.Command(NodeBinary(t), v.cli(), "install", "./extension")
		install.Dir = repo
		install.Env = append(os.Environ(), "HOME="+filepath.Join(r.dir, "home"), "PI_CODING_AGENT_DIR="+r.agent, "PI_OFFLINE=1")
		if out, err := install.CombinedOutput(); err != nil {
			t.Fatalf("pi install: %v\n%s", err, out)
		}
		var settings struct {
			Packages []string `json:"packages"`
		}
		b, _ := os.ReadFile(filepath.Join(r.agent, "settings.json"))
		wantRel, _ := filepath.Rel(r.agent, filepath.Join(repo, "extension"))
		if err := json.Unmarshal(b, &settings); err != nil || len(settings.Packages) != 1 || settings.Packages[0] != wantRel {
			t.Fatalf("settings.json after pi install: %s, want packages [%q] (relative to the agent dir)", b, wantRel)
		}
		// Pi below runs in r.work, not in the repository: the recorded
		// relative path must resolve from the agent dir.
		r.installed = true
		r.env = append(r.env, "CONTEXTD_AUTOSTART=1", "CONTEXTD_BIN="+contextdBinary(t), "CONTEXTD_URL=http://"+r.addr)
		t.Cleanup(func() {
			// The contextd the extension started.
			var d struct {
				PID int `json:"pid"`
			}
			if b, err := os.ReadFile(filepath.Join(r.state, "contextd.json")); err == nil && json.Unmarshal(b, &d) == nil && d.PID > 0 {
				if proc, err := os.FindProcess(d.PID); err == nil {
					_ = proc.Signal(syscall.SIGTERM)
				}
			}
		})
		p := r.startPi()
		p.prompt("hello", 1)
		_, sid, es := r.session()
		if n := len(boundaries(es)); n != 1 {
			t.Errorf("boundaries = %d, want window 0", n)
		}
		var st sessionState
		r.api("GET", "/v1/sessions/"+sid, nil, &st)
		if st.Registration == nil || st.Registration.Mode != "local" || st.Registration.PiVersion != v.Semver {
			t.Errorf("registration = %+v", st.Registration)
		}
		if n := p.notices("error"); len(n) != 0 {
			t.Errorf("UI errors: %q", n)
		}
	})
}

var _ = fmt.Sprint
var _ = http.StatusOK
var _ = httptest.NewServer
var _ = os.Getpid
var _ = filepath.Join
var _ sync.Mutex
var _ = time.Now

func base64URL(b []byte) string { return base64.URLEncoding.EncodeToString(b) }
