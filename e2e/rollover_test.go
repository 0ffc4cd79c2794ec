package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"contextd"
	"contextd/api"
	"contextd/archive"
	"contextd/coordinator"
	"contextd/remote"
	"contextd/store"
)

// RolloverTimeout bounds one rollover.mjs run.
const RolloverTimeout = 3 * time.Minute

const rolloverToken = "e2e-rollover-token-0123456789abcdef"

// liveContextd is an in-process contextd HTTP server over a sessions
// directory. POST /test/restart closes the index, the state database, the
// coordinator and the router and opens new ones on the same files: a
// contextd restart under the same URL, for rollover.mjs's restart scenario.
type liveContextd struct {
	t        *testing.T
	sessions string
	state    string
	http     *httptest.Server

	mu       sync.RWMutex // held for reading while a request is served
	idx      *store.Index
	st       *store.State
	srv      *api.Server
	restarts int
}

func startContextd(t *testing.T, sessions string) *liveContextd {
	t.Helper()
	c := &liveContextd{t: t, sessions: sessions, state: filepath.Join(t.TempDir(), "state")}
	c.open()
	c.http = httptest.NewServer(c)
	t.Cleanup(func() {
		c.http.Close()
		c.mu.Lock()
		c.close()
		c.mu.Unlock()
	})
	return c
}

func (c *liveContextd) open() {
	ctx := context.Background()
	var err error
	if c.idx, err = store.OpenIndex(ctx, c.sessions, filepath.Join(c.state, "index"), store.Options{}); err != nil {
		c.t.Fatalf("open index: %v", err)
	}
	if c.st, err = store.OpenState(ctx, filepath.Join(c.state, "state.db")); err != nil {
		c.t.Fatalf("open state: %v", err)
	}
	reg := prometheus.NewRegistry()
	svc := coordinator.New(c.idx, c.st, contextd.ModeLocal, nil, coordinator.NewMetrics(reg))
	c.srv = api.New(api.Config{Token: rolloverToken, Registry: reg, Logger: testLogger()}, svc, remote.New("", nil, nil))
}

func (c *liveContextd) close() {
	if c.idx != nil {
		c.idx.Close()
		c.st.Close()
		c.idx, c.st, c.srv = nil, nil, nil
	}
}

func (c *liveContextd) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/test/restart" && r.Method == http.MethodPost {
		c.mu.Lock()
		c.close()
		c.open()
		c.restarts++
		n := c.restarts
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"restarts":%d}`, n)
		return
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	c.srv.Handler().ServeHTTP(w, r)
}

// do sends one request with the token and decodes a 200/201 answer into
// out (when not nil).
func (c *liveContextd) do(method, path string, body, out any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.http.URL+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set(api.TokenHeader, rolloverToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Client().Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		c.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: %v\n%s", method, path, err, b)
		}
	}
}

// rolloverRun is rollover.mjs's output.
type rolloverRun struct {
	pi              PiVersion
	PiVersion       string `json:"piVersion"`
	SessionID       string `json:"sessionId"`
	File            string `json:"file"`
	InitialWindowID string `json:"initialWindowId"`
	LeafID          string `json:"leafId"`
	Restarts        int    `json:"restarts"`
	Rollovers       []struct {
		RolloverID      string                          `json:"rolloverId"`
		BoundaryEntryID string                          `json:"boundaryEntryId"`
		ArchivedLeafID  string                          `json:"archivedLeafId"`
		SummaryID       string                          `json:"summaryId"`
		ManifestID      string                          `json:"manifestId"`
		SnapshotID      string                          `json:"snapshotId"`
		NextBoundaryID  string                          `json:"nextBoundaryId"`
		WindowID        string                          `json:"windowId"`
		NextWindowID    string                          `json:"nextWindowId"`
		WindowNumber    int                             `json:"windowNumber"`
		Crashed         bool                            `json:"crashed"`
		Incomplete      *coordinator.IncompleteRollover `json:"incomplete"`
		Interleaved     []string                        `json:"interleaved"`   // Pi's own entries between the snapshot and the boundary
		AutoCompleted   bool                            `json:"autoCompleted"` // completed without POST …/complete
		Edited          *struct {
			Replaced    string `json:"replaced"`
			Omitted     string `json:"omitted"`
			Replacement string `json:"replacement"`
		} `json:"edited"` // context edits inside the window this rollover archived
	} `json:"rollovers"`
}

// runRollovers runs rollover.mjs SCENARIO against a fresh contextd over a
// fresh sessions directory. prepare, when set, writes a session file there
// and returns its path (the script's FILE).
func runRollovers(t *testing.T, pv PiVersion, scenario string, prepare func(dir string) string) (*liveContextd, rolloverRun) {
	t.Helper()
	sessions := filepath.Join(t.TempDir(), "sessions")
	if err := os.MkdirAll(sessions, 0o700); err != nil {
		t.Fatal(err)
	}
	args := []string{scenario, sessions}
	if prepare != nil {
		args = append(args, prepare(sessions))
	}
	c := startContextd(t, sessions)
	out := RunScriptEnv(t, RolloverTimeout, []string{"CONTEXTD_URL=" + c.http.URL, "CONTEXTD_TOKEN=" + rolloverToken, pv.Env()}, "rollover.mjs", args...)
	run := rolloverRun{pi: pv}
	if err := json.Unmarshal(out, &run); err != nil {
		t.Fatalf("decoding rollover.mjs output: %v\n%.1000s", err, out)
	}
	if run.PiVersion != pv.Name {
		t.Fatalf("rollover.mjs ran Pi %s, want %s", run.PiVersion, pv.Name)
	}
	return c, run
}

// checkRollovers checks the session a run left, through contextd's routes,
// an independent archive index and Pi's own reading of the file.
func checkRollovers(t *testing.T, c *liveContextd, run rolloverRun, want int) {
	t.Helper()
	if len(run.Rollovers) != want {
		t.Fatalf("%d rollovers, want %d", len(run.Rollovers), want)
	}
	// Window identities chain: first id kept, previous = old current, number + 1.
	wantWindows := []string{run.InitialWindowID}
	for i, r := range run.Rollovers {
		if r.WindowID != wantWindows[i] || r.WindowNumber != i+1 || r.NextWindowID == "" || slices.Contains(wantWindows, r.NextWindowID) {
			t.Fatalf("rollover %d identities: %+v", i, r)
		}
		wantWindows = append(wantWindows, r.NextWindowID)
	}

	// GET /v1/sessions/{id}: every archive valid, nothing open, the last window current.
	var st struct {
		Archives int                             `json:"archives"`
		Problems []coordinator.SessionProblem    `json:"problems"`
		Window   *coordinator.WindowIdentity     `json:"window"`
		Rollover *coordinator.RolloverInfo       `json:"rollover"`
		Incomp   *coordinator.IncompleteRollover `json:"incomplete_rollover"`
		Boundary string                          `json:"boundary_entry_id"`
	}
	c.do(http.MethodGet, "/v1/sessions/"+run.SessionID, nil, &st)
	last := run.Rollovers[want-1]
	if st.Archives != want || len(st.Problems) != 0 || st.Rollover != nil || st.Incomp != nil || st.Window == nil ||
		st.Window.CurrentWindowID != last.NextWindowID || st.Window.FirstWindowID != run.InitialWindowID ||
		st.Window.PreviousWindowID != last.WindowID || st.Window.WindowNumber != want || st.Boundary != last.NextBoundaryID {
		t.Fatalf("session state: %+v window %+v", st, st.Window)
	}
	for _, r := range run.Rollovers {
		var info coordinator.RolloverInfo
		c.do(http.MethodGet, "/v1/sessions/"+run.SessionID+"/rollovers/"+r.RolloverID, nil, &info)
		if info.State != "completed" || info.SummaryEntryID != r.SummaryID || info.LeafAtSettle != r.ArchivedLeafID || info.NextWindow == nil || info.NextWindow.CurrentWindowID != r.NextWindowID {
			t.Fatalf("rollover %s: %+v", r.RolloverID, info)
		}
	}

	// history.list_windows: archived windows (summary first), then the current one.
	var lw struct {
		Windows []struct {
			WindowID string `json:"window_id"`
		} `json:"windows"`
	}
	c.do(http.MethodPost, "/alpha/history/v2/list_windows", map[string]any{"limit": 100, "context": map[string]any{"session_id": run.SessionID}}, &lw)
	var gotWindows []string
	for _, w := range lw.Windows {
		gotWindows = append(gotWindows, w.WindowID)
	}
	if !slices.Equal(gotWindows, wantWindows) {
		t.Fatalf("list_windows %v, want %v", gotWindows, wantWindows)
	}
	// Every rollover's summary is hidden from the provider context.
	var ctxAns coordinator.ContextAnswer
	c.do(http.MethodPost, "/v1/sessions/"+run.SessionID+"/context", map[string]any{}, &ctxAns)
	var hidden []string
	for _, h := range ctxAns.HiddenSummaries {
		hidden = append(hidden, h.EntryID)
	}
	for _, r := range run.Rollovers {
		if !slices.Contains(hidden, r.SummaryID) {
			t.Fatalf("summary %s is not hidden: %v", r.SummaryID, hidden)
		}
	}

	// An independent archive index over the file: every manifest valid and as planned.
	idx, err := store.OpenIndex(context.Background(), c.sessions, filepath.Join(t.TempDir(), "index"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	sess, ok, err := idx.FindByID(context.Background(), run.SessionID)
	if err != nil || !ok {
		t.Fatalf("find session: %v %v", ok, err)
	}
	err = sess.Read(func(v *store.View) error {
		x, err := archive.Build(v.Tree, func(seq int) (json.RawMessage, error) {
			_, d, err := v.Decode(seq)
			if err != nil {
				return nil, err
			}
			return d.Data, nil
		})
		if err != nil {
			return err
		}
		if len(x.Manifests) != want || x.Valid() != want {
			t.Fatalf("%d manifests, %d valid; want %d", len(x.Manifests), x.Valid(), want)
		}
		for i, m := range x.Manifests {
			r := run.Rollovers[i]
			if m.EntryID != r.ManifestID || !m.Valid || m.Data.WindowID != r.WindowID || m.Data.SummaryEntryID != r.SummaryID ||
				m.Data.ArchivedLeafID != r.ArchivedLeafID || m.Data.BoundaryEntryID != r.BoundaryEntryID ||
				len(m.Archived) == 0 || v.Tree.ID(m.Archived[len(m.Archived)-1]) != r.ArchivedLeafID {
				t.Fatalf("manifest %d: %+v (reasons %v)", i, m.Data, m.Reasons)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Pi's own reading: the leaf, and on the active branch summary₁ → manifest₁ → snapshot₁ →
	// summary₂ → … → snapshotₙ → the current boundary (docs/design.md §4: each later
	// navigation cuts the branch at the previous boundary's parent, the previous snapshot, or
	// the entry Pi wrote between the snapshot and the boundary).
	res := PiParityOn(t, run.pi, "", run.File)[0]
	if res.Error != "" || res.LeafID != run.LeafID {
		t.Fatalf("Pi: error %q leaf %q, want %q", res.Error, res.LeafID, run.LeafID)
	}
	var chain []string
	for _, r := range run.Rollovers {
		chain = append(chain, r.SummaryID, r.ManifestID, r.SnapshotID)
		chain = append(chain, r.Interleaved...)
		if slices.Contains(res.BranchIDs, r.ArchivedLeafID) || slices.Contains(res.BranchIDs, r.BoundaryEntryID) {
			t.Fatalf("archived leaf %s or boundary %s is still on Pi's branch", r.ArchivedLeafID, r.BoundaryEntryID)
		}
	}
	chain = append(chain, last.NextBoundaryID)
	if i := slices.Index(res.BranchIDs, chain[0]); i < 0 || i+len(chain) > len(res.BranchIDs) || !slices.Equal(res.BranchIDs[i:i+len(chain)], chain) {
		t.Fatalf("Pi's branch %v does not hold %v", res.BranchIDs, chain)
	}
	// The last boundary's thread hint names the last summary.
	data, err := os.ReadFile(run.File)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		var e struct {
			ID      string `json:"id"`
			Content string `json:"content"`
		}
		if json.Unmarshal(line, &e) == nil && e.ID == last.NextBoundaryID {
			wantHint := fmt.Sprintf(`Previous window history IDs: {"window_id":%q,"summary_item_id":%q,"user_item_ids":[`, last.WindowID, last.SummaryID)
			if !strings.Contains(e.Content, wantHint) {
				t.Fatalf("last boundary's hint lacks %s:\n%s", wantHint, e.Content)
			}
		}
	}
}

// checkNotes checks that the notes of every window survived every cut.
func checkNotes(t *testing.T, c *liveContextd, run rolloverRun) {
	t.Helper()
	for w := range run.Rollovers {
		var rf struct {
			File *struct {
				Content string `json:"content"`
			} `json:"file"`
		}
		c.do(http.MethodPost, "/alpha/notes/v2/read_file", map[string]any{"path": fmt.Sprintf("window-%d.md", w), "context": map[string]any{"session_id": run.SessionID}}, &rf)
		if want := fmt.Sprintf("# Window %d\n\nDone: step %d.\n", w, w); rf.File == nil || rf.File.Content != want {
			t.Fatalf("note window-%d.md: %+v", w, rf.File)
		}
	}
}

// forEachPi runs fn as a subtest on every Pi of PiVersions.
func forEachPi(t *testing.T, fn func(t *testing.T, pv PiVersion)) {
	for _, pv := range PiVersions {
		t.Run("pi-"+pv.Name, func(t *testing.T) { fn(t, pv) })
	}
}

func TestRolloverE2EOne(t *testing.T) {
	forEachPi(t, func(t *testing.T, pv PiVersion) {
		c, run := runRollovers(t, pv, "one", nil)
		checkRollovers(t, c, run, 1)
		checkNotes(t, c, run)
	})
}

func TestRolloverE2EFive(t *testing.T) {
	forEachPi(t, func(t *testing.T, pv PiVersion) {
		c, run := runRollovers(t, pv, "five", nil)
		checkRollovers(t, c, run, 5)
		checkNotes(t, c, run)
	})
}

// TestRolloverE2EInterleave (Pi 1.6): Pi writes a system message, then (next rollover) a usage
// entry, then a context_edit between the note snapshot and the boundary. Each rollover
// completes without POST …/complete (rollover.mjs asks GET …/rollovers/{rid}), the next one is
// accepted, and the archives, windows, notes and Pi's branch are as after plain rollovers.
func TestRolloverE2EInterleave(t *testing.T) {
	c, run := runRollovers(t, Pi16, "interleave", nil)
	checkRollovers(t, c, run, 4)
	checkNotes(t, c, run)
	data, err := os.ReadFile(run.File)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{} // entry id → type (role for messages)
	for _, line := range bytes.Split(data, []byte("\n")) {
		var e struct {
			ID      string `json:"id"`
			Type    string `json:"type"`
			Message *struct {
				Role string `json:"role"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &e) == nil && e.ID != "" {
			types[e.ID] = e.Type
			if e.Message != nil {
				types[e.ID] += ":" + e.Message.Role
			}
		}
	}
	// The last archived window holds a replaced request and an omitted answer: its items
	// show the replacement and leave the answer out (history follows the archived path's
	// context edits).
	last := run.Rollovers[3]
	if last.Edited == nil {
		t.Fatal("the fourth rollover reports no context edits")
	}
	var li struct {
		Items []struct {
			ItemID           string `json:"item_id"`
			Summary          bool   `json:"summary"`
			TruncatedContent string `json:"truncated_content"`
		} `json:"items"`
	}
	c.do(http.MethodPost, "/alpha/history/v2/list_items", map[string]any{"window_id": last.WindowID, "limit": 25, "context": map[string]any{"session_id": run.SessionID}}, &li)
	replaced := false
	for _, it := range li.Items {
		if it.ItemID == last.Edited.Omitted {
			t.Errorf("the omitted answer %s is an item of the archived window", it.ItemID)
		}
		if it.ItemID == last.Edited.Replaced {
			replaced = it.TruncatedContent == last.Edited.Replacement
		}
	}
	if !replaced || len(li.Items) < 2 || !li.Items[0].Summary {
		t.Errorf("archived window %s items %+v: want the summary first and %s reading %q", last.WindowID, li.Items, last.Edited.Replaced, last.Edited.Replacement)
	}

	want := []string{"message:system", "usage", "context_edit"}
	for i, r := range run.Rollovers {
		var got []string
		for _, id := range r.Interleaved {
			got = append(got, types[id])
		}
		if i < 3 && (!r.AutoCompleted || !slices.Equal(got, want[i:i+1])) || i == 3 && (r.AutoCompleted || len(got) != 0) {
			t.Errorf("rollover %d: interleaved %v (auto-completed %v)", i, got, r.AutoCompleted)
		}
	}
}

// TestRolloverE2EFixture runs the rollover on tree-basic.jsonl cut before its
// own rollover (after the last note write of window 0).
func TestRolloverE2EFixture(t *testing.T) {
	forEachPi(t, func(t *testing.T, pv PiVersion) {
		c, run := runRollovers(t, pv, "fixture", func(dir string) string {
			b, err := os.ReadFile(filepath.Join(piTreeDir, "tree-basic.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.SplitAfter(b, []byte("\n"))
			dst := filepath.Join(dir, "tree-basic.jsonl")
			if err := os.WriteFile(dst, bytes.Join(lines[:36], nil), 0o600); err != nil {
				t.Fatal(err)
			}
			return dst
		})
		checkRollovers(t, c, run, 1)
		r := run.Rollovers[0]
		if run.InitialWindowID != "93e1557d-7342-47d3-970c-2383fd5384d7" || r.BoundaryEntryID != "b3504875" {
			t.Fatalf("fixture rollover: %+v", r)
		}
		// The snapshot carries window 0's three notes across the cut.
		var lf struct {
			Files []struct {
				Path string `json:"path"`
			} `json:"files"`
		}
		c.do(http.MethodPost, "/alpha/notes/v2/list_files_by_prefix", map[string]any{"context": map[string]any{"session_id": run.SessionID}}, &lf)
		var paths []string
		for _, f := range lf.Files {
			paths = append(paths, f.Path)
		}
		slices.Sort(paths)
		if !slices.Equal(paths, []string{"/root/notes/checkpoint.md", "/root/notes/plan.md", "/root/notes/progress.md"}) {
			t.Fatalf("notes after the rollover: %v", paths)
		}
	})
}

// TestRolloverE2ECrash: the second rollover stops after the branch summary;
// GET /v1/sessions/{id} reports it incomplete and the retried commit ends it.
func TestRolloverE2ECrash(t *testing.T) {
	forEachPi(t, func(t *testing.T, pv PiVersion) {
		c, run := runRollovers(t, pv, "crash", nil)
		checkRollovers(t, c, run, 2)
		r := run.Rollovers[1]
		if !r.Crashed || r.Incomplete == nil || r.Incomplete.SummaryEntryID != r.SummaryID || r.Incomplete.State != "settled" ||
			!slices.Equal(r.Incomplete.Missing, []string{"codex-context-tree-archive", "codex-context-note-snapshot", "codex-context-window"}) {
			t.Fatalf("crashed rollover: %+v", r)
		}
		checkNotes(t, c, run)
	})
}

// TestRolloverE2ERestart restarts contextd between every pair of steps.
func TestRolloverE2ERestart(t *testing.T) {
	forEachPi(t, func(t *testing.T, pv PiVersion) {
		c, run := runRollovers(t, pv, "restart", nil)
		if run.Restarts != 12 || c.restarts != 12 {
			t.Fatalf("restarts: script %d, server %d; want 12", run.Restarts, c.restarts)
		}
		checkRollovers(t, c, run, 3)
		checkNotes(t, c, run)
	})
}
