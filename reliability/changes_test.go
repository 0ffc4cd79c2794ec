package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"contextd"
	"contextd/coordinator"
	"contextd/e2e"
	"contextd/history"
)

// Details of the file states (store.Session.Sync) and of the 410 answers
// of routes that need the file's content (coordinator.usable).
const (
	detailMissing  = "the session file no longer exists"
	detailOutside  = "the session file resolves outside the sessions directory"
	detailNoHeader = "the file holds no complete header line yet"
	// detailSkipped63 is the state of a tree-basic copy rewritten as UTF-16:
	// its 63 lines (62 entries and the header) are all invalid JSON.
	detailSkipped63 = "not a Pi session: none of its 63 complete lines is a session header (see the line problems); a Pi session file is UTF-8 JSON lines that start with a session header line"
	goneMissing     = "the session file cannot be read: " + detailMissing
	goneOutside     = "the session file cannot be read: " + detailOutside
	goneNoHeader    = "the session file holds no complete header line yet"
)

// changeRig is one stack over a sessions directory holding one fixture
// copy, optionally registered (as the extension always does).
type changeRig struct {
	*stack
	root, path, id string
	registered     bool
}

func newChangeRig(t *testing.T, fixture, id string, registered bool) *changeRig {
	t.Helper()
	root := t.TempDir()
	r := &changeRig{root: root, id: id, registered: registered}
	r.path = filepath.Join(root, "sessions", "s.jsonl")
	copyFile(t, fixture, r.path)
	r.stack = startStack(t, filepath.Join(root, "sessions"), filepath.Join(root, "state"), stackOptions{})
	if registered {
		r.register(id, "s.jsonl", contextd.ModeLocal, "")
	}
	// Indexed once before the change.
	if st := r.state(t); st.State != "ok" || st.SessionID != id {
		t.Fatalf("before the change: state %q, id %q", st.State, st.SessionID)
	}
	return r
}

// restart stops the stack and starts a new one on the same directories.
func (r *changeRig) restart(t *testing.T) {
	r.stop()
	r.stack = startStack(t, r.Sessions, r.StateDir, stackOptions{})
}

// state answers GET /v1/sessions/{id}, which must be 200.
func (r *changeRig) state(t *testing.T) coordinator.SessionState {
	t.Helper()
	var st coordinator.SessionState
	decode(t, r.must(http.StatusOK, http.MethodGet, "/v1/sessions/"+r.id, nil), &st)
	return st
}

// listed returns the GET /v1/sessions row of the rig's file.
func (r *changeRig) listed(t *testing.T) coordinator.SessionSummary {
	t.Helper()
	for _, s := range r.sessionsList() {
		if s.File == r.path {
			return s
		}
	}
	t.Fatalf("GET /v1/sessions does not list %s", r.path)
	return coordinator.SessionSummary{}
}

// request is one route call of contentRoutes.
type request struct {
	Name, Method, Path string
	Body               any
}

// contentRoutes are the routes that need the session file's content:
// branch, context, windows, every history operation, every notes
// operation and thread_hint.
func contentRoutes(id string) []request {
	c := func(op string, args map[string]any) request {
		return request{op, http.MethodPost, codexPath(op), codexBody(id, "", args)}
	}
	return []request{
		{"branch", http.MethodGet, "/v1/sessions/" + id + "/branch", nil},
		{"context", http.MethodPost, "/v1/sessions/" + id + "/context", map[string]any{}},
		{"windows", http.MethodPost, "/v1/sessions/" + id + "/windows", map[string]any{}},
		c("history/list_windows", nil),
		c("history/list_items", map[string]any{"limit": 25}),
		c("history/search_contents", map[string]any{"query": "a"}),
		c("history/read_item", map[string]any{"window_id": "w", "item_id": "x"}),
		c("notes/list_files_by_prefix", nil),
		c("notes/read_file", map[string]any{"path": "plan.md"}),
		c("notes/search_contents", map[string]any{"query": "a"}),
		c("notes/write_file", map[string]any{"path": "x.md", "text": "y"}),
		c("notes/thread_hint", nil),
	}
}

// expectGone asserts every content route answers status with detail.
func (r *changeRig) expectGone(t *testing.T, status int, detail string) {
	t.Helper()
	for _, q := range contentRoutes(r.id) {
		a, err := r.do(q.Method, q.Path, q.Body)
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Status int    `json:"status"`
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(a.Body, &p)
		if a.Status != status || p.Detail != detail {
			t.Errorf("%s: %d %q, want %d %q", q.Name, a.Status, p.Detail, status, detail)
		}
	}
}

// expectServed asserts every content route answers 200 (write_file too: it
// only plans an entry).
func (r *changeRig) expectServed(t *testing.T) {
	t.Helper()
	for _, q := range contentRoutes(r.id) {
		a, err := r.do(q.Method, q.Path, q.Body)
		if err != nil {
			t.Fatal(err)
		}
		// A cut can leave the leaf inside a tool batch whose results are
		// not written: the next boundary is then refused with 409 naming
		// the open calls (docs/modes.md "Tool-call pairing"), an answer computed from the content.
		if q.Name == "windows" && a.Status == http.StatusConflict && strings.Contains(string(a.Body), "have no result yet") {
			continue
		}
		if a.Status != http.StatusOK {
			t.Errorf("%s: %d %s, want 200", q.Name, a.Status, a.Body)
		}
	}
}

// expectFileState asserts GET /v1/sessions/{id} and GET /v1/sessions
// report state with a problem {reason: state, detail}.
func (r *changeRig) expectFileState(t *testing.T, state, detail string) coordinator.SessionState {
	t.Helper()
	st := r.state(t)
	want := coordinator.SessionProblem{Reason: state, Detail: detail}
	if st.State != state || len(st.Problems) == 0 || st.Problems[len(st.Problems)-1] != want || st.Registered != r.registered {
		t.Errorf("GET /v1/sessions/{id}: state %q problems %+v registered %v; want %q with %+v, registered %v", st.State, st.Problems, st.Registered, state, want, r.registered)
	}
	l := r.listed(t)
	if l.State != state || len(l.Problems) == 0 || l.Problems[len(l.Problems)-1] != want {
		t.Errorf("GET /v1/sessions: state %q problems %+v; want %q with %+v", l.State, l.Problems, state, want)
	}
	return st
}

// expectUnknown asserts the id is no longer found (unregistered sessions
// are found by their file's header id).
func (r *changeRig) expectUnknown(t *testing.T) {
	t.Helper()
	want := "no session with id \"" + r.id + "\" in the sessions directory " + r.Index.Root() + "; check the id or register its file with PUT /v1/sessions/" + r.id
	for _, q := range append([]request{{"get-session", http.MethodGet, "/v1/sessions/" + r.id, nil}}, contentRoutes(r.id)...) {
		a, err := r.do(q.Method, q.Path, q.Body)
		if err != nil {
			t.Fatal(err)
		}
		var p struct{ Detail string }
		_ = json.Unmarshal(a.Body, &p)
		if a.Status != http.StatusNotFound || p.Detail != want {
			t.Errorf("%s: %d %q, want 404 %q", q.Name, a.Status, p.Detail, want)
		}
	}
}

// lineEnds returns the offset just after each "\n" of b.
func lineEnds(b []byte) []int {
	var out []int
	for i, c := range b {
		if c == '\n' {
			out = append(out, i+1)
		}
	}
	return out
}

// entryIDAt returns the "id" of the JSON line ending at end.
func entryIDAt(t *testing.T, b []byte, end int) string {
	t.Helper()
	start := bytes.LastIndexByte(b[:end-1], '\n') + 1
	var e struct{ ID string }
	decode(t, b[start:end-1], &e)
	return e.ID
}

// TestFilesChangingUnderneath: a session file that is truncated, migrated
// in place by Pi, deleted, replaced by a symlink out of the sessions
// directory, not UTF-8, header-only or empty gets a clear state in GET
// /v1/sessions/{id} and GET /v1/sessions, never a 500, and content routes
// answer a clear 4xx (or serve the valid part). Each case runs for an
// unregistered session (found by header id) and a registered one.
func TestFilesChangingUnderneath(t *testing.T) {
	treeBasic := filepath.Join(piTreeDir, "tree-basic.jsonl")
	src, err := os.ReadFile(treeBasic)
	if err != nil {
		t.Fatal(err)
	}
	ends := lineEnds(src) // tree-basic: header + 62 entries, every line valid
	if len(ends) != 63 {
		t.Fatalf("tree-basic.jsonl has %d lines, want 63", len(ends))
	}
	for _, registered := range []bool{false, true} {
		name := map[bool]string{false: "unregistered", true: "registered"}[registered]
		t.Run(name, func(t *testing.T) {
			t.Run("truncated at a line end", func(t *testing.T) {
				r := newChangeRig(t, treeBasic, treeBasicID, registered)
				cut := ends[30] // header + 30 entries
				writeFile(t, r.path, src[:cut])
				st := r.state(t)
				if st.State != "ok" || st.Entries != 30 || st.Bytes != int64(cut) || st.Leaf != entryIDAt(t, src, cut) || len(st.Problems) != 0 {
					t.Errorf("state %q entries %d bytes %d leaf %q problems %+v; want ok, 30, %d, %q, none", st.State, st.Entries, st.Bytes, st.Leaf, st.Problems, cut, entryIDAt(t, src, cut))
				}
				if n := r.metric(`contextd_index_reindex_total{cause="shrunk"}`); n != 1 {
					t.Errorf("reindex_total{cause=shrunk} = %v, want 1", n)
				}
				r.expectServed(t)
				sameAsCold(t, r, src[:cut])
			})
			t.Run("truncated inside a line then completed", func(t *testing.T) {
				r := newChangeRig(t, treeBasic, treeBasicID, registered)
				cut := (ends[30] + ends[31]) / 2 // 30 entries and half of the 31st
				writeFile(t, r.path, src[:cut])
				if st := r.state(t); st.State != "ok" || st.Entries != 30 || st.Bytes != int64(ends[30]) || st.Leaf != entryIDAt(t, src, ends[30]) {
					t.Errorf("cut: state %q entries %d bytes %d leaf %q; want ok, 30, %d (the half line is in flight), %q", st.State, st.Entries, st.Bytes, st.Leaf, ends[30], entryIDAt(t, src, ends[30]))
				}
				r.expectServed(t)
				// The rest of the line arrives.
				f, err := os.OpenFile(r.path, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.Write(src[cut:ends[31]])
				f.Close()
				if st := r.state(t); st.Entries != 31 || st.Bytes != int64(ends[31]) || st.Leaf != entryIDAt(t, src, ends[31]) {
					t.Errorf("completed: entries %d bytes %d leaf %q; want 31, %d, %q", st.Entries, st.Bytes, st.Leaf, ends[31], entryIDAt(t, src, ends[31]))
				}
				sameAsCold(t, r, src[:ends[31]])
			})
			t.Run("truncated inside the header", func(t *testing.T) {
				r := newChangeRig(t, treeBasic, treeBasicID, registered)
				writeFile(t, r.path, src[:50])
				if !registered {
					// Without a header the id is unknown: 404 everywhere, and
					// the list shows the file as empty.
					r.expectUnknown(t)
					if l := r.listed(t); l.State != "empty" || l.SessionID != "" || l.Entries != 0 {
						t.Errorf("listed: %+v, want state empty, no id, 0 entries", l)
					}
					return
				}
				st := r.expectFileState(t, "empty", detailNoHeader)
				if st.Entries != 0 || st.Bytes != 0 {
					t.Errorf("entries %d bytes %d, want 0 and 0", st.Entries, st.Bytes)
				}
				r.expectGone(t, http.StatusGone, goneNoHeader)
			})
			t.Run("emptied", func(t *testing.T) {
				r := newChangeRig(t, treeBasic, treeBasicID, registered)
				writeFile(t, r.path, nil)
				if !registered {
					r.expectUnknown(t)
					if l := r.listed(t); l.State != "empty" || l.SessionID != "" {
						t.Errorf("listed: %+v, want state empty, no id", l)
					}
					return
				}
				r.expectFileState(t, "empty", detailNoHeader)
				r.expectGone(t, http.StatusGone, goneNoHeader)
			})
			t.Run("deleted", func(t *testing.T) {
				r := newChangeRig(t, treeBasic, treeBasicID, registered)
				if err := os.Remove(r.path); err != nil {
					t.Fatal(err)
				}
				r.expectFileState(t, "missing", detailMissing)
				r.expectGone(t, http.StatusGone, goneMissing)
				// Still reported after a restart (from the index and state.db).
				r.restart(t)
				r.expectFileState(t, "missing", detailMissing)
				r.expectGone(t, http.StatusGone, goneMissing)
			})
			t.Run("replaced by a symlink outside", func(t *testing.T) {
				r := newChangeRig(t, treeBasic, treeBasicID, registered)
				// The target is another valid session: if contextd read it,
				// the entry count and leaf would change.
				outside := filepath.Join(r.root, "outside", "other.jsonl")
				copyFile(t, filepath.Join(piTreeDir, "tree-multi.jsonl"), outside)
				if err := os.Remove(r.path); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(outside, r.path); err != nil {
					t.Fatal(err)
				}
				st := r.expectFileState(t, "outside", detailOutside)
				if st.Entries != 62 || st.Leaf != "1d4fdaee" || st.SessionID != treeBasicID {
					t.Errorf("entries %d leaf %q id %q: the outside file was read (want the last indexed 62, 1d4fdaee)", st.Entries, st.Leaf, st.SessionID)
				}
				r.expectGone(t, http.StatusGone, goneOutside)
			})
			t.Run("invalid UTF-8 inside a message", func(t *testing.T) {
				r := newChangeRig(t, treeBasic, treeBasicID, registered)
				line := `{"type":"message","id":"badutf08","parentId":"1d4fdaee","timestamp":"2026-07-07T17:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"bad ` + "\xff\xfe" + ` and ` + "\xc3(" + ` end"}],"timestamp":1783443600000}}` + "\n"
				f, err := os.OpenFile(r.path, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString(line)
				f.Close()
				st := r.state(t)
				if st.State != "ok" || st.Entries != 63 || st.Leaf != "badutf08" || len(st.Problems) != 0 {
					t.Errorf("state %q entries %d leaf %q problems %+v; want ok, 63, badutf08, none", st.State, st.Entries, st.Leaf, st.Problems)
				}
				r.expectServed(t)
				// Invalid bytes read as U+FFFD, as Node's UTF-8 decoder (Pi) reads them.
				wid := st.Window.CurrentWindowID
				body := r.must(http.StatusOK, http.MethodPost, codexPath("history/read_item"), codexBody(r.id, "", map[string]any{"window_id": wid, "item_id": "badutf08"}))
				if !utf8.Valid(body) {
					t.Errorf("read_item answer is not valid UTF-8: %q", body)
				}
				var rr history.ReadResult
				decode(t, body, &rr)
				if rr.Item == nil || rr.Item.Content != "bad \uFFFD\uFFFD and \uFFFD( end" || rr.Item.TotalChars != 17 {
					t.Errorf("read_item = %+v, want content %q (17 chars)", rr.Item, "bad \uFFFD\uFFFD and \uFFFD( end")
				}
			})
			t.Run("rewritten as UTF-16", func(t *testing.T) {
				r := newChangeRig(t, treeBasic, treeBasicID, registered)
				// Every line of a UTF-16LE file is invalid JSON: no header.
				u16 := make([]byte, 0, 2*len(src))
				for _, c := range src {
					u16 = append(u16, c, 0)
				}
				writeFile(t, r.path, u16)
				if !registered {
					r.expectUnknown(t)
					if l := r.listed(t); l.State != "not_a_session" || l.Skipped["invalid_json"] != 63 {
						t.Errorf("listed: state %q skipped %v, want not_a_session with 63 invalid_json lines", l.State, l.Skipped)
					}
					return
				}
				// A garbage file is not "empty yet" but not a Pi session:
				// the state says how many lines were skipped.
				st := r.expectFileState(t, "not_a_session", detailSkipped63)
				if st.Skipped["invalid_json"] != 63 || len(st.Problems) != 64 || st.Problems[0] != (coordinator.SessionProblem{Line: 1, Reason: "invalid_json"}) {
					t.Errorf("skipped %v, %d problems (first %+v); want 63 invalid_json lines reported by line, then the state", st.Skipped, len(st.Problems), st.Problems[0])
				}
				r.expectGone(t, http.StatusGone, "the session file is unusable: "+detailSkipped63)
			})
			t.Run("header only", func(t *testing.T) {
				r := newChangeRig(t, treeBasic, treeBasicID, registered)
				writeFile(t, r.path, src[:ends[0]])
				st := r.state(t)
				if st.State != "ok" || st.Entries != 0 || st.Leaf != "" || st.Windows != 0 || !st.NeedsBoundary || st.Window != nil || len(st.Problems) != 0 {
					t.Errorf("state %+v; want ok, 0 entries, no leaf, no window, needs_boundary", st.SessionSummary)
				}
				// An empty session is served with empty answers.
				r.expectServed(t)
				for op, want := range map[string]string{
					"history/list_windows":       `{"source":"pi-session","windows":[]}`,
					"history/list_items":         `{"source":"pi-session","items":[]}`,
					"notes/list_files_by_prefix": `{"source":"pi-session","files":[]}`,
					"notes/thread_hint":          `{"text":""}`,
				} {
					if got := r.must(http.StatusOK, http.MethodPost, codexPath(op), codexBody(r.id, "", nil)); string(got) != want {
						t.Errorf("%s = %s, want %s", op, got, want)
					}
				}
			})
			t.Run("migrated v1 to v3 by Pi", func(t *testing.T) {
				r := newChangeRig(t, filepath.Join(piSessionsDir, "pi-mono-session.jsonl"), piMonoV1ID, registered)
				before := r.state(t)
				if before.Version != 1 || before.Entries != 461 || before.Leaf != "v1-00000463" {
					t.Fatalf("before: version %d entries %d leaf %q; want 1, 461, v1-00000463", before.Version, before.Entries, before.Leaf)
				}
				mig := piMigrateInPlace(t, r.path)
				if mig.Version != 3 || mig.Entries != 461 {
					t.Fatalf("Pi migration: %+v, want version 3 with 461 entries", mig)
				}
				st := r.state(t)
				if st.State != "ok" || st.Version != 3 || st.Entries != mig.Entries || st.Leaf != mig.Leaf || st.SessionID != piMonoV1ID || len(st.Problems) != 0 {
					t.Errorf("after: state %q version %d entries %d leaf %q id %q problems %+v; want ok, 3, %d, %q, %s, none (Pi dropped the bad line)",
						st.State, st.Version, st.Entries, st.Leaf, st.SessionID, st.Problems, mig.Entries, mig.Leaf, piMonoV1ID)
				}
				if n := r.metric(`contextd_index_reindex_total{cause="rewritten"}`); n != 1 {
					t.Errorf("reindex_total{cause=rewritten} = %v, want 1", n)
				}
				// The active branch equals Pi's getBranch() after migrating.
				var br coordinator.BranchAnswer
				decode(t, r.must(http.StatusOK, http.MethodGet, "/v1/sessions/"+r.id+"/branch", nil), &br)
				if br.LeafID != mig.Leaf || strings.Join(br.EntryIDs, ",") != strings.Join(mig.Branch, ",") {
					t.Errorf("branch leaf %q (%d ids) != Pi's leaf %q (%d ids)", br.LeafID, len(br.EntryIDs), mig.Leaf, len(mig.Branch))
				}
				r.expectServed(t)
				sameAsCold(t, r, mustRead(t, r.path))
			})
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameAsCold asserts the rig's answers for its session equal those of a
// fresh stack over a file holding exactly data (a cold index).
func sameAsCold(t *testing.T, r *changeRig, data []byte) {
	t.Helper()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "sessions", "s.jsonl"), data)
	cold := startStack(t, filepath.Join(root, "sessions"), filepath.Join(root, "state"), stackOptions{})
	defer cold.stop()
	if r.registered {
		cold.register(r.id, "s.jsonl", contextd.ModeLocal, "")
	}
	for _, q := range contentRoutes(r.id) {
		if q.Name == "windows" || q.Name == "notes/write_file" {
			continue // fresh ids and timestamps
		}
		a, err := r.do(q.Method, q.Path, q.Body)
		if err != nil {
			t.Fatal(err)
		}
		b, err := cold.do(q.Method, q.Path, q.Body)
		if err != nil {
			t.Fatal(err)
		}
		if a.Status != b.Status || !bytes.Equal(a.Body, b.Body) {
			t.Errorf("%s differs from a cold index: %d vs %d\n%s", q.Name, a.Status, b.Status, firstDiff(b.Body, a.Body))
		}
	}
}

// migration is what Pi reports after opening a file.
type migration struct {
	Version int      `json:"version"`
	Entries int      `json:"entries"`
	Leaf    string   `json:"leaf"`
	Branch  []string `json:"branch"` // getBranch() ids, root to leaf
}

// piMigrateInPlace opens path with Pi's SessionManager (the pinned e2e
// harness), which migrates a v1/v2 file to v3 by rewriting it in place, as
// Pi does when it resumes an old session, and reports the header version,
// entry count, leaf and getBranch() ids. (e2e.PiParity cannot be used: it
// opens a copy.)
func piMigrateInPlace(t *testing.T, path string) migration {
	t.Helper()
	const script = `const { SessionManager } = await import("@earendil-works/pi-coding-agent");
const sm = SessionManager.open(process.argv[1], process.argv[2]);
console.log(JSON.stringify({ version: sm.getHeader().version, entries: sm.getEntries().length, leaf: sm.getLeafId(), branch: sm.getBranch().map((e) => e.id) }));`
	ctx, cancel := context.WithTimeout(t.Context(), e2e.ParityTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e2e.NodeBinary(t), "--input-type=module", "-e", script, path, filepath.Join(t.TempDir(), "pi-sessions"))
	cmd.Dir = e2e.Dir() // resolves the pinned Pi package from e2e/node_modules
	cmd.Env = append(os.Environ(), "PI_CODING_AGENT_DIR="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("Pi migration of %s: %v (after %v)\n%s", path, err, time.Since(start), stderr.String())
	}
	var m migration
	decode(t, out, &m)
	return m
}
