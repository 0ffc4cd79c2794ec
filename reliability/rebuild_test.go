package reliability

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"contextd"
	"contextd/coordinator"
	"contextd/e2e"
	"contextd/history"
	"contextd/notes"
)

// probe is one request of the rebuild-equivalence table. Every probe is a
// read: it must not change contextd's state, so replaying the table gives
// the same answers as long as the index is equivalent.
type probe struct {
	Name   string // unique label for failure reports
	Method string
	Path   string
	Body   any // nil: no body; else JSON encoded
	// Mask, when set, replaces the parts of a 200 body that are fresh on
	// every call (new window and marker UUIDs) before comparing.
	Mask func(t testing.TB, body []byte) []byte
}

// probeSet adds the probes of one group of routes for one session. It may
// ask s (the first, reference server) for ids to probe (windows, items,
// note files, a mid-branch leaf). To cover more routes (e.g. Tree mode's
// GET …/rollovers/{id} or POST …/compaction), write another probeSet and
// append it to probeSets.
type probeSet func(t testing.TB, s *stack, sess coordinator.SessionSummary) []probe

var probeSets = []probeSet{sessionProbes, historyProbes, notesProbes}

// TestRebuildEquivalence checks docs/design.md §6 invariant 1 through the HTTP
// API: every answer of every read route, ids included, is identical
// before and after POST /v1/index/rebuild, and after the index directory is
// deleted and a new service starts on the same state directory.
// Registrations (contextd's own state) survive both.
func TestRebuildEquivalence(t *testing.T) {
	root := t.TempDir()
	sessions := filepath.Join(root, "sessions")
	stateDir := filepath.Join(root, "state")
	for _, f := range fixtureFiles(t) {
		copyFile(t, f, filepath.Join(sessions, filepath.Base(f)))
	}
	// Files written by Pi's own SessionManager, in a subfolder as Pi's
	// per-cwd folders are.
	gen := e2e.GenSessions(t, filepath.Join(root, "gen"))
	if len(gen) != len(e2e.GeneratedFiles) {
		t.Fatalf("GenSessions wrote %d files, want %d", len(gen), len(e2e.GeneratedFiles))
	}
	// And those only Pi 1.6 writes (context edits, usage, system messages).
	gen = append(gen, genExtra(t, e2e.Pi16, filepath.Join(root, "gen16"))...)
	for _, f := range gen {
		copyFile(t, f, filepath.Join(sessions, "--home-dev-src-harness--", filepath.Base(f)))
	}
	nFiles := 11 + len(gen)

	s1 := startStack(t, sessions, stateDir, stackOptions{})
	list := s1.sessionsList()
	if len(list) != nFiles {
		t.Fatalf("GET /v1/sessions lists %d sessions, want %d", len(list), nFiles)
	}
	// Registrations: contextd's own state, which no rebuild may lose.
	regs := map[string]contextd.Registration{
		localBasicID: s1.register(localBasicID, "local-basic.jsonl", contextd.ModeLocal, ""),
		treeMultiID:  s1.register(treeMultiID, filepath.Join(sessions, "tree-multi.jsonl"), contextd.ModeTree, ""),
		treeBasicID:  s1.register(treeBasicID, "tree-basic.jsonl", contextd.ModeTree, "/root/worker"),
		piMonoV1ID:   s1.register(piMonoV1ID, "pi-mono-session.jsonl", contextd.ModeOff, ""),
	}

	// Pinned facts (local-basic.expected.json, history/fixture_test.go).
	var lw history.WindowsResult
	decode(t, s1.must(http.StatusOK, http.MethodPost, codexPath("history/list_windows"), codexBody(localBasicID, "", nil)), &lw)
	wantLW := history.WindowsResult{Source: "pi-session", Windows: []history.WindowInfo{
		{WindowID: "e636b0b7-d739-4a87-ad1c-80eb5320dfff", ItemCount: 41},
		{WindowID: "058f6ded-97f5-4969-ade0-fa96ccce6093", ItemCount: 32},
		{WindowID: "3f758502-0c0f-4460-92e9-45bd32510d50", ItemCount: 20},
	}}
	if fmt.Sprint(lw) != fmt.Sprint(wantLW) {
		t.Fatalf("local-basic list_windows = %+v, want %+v", lw, wantLW)
	}

	probes := buildProbes(t, s1)
	before := record(t, s1, probes)
	ok := 0
	for _, a := range before {
		if a.Status == http.StatusOK {
			ok++
		}
	}
	t.Logf("%d probes over %d sessions, %d answered 200", len(probes), nFiles, ok)
	if ok < len(probes)*3/4 {
		t.Fatalf("only %d of %d probes answered 200: the table probes mostly errors", ok, len(probes))
	}

	// 1. POST /v1/index/rebuild on the running service.
	var rb struct {
		Sessions int `json:"sessions"`
	}
	decode(t, s1.must(http.StatusOK, http.MethodPost, "/v1/index/rebuild", nil), &rb)
	if rb.Sessions != nFiles {
		t.Errorf("rebuild answered sessions=%d, want %d", rb.Sessions, nFiles)
	}
	compareRecords(t, "after POST /v1/index/rebuild", probes, before, record(t, s1, probes))
	checkRegistrations(t, s1, regs)

	// 2. Stop, delete the whole index directory, start a new service on the
	// same state directory.
	s1.stop()
	if err := os.RemoveAll(filepath.Join(stateDir, "index")); err != nil {
		t.Fatal(err)
	}
	s2 := startStack(t, sessions, stateDir, stackOptions{})
	checkRegistrations(t, s2, regs)
	compareRecords(t, "after deleting the index directory and restarting", probes, before, record(t, s2, probes))
	if _, err := os.Stat(filepath.Join(stateDir, "index", "index.db")); err != nil {
		t.Errorf("the new service did not recreate index/index.db: %v", err)
	}
}

// checkRegistrations asserts every registration is still stored as made.
func checkRegistrations(t *testing.T, s *stack, want map[string]contextd.Registration) {
	t.Helper()
	for id, w := range want {
		var st coordinator.SessionState
		decode(t, s.must(http.StatusOK, http.MethodGet, "/v1/sessions/"+id, nil), &st)
		if st.Registration == nil {
			t.Errorf("%s: registration lost", id)
			continue
		}
		got := *st.Registration
		if got.SessionFile != w.SessionFile || got.Mode != w.Mode || got.AgentName != w.AgentName ||
			!got.RegisteredAt.Equal(w.RegisteredAt) || !got.UpdatedAt.Equal(w.UpdatedAt) || !st.Registered || st.Mode != w.Mode {
			t.Errorf("%s: registration = %+v (registered %v, mode %s), want %+v", id, got, st.Registered, st.Mode, w)
		}
	}
}

// buildProbes builds the table: global routes, then every probe set for
// every session with a header.
func buildProbes(t testing.TB, s *stack) []probe {
	t.Helper()
	ps := []probe{
		{Name: "get-session unknown", Method: http.MethodGet, Path: "/v1/sessions/no-such-session"},
		{Name: "list_windows unknown", Method: http.MethodPost, Path: codexPath("history/list_windows"), Body: codexBody("no-such-session", "", nil)},
	}
	for _, sess := range s.sessionsList() {
		if sess.SessionID == "" {
			continue
		}
		for _, set := range probeSets {
			ps = append(ps, set(t, s, sess)...)
		}
	}
	// The listing last: the probes before have used (indexed) every
	// session with an id in each run, and the listing reports which
	// sessions are indexed (not indexed ones by their header only).
	ps = append(ps, probe{Name: "list-sessions", Method: http.MethodGet, Path: "/v1/sessions"})
	seen := map[string]bool{}
	for _, p := range ps {
		if seen[p.Name] {
			t.Fatalf("duplicate probe name %q", p.Name)
		}
		seen[p.Name] = true
	}
	return ps
}

// midLeaf returns an entry id in the middle of the session's active
// branch ("" for a header-only session).
func midLeaf(t testing.TB, s *stack, id string) string {
	t.Helper()
	a, err := s.do(http.MethodGet, "/v1/sessions/"+id+"/branch", nil)
	if err != nil || a.Status != http.StatusOK {
		return ""
	}
	var b coordinator.BranchAnswer
	decode(t, a.Body, &b)
	if len(b.EntryIDs) == 0 {
		return ""
	}
	return b.EntryIDs[len(b.EntryIDs)/2]
}

func sessionProbes(t testing.TB, s *stack, sess coordinator.SessionSummary) []probe {
	id := sess.SessionID
	base := "/v1/sessions/" + id
	mid := midLeaf(t, s, id)
	ps := []probe{
		{Name: id + " get-session", Method: http.MethodGet, Path: base},
		{Name: id + " branch", Method: http.MethodGet, Path: base + "/branch"},
		{Name: id + " branch unknown leaf", Method: http.MethodGet, Path: base + "/branch?leaf_id=no-such-entry"},
		{Name: id + " context", Method: http.MethodPost, Path: base + "/context", Body: map[string]any{}},
		{Name: id + " windows", Method: http.MethodPost, Path: base + "/windows", Body: map[string]any{}, Mask: maskWindows},
	}
	if mid != "" {
		ps = append(ps,
			probe{Name: id + " branch mid", Method: http.MethodGet, Path: base + "/branch?leaf_id=" + url.QueryEscape(mid)},
			probe{Name: id + " context mid", Method: http.MethodPost, Path: base + "/context", Body: map[string]any{"leaf_id": mid}},
			probe{Name: id + " windows mid", Method: http.MethodPost, Path: base + "/windows", Body: map[string]any{"leaf_id": mid}, Mask: maskWindows},
		)
	}
	return ps
}

func historyProbes(t testing.TB, s *stack, sess coordinator.SessionSummary) []probe {
	id := sess.SessionID
	mid := midLeaf(t, s, id)
	h := func(name, op, leaf string, args map[string]any) probe {
		return probe{Name: id + " " + name, Method: http.MethodPost, Path: codexPath("history/" + op), Body: codexBody(id, leaf, args)}
	}
	ps := []probe{
		h("list_windows", "list_windows", "", nil),
		h("list_windows recent 1", "list_windows", "", map[string]any{"recent_first": true, "limit": 1}),
		h("list_windows other agent", "list_windows", "", map[string]any{"agent_name": "/root/elsewhere"}),
		h("list_items", "list_items", "", nil),
		h("list_items recent", "list_items", "", map[string]any{"recent_first": true, "limit": 25, "max_chars_per_item": 60}),
		h("list_items user", "list_items", "", map[string]any{"role": "user", "limit": 25}),
		h("list_items tool", "list_items", "", map[string]any{"role": "tool", "limit": 25, "max_chars_per_item": 30}),
		h("list_items bash", "list_items", "", map[string]any{"tool_name": "bash"}),
		h("list_items unknown window", "list_items", "", map[string]any{"window_id": "no-such-window"}),
		h("search the", "search_contents", "", map[string]any{"query": "the"}),
		h("search e recent", "search_contents", "", map[string]any{"query": "e", "limit": 25, "recent_first": true}),
		h("search none", "search_contents", "", map[string]any{"query": "zz-no-such-text-zz"}),
		h("search user", "search_contents", "", map[string]any{"query": "a", "role": "user"}),
	}
	if mid != "" {
		ps = append(ps, h("list_windows mid", "list_windows", mid, nil), h("list_items mid", "list_items", mid, map[string]any{"limit": 25}))
	}
	a, err := s.do(http.MethodPost, codexPath("history/list_windows"), codexBody(id, "", map[string]any{"limit": 100}))
	if err != nil || a.Status != http.StatusOK {
		return ps // off mode or an unusable file: the probes above record the error
	}
	var wr history.WindowsResult
	decode(t, a.Body, &wr)
	for wi, w := range wr.Windows {
		if wi >= 6 {
			break
		}
		wn := fmt.Sprintf("w%d", wi)
		ps = append(ps,
			h(wn+" list_items", "list_items", "", map[string]any{"window_id": w.WindowID, "limit": 25}),
			h(wn+" list_items recent", "list_items", "", map[string]any{"window_id": w.WindowID, "limit": 5, "recent_first": true, "max_chars_per_item": 100}),
			h(wn+" search error", "search_contents", "", map[string]any{"query": "error", "window_id": w.WindowID}),
		)
		var ir history.ItemsResult
		decode(t, s.must(http.StatusOK, http.MethodPost, codexPath("history/list_items"), codexBody(id, "", map[string]any{"window_id": w.WindowID, "limit": 25, "max_chars_per_item": 1})), &ir)
		if len(ir.Items) == 0 {
			continue
		}
		picks := map[int]bool{0: true, len(ir.Items) / 2: true, len(ir.Items) - 1: true}
		for i := range ir.Items {
			if !picks[i] {
				continue
			}
			it := ir.Items[i]
			ps = append(ps, h(fmt.Sprintf("%s read_item %d", wn, i), "read_item", "", map[string]any{"window_id": w.WindowID, "item_id": it.ItemID}))
		}
		first := ir.Items[0].ItemID
		ps = append(ps,
			h(wn+" read_item range", "read_item", "", map[string]any{"window_id": w.WindowID, "item_id": first, "offset_chars": 7, "limit_chars": 40}),
			h(wn+" read_item suffix", "read_item", "", map[string]any{"window_id": w.WindowID, "item_id": first[len(first)-4:]}),
		)
		// A query taken from the item itself: at least one hit.
		var rd history.ReadResult
		decode(t, s.must(http.StatusOK, http.MethodPost, codexPath("history/read_item"), codexBody(id, "", map[string]any{"window_id": w.WindowID, "item_id": first, "limit_chars": 12})), &rd)
		if rd.Item != nil && strings.TrimSpace(rd.Item.Content) != "" {
			ps = append(ps, h(wn+" search own text", "search_contents", "", map[string]any{"query": rd.Item.Content, "limit": 25}))
		}
	}
	return ps
}

func notesProbes(t testing.TB, s *stack, sess coordinator.SessionSummary) []probe {
	id := sess.SessionID
	mid := midLeaf(t, s, id)
	n := func(name, op, leaf string, args map[string]any) probe {
		return probe{Name: id + " notes " + name, Method: http.MethodPost, Path: codexPath("notes/" + op), Body: codexBody(id, leaf, args)}
	}
	ps := []probe{
		n("list", "list_files_by_prefix", "", nil),
		n("list updated desc", "list_files_by_prefix", "", map[string]any{"prefix": "/root/notes/", "max_results": 3, "file_order_by": "updated_at", "file_order": "descending"}),
		n("read missing", "read_file", "", map[string]any{"path": "no-such-note.md"}),
		n("search the", "search_contents", "", map[string]any{"query": "the"}),
		n("search e", "search_contents", "", map[string]any{"query": "e", "max_files": 2, "max_matches_per_file": 3}),
		n("thread_hint", "thread_hint", "", nil),
	}
	if mid != "" {
		ps = append(ps, n("list mid", "list_files_by_prefix", mid, nil), n("thread_hint mid", "thread_hint", mid, nil))
	}
	a, err := s.do(http.MethodPost, codexPath("notes/list_files_by_prefix"), codexBody(id, "", map[string]any{"max_results": 100}))
	if err != nil || a.Status != http.StatusOK {
		return ps
	}
	var lr notes.ListResult
	decode(t, a.Body, &lr)
	for i, f := range lr.Files {
		if i >= 5 {
			break
		}
		ps = append(ps, n("read "+f.Path, "read_file", "", map[string]any{"path": f.Path}))
		if i == 0 {
			ps = append(ps,
				n("read lines", "read_file", "", map[string]any{"path": f.Path, "start_line": 2, "stop_line": 4}),
				n("read tail", "read_file", "", map[string]any{"path": f.Path, "start_line": -2}),
			)
		}
	}
	return ps
}

// maskWindows replaces the fresh UUIDs of a POST …/windows answer (the new
// window id, and the marker id of each boundary) by placeholders, in the
// whole body: they also appear in the boundary content. It checks that
// each is a UUID.
func maskWindows(t testing.TB, body []byte) []byte {
	t.Helper()
	var w coordinator.WindowsAnswer
	decode(t, body, &w)
	fresh := []string{w.Window.CurrentWindowID}
	if w.First {
		if w.Window.FirstWindowID != w.Window.CurrentWindowID {
			t.Errorf("first window: firstWindowId %q != currentWindowId %q", w.Window.FirstWindowID, w.Window.CurrentWindowID)
		}
	}
	for _, b := range w.Append {
		fresh = append(fresh, b.Details.ID)
	}
	for i, id := range fresh {
		if _, err := uuid.Parse(id); err != nil {
			t.Errorf("fresh id %q is not a UUID: %v", id, err)
			continue
		}
		body = bytes.ReplaceAll(body, []byte(id), []byte(fmt.Sprintf("<fresh-%d>", i)))
	}
	return body
}

// record runs every probe in order and returns the answers (masked).
func record(t testing.TB, s *stack, probes []probe) []answer {
	t.Helper()
	start := time.Now()
	out := make([]answer, len(probes))
	for i, p := range probes {
		a, err := s.do(p.Method, p.Path, p.Body)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if a.Status >= 500 {
			t.Errorf("%s: status %d: %s", p.Name, a.Status, a.Body)
		}
		if p.Mask != nil && a.Status == http.StatusOK {
			a.Body = p.Mask(t, a.Body)
		}
		out[i] = a
	}
	t.Logf("recorded %d answers in %v", len(probes), time.Since(start).Round(time.Millisecond))
	return out
}

// compareRecords reports every probe whose answer differs.
func compareRecords(t *testing.T, when string, probes []probe, want, got []answer) {
	t.Helper()
	bad := 0
	for i, p := range probes {
		if want[i].Status == got[i].Status && bytes.Equal(want[i].Body, got[i].Body) {
			continue
		}
		bad++
		if bad <= 10 {
			t.Errorf("%s: %s: answer changed: status %d -> %d\n%s", when, p.Name, want[i].Status, got[i].Status, firstDiff(want[i].Body, got[i].Body))
		}
	}
	if bad > 10 {
		t.Errorf("%s: %d answers changed in all", when, bad)
	}
}

// firstDiff shows both bodies around their first differing byte.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(i-120, 0)
	return fmt.Sprintf("at byte %d:\n  before: %q\n  after:  %q", i, clip(a, lo, i+200), clip(b, lo, i+200))
}

func clip(b []byte, lo, hi int) []byte {
	if lo > len(b) {
		lo = len(b)
	}
	return b[lo:min(hi, len(b))]
}
