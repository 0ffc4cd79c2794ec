package reliability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"contextd"
	"contextd/coordinator"
	"contextd/history"
	"contextd/notes"
	"contextd/session"
)

// Load test bounds: the writer appends for loadWriteFor, the clients run
// until the writer is done plus loadTail.
const (
	loadClients  = 32
	loadWriteFor = 8 * time.Second
	loadTail     = 500 * time.Millisecond
)

// loadSession is one session file being appended to during the load.
type loadSession struct {
	id, path string
	name     string // "a" or "b": prefix of appended entry ids
	f        *os.File
	leaf     string
	window   coordinator.WindowIdentity // current window on the active branch
	n        int                        // entries appended
	// initial is the file size before the load: every state the server
	// may answer from ends at a line boundary at or after it.
	initial int
	// stableWindow and stableItem are the first window and its third item,
	// which no append changes.
	stableWindow, stableItem string
}

// observed is one answer of a load client.
type observed struct {
	sess   *loadSession
	op     string
	status int
	body   []byte
}

// TestConcurrentLoad runs loadClients concurrent clients doing history
// (list_windows, list_items, search_contents, read_item), notes
// (list_files_by_prefix, read_file, thread_hint) and /context requests
// against two sessions (copies of local-basic.jsonl and tree-multi.jsonl)
// while a writer appends valid Pi entries to them (messages, tool calls and
// results, note entries, window boundaries; some lines written in two
// pieces so that a half line is visible). Every answer must be 200 and
// consistent with one state of the file the writer produced: list_windows
// and list_files_by_prefix answers equal, byte for byte, the answer
// computed from a cold in-memory parse of the file cut at some line
// boundary; /context's leaf and boundary, the newest items of list_items
// and the search hits match the same kind of state. The request count and
// p99 latency are logged and printed to stderr.
func TestConcurrentLoad(t *testing.T) {
	root := t.TempDir()
	sessions := filepath.Join(root, "sessions")
	ss := []*loadSession{
		{id: localBasicID, path: filepath.Join(sessions, "a.jsonl"), name: "a"},
		{id: treeMultiID, path: filepath.Join(sessions, "b.jsonl"), name: "b"},
	}
	copyFile(t, filepath.Join(piTreeDir, "local-basic.jsonl"), ss[0].path)
	copyFile(t, filepath.Join(piTreeDir, "tree-multi.jsonl"), ss[1].path)
	st := startStack(t, sessions, filepath.Join(root, "state"), stackOptions{})
	for _, s := range ss {
		st.register(s.id, filepath.Base(s.path), contextd.ModeLocal, "")
		initLoadSession(t, st, s)
	}
	// Answers that no append may change, taken before the load.
	stableRead := map[string][]byte{}
	stableItems := map[string][]byte{}
	for _, s := range ss {
		stableRead[s.id] = st.must(http.StatusOK, http.MethodPost, codexPath("history/read_item"), codexBody(s.id, "", map[string]any{"window_id": s.stableWindow, "item_id": s.stableItem, "limit_chars": 300}))
		stableItems[s.id] = st.must(http.StatusOK, http.MethodPost, codexPath("history/list_items"), codexBody(s.id, "", map[string]any{"window_id": s.stableWindow, "limit": 5}))
	}

	ops := []string{"list_windows", "list_items_recent", "list_items_stable", "search", "read_item", "notes_list", "notes_read", "thread_hint", "context"}
	request := func(s *loadSession, op string) (string, string, any) {
		h := func(name string, args map[string]any) (string, string, any) {
			return http.MethodPost, codexPath(name), codexBody(s.id, "", args)
		}
		switch op {
		case "list_windows":
			return h("history/list_windows", map[string]any{"limit": 100})
		case "list_items_recent":
			return h("history/list_items", map[string]any{"recent_first": true, "limit": 3, "max_chars_per_item": 50})
		case "list_items_stable":
			return h("history/list_items", map[string]any{"window_id": s.stableWindow, "limit": 5})
		case "search":
			return h("history/search_contents", map[string]any{"query": "loadtok-" + s.name, "limit": 25})
		case "read_item":
			return h("history/read_item", map[string]any{"window_id": s.stableWindow, "item_id": s.stableItem, "limit_chars": 300})
		case "notes_list":
			return h("notes/list_files_by_prefix", map[string]any{"max_results": 100})
		case "notes_read":
			return h("notes/read_file", map[string]any{"path": "load.md"})
		case "thread_hint":
			return h("notes/thread_hint", nil)
		}
		return http.MethodPost, "/v1/sessions/" + s.id + "/context", map[string]any{}
	}

	var (
		stop      atomic.Bool
		mu        sync.Mutex
		answers   []observed
		latencies []time.Duration
		failures  []string
		wg        sync.WaitGroup
	)
	start := time.Now()
	writerDone := make(chan error, 1)
	go func() { writerDone <- runLoadWriter(ss, loadWriteFor) }()
	for c := 0; c < loadClients; c++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			var mine []observed
			var lat []time.Duration
			var fails []string
			for !stop.Load() {
				s := ss[rng.Intn(len(ss))]
				op := ops[rng.Intn(len(ops))]
				method, path, body := request(s, op)
				t0 := time.Now()
				a, err := st.do(method, path, body)
				lat = append(lat, time.Since(t0))
				switch {
				case err != nil:
					fails = append(fails, fmt.Sprintf("%s %s: %v", s.name, op, err))
				case a.Status < 200 || a.Status > 299:
					fails = append(fails, fmt.Sprintf("%s %s: status %d: %.300s", s.name, op, a.Status, a.Body))
				default:
					mine = append(mine, observed{sess: s, op: op, status: a.Status, body: a.Body})
				}
			}
			mu.Lock()
			answers = append(answers, mine...)
			latencies = append(latencies, lat...)
			failures = append(failures, fails...)
			mu.Unlock()
		}(int64(c) + 1)
	}
	if err := <-writerDone; err != nil {
		stop.Store(true)
		wg.Wait()
		t.Fatalf("writer: %v", err)
	}
	time.Sleep(loadTail)
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	for _, s := range ss {
		s.f.Close()
	}

	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	n := len(latencies)
	if n == 0 {
		t.Fatal("no request was made")
	}
	p50, p99, worst := latencies[n/2], latencies[min(n-1, n*99/100)], latencies[n-1]
	summary := fmt.Sprintf("reliability load: %d requests by %d clients in %v (%.0f req/s) while appending %d+%d entries; latency p50 %v p99 %v max %v; %d failures",
		n, loadClients, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), ss[0].n, ss[1].n,
		p50.Round(time.Microsecond), p99.Round(time.Microsecond), worst.Round(time.Microsecond), len(failures))
	t.Log(summary)
	fmt.Fprintln(os.Stderr, summary)
	// go test hides the output of passing packages: .ci/run sets
	// CONTEXTD_LOAD_SUMMARY and prints the file after the run.
	if path := os.Getenv("CONTEXTD_LOAD_SUMMARY"); path != "" {
		if err := os.WriteFile(path, []byte(summary+"\n"), 0o644); err != nil {
			t.Errorf("write load summary: %v", err)
		}
	}
	for i, f := range failures {
		if i == 10 {
			t.Errorf("... %d failures in all", len(failures))
			break
		}
		t.Errorf("non-2xx answer or transport error: %s", f)
	}
	if ss[0].n < 20 || ss[1].n < 20 {
		t.Errorf("the writer appended only %d and %d entries", ss[0].n, ss[1].n)
	}

	// The oracle: every state of each file, from a cold parse.
	states := map[string]*loadStates{}
	for _, s := range ss {
		states[s.id] = computeLoadStates(t, s)
		t.Logf("%s: %d states (%d distinct list_windows answers), %d windows and %d notes files at the end", s.name, states[s.id].states, len(states[s.id].windows), states[s.id].lastWindows, states[s.id].lastNoteFiles)
	}
	checked := map[string]int{}
	bad := 0
	report := func(o observed, format string, args ...any) {
		bad++
		if bad <= 10 {
			t.Errorf("%s %s: %s\nbody: %.600s", o.sess.name, o.op, fmt.Sprintf(format, args...), o.body)
		}
	}
	for _, o := range answers {
		ls := states[o.sess.id]
		checked[o.op]++
		switch o.op {
		case "list_windows":
			if !ls.windows[string(o.body)] {
				report(o, "list_windows answer matches no state of the file")
			}
		case "notes_list":
			if !ls.noteLists[string(o.body)] {
				report(o, "list_files_by_prefix answer matches no state of the file")
			}
		case "context":
			var c coordinator.ContextAnswer
			decode(t, o.body, &c)
			cur := ""
			if c.Window != nil {
				cur = c.Window.CurrentWindowID
			}
			if !ls.contexts[c.LeafID+" "+c.BoundaryEntryID+" "+cur] {
				report(o, "context (leaf %s, boundary %s, window %s) matches no state", c.LeafID, c.BoundaryEntryID, cur)
			}
		case "list_items_recent":
			var r history.ItemsResult
			decode(t, o.body, &r)
			if !ls.newest[itemKey(r.Items)] {
				report(o, "the 3 newest items %s match no state", itemKey(r.Items))
			}
		case "search":
			var r history.ItemsResult
			decode(t, o.body, &r)
			if got, want := itemKey(r.Items), itemKey(ls.hits[:min(len(r.Items), len(ls.hits))]); got != want {
				report(o, "search hits %s are not the first hits %s", got, want)
			}
		case "list_items_stable":
			if !bytes.Equal(o.body, stableItems[o.sess.id]) {
				report(o, "answer for the first window changed")
			}
		case "read_item":
			if !bytes.Equal(o.body, stableRead[o.sess.id]) {
				report(o, "read_item of a first-window item changed")
			}
		case "notes_read":
			var r notes.ReadResult
			decode(t, o.body, &r)
			if r.File != nil && !strings.HasPrefix(ls.finalNote, r.File.Content) {
				report(o, "load.md content is not a state of the file")
			}
		case "thread_hint":
			var r coordinator.ThreadHintResult
			decode(t, o.body, &r)
			if len(r.Text) > 4000 {
				report(o, "thread hint of %d bytes", len(r.Text))
			}
		}
	}
	if bad > 10 {
		t.Errorf("%d inconsistent answers in all", bad)
	}
	for _, op := range ops {
		if checked[op] == 0 {
			t.Errorf("no successful %s answer was checked", op)
		}
	}
	t.Logf("checked answers by operation: %v", checked)
}

// itemKey is the window and item ids of previews, in order.
func itemKey(items []history.ItemPreview) string {
	var b strings.Builder
	for _, it := range items {
		b.WriteString(it.WindowID + "/" + it.ItemID + " ")
	}
	return b.String()
}

// initLoadSession reads the session's starting point from a cold parse:
// its leaf and current window, and an item of its first window.
func initLoadSession(t *testing.T, st *stack, s *loadSession) {
	t.Helper()
	data := mustRead(t, s.path)
	s.initial = len(data)
	var p session.Parser
	tree, _, _, err := session.Feed(bytes.NewReader(data), &p, nil, 0, -1, session.DefaultMaxLineBytes, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.leaf = tree.Leaf()
	seqs, _, _ := tree.Branch("")
	for _, sq := range seqs {
		if e := new(tree.Entry(sq)); e.IsBoundary() {
			w := e.Window
			s.window = coordinator.WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: w.FirstWindowID, CurrentWindowID: w.CurrentWindowID, PreviousWindowID: w.PreviousWindowID, WindowNumber: w.WindowNumber}
		}
	}
	var lw history.WindowsResult
	decode(t, st.must(http.StatusOK, http.MethodPost, codexPath("history/list_windows"), codexBody(s.id, "", nil)), &lw)
	// The first window's first items never change: appends go to the
	// last window, after its existing items.
	if len(lw.Windows) == 0 || lw.Windows[0].ItemCount < 5 || s.window.CurrentWindowID == "" {
		t.Fatalf("%s: windows %+v, current %q; want a first window with at least 5 items", s.path, lw.Windows, s.window.CurrentWindowID)
	}
	s.stableWindow = lw.Windows[0].WindowID
	var ir history.ItemsResult
	decode(t, st.must(http.StatusOK, http.MethodPost, codexPath("history/list_items"), codexBody(s.id, "", map[string]any{"window_id": s.stableWindow, "limit": 3})), &ir)
	s.stableItem = ir.Items[len(ir.Items)-1].ItemID
	s.f, err = os.OpenFile(s.path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
}

// runLoadWriter appends entries to the sessions in turn for d: a cycle of
// user message, assistant message with a bash tool call, tool result,
// assistant message, plus a note append every 7th entry and a window
// boundary every 20th. One line in three is written in two pieces with a
// pause between, so readers see a half line in flight; one in five is
// written together with the next line.
func runLoadWriter(ss []*loadSession, d time.Duration) error {
	rng := rand.New(rand.NewSource(7))
	deadline := time.Now().Add(d)
	var pending [2][]byte
	for k := 0; time.Now().Before(deadline); k++ {
		i := k % len(ss)
		s := ss[i]
		line := nextLoadLine(s)
		switch {
		case rng.Intn(5) == 0 && pending[i] == nil:
			pending[i] = line // written with the next line
			continue
		case rng.Intn(3) == 0:
			cut := 1 + rng.Intn(len(line)-1)
			if _, err := s.f.Write(append(pending[i], line[:cut]...)); err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
			line = line[cut:]
		default:
			line = append(pending[i], line...)
		}
		pending[i] = nil
		if _, err := s.f.Write(line); err != nil {
			return err
		}
		time.Sleep(time.Duration(3+rng.Intn(10)) * time.Millisecond)
	}
	for i, p := range pending {
		if p != nil {
			if _, err := ss[i].f.Write(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// nextLoadLine returns the next entry line of s (with "\n") and advances
// its leaf and window.
func nextLoadLine(s *loadSession) []byte {
	k := s.n
	s.n++
	id := fmt.Sprintf("%s%07x", s.name, k)
	ts := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(k) * time.Second)
	ms := ts.UnixMilli()
	e := map[string]any{"id": id, "parentId": s.leaf, "timestamp": ts.Format("2006-01-02T15:04:05.000Z")}
	switch {
	case k%20 == 19:
		next := coordinator.WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: s.window.FirstWindowID, CurrentWindowID: uuid.NewString(),
			PreviousWindowID: s.window.CurrentWindowID, WindowNumber: s.window.WindowNumber + 1}
		e["type"], e["customType"], e["display"] = "custom_message", "codex-context-window", true
		e["content"] = coordinator.BoundaryContent("/root", next, "")
		e["details"] = coordinator.BoundaryDetails{Protocol: 1, ID: uuid.NewString(), ContextManagement: next}
		s.window = next
	case k%7 == 6:
		e["type"], e["customType"] = "custom", "codex-context-note"
		e["data"] = map[string]any{"protocol": 1, "action": "append", "path": "/root/notes/load.md", "text": fmt.Sprintf("- %s step %d\n", s.name, k), "timestamp": ms}
	default:
		e["type"] = "message"
		call := fmt.Sprintf("call_%s%d", s.name, k-1)
		switch k % 4 {
		case 0:
			e["message"] = map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("Request %d (loadtok-%s%d): check the build.", k, s.name, k)}}, "timestamp": ms}
		case 1:
			e["message"] = map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": fmt.Sprintf("Running step %d, loadtok-%s%d.", k, s.name, k)},
				map[string]any{"type": "toolCall", "id": fmt.Sprintf("call_%s%d", s.name, k), "name": "bash", "arguments": map[string]any{"command": fmt.Sprintf("echo %d", k)}},
			}, "api": "openai-codex-responses", "provider": "openai-codex", "model": "gpt-5.5", "stopReason": "toolUse", "timestamp": ms,
				"usage": map[string]any{"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15, "cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}
		case 2:
			e["message"] = map[string]any{"role": "toolResult", "toolCallId": call, "toolName": "bash", "content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("%d\n", k-1)}}, "isError": false, "timestamp": ms}
		default:
			e["message"] = map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("Step %d done: Café 漢字 👩‍💻.", k)}},
				"api": "openai-codex-responses", "provider": "openai-codex", "model": "gpt-5.5", "stopReason": "stop", "timestamp": ms}
		}
	}
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	s.leaf = id
	return append(b, '\n')
}

// loadStates is what a consistent server may answer for one session: one
// value per state of the file (each line boundary from the start of the
// load on), computed from a cold in-memory parse.
type loadStates struct {
	windows   map[string]bool // list_windows {limit: 100} JSON
	noteLists map[string]bool // list_files_by_prefix {max_results: 100} JSON
	contexts  map[string]bool // "leaf boundary currentWindowId"
	newest    map[string]bool // itemKey of the 3 newest items
	hits      []history.ItemPreview
	finalNote string // load.md at the end

	states, lastWindows, lastNoteFiles int
}

func computeLoadStates(t *testing.T, s *loadSession) *loadStates {
	t.Helper()
	data := mustRead(t, s.path)
	if !bytes.HasSuffix(data, []byte("\n")) {
		t.Fatalf("%s does not end in a complete line", s.path)
	}
	out := &loadStates{windows: map[string]bool{}, noteLists: map[string]bool{}, contexts: map[string]bool{}, newest: map[string]bool{}}
	calls := map[string]history.Call{}
	items := map[int]history.Item{}
	noteData := map[int][]byte{}
	var p session.Parser
	tree, _, _, err := session.Feed(bytes.NewReader(data), &p, nil, 0, -1, session.DefaultMaxLineBytes, func(e *session.Entry, d *session.Decoded) error {
		lookup := func(id string) (history.Call, bool) { c, ok := calls[id]; return c, ok }
		if it, ok := history.Render(e, d, lookup); ok {
			items[e.Seq] = it
		}
		for _, c := range history.Calls(d) {
			if c.ID != "" {
				calls[c.ID] = c.Call
			}
		}
		if e.Type == session.TypeCustom {
			noteData[e.Seq] = append([]byte(nil), d.Data...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ref := func(seq int, windowID string) (history.ItemRef, bool) {
		it, ok := items[seq]
		if !ok {
			return history.ItemRef{}, false
		}
		return history.ItemRef{WindowID: windowID, ItemID: tree.ID(seq), Role: it.Role, ToolName: it.ToolName, ToolNamespace: it.ToolNamespace, Summary: it.Summary, Chars: it.Chars, Key: int64(seq)}, true
	}
	for _, e := range tree.All() {
		if int(e.Offset)+e.Length+1 < s.initial {
			continue // before the load: not a state a reader can see now
		}
		out.states++
		seqs, _, err := tree.Branch(e.ID)
		if err != nil {
			t.Fatal(err)
		}
		wins := history.LocalWindows(tree, seqs, ref)
		view := &history.View{Agent: "/root", Windows: wins} // list_windows reads no item text
		lw, _ := view.ListWindows(history.ListWindowsArgs{Limit: ptr(100)})
		b, _ := json.Marshal(lw)
		out.windows[string(b)] = true
		out.lastWindows = len(wins)

		boundary, cur := "", ""
		for i := len(seqs) - 1; i >= 0; i-- {
			if be := new(tree.Entry(seqs[i])); be.IsBoundary() {
				boundary, cur = be.ID, be.Window.CurrentWindowID
				break
			}
		}
		out.contexts[e.ID+" "+boundary+" "+cur] = true

		var all []history.ItemPreview
		for _, w := range wins {
			for _, r := range w.All() {
				all = append(all, history.ItemPreview{WindowID: w.ID, ItemID: r.ItemID})
			}
		}
		var newest []history.ItemPreview
		for i := len(all) - 1; i >= 0 && len(newest) < 3; i-- {
			newest = append(newest, all[i])
		}
		out.newest[itemKey(newest)] = true

		// Notes: replay from the latest snapshot on the branch, as
		// coordinator.noteState does.
		from := 0
		for i := len(seqs) - 1; i >= 0; i-- {
			if ne := new(tree.Entry(seqs[i])); ne.Type == session.TypeCustom && ne.CustomType == session.CustomTypeNoteSnapshot {
				from = i
				break
			}
		}
		var events []notes.Event
		for _, sq := range seqs[from:] {
			ne := new(tree.Entry(sq))
			if ne.Type != session.TypeCustom || (ne.CustomType != session.CustomTypeNote && ne.CustomType != session.CustomTypeNoteSnapshot) {
				continue
			}
			if ev, err := notes.DecodeEvent(ne.ID, ne.CustomType, noteData[sq]); err == nil {
				events = append(events, ev)
			}
		}
		ns := notes.Replay(events)
		nl, err := notes.ListFilesByPrefix(ns, "/root", notes.ListFilesByPrefixArgs{MaxResults: ptr(100)})
		if err != nil {
			t.Fatal(err)
		}
		b, _ = json.Marshal(nl)
		out.noteLists[string(b)] = true
		out.lastNoteFiles = len(nl.Files)
		if e.Seq == tree.Len()-1 {
			out.hits = nil
			for _, it := range all {
				if strings.Contains(items[int(mustSeq(tree, it.ItemID))].Text, "loadtok-"+s.name) {
					out.hits = append(out.hits, it)
				}
			}
			rf, _ := notes.ReadFile(ns, "/root", notes.ReadFileArgs{Path: "load.md"})
			if rf.File != nil {
				out.finalNote = rf.File.Content
			}
		}
	}
	if len(out.windows) < 2 || len(out.hits) == 0 || out.finalNote == "" {
		t.Fatalf("%s: %d window states, %d hits, note %q: the writer did not change the session", s.path, len(out.windows), len(out.hits), out.finalNote)
	}
	return out
}

func mustSeq(tree *session.Tree, id string) int {
	sq, ok := tree.Lookup(id)
	if !ok {
		panic("no entry " + id)
	}
	return sq
}
