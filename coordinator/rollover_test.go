package coordinator_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"contextd"
	"contextd/archive"
	"contextd/coordinator"
	"contextd/history"
	"contextd/internal/testkit"
	"contextd/notes"
	"contextd/store"
)

// testdata/pi-tree/tree-basic.jsonl and its expected.json `rollovers[0]`:
// the file holds one Tree rollover written by real Pi 0.85 code.
const (
	basicFixture  = "../testdata/pi-tree/tree-basic.jsonl"
	basicID       = "019f3d67-b1fd-7c0a-87d5-9b46277407ba"
	basicBoundary = "b3504875" // boundary of window 0 (rollovers[0].boundaryEntryId)
	basicBase     = "0af25e58" // its parent (rollovers[0].summaryParentId)
	basicCall     = "720d6a83" // assistant message calling new_context: Pi's leaf in the tool phase
	basicOldLeaf  = "42a59a75" // its tool result: the leaf at agent_settled (rollovers[0].oldLeafId)
	basicSummary  = "bae0cbce" // rollovers[0].summaryId
	basicManifest = "a3f14c63" // rollovers[0].manifestId
	basicSnapshot = "d33fc73c" // rollovers[0].snapshotId
	basicNext     = "4a454560" // rollovers[0].nextBoundaryId
	basicWindow0  = "93e1557d-7342-47d3-970c-2383fd5384d7"
	basicWindow1  = "2d620c43-63c5-433c-9d31-9c51c7ca0e17" // rollovers[0].nextWindowId
	basicMarker1  = "532580f8-948e-4143-b30e-1720cc0b5ed8" // details.id of boundary 4a454560
	// basicSettleMS is data.timestamp of snapshot d33fc73c: the note state
	// was materialized at agent_settled.
	basicSettleMS = 1783442308727
)

// 1-based line numbers of tree-basic.jsonl (header = line 1).
const (
	lineCall     = 37 // 720d6a83
	lineOldLeaf  = 38 // 42a59a75
	lineSummary  = 39 // bae0cbce
	lineManifest = 40 // a3f14c63
	lineSnapshot = 41 // d33fc73c
	lineNext     = 42 // 4a454560
)

// basicHint is the thread hint inside boundary 4a454560.
const basicHint = "Recent notes (up to 5, most-recent first):\n" +
	"- /root/notes/checkpoint.md (13 lines, 469 UTF-8 bytes)\n" +
	"- /root/notes/progress.md (6 lines, 233 UTF-8 bytes)\n" +
	"- /root/notes/plan.md (10 lines, 263 UTF-8 bytes)\n" +
	`Previous window history IDs: {"window_id":"93e1557d-7342-47d3-970c-2383fd5384d7","summary_item_id":"bae0cbce","user_item_ids":["f944f99c","e58add25","91061913"]}`

// env is a contextd service over a temporary copy of a prefix of
// tree-basic.jsonl. reopen closes and reopens the index, the state
// database and the service on the same directories (a contextd restart).
type env struct {
	t        *testing.T
	lines    [][]byte // fixture lines, without "\n"
	dir      string
	file     string // the session file under dir/sessions
	idx      *store.Index
	st       *store.State
	backend  *testkit.Backend // idx, st and svc, open until close
	svc      *coordinator.Service
	reg      *prometheus.Registry
	metrics  *coordinator.Metrics
	mu       sync.Mutex
	ids      []string // NewID answers, in order; then "id-N"
	n        int
	now      time.Time
	fileHash [32]byte // hash of the file after the last write by the test
}

func fixtureLines(t *testing.T) [][]byte {
	t.Helper()
	b, err := os.ReadFile(basicFixture)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

// newEnv writes the first upTo lines of tree-basic.jsonl and registers the
// session with mode.
func newEnv(t *testing.T, mode contextd.Mode, upTo int) *env {
	t.Helper()
	e := &env{t: t, lines: fixtureLines(t), dir: t.TempDir(), now: time.UnixMilli(basicSettleMS).UTC()}
	e.file = filepath.Join(e.dir, "sessions", "tree-basic.jsonl")
	if err := os.MkdirAll(filepath.Dir(e.file), 0o700); err != nil {
		t.Fatal(err)
	}
	e.write(bytes.Join(e.lines[:upTo], []byte("\n")), true)
	e.reg = prometheus.NewRegistry()
	e.metrics = coordinator.NewMetrics(e.reg)
	e.open()
	t.Cleanup(e.close)
	if _, _, err := e.svc.Register(t.Context(), basicID, coordinator.RegisterRequest{SessionFile: e.file, Mode: string(mode)}); err != nil {
		t.Fatalf("register: %v", err)
	}
	return e
}

func (e *env) open() {
	e.t.Helper()
	be := testkit.OpenBackend(e.t, filepath.Join(e.dir, "sessions"), filepath.Join(e.dir, "state"), testkit.Options{Metrics: e.metrics,
		Coordinator: []coordinator.Option{coordinator.WithIDs(e.nextID), coordinator.WithClock(func() time.Time { e.mu.Lock(); defer e.mu.Unlock(); return e.now })}})
	e.backend, e.idx, e.st, e.svc = be, be.Index, be.State, be.Svc
}

func (e *env) close() {
	if e.backend != nil {
		e.backend.Close()
		e.backend, e.idx, e.st = nil, nil, nil
	}
}

// restart closes and reopens everything on the same files.
func (e *env) restart() {
	e.t.Helper()
	e.close()
	e.open()
}

func (e *env) nextID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.ids) > 0 {
		id := e.ids[0]
		e.ids = e.ids[1:]
		return id
	}
	e.n++
	return "id-" + string(rune('a'+e.n%26)) + strings.Repeat("x", e.n/26)
}

func (e *env) setNow(t time.Time) {
	e.mu.Lock()
	e.now = t.UTC()
	e.mu.Unlock()
}

// write replaces (or appends to) the session file, as Pi's appendFileSync
// does: each line ends with "\n".
func (e *env) write(data []byte, replace bool) {
	e.t.Helper()
	flag := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if replace {
		flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(e.file, flag, 0o600)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := f.Write(append(append([]byte{}, data...), '\n')); err != nil {
		e.t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.fileHash = e.hash()
}

func (e *env) hash() [32]byte {
	b, err := os.ReadFile(e.file)
	if err != nil {
		e.t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// appendFixture appends fixture line n (1-based).
func (e *env) appendFixture(n int) { e.write(e.lines[n-1], false) }

// checkUnchanged fails when the session file changed since the test last
// wrote it: contextd never writes a session file.
func (e *env) checkUnchanged() {
	e.t.Helper()
	if e.hash() != e.fileHash {
		e.t.Fatal("the session file changed without the test writing it")
	}
}

// piLine serializes a planned entry the way Pi's SessionManager writes it
// (appendCustomEntry / appendCustomMessageEntry: the entry's fields, then
// id, parentId and timestamp; JSON.stringify does not escape HTML).
func piLine(t *testing.T, pe coordinator.PlannedEntry, id, parent, ts string) []byte {
	t.Helper()
	var v any
	switch pe.Type {
	case "custom":
		v = struct {
			Type       string          `json:"type"`
			CustomType string          `json:"customType"`
			Data       json.RawMessage `json:"data"`
			ID         string          `json:"id"`
			ParentID   string          `json:"parentId"`
			Timestamp  string          `json:"timestamp"`
		}{pe.Type, pe.CustomType, pe.Data, id, parent, ts}
	case "custom_message":
		v = struct {
			Type       string                       `json:"type"`
			CustomType string                       `json:"customType"`
			Content    string                       `json:"content"`
			Display    bool                         `json:"display"`
			Details    *coordinator.BoundaryDetails `json:"details"`
			ID         string                       `json:"id"`
			ParentID   string                       `json:"parentId"`
			Timestamp  string                       `json:"timestamp"`
		}{pe.Type, pe.CustomType, pe.Content, *pe.Display, pe.Details, id, parent, ts}
	default:
		t.Fatalf("planned entry of type %q", pe.Type)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// fixtureField returns a top-level string field of a fixture line.
func fixtureField(t *testing.T, line []byte, key string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	s, _ := m[key].(string)
	return s
}

func wantCode(t *testing.T, err error, code contextd.Code, contains string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s (%q)", code, contains)
	}
	if got := contextd.ErrorCode(err); got != code {
		t.Fatalf("error code %s (%v), want %s", got, err, code)
	}
	if !strings.Contains(err.Error(), contains) {
		t.Fatalf("error %q does not say %q", err.Error(), contains)
	}
}

func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

func counterValue(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	t.Fatal("unknown metric kind")
	return 0
}

// runBasicRollover drives the tree-basic rollover from the file state just
// before it, appending what Pi appends, with between() called between each
// pair of steps. It checks every answer against the fixture.
func runBasicRollover(t *testing.T, e *env, between func(step string)) {
	ctx := t.Context()
	e.ids = []string{"rollover-1", basicWindow1, basicMarker1}

	// 1. Tool phase, at the assistant message that called new_context.
	created, isNew, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: basicCall, CommandContextReady: true})
	if err != nil || !isNew {
		t.Fatalf("create: %v (new %v)", err, isNew)
	}
	if created.RolloverID != "rollover-1" || created.State != "pending" || created.ToolResult != "A new context window will start without summarizing conversation history." ||
		created.Merged || created.Rollover.BoundaryEntryID != basicBoundary || created.Rollover.LeafAtRequest != basicCall ||
		created.Rollover.Window.CurrentWindowID != basicWindow0 || created.Rollover.Window.FirstWindowID != basicWindow0 || created.Rollover.Window.WindowNumber != 0 {
		t.Fatalf("create answer: %+v", created)
	}
	e.checkUnchanged()
	// Pi persists the tool result, then the run aborts and settles.
	e.appendFixture(lineOldLeaf)
	between("create→settle")

	// 2. Settled phase at the live leaf.
	settle, err := e.svc.SettleRollover(ctx, basicID, "rollover-1", coordinator.SettleRequest{LeafID: basicOldLeaf})
	if err != nil {
		t.Fatalf("settle: %v", err)
	}
	if settle.State != "settled" || settle.NavigateTo == nil || *settle.NavigateTo != basicBoundary || !settle.Summarize || settle.Label == nil || *settle.Label != "contextd window 0 archive" ||
		settle.SummaryParentID == nil || *settle.SummaryParentID != basicBase || settle.ArchivedLeafID != basicOldLeaf {
		t.Fatalf("settle answer: %+v", settle)
	}
	e.checkUnchanged()
	// navigateTree(b3504875, {summarize: true}) appends the branch summary.
	e.setNow(e.now.Add(19 * time.Second))
	e.appendFixture(lineSummary)
	between("settle→commit")

	// 3. Commit: manifest, note snapshot, boundary.
	commit, err := e.svc.CommitRollover(ctx, basicID, "rollover-1", coordinator.CommitRequest{SummaryEntryID: basicSummary})
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if commit.State != "committed" || len(commit.Append) != 3 || commit.Window.CurrentWindowID != basicWindow1 ||
		commit.Window.PreviousWindowID != basicWindow0 || commit.Window.FirstWindowID != basicWindow0 || commit.Window.WindowNumber != 1 {
		t.Fatalf("commit answer: %+v", commit)
	}
	if got := commit.Append[2].Content; !strings.HasSuffix(got, "Previous context window id: "+basicWindow0+"\n"+basicHint+"\n</context_window>") {
		t.Fatalf("boundary content does not end with the fixture's thread hint:\n%s", got)
	}
	e.checkUnchanged()
	// Pi appends them: each line must be the fixture's, byte for byte.
	parent := basicSummary
	for k, n := range []int{lineManifest, lineSnapshot, lineNext} {
		want := e.lines[n-1]
		id, ts := fixtureField(t, want, "id"), fixtureField(t, want, "timestamp")
		got := piLine(t, commit.Append[k], id, parent, ts)
		if !bytes.Equal(got, want) {
			t.Fatalf("appended entry %d differs from fixture line %d:\ngot  %s\nwant %s", k, n, got, want)
		}
		e.write(got, false)
		parent = id
		if k == 0 {
			between("manifest→snapshot")
		}
	}
	between("commit→complete")

	// 4. Complete.
	e.setNow(e.now.Add(time.Second))
	info, err := e.svc.CompleteRollover(ctx, basicID, "rollover-1")
	if err != nil {
		t.Fatalf("complete: %v", err)
	}
	if info.State != "completed" || info.SummaryEntryID != basicSummary || info.LeafAtSettle != basicOldLeaf || info.NextWindow == nil ||
		info.NextWindow.CurrentWindowID != basicWindow1 || info.FinishedAt == nil || info.SettledAt == nil || info.CommittedAt == nil {
		t.Fatalf("complete answer: %+v", info)
	}
	e.checkUnchanged()

	// The file is now the fixture up to the new boundary, exactly.
	got, err := os.ReadFile(e.file)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(bytes.Join(e.lines[:lineNext], []byte("\n")), '\n'); !bytes.Equal(got, want) {
		t.Fatal("the session file after the rollover is not the fixture's first 42 lines")
	}
}

// checkArchived checks the archive the rollover left: a valid manifest
// (archive.Build), windows in history (Tree mode), and the
// session state.
func checkArchived(t *testing.T, e *env) {
	t.Helper()
	ctx := t.Context()
	t2, err := e.svc.Resolve(ctx, basicID)
	if err != nil {
		t.Fatal(err)
	}
	err = t2.Session.Read(func(v *store.View) error {
		seq, ok := v.Tree.Lookup(basicManifest)
		if !ok {
			t.Fatal("no manifest entry")
		}
		idx, err := archive.Build(v.Tree, func(seq int) (json.RawMessage, error) {
			_, d, err := v.Decode(seq)
			if err != nil {
				return nil, err
			}
			return d.Data, nil
		})
		if err != nil {
			return err
		}
		m := idx.Manifest(seq)
		if !m.Valid || len(m.Reasons) != 0 || m.Data.WindowID != basicWindow0 || m.Data.SummaryEntryID != basicSummary ||
			m.Data.ArchivedLeafID != basicOldLeaf || m.Data.BranchBaseID != basicBase || m.Data.BoundaryEntryID != basicBoundary {
			t.Fatalf("manifest: %+v", m)
		}
		// tree-basic.expected.json manifests[0].archivedEntryIds: 35 entries, boundary first, old leaf last.
		if len(m.Archived) != 35 || v.Tree.ID(m.Archived[0]) != basicBoundary || v.Tree.ID(m.Archived[34]) != basicOldLeaf {
			t.Fatalf("archived entries: %d", len(m.Archived))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.ListWindows(ctx, coordinator.CallContext{SessionID: basicID}, history.ListWindowsArgs{})
	if err != nil {
		t.Fatal(err)
	}
	wins := res.Windows
	if len(wins) != 2 || wins[0].WindowID != basicWindow0 || wins[1].WindowID != basicWindow1 {
		t.Fatalf("list_windows: %+v", wins)
	}
	st, err := e.svc.SessionStateOf(ctx, basicID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rollover != nil || st.Incomplete != nil || st.Window == nil || st.Window.CurrentWindowID != basicWindow1 || st.BoundaryEntryID != basicNext {
		t.Fatalf("session state: rollover %v incomplete %v window %+v boundary %s", st.Rollover, st.Incomplete, st.Window, st.BoundaryEntryID)
	}
}

// TestRolloverTreeBasic rebuilds the tree-basic rollover from the file
// state just before it: the manifest, snapshot and boundary contextd
// answers are the fixture's lines 40-42 byte for byte once Pi appends them
// (same window and marker ids, same clock).
func TestRolloverTreeBasic(t *testing.T) {
	e := newEnv(t, contextd.ModeTree, lineCall)
	ctx := t.Context()
	var again struct {
		settle coordinator.SettleAnswer
		commit coordinator.CommitAnswer
	}
	runBasicRollover(t, e, func(step string) {
		switch step {
		case "create→settle":
			// A repeated new_context in the same run joins the pending rollover.
			m, isNew, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: basicOldLeaf, CommandContextReady: true})
			if err != nil || isNew || !m.Merged || m.RolloverID != "rollover-1" {
				t.Fatalf("repeated create: %+v new=%v %v", m, isNew, err)
			}
			if v := counterValue(t, e.metrics.Pending); v != 1 {
				t.Fatalf("pending gauge %v, want 1", v)
			}
		case "settle→commit":
			again.settle = must[coordinator.SettleAnswer](t)(e.svc.SettleRollover(ctx, basicID, "rollover-1", coordinator.SettleRequest{LeafID: basicSummary}))
		case "commit→complete":
			again.commit = must[coordinator.CommitAnswer](t)(e.svc.CommitRollover(ctx, basicID, "rollover-1", coordinator.CommitRequest{SummaryEntryID: basicSummary}))
		}
	})
	if again.settle.State != "settled" || *again.settle.NavigateTo != basicBoundary || again.settle.ArchivedLeafID != basicOldLeaf {
		t.Fatalf("repeated settle: %+v", again.settle)
	}
	if again.commit.Window.CurrentWindowID != basicWindow1 || len(again.commit.Append) != 3 || again.commit.Append[2].Details.ID != basicMarker1 {
		t.Fatalf("repeated commit is not the stored plan: %+v", again.commit)
	}
	checkArchived(t, e)

	// Repeats after completion answer the same.
	info := must[coordinator.RolloverInfo](t)(e.svc.CompleteRollover(ctx, basicID, "rollover-1"))
	if info.State != "completed" {
		t.Fatalf("repeated complete: %+v", info)
	}
	c := must[coordinator.CommitAnswer](t)(e.svc.CommitRollover(ctx, basicID, "rollover-1", coordinator.CommitRequest{SummaryEntryID: basicSummary}))
	if c.State != "completed" || c.Append[2].Details.ID != basicMarker1 {
		t.Fatalf("commit after completion: %+v", c)
	}
	_, err := e.svc.AbortRollover(ctx, basicID, "rollover-1", coordinator.AbortRequest{Reason: "late"})
	wantCode(t, err, contextd.EConflict, "already completed")

	// Metrics.
	if v := counterValue(t, e.metrics.Rollovers.WithLabelValues("tree", "completed")); v != 1 {
		t.Fatalf("rollovers_total{tree,completed} = %v", v)
	}
	if v := counterValue(t, e.metrics.Pending); v != 0 {
		t.Fatalf("pending gauge %v, want 0", v)
	}
	if v := counterValue(t, e.metrics.RolloverSeconds); v != 1 {
		t.Fatalf("rollover duration samples %v, want 1", v)
	}
	for _, ph := range []string{"settle", "commit", "complete"} {
		if v := counterValue(t, e.metrics.PhaseSeconds.WithLabelValues(ph).(prometheus.Collector)); v != 1 {
			t.Fatalf("phase %s samples %v, want 1", ph, v)
		}
	}

	// A second rollover may start in the new window.
	e.ids = []string{"rollover-2"}
	r2, isNew, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: basicNext, CommandContextReady: true})
	if err != nil || !isNew || r2.Rollover.BoundaryEntryID != basicNext || r2.Rollover.Window.CurrentWindowID != basicWindow1 || r2.Rollover.Window.WindowNumber != 1 {
		t.Fatalf("second rollover: %+v %v %v", r2, isNew, err)
	}
	e.checkUnchanged()
}

// TestRolloverRestartBetweenSteps closes and reopens the index, the state
// database and the service between every pair of steps.
func TestRolloverRestartBetweenSteps(t *testing.T) {
	e := newEnv(t, contextd.ModeTree, lineCall)
	restarts := 0
	runBasicRollover(t, e, func(string) {
		e.restart()
		restarts++
	})
	if restarts != 4 {
		t.Fatalf("%d restarts, want 4", restarts)
	}
	e.restart()
	checkArchived(t, e)
	info := must[coordinator.RolloverInfo](t)(e.svc.GetRollover(t.Context(), basicID, "rollover-1"))
	if info.State != "completed" {
		t.Fatalf("after restart: %+v", info)
	}
}

// TestRolloverCrashBeforeManifest: the branch summary landed but contextd
// (or the extension) died before the commit; GET session reports the
// incomplete rollover, the commit is retried, and the entries land one by
// one with the session state tracking what is missing.
func TestRolloverCrashBeforeManifest(t *testing.T) {
	e := newEnv(t, contextd.ModeTree, lineOldLeaf)
	ctx := t.Context()
	e.ids = []string{"rollover-1", basicWindow1, basicMarker1}
	must[coordinator.RolloverCreated](t)(func() (coordinator.RolloverCreated, error) {
		c, _, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: basicCall, CommandContextReady: true})
		return c, err
	}())
	must[coordinator.SettleAnswer](t)(e.svc.SettleRollover(ctx, basicID, "rollover-1", coordinator.SettleRequest{LeafID: basicOldLeaf}))

	state := func() (*coordinator.RolloverInfo, *coordinator.IncompleteRollover) {
		t.Helper()
		st, err := e.svc.SessionStateOf(ctx, basicID)
		if err != nil {
			t.Fatal(err)
		}
		open := st.Rollover
		inc := st.Incomplete
		if (st.Rollover != nil) != (open != nil) || (st.Incomplete != nil) != (inc != nil) {
			t.Fatalf("hook answered %T, %T", st.Rollover, st.Incomplete)
		}
		return open, inc
	}
	// Before navigation: open, nothing incomplete.
	if open, inc := state(); open == nil || open.State != "settled" || inc != nil {
		t.Fatalf("before navigation: %+v %+v", open, inc)
	}
	e.appendFixture(lineSummary)
	e.restart()              // the crash
	e.metrics.Pending.Set(0) // a new process starts at 0
	e.svc.RefreshPending(ctx)
	if v := counterValue(t, e.metrics.Pending); v != 1 {
		t.Fatalf("pending gauge after restart %v, want 1", v)
	}
	open, inc := state()
	if open == nil || open.State != "settled" || inc == nil || inc.RolloverID != "rollover-1" || inc.State != "settled" || inc.SummaryEntryID != basicSummary ||
		strings.Join(inc.Missing, ",") != "codex-context-tree-archive,codex-context-note-snapshot,codex-context-window" {
		t.Fatalf("after the crash: %+v %+v", open, inc)
	}
	commit := must[coordinator.CommitAnswer](t)(e.svc.CommitRollover(ctx, basicID, "rollover-1", coordinator.CommitRequest{SummaryEntryID: inc.SummaryEntryID}))
	open, inc = state()
	if open == nil || open.State != "committed" || inc == nil || inc.State != "committed" || len(inc.Missing) != 3 {
		t.Fatalf("after commit: %+v %+v", open, inc)
	}
	waitingFor(t, e.svc, basicID, "rollover-1", "codex-context-tree-archive", "codex-context-note-snapshot", "codex-context-window")
	e.write(piLine(t, commit.Append[0], basicManifest, basicSummary, "2026-07-07T16:38:47.968Z"), false)
	if _, inc = state(); inc == nil || strings.Join(inc.Missing, ",") != "codex-context-note-snapshot,codex-context-window" {
		t.Fatalf("after the manifest: %+v", inc)
	}
	e.write(piLine(t, commit.Append[1], basicSnapshot, basicManifest, "2026-07-07T16:38:47.978Z"), false)
	e.write(piLine(t, commit.Append[2], basicNext, basicSnapshot, "2026-07-07T16:38:48.093Z"), false)
	e.restart()
	// contextd sees the three entries on its next sync and completes it.
	if open, inc = state(); open != nil || inc != nil {
		t.Fatalf("after the entries landed: %+v %+v", open, inc)
	}
	info := must[coordinator.RolloverInfo](t)(e.svc.GetRollover(ctx, basicID, "rollover-1"))
	if info.State != "completed" {
		t.Fatalf("rollover: %+v", info)
	}
	if v := counterValue(t, e.metrics.Rollovers.WithLabelValues("tree", "completed")); v != 1 {
		t.Fatalf("rollovers_total{tree,completed} = %v", v)
	}
	checkArchived(t, e)
	e.checkUnchanged()
}

// TestRolloverLocal: Local mode uses the same steps without navigation;
// the commit answers only the next boundary, whose thread hint has no
// summary item.
func TestRolloverLocal(t *testing.T) {
	e := newEnv(t, contextd.ModeLocal, lineCall)
	ctx := t.Context()
	e.ids = []string{"rollover-1", basicWindow1, basicMarker1}
	c, isNew, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: basicCall}) // no command context needed
	if err != nil || !isNew || c.Rollover.Mode != contextd.ModeLocal {
		t.Fatalf("create: %+v %v %v", c, isNew, err)
	}
	e.appendFixture(lineOldLeaf)
	s := must[coordinator.SettleAnswer](t)(e.svc.SettleRollover(ctx, basicID, "rollover-1", coordinator.SettleRequest{LeafID: basicOldLeaf}))
	if s.NavigateTo != nil || s.Summarize || s.SummaryParentID != nil || s.ArchivedLeafID != basicOldLeaf || s.State != "settled" {
		t.Fatalf("settle: %+v", s)
	}
	_, err = e.svc.CommitRollover(ctx, basicID, "rollover-1", coordinator.CommitRequest{SummaryEntryID: basicSummary})
	wantCode(t, err, contextd.EInvalid, "local rollovers have no branch summary")
	a := must[coordinator.CommitAnswer](t)(e.svc.CommitRollover(ctx, basicID, "rollover-1", coordinator.CommitRequest{}))
	if len(a.Append) != 1 || a.Append[0].Type != "custom_message" || a.Append[0].CustomType != "codex-context-window" || a.Window.CurrentWindowID != basicWindow1 {
		t.Fatalf("commit: %+v", a)
	}
	localHint := strings.Replace(basicHint, `"summary_item_id":"bae0cbce",`, "", 1)
	wantContent := coordinator.BoundaryContent("/root", a.Window, localHint)
	if a.Append[0].Content != wantContent {
		t.Fatalf("boundary content:\n%s\nwant\n%s", a.Append[0].Content, wantContent)
	}
	// The Local next boundary of POST …/windows has the same text.
	e.ids = []string{basicWindow1, "marker"}
	w := must[coordinator.WindowsAnswer](t)(e.svc.Windows(ctx, basicID, coordinator.WindowsRequest{LeafID: basicOldLeaf}))
	if w.Append[0].Content != wantContent {
		t.Fatalf("windows boundary differs:\n%s", w.Append[0].Content)
	}
	waitingFor(t, e.svc, basicID, "rollover-1", "codex-context-window")
	e.write(piLine(t, a.Append[0], "b0000001", basicOldLeaf, "2026-07-07T16:38:48.093Z"), false)
	info := must[coordinator.RolloverInfo](t)(e.svc.CompleteRollover(ctx, basicID, "rollover-1"))
	if info.State != "completed" {
		t.Fatalf("complete: %+v", info)
	}
	st := must[coordinator.SessionState](t)(e.svc.SessionStateOf(ctx, basicID))
	if st.Window == nil || *st.Window != a.Window || st.BoundaryEntryID != "b0000001" {
		t.Fatalf("session window %+v at %s", st.Window, st.BoundaryEntryID)
	}
	if v := counterValue(t, e.metrics.Rollovers.WithLabelValues("local", "completed")); v != 1 {
		t.Fatalf("rollovers_total{local,completed} = %v", v)
	}
	e.checkUnchanged()
}

// TestRolloverRefusals: every refusal has its code and says what to do.
func TestRolloverRefusals(t *testing.T) {
	ctx := t.Context()
	create := func(e *env, leaf string) (coordinator.RolloverCreated, error) {
		c, _, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: leaf, CommandContextReady: true})
		return c, err
	}
	// pending returns an env with rollover "r" pending at basicCall and
	// the tool result appended.
	pending := func(t *testing.T) *env {
		e := newEnv(t, contextd.ModeTree, lineCall)
		e.ids = []string{"r"}
		must[coordinator.RolloverCreated](t)(create(e, basicCall))
		e.appendFixture(lineOldLeaf)
		return e
	}
	settled := func(t *testing.T) *env {
		e := pending(t)
		must[coordinator.SettleAnswer](t)(e.svc.SettleRollover(ctx, basicID, "r", coordinator.SettleRequest{LeafID: basicOldLeaf}))
		return e
	}
	summaryLine := func(id, parent, from string) []byte {
		return []byte(`{"type":"branch_summary","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-07-07T16:38:47.911Z","fromId":"` + from + `","summary":"other"}`)
	}

	t.Run("off mode", func(t *testing.T) {
		e := newEnv(t, contextd.ModeOff, lineCall)
		_, err := create(e, basicCall)
		wantCode(t, err, contextd.EConflict, "context management is off")
	})
	t.Run("remote mode", func(t *testing.T) {
		e := newEnv(t, contextd.ModeRemote, lineCall)
		_, err := create(e, basicCall)
		wantCode(t, err, contextd.EConflict, "remote mode")
	})
	t.Run("no command context", func(t *testing.T) {
		e := newEnv(t, contextd.ModeTree, lineCall)
		_, _, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: basicCall})
		wantCode(t, err, contextd.EPrecondition, "command_context_ready: true")
	})
	t.Run("missing boundary", func(t *testing.T) {
		e := newEnv(t, contextd.ModeTree, 3) // header, model_change, thinking_level_change
		_, err := create(e, "")
		wantCode(t, err, contextd.EPrecondition, "no window boundary on the active branch of leaf \"0af25e58\"")
	})
	t.Run("missing leaf", func(t *testing.T) {
		e := newEnv(t, contextd.ModeTree, lineCall)
		_, err := create(e, "nope")
		wantCode(t, err, contextd.ENotFound, `leaf_id "nope" is not an entry of session "`+basicID+`"; pass the id of an entry in its file, or omit leaf_id to use the last entry`)
	})
	t.Run("already pending", func(t *testing.T) {
		e := pending(t)
		_, err := create(e, "b423e27c") // an ancestor of the leaf at request: not the same run
		wantCode(t, err, contextd.ERolloverPending, "a rollover is already pending for session \""+basicID+"\": rollover r is pending")
		must[coordinator.SettleAnswer](t)(e.svc.SettleRollover(ctx, basicID, "r", coordinator.SettleRequest{LeafID: basicOldLeaf}))
		_, err = create(e, basicOldLeaf)
		wantCode(t, err, contextd.ERolloverPending, "rollover r is settled; finish it, or abort it with POST /v1/sessions/"+basicID+"/rollovers/r/abort")
	})
	t.Run("unknown rollover", func(t *testing.T) {
		e := pending(t)
		_, err := e.svc.SettleRollover(ctx, basicID, "nope", coordinator.SettleRequest{})
		wantCode(t, err, contextd.ENotFound, `has no rollover "nope"`)
		_, err = e.svc.GetRollover(ctx, "other-session", "r")
		wantCode(t, err, contextd.ENotFound, `session "other-session" has no rollover "r"`)
	})
	t.Run("out of order", func(t *testing.T) {
		e := pending(t)
		_, err := e.svc.CommitRollover(ctx, basicID, "r", coordinator.CommitRequest{SummaryEntryID: basicSummary})
		wantCode(t, err, contextd.EConflict, "rollover r is pending: settle it first")
		_, err = e.svc.CompleteRollover(ctx, basicID, "r")
		wantCode(t, err, contextd.EConflict, "rollover r cannot complete yet: it is still pending (new_context asked for it; the window closes once the agent's turn has settled). "+
			"The steps in order: settle it (POST /v1/sessions/"+basicID+"/rollovers/r/settle), navigate in Tree mode, commit it (POST /v1/sessions/"+basicID+"/rollovers/r/commit), append the entries the commit answers to the session, then complete")
		if _, err := e.svc.SettleRollover(ctx, basicID, "r", coordinator.SettleRequest{}); err != nil {
			t.Fatal(err)
		}
		_, err = e.svc.CompleteRollover(ctx, basicID, "r")
		wantCode(t, err, contextd.EConflict, "rollover r cannot complete yet: it is settled but not committed. "+
			"Commit it (POST /v1/sessions/"+basicID+"/rollovers/r/commit; in Tree mode with the id of the branch_summary navigateTree appended), append the entries the commit answers to the session, then complete")
	})
	t.Run("ancestry mismatch", func(t *testing.T) {
		e := pending(t)
		_, err := e.svc.SettleRollover(ctx, basicID, "r", coordinator.SettleRequest{LeafID: "b423e27c"})
		wantCode(t, err, contextd.EPrecondition, `ancestry mismatch: leaf "b423e27c" does not descend from "720d6a83"`)
		_, err = e.svc.SettleRollover(ctx, basicID, "r", coordinator.SettleRequest{LeafID: "nope"})
		wantCode(t, err, contextd.ENotFound, `leaf_id "nope" is not an entry of session "`+basicID+`"; pass the id of an entry in its file, or omit leaf_id to use the last entry`)
		// Still pending: a correct settle works.
		must[coordinator.SettleAnswer](t)(e.svc.SettleRollover(ctx, basicID, "r", coordinator.SettleRequest{LeafID: basicOldLeaf}))
	})
	t.Run("boundary replaced", func(t *testing.T) {
		e := pending(t)
		e.write([]byte(`{"type":"custom_message","customType":"codex-context-window","content":"x","display":true,"details":{"protocol":1,"id":"m","contextManagement":{"protocol":1,"kind":"window","firstWindowId":"w0","currentWindowId":"w9","windowNumber":3}},"id":"newbound","parentId":"42a59a75","timestamp":"2026-07-07T16:38:29.000Z"}`), false)
		_, err := e.svc.SettleRollover(ctx, basicID, "r", coordinator.SettleRequest{LeafID: "newbound"})
		wantCode(t, err, contextd.EPrecondition, `boundary "b3504875" is no longer the current window boundary`)
	})
	t.Run("session changed: file", func(t *testing.T) {
		e := pending(t)
		other := filepath.Join(filepath.Dir(e.file), "copy.jsonl")
		b, _ := os.ReadFile(e.file)
		if err := os.WriteFile(other, b, 0o600); err != nil {
			t.Fatal(err)
		}
		must[contextd.Registration](t)(func() (contextd.Registration, error) {
			r, _, err := e.svc.Register(ctx, basicID, coordinator.RegisterRequest{SessionFile: other, Mode: "tree"})
			return r, err
		}())
		_, err := e.svc.SettleRollover(ctx, basicID, "r", coordinator.SettleRequest{LeafID: basicOldLeaf})
		wantCode(t, err, contextd.EPrecondition, "session changed: session \""+basicID+"\" is no longer the one rollover r was requested on (its file is now "+other)
	})
	t.Run("session changed: mode", func(t *testing.T) {
		e := settled(t)
		must[contextd.Registration](t)(func() (contextd.Registration, error) {
			r, _, err := e.svc.Register(ctx, basicID, coordinator.RegisterRequest{SessionFile: e.file, Mode: "local"})
			return r, err
		}())
		e.appendFixture(lineSummary)
		_, err := e.svc.CommitRollover(ctx, basicID, "r", coordinator.CommitRequest{SummaryEntryID: basicSummary})
		wantCode(t, err, contextd.EPrecondition, "session changed")
	})
	t.Run("summary not written yet", func(t *testing.T) {
		e := settled(t)
		_, err := e.svc.CommitRollover(ctx, basicID, "r", coordinator.CommitRequest{SummaryEntryID: basicSummary})
		wantCode(t, err, contextd.EPrecondition, `branch summary "bae0cbce" is not in the session file yet; retry the commit`)
	})
	t.Run("summary required", func(t *testing.T) {
		e := settled(t)
		_, err := e.svc.CommitRollover(ctx, basicID, "r", coordinator.CommitRequest{})
		wantCode(t, err, contextd.EInvalid, "summary_entry_id is required in tree mode")
	})
	t.Run("summary mismatch", func(t *testing.T) {
		e := settled(t)
		_, err := e.svc.CommitRollover(ctx, basicID, "r", coordinator.CommitRequest{SummaryEntryID: basicOldLeaf})
		wantCode(t, err, contextd.EInvalid, `summary mismatch: entry "42a59a75" is a message entry, not a branch_summary`)
		e.write(summaryLine("sumpar01", basicBoundary, basicOldLeaf), false)
		_, err = e.svc.CommitRollover(ctx, basicID, "r", coordinator.CommitRequest{SummaryEntryID: "sumpar01"})
		wantCode(t, err, contextd.EInvalid, `summary mismatch: branch summary "sumpar01" has parentId "b3504875", but navigating to boundary "b3504875" gives "0af25e58"`)
		e.write(summaryLine("sumfrm01", basicBase, basicCall), false)
		_, err = e.svc.CommitRollover(ctx, basicID, "r", coordinator.CommitRequest{SummaryEntryID: "sumfrm01"})
		wantCode(t, err, contextd.EInvalid, `summary mismatch: branch summary "sumfrm01" has fromId "720d6a83", but the archived leaf (the leaf at settle) is "42a59a75"`)
		// The right summary still commits, and a different one afterwards is refused.
		e.appendFixture(lineSummary)
		must[coordinator.CommitAnswer](t)(e.svc.CommitRollover(ctx, basicID, "r", coordinator.CommitRequest{SummaryEntryID: basicSummary}))
		_, err = e.svc.CommitRollover(ctx, basicID, "r", coordinator.CommitRequest{SummaryEntryID: "sumfrm01"})
		wantCode(t, err, contextd.EConflict, `already committed with summary "bae0cbce", not "sumfrm01"`)
	})
	t.Run("navigation cancelled", func(t *testing.T) {
		e := settled(t)
		info := must[coordinator.RolloverInfo](t)(e.svc.AbortRollover(ctx, basicID, "r", coordinator.AbortRequest{Reason: "navigation cancelled"}))
		if info.State != "aborted" || info.Reason != "navigation cancelled" || info.FinishedAt == nil {
			t.Fatalf("abort: %+v", info)
		}
		again := must[coordinator.RolloverInfo](t)(e.svc.AbortRollover(ctx, basicID, "r", coordinator.AbortRequest{Reason: "other"}))
		if again.Reason != "navigation cancelled" {
			t.Fatalf("repeated abort changed the reason: %+v", again)
		}
		e.appendFixture(lineSummary)
		_, err := e.svc.CommitRollover(ctx, basicID, "r", coordinator.CommitRequest{SummaryEntryID: basicSummary})
		wantCode(t, err, contextd.EConflict, "rollover r was aborted: navigation cancelled")
		_, err = e.svc.SettleRollover(ctx, basicID, "r", coordinator.SettleRequest{})
		wantCode(t, err, contextd.EConflict, "was aborted")
		_, err = e.svc.CompleteRollover(ctx, basicID, "r")
		wantCode(t, err, contextd.EConflict, "was aborted")
		if v := counterValue(t, e.metrics.Rollovers.WithLabelValues("tree", "aborted")); v != 1 {
			t.Fatalf("rollovers_total{tree,aborted} = %v", v)
		}
		if v := counterValue(t, e.metrics.Pending); v != 0 {
			t.Fatalf("pending gauge %v", v)
		}
		// The session is free for a new rollover.
		e.ids = []string{"r2"}
		must[coordinator.RolloverCreated](t)(create(e, basicOldLeaf))
	})
	t.Run("cycle", func(t *testing.T) {
		e := newEnv(t, contextd.ModeTree, 1)
		// c1 → c2 → c3 (a boundary) → c1: a parent cycle no Pi writes.
		e.write([]byte(`{"type":"message","id":"c1","parentId":"c3","timestamp":"2026-07-07T16:27:14.000Z","message":{"role":"user","content":"hi","timestamp":1}}`), false)
		e.write([]byte(`{"type":"message","id":"c2","parentId":"c1","timestamp":"2026-07-07T16:27:15.000Z","message":{"role":"user","content":"hi","timestamp":2}}`), false)
		e.write([]byte(`{"type":"custom_message","customType":"codex-context-window","content":"x","display":true,"details":{"protocol":1,"id":"m","contextManagement":{"protocol":1,"kind":"window","firstWindowId":"w0","currentWindowId":"w0","windowNumber":0}},"id":"c3","parentId":"c2","timestamp":"2026-07-07T16:27:16.000Z"}`), false)
		_, err := create(e, "c3")
		wantCode(t, err, contextd.EInvalid, `the parent chain of leaf "c3" has a cycle`)
	})
}

// TestRolloverConcurrentSteps: concurrent settles and commits of one
// rollover all answer the one stored result.
func TestRolloverConcurrentSteps(t *testing.T) {
	e := newEnv(t, contextd.ModeTree, lineCall)
	ctx := t.Context()
	e.ids = []string{"r"}
	c, _, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: basicCall, CommandContextReady: true})
	if err != nil || c.RolloverID != "r" {
		t.Fatal(c, err)
	}
	e.appendFixture(lineOldLeaf)
	const n = 6
	var wg sync.WaitGroup
	settles := make([]coordinator.SettleAnswer, n)
	for i := range n {
		wg.Go(func() {
			a, err := e.svc.SettleRollover(ctx, basicID, "r", coordinator.SettleRequest{LeafID: basicOldLeaf})
			if err != nil {
				t.Error(err)
			}
			settles[i] = a
		})
	}
	wg.Wait()
	for _, a := range settles {
		if a.State != "settled" || a.ArchivedLeafID != basicOldLeaf {
			t.Fatalf("settle: %+v", a)
		}
	}
	e.appendFixture(lineSummary)
	commits := make([][]byte, n)
	for i := range n {
		wg.Go(func() {
			a, err := e.svc.CommitRollover(ctx, basicID, "r", coordinator.CommitRequest{SummaryEntryID: basicSummary})
			if err != nil {
				t.Error(err)
			}
			commits[i], _ = json.Marshal(a.Append)
		})
	}
	wg.Wait()
	for i := 1; i < n; i++ {
		if !bytes.Equal(commits[i], commits[0]) {
			t.Fatalf("commit %d answered another plan:\n%s\n%s", i, commits[i], commits[0])
		}
	}
	info := must[coordinator.RolloverInfo](t)(e.svc.GetRollover(ctx, basicID, "r"))
	var plan []coordinator.PlannedEntry
	if err := json.Unmarshal(commits[0], &plan); err != nil {
		t.Fatal(err)
	}
	if info.NextWindow == nil || plan[2].Details.ContextManagement != *info.NextWindow {
		t.Fatalf("stored next window %+v, answered %+v", info.NextWindow, plan[2].Details.ContextManagement)
	}
	if v := counterValue(t, e.metrics.PhaseSeconds.WithLabelValues("settle").(prometheus.Collector)); v != 1 {
		t.Fatalf("settle phase observed %v times, want 1", v)
	}
}

// TestRolloverParallelCreates: new_context calls of one assistant message
// run concurrently (Pi 1.6 executes tool calls in parallel); they make one
// rollover: every call succeeds, exactly one creates it, the others join.
func TestRolloverParallelCreates(t *testing.T) {
	e := newEnv(t, contextd.ModeTree, lineCall)
	ctx := t.Context()
	const n = 8
	var wg sync.WaitGroup
	answers := make([]coordinator.RolloverCreated, n)
	created := make([]bool, n)
	for i := range n {
		wg.Go(func() {
			a, isNew, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: basicCall, CommandContextReady: true})
			if err != nil {
				t.Error(err)
			}
			answers[i], created[i] = a, isNew
		})
	}
	wg.Wait()
	newOnes := 0
	for i, a := range answers {
		if created[i] {
			newOnes++
		}
		if a.RolloverID != answers[0].RolloverID || a.Merged == created[i] || a.State != "pending" {
			t.Errorf("call %d: %+v created=%v", i, a, created[i])
		}
	}
	if newOnes != 1 {
		t.Errorf("%d calls created a rollover, want 1", newOnes)
	}
}

// TestRolloverSnapshotMatchesNotes: the snapshot planned at commit is the
// note state at the leaf of settle, not at the leaf of the commit.
func TestRolloverSnapshotMatchesNotes(t *testing.T) {
	e := newEnv(t, contextd.ModeTree, lineCall)
	ctx := t.Context()
	e.ids = []string{"r"}
	must[coordinator.RolloverCreated](t)(func() (coordinator.RolloverCreated, error) {
		c, _, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: basicCall, CommandContextReady: true})
		return c, err
	}())
	e.appendFixture(lineOldLeaf)
	must[coordinator.SettleAnswer](t)(e.svc.SettleRollover(ctx, basicID, "r", coordinator.SettleRequest{}))
	e.appendFixture(lineSummary) // the branch cut: no note entry on the new branch
	a := must[coordinator.CommitAnswer](t)(e.svc.CommitRollover(ctx, basicID, "r", coordinator.CommitRequest{SummaryEntryID: basicSummary}))
	var snap notes.SnapshotData
	if err := json.Unmarshal(a.Append[1].Data, &snap); err != nil {
		t.Fatal(err)
	}
	if snap.Timestamp != basicSettleMS || len(snap.Files) != 3 || snap.Files[0].Path != "/root/notes/checkpoint.md" || snap.Files[2].Path != "/root/notes/progress.md" {
		t.Fatalf("snapshot: %+v", snap)
	}
	if !bytes.Equal(a.Append[1].Data, []byte(fixtureData(t, e.lines[lineSnapshot-1]))) {
		t.Fatalf("snapshot data differs from the fixture's:\n%s", a.Append[1].Data)
	}
}

func fixtureData(t *testing.T, line []byte) string {
	t.Helper()
	var m struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	return string(m.Data)
}

// piOwnEntries are entries Pi 1.6 (or another extension) can write between
// the planned entries of a commit, as Pi 1.6.0's SessionManager writes them
// (appendMessage of a system message, appendUsage, appendContextEdit,
// appendModelChange, appendThinkingLevelChange, appendLabelChange,
// appendSessionInfo, appendCustomEntry). Each is a format string for the
// entry's id and parentId.
var piOwnEntries = []struct{ name, line string }{
	{"system message", `{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-07-07T16:38:30.000Z","message":{"role":"system","content":"You are Pi.","sections":[{"id":"base","content":"You are Pi."}],"toolsAdded":["read"],"toolsRemoved":[],"timestamp":1783442310000}}`},
	{"usage", `{"type":"usage","id":%q,"parentId":%q,"timestamp":"2026-07-07T16:38:30.000Z","kind":"summary","provider":"openai-codex","model":"gpt-5.5","usage":{"input":10,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":12,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}`},
	{"context_edit", `{"type":"context_edit","id":%q,"parentId":%q,"timestamp":"2026-07-07T16:38:30.000Z","targetId":"720d6a83","replacement":null}`},
	{"model_change", `{"type":"model_change","id":%q,"parentId":%q,"timestamp":"2026-07-07T16:38:30.000Z","provider":"openai-codex","modelId":"gpt-5.5-mini"}`},
	{"thinking_level_change", `{"type":"thinking_level_change","id":%q,"parentId":%q,"timestamp":"2026-07-07T16:38:30.000Z","thinkingLevel":"low"}`},
	{"label", `{"type":"label","id":%q,"parentId":%q,"timestamp":"2026-07-07T16:38:30.000Z","targetId":"bae0cbce","label":"cut"}`},
	{"session_info", `{"type":"session_info","id":%q,"parentId":%q,"timestamp":"2026-07-07T16:38:30.000Z","name":"renamed"}`},
	{"other extension's custom entry", `{"type":"custom","id":%q,"parentId":%q,"timestamp":"2026-07-07T16:38:30.000Z","customType":"other-extension-state","data":{"n":1}}`},
}

// TestRolloverInterleavedPiEntries: Pi's own entries between the summary
// and the manifest, the manifest and the snapshot, or the snapshot and the
// boundary (one, or two of different kinds) do not stop the rollover from
// completing on its own (GET …/rollovers/{id} sees the entries), and the
// next rollover is accepted. A conversation message between them does:
// the rollover stays committed and names what is missing.
func TestRolloverInterleavedPiEntries(t *testing.T) {
	gaps := []string{"summary→manifest", "manifest→snapshot", "snapshot→boundary"}
	type insert struct {
		gap   int
		kinds []int // indexes into piOwnEntries
	}
	var cases []insert
	for g := range gaps {
		for k := range piOwnEntries {
			cases = append(cases, insert{g, []int{k}})
		}
	}
	// Several of Pi's entries in a row, and in every gap at once.
	cases = append(cases, insert{2, []int{0, 1, 2}}, insert{-1, []int{0, 1}})
	for _, c := range cases {
		var names []string
		for _, k := range c.kinds {
			names = append(names, piOwnEntries[k].name)
		}
		gap := "every gap"
		if c.gap >= 0 {
			gap = gaps[c.gap]
		}
		t.Run(gap+"/"+strings.Join(names, "+"), func(t *testing.T) {
			e, commit := commitBasic(t)
			ctx := t.Context()
			parent, n := basicSummary, 0
			pi := func() {
				for _, k := range c.kinds {
					n++
					id := "pi-own-" + string(rune('a'+n))
					e.write(fmt.Appendf(nil, piOwnEntries[k].line, id, parent), false)
					parent = id
				}
			}
			ids := []string{basicManifest, basicSnapshot, basicNext}
			for k := range 3 {
				if c.gap < 0 || c.gap == k {
					pi()
				}
				e.write(piLine(t, commit.Append[k], ids[k], parent, "2026-07-07T16:38:31.000Z"), false)
				parent = ids[k]
			}
			info := must[coordinator.RolloverInfo](t)(e.svc.GetRollover(ctx, basicID, "rollover-1"))
			if info.State != "completed" || info.NextWindow == nil || info.NextWindow.CurrentWindowID != basicWindow1 {
				t.Fatalf("rollover after the entries landed: %+v, want completed", info)
			}
			e.ids = []string{"rollover-2"}
			r2, isNew, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: basicNext, CommandContextReady: true})
			if err != nil || !isNew || r2.Rollover.BoundaryEntryID != basicNext || r2.Rollover.Window.WindowNumber != 1 {
				t.Fatalf("next rollover: %+v new=%v %v", r2, isNew, err)
			}
			e.checkUnchanged()
		})
	}

	// The person typed while the rollover was interrupted (contextd
	// restarted while Pi wrote the summary), the model answered, and
	// /contextd finish appended the planned entries at the leaf, after
	// them: the rollover completes (it stayed committed at 18a993e and
	// refused every later new_context).
	t.Run("conversation messages before and between the planned entries", func(t *testing.T) {
		e, commit := commitBasic(t)
		ctx := t.Context()
		e.write([]byte(`{"type":"message","id":"typed-1","parentId":"`+basicSummary+`","timestamp":"2026-07-07T16:38:31.000Z","message":{"role":"user","content":"typed during","timestamp":1783442311000}}`), false)
		e.write([]byte(`{"type":"message","id":"answer-1","parentId":"typed-1","timestamp":"2026-07-07T16:38:31.000Z","message":{"role":"assistant","content":[{"type":"text","text":"answered"}],"api":"faux","provider":"faux","model":"faux-1","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1783442311000}}`), false)
		waitingFor(t, e.svc, basicID, "rollover-1", "codex-context-tree-archive", "codex-context-note-snapshot", "codex-context-window")
		e.write(piLine(t, commit.Append[0], basicManifest, "answer-1", "2026-07-07T16:38:32.000Z"), false)
		e.write([]byte(`{"type":"message","id":"typed-2","parentId":"`+basicManifest+`","timestamp":"2026-07-07T16:38:32.000Z","message":{"role":"user","content":"hello","timestamp":1783442312000}}`), false)
		e.write(piLine(t, commit.Append[1], basicSnapshot, "typed-2", "2026-07-07T16:38:32.000Z"), false)
		waitingFor(t, e.svc, basicID, "rollover-1", "codex-context-window")
		e.write(piLine(t, commit.Append[2], basicNext, basicSnapshot, "2026-07-07T16:38:32.000Z"), false)
		info := must[coordinator.RolloverInfo](t)(e.svc.CompleteRollover(ctx, basicID, "rollover-1"))
		if info.State != "completed" || len(info.WaitingFor) != 0 {
			t.Fatalf("complete with conversation before the planned entries: %+v, want completed", info)
		}
		e.checkUnchanged()
	})

	// The planned entries appended on another branch (not descending from
	// the summary) are not the rollover's.
	t.Run("entries on another branch", func(t *testing.T) {
		e, commit := commitBasic(t)
		e.write(piLine(t, commit.Append[0], basicManifest, basicOldLeaf, "2026-07-07T16:38:31.000Z"), false)
		e.write(piLine(t, commit.Append[1], basicSnapshot, basicManifest, "2026-07-07T16:38:31.000Z"), false)
		e.write(piLine(t, commit.Append[2], basicNext, basicSnapshot, "2026-07-07T16:38:31.000Z"), false)
		waitingFor(t, e.svc, basicID, "rollover-1", "codex-context-tree-archive", "codex-context-note-snapshot", "codex-context-window")
	})
}

// commitBasic runs the tree-basic rollover up to its commit answer (the
// branch summary is in the file, the planned entries are not).
func commitBasic(t *testing.T) (*env, coordinator.CommitAnswer) {
	t.Helper()
	e := newEnv(t, contextd.ModeTree, lineCall)
	ctx := t.Context()
	e.ids = []string{"rollover-1", basicWindow1, basicMarker1}
	if _, _, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: basicCall, CommandContextReady: true}); err != nil {
		t.Fatalf("create: %v", err)
	}
	e.appendFixture(lineOldLeaf)
	must[coordinator.SettleAnswer](t)(e.svc.SettleRollover(ctx, basicID, "rollover-1", coordinator.SettleRequest{LeafID: basicOldLeaf}))
	e.setNow(e.now.Add(19 * time.Second))
	e.appendFixture(lineSummary)
	commit := must[coordinator.CommitAnswer](t)(e.svc.CommitRollover(ctx, basicID, "rollover-1", coordinator.CommitRequest{SummaryEntryID: basicSummary}))
	if len(commit.Append) != 3 {
		t.Fatalf("commit: %+v", commit)
	}
	return e, commit
}

// waitingFor asserts that completing rollover id answers it still
// committed, waiting for the planned entries of the given customTypes.
func waitingFor(t *testing.T, svc *coordinator.Service, sessionID, id string, customTypes ...string) {
	t.Helper()
	info, err := svc.CompleteRollover(t.Context(), sessionID, id)
	if err != nil || info.State != "committed" || !slices.Equal(info.WaitingFor, customTypes) {
		t.Fatalf("complete %s: %+v, %v; want committed, waiting for %v", id, info, err, customTypes)
	}
}

// TestRolloverAbortAfterEntriesInFile: an abort that arrives once the
// committed rollover's planned entries are all in the file is refused
// (409, "already completed") and the rollover is completed, not recorded
// or counted as aborted (at a03e7ac it was aborted while the file held
// the finished rollover).
func TestRolloverAbortAfterEntriesInFile(t *testing.T) {
	e := newEnv(t, contextd.ModeTree, lineCall)
	ctx := t.Context()
	runBasicRollover(t, e, func(step string) {
		if step != "commit→complete" {
			return
		}
		_, err := e.svc.AbortRollover(ctx, basicID, "rollover-1", coordinator.AbortRequest{Reason: "late abort"})
		wantCode(t, err, contextd.EConflict, "already completed (its planned entries are in the session file)")
		info := must[coordinator.RolloverInfo](t)(e.svc.GetRollover(ctx, basicID, "rollover-1"))
		if info.State != "completed" {
			t.Fatalf("after the refused abort: %+v, want completed", info)
		}
	})
	if v := counterValue(t, e.metrics.Rollovers.WithLabelValues("tree", "aborted")); v != 0 {
		t.Errorf("rollovers_total{tree,aborted} = %v, want 0", v)
	}
	if v := counterValue(t, e.metrics.Rollovers.WithLabelValues("tree", "completed")); v != 1 {
		t.Errorf("rollovers_total{tree,completed} = %v, want 1", v)
	}
}

// TestRolloverCompletedWhenBoundaryWritten: Pi 1.6 writes the boundary a
// moment after the extension's complete call (answered "waiting for
// codex-context-window"), so contextd completes the rollover on its next
// read, here 5 minutes later. The rollover finished when Pi wrote the
// boundary: finished_at is the boundary's timestamp and the reset log's
// complete_ms is commit → boundary, 1500 ms (committed at 16:38:47.727Z,
// basicSettleMS + 19 s; boundary at 16:38:49.227Z), not the 5 minutes
// until the next read.
func TestRolloverCompletedWhenBoundaryWritten(t *testing.T) {
	e, commit := commitBasic(t)
	ctx := t.Context()
	committed := e.now
	e.write(piLine(t, commit.Append[0], basicManifest, basicSummary, "2026-07-07T16:38:49.100Z"), false)
	e.write(piLine(t, commit.Append[1], basicSnapshot, basicManifest, "2026-07-07T16:38:49.110Z"), false)
	waitingFor(t, e.svc, basicID, "rollover-1", "codex-context-window")
	e.write(piLine(t, commit.Append[2], basicNext, basicSnapshot, "2026-07-07T16:38:49.227Z"), false)
	e.setNow(committed.Add(5 * time.Minute))
	info := must[coordinator.RolloverInfo](t)(e.svc.GetRollover(ctx, basicID, "rollover-1"))
	want := time.Date(2026, 7, 7, 16, 38, 49, 227e6, time.UTC)
	if info.State != "completed" || info.FinishedAt == nil || !info.FinishedAt.Equal(want) {
		t.Fatalf("rollover after its boundary landed: %+v, want completed at %v", info, want)
	}
	l := must[coordinator.RolloverLog](t)(e.svc.Rollovers(ctx, basicID, ""))
	if len(l.Rollovers) != 1 || l.Rollovers[0].Durations.CompleteMS == nil || *l.Rollovers[0].Durations.CompleteMS != 1500 {
		t.Fatalf("reset log: %+v, want one rollover with complete_ms 1500", l.Rollovers)
	}
}

// TestResetLogAbortedThenAppended: a committed Tree rollover aborted while
// its planned entries were not in the file (the only way out of a stuck
// rollover at 18a993e), whose entries were then appended all the same,
// is one rollover: GET …/rollovers lists it once, completed as the file
// shows it, with its state id (at 18a993e it was listed twice, once
// failed from the state and once completed from the file).
func TestResetLogAbortedThenAppended(t *testing.T) {
	e, commit := commitBasic(t)
	ctx := t.Context()
	info := must[coordinator.RolloverInfo](t)(e.svc.AbortRollover(ctx, basicID, "rollover-1", coordinator.AbortRequest{Reason: "by hand"}))
	if info.State != "aborted" {
		t.Fatalf("abort: %+v", info)
	}
	parent := basicSummary
	for k, id := range []string{basicManifest, basicSnapshot, basicNext} {
		e.write(piLine(t, commit.Append[k], id, parent, "2026-07-07T16:38:31.000Z"), false)
		parent = id
	}
	l := must[coordinator.RolloverLog](t)(e.svc.Rollovers(ctx, basicID, ""))
	if len(l.Rollovers) != 1 {
		t.Fatalf("reset log: %d rollovers %+v, want 1", len(l.Rollovers), l.Rollovers)
	}
	r := l.Rollovers[0]
	if r.RolloverID != "rollover-1" || r.State != "completed" || r.Source != "state+file" || r.To == nil || r.To.ID != basicWindow1 {
		t.Errorf("reset log entry %+v, want rollover-1 completed from state+file, to window %s", r, basicWindow1)
	}
	e.checkUnchanged()
}
