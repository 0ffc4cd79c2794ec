package coordinator_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"contextd"
	"contextd/coordinator"
	"contextd/store"
)

// rolloverBoundary is one completed Tree rollover of a fixture: the lines
// (0-based, header = 0) of its branch summary, manifest, note snapshot and
// the boundary Pi appended last, and that boundary's content and identity.
type rolloverBoundary struct {
	summary, manifest, snapshot, boundary int
	content                               string
	window                                coordinator.WindowIdentity
}

// rolloversOf finds the rollovers of a Pi-written Tree file: a boundary
// whose parent is a note snapshot whose parent is a manifest whose parent
// is a branch summary, on consecutive lines.
func rolloversOf(t *testing.T, lines [][]byte) []rolloverBoundary {
	t.Helper()
	type ent struct {
		Type, ID, CustomType string
		ParentID             *string
		Content              json.RawMessage
		Details              struct {
			ContextManagement coordinator.WindowIdentity `json:"contextManagement"`
		}
	}
	es := make([]ent, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal(l, &es[i]); err != nil {
			t.Fatal(err)
		}
	}
	parentIs := func(i, p int) bool { return es[i].ParentID != nil && *es[i].ParentID == es[p].ID }
	var out []rolloverBoundary
	for i := 4; i < len(es); i++ {
		if es[i].CustomType != "codex-context-window" || es[i].Details.ContextManagement.Kind != "window" {
			continue
		}
		if es[i-1].CustomType != "codex-context-note-snapshot" || es[i-2].CustomType != "codex-context-tree-archive" || es[i-3].Type != "branch_summary" ||
			!parentIs(i, i-1) || !parentIs(i-1, i-2) || !parentIs(i-2, i-3) {
			continue
		}
		r := rolloverBoundary{summary: i - 3, manifest: i - 2, snapshot: i - 1, boundary: i, window: es[i].Details.ContextManagement}
		if err := json.Unmarshal(es[i].Content, &r.content); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestResumeMidRollover: a Tree session that crashed at any point of a
// rollover after navigation (right after the branch summary, after the
// manifest, after the note snapshot; no new boundary), opened with an
// empty state database (no rollover known), continues the window chain
// from the file. For every rollover of the Pi-written Tree fixtures, the
// file is cut after each of the three entries; the right answers are the
// boundary Pi itself appended next in the uncut file:
//   - /context: window = the archived window (the identity the boundary
//     Pi appended continues: its previousWindowId, windowNumber - 1, same
//     firstWindowId), needs_boundary true;
//   - /windows: first false, window = Pi's boundary identity except the
//     fresh current id, and the boundary content equal to Pi's (guidance,
//     ids, and the thread hint naming the newest archive: its window id,
//     summary item and user items, plus the snapshot's notes);
//   - thread_hint: the same hint text;
//   - GET state: window as /context, incomplete_rollover found_in_file
//     naming the summary and the entries still missing.
func TestResumeMidRollover(t *testing.T) {
	ctx := t.Context()
	n := 0
	for _, name := range []string{"tree-basic", "tree-multi", "tree-manual-summary"} {
		full, err := os.ReadFile(filepath.Join("..", "testdata", "pi-tree", name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSpace(full), []byte("\n"))
		rs := rolloversOf(t, lines)
		if len(rs) == 0 {
			t.Fatalf("%s: no rollover found", name)
		}
		for k, r := range rs {
			for _, cut := range []struct {
				name    string
				last    int
				missing []string
			}{
				{"after-summary", r.summary, []string{"codex-context-tree-archive", "codex-context-note-snapshot", "codex-context-window"}},
				{"after-manifest", r.manifest, []string{"codex-context-note-snapshot", "codex-context-window"}},
				{"after-snapshot", r.snapshot, []string{"codex-context-window"}},
			} {
				t.Run(fmt.Sprintf("%s/rollover%d/%s", name, k+1, cut.name), func(t *testing.T) {
					n++
					content := append(bytes.Join(lines[:cut.last+1], []byte("\n")), '\n')
					s := openSession(t, content, "tree")
					pi := r.window
					archived := coordinator.WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: pi.FirstWindowID, CurrentWindowID: pi.PreviousWindowID, WindowNumber: pi.WindowNumber - 1}
					a := s.context(t, "")
					if a.Window == nil || a.Window.FirstWindowID != archived.FirstWindowID || a.Window.CurrentWindowID != archived.CurrentWindowID || a.Window.WindowNumber != archived.WindowNumber || !a.NeedsBoundary {
						t.Errorf("/context window %+v needs_boundary %v; want the archived window %+v and needs_boundary true", a.Window, a.NeedsBoundary, archived)
					}
					w, err := s.svc.Windows(ctx, s.id, coordinator.WindowsRequest{})
					if err != nil {
						t.Fatal(err)
					}
					got := w.Window
					if w.First || got.FirstWindowID != pi.FirstWindowID || got.PreviousWindowID != pi.PreviousWindowID || got.WindowNumber != pi.WindowNumber || got.CurrentWindowID == "" || got.CurrentWindowID == pi.PreviousWindowID {
						t.Errorf("/windows first %v window %+v; want first false and %+v with a fresh current id", w.First, got, pi)
					}
					if len(w.Append) != 1 {
						t.Fatalf("/windows append %d entries, want 1", len(w.Append))
					}
					want := strings.ReplaceAll(r.content, pi.CurrentWindowID, got.CurrentWindowID)
					if name == "tree-manual-summary" && k == 1 {
						// The seed counted user item 2b1d8e07, which a
						// manual /tree navigation left off the archived
						// leaf's branch; contextd's own rollover gives the
						// branch's ids (pinned by TestTreeThreadHint).
						want = strings.Replace(want, `"580417d9","2b1d8e07","57d64b40"`, `"580417d9","57d64b40"`, 1)
						r.content = strings.Replace(r.content, `"580417d9","2b1d8e07","57d64b40"`, `"580417d9","57d64b40"`, 1)
					}
					if w.Append[0].Content != want {
						t.Errorf("/windows boundary content:\n%s\nwant (Pi's boundary, current id replaced):\n%s", w.Append[0].Content, want)
					}
					hint, err := s.svc.ThreadHint(ctx, s.cc(""))
					if err != nil {
						t.Fatal(err)
					}
					if hint.Text == "" || !strings.Contains(r.content, hint.Text+"\n</context_window>") {
						t.Errorf("thread_hint %q is not the hint of Pi's boundary:\n%s", hint.Text, r.content)
					}
					if !strings.Contains(hint.Text, `"window_id":"`+archived.CurrentWindowID+`"`) || !strings.Contains(hint.Text, `"summary_item_id":"`+s.order[r.summary-1]+`"`) {
						t.Errorf("thread_hint %q does not name the newest archive %s with summary %s", hint.Text, archived.CurrentWindowID, s.order[r.summary-1])
					}
					st, err := s.svc.SessionStateOf(ctx, s.id)
					if err != nil {
						t.Fatal(err)
					}
					inc := st.Incomplete
					if st.Window == nil || st.Window.CurrentWindowID != archived.CurrentWindowID || !st.NeedsBoundary || inc == nil ||
						inc.State != coordinator.IncompleteFromFile || inc.SummaryEntryID != s.order[r.summary-1] || strings.Join(inc.Missing, ",") != strings.Join(cut.missing, ",") {
						t.Errorf("GET state window %+v needs_boundary %v incomplete %+v; want %s, true, found_in_file summary %s missing %v",
							st.Window, st.NeedsBoundary, st.Incomplete, archived.CurrentWindowID, s.order[r.summary-1], cut.missing)
					}
				})
			}
		}
	}
	if n < 9 {
		t.Errorf("%d crash points checked, want at least 9", n)
	}
}

// TestResumeCompletedRolloverUnchanged: with the rollover complete (the
// boundary appended), /context answers the new window as before and
// nothing is reported incomplete.
func TestResumeCompletedRolloverUnchanged(t *testing.T) {
	s := openFixture(t, "tree-multi", "tree")
	a := s.context(t, "")
	if a.Window == nil || a.Window.CurrentWindowID != s.exp.ActiveWindow.WindowID || a.NeedsBoundary || len(a.Problems) != 0 {
		t.Errorf("/context %+v; want window %s, no boundary needed, no problems", a, s.exp.ActiveWindow.WindowID)
	}
	st, err := s.svc.SessionStateOf(t.Context(), s.id)
	if err != nil {
		t.Fatal(err)
	}
	if st.Incomplete != nil {
		t.Errorf("incomplete_rollover %+v, want none", st.Incomplete)
	}
}

// TestTornAppend (case-07, the kind): a write that failed part-way leaves a
// prefix of entry X without its newline; the same Pi process appends Y,
// which fuses onto the torn line (one invalid_json line), then Z (parent
// Y) and W. Pi's live leaf is W. For every such tear point in the last
// window of a Pi-written Local and Tree file: /context for W reports a
// missing_parent problem naming Z, its physical line and Y, and keeps the
// window of the last boundary before the tear (not null, not a new chain);
// /windows continues that chain (first false, previous = that window,
// number + 1); GET state lists the problem for the default leaf W too.
func TestTornAppend(t *testing.T) {
	ctx := t.Context()
	for _, fx := range []struct{ name, mode string }{{"local-basic", "local"}, {"tree-multi", "tree"}} {
		full, err := os.ReadFile(filepath.Join("..", "testdata", "pi-tree", fx.name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSpace(full), []byte("\n"))
		type ent struct {
			ID, Type, CustomType string
			ParentID             *string
			Details              struct {
				ContextManagement coordinator.WindowIdentity `json:"contextManagement"`
			}
		}
		es := make([]ent, len(lines))
		for i, l := range lines {
			json.Unmarshal(l, &es[i])
		}
		isBoundary := func(i int) bool {
			return es[i].CustomType == "codex-context-window" && es[i].Details.ContextManagement.Kind == "window"
		}
		checked := 0
		for k := len(lines) - 4; k > 1 && checked < 6; k-- {
			x, y, z := k, k+1, k+2
			if es[z].ParentID == nil || *es[z].ParentID != es[y].ID || isBoundary(z) {
				continue
			}
			last := -1 // the last boundary before the torn line
			for i := x - 1; i > 0; i-- {
				if isBoundary(i) {
					last = i
					break
				}
			}
			if last < 0 {
				continue
			}
			checked++
			t.Run(fmt.Sprintf("%s/torn-line-%d", fx.name, x+1), func(t *testing.T) {
				var b bytes.Buffer
				for _, l := range lines[:x] {
					b.Write(l)
					b.WriteByte('\n')
				}
				b.Write(lines[x][:60]) // torn: no newline
				for _, l := range lines[y:] {
					b.Write(l)
					b.WriteByte('\n')
				}
				s := openSession(t, b.Bytes(), fx.mode)
				wantLine := x + 2 // header is line 1; torn+Y is line x+1; Z follows
				leaf := es[len(es)-1].ID
				a := s.context(t, leaf)
				want := es[last].Details.ContextManagement
				if a.Window == nil || a.Window.CurrentWindowID != want.CurrentWindowID || a.Window.WindowNumber != want.WindowNumber {
					t.Errorf("/context window %+v, want the window before the tear %+v", a.Window, want)
				}
				// A tear can also strand tool results whose call is above
				// it: the pairing rule reports those (docs/modes.md "Tool-call pairing") after the
				// missing parent.
				for _, p := range a.Problems[min(1, len(a.Problems)):] {
					if p.Reason != "orphaned_tool_result" {
						t.Errorf("/context problem %+v after the missing parent; want only orphaned_tool_result", p)
					}
				}
				if len(a.Problems) < 1 || a.Problems[0].Reason != "missing_parent" || a.Problems[0].Line != wantLine ||
					!strings.Contains(a.Problems[0].Detail, es[z].ID) || !strings.Contains(a.Problems[0].Detail, es[y].ID) {
					t.Errorf("/context problems %+v; want one missing_parent at line %d naming %s and its parent %s", a.Problems, wantLine, es[z].ID, es[y].ID)
				}
				w, err := s.svc.Windows(ctx, s.id, coordinator.WindowsRequest{LeafID: leaf})
				if err != nil {
					t.Fatal(err)
				}
				if w.First || w.Window.FirstWindowID != want.FirstWindowID || w.Window.PreviousWindowID != want.CurrentWindowID || w.Window.WindowNumber != want.WindowNumber+1 {
					t.Errorf("/windows first %v window %+v; want the chain continued from %+v", w.First, w.Window, want)
				}
				st, err := s.svc.SessionStateOf(ctx, s.id)
				if err != nil {
					t.Fatal(err)
				}
				var reasons []string
				for _, p := range st.Problems {
					reasons = append(reasons, fmt.Sprintf("%s@%d", p.Reason, p.Line))
				}
				if got, want := strings.Join(reasons, ","), fmt.Sprintf("invalid_json@%d,missing_parent@%d", x+1, wantLine); got != want {
					t.Errorf("GET state problems %s, want %s", got, want)
				}
			})
		}
		if checked == 0 {
			t.Fatalf("%s: no tear point checked", fx.name)
		}
	}
}

// TestModeHintAfterStateLoss: with no registration (the state database
// lost), a session whose file holds Tree archives is served in Tree mode
// (its archived windows listed, its summaries hidden), as its file shows;
// a Local file keeps the default mode, and with default off a file with
// boundaries is served in Local mode.
func TestModeHintAfterStateLoss(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		fixture string
		def     contextd.Mode
		want    contextd.Mode
	}{
		{"tree-multi", contextd.ModeLocal, contextd.ModeTree},
		{"tree-basic", contextd.ModeOff, contextd.ModeTree},
		{"local-basic", contextd.ModeLocal, contextd.ModeLocal},
		{"local-basic", contextd.ModeOff, contextd.ModeLocal},
		{"local-basic", contextd.ModeRemote, contextd.ModeRemote},
	} {
		t.Run(tc.fixture+"/default-"+string(tc.def), func(t *testing.T) {
			content, err := os.ReadFile(filepath.Join("..", "testdata", "pi-tree", tc.fixture+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			s := openSession(t, content, "local")
			// Forget the registration, as a lost state.db does: the rows
			// go, and contextd starts again on the emptied database (a
			// new State: the running one keeps what it read in memory,
			// store.State).
			if _, err := s.svc.State.DB.Writer.ExecContext(ctx, `DELETE FROM registrations`); err != nil {
				t.Fatal(err)
			}
			restarted, err := store.OpenState(ctx, s.svc.State.DB.Path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { restarted.Close() })
			s.svc.State = restarted
			s.svc.DefaultMode = tc.def
			st, err := s.svc.SessionStateOf(ctx, s.id)
			if err != nil {
				t.Fatal(err)
			}
			if st.Registered || st.Mode != tc.want {
				t.Errorf("mode %s (registered %v), want %s", st.Mode, st.Registered, tc.want)
			}
			list, err := s.svc.ListSessions(ctx)
			if err != nil || len(list) != 1 || list[0].Mode != tc.want {
				t.Errorf("GET /v1/sessions: %+v %v; want mode %s", list, err, tc.want)
			}
			if tc.want == contextd.ModeTree {
				a := s.context(t, "")
				if len(a.HiddenSummaries) == 0 {
					t.Errorf("tree mode from the file: no hidden summaries in %+v", a)
				}
			}
		})
	}
}

// TestResumeNavigatedBackToSummary: after a completed rollover the user
// navigates back to its branch summary with /tree and writes there (a user
// message whose parent is the summary). No rollover is incomplete (the
// file holds its boundary on the other branch), and the next boundary
// still continues the chain from the archived window instead of starting
// a new one.
func TestResumeNavigatedBackToSummary(t *testing.T) {
	ctx := t.Context()
	full, err := os.ReadFile(filepath.Join("..", "testdata", "pi-tree", "tree-multi.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// 0bcc4862: the branch summary of tree-multi's second rollover, which
	// archived window d1c44683-21c8-4917-a80b-8705bb83f024 (number 1).
	extra := `{"type":"message","id":"nav00001","parentId":"0bcc4862","timestamp":"2026-07-09T13:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"back here"}],"timestamp":1783602000000}}` + "\n"
	s := openSession(t, append(full, extra...), "tree")
	st, err := s.svc.SessionStateOf(ctx, s.id)
	if err != nil {
		t.Fatal(err)
	}
	if st.Incomplete != nil {
		t.Errorf("incomplete_rollover %+v, want none (the rollover completed on another branch)", st.Incomplete)
	}
	w, err := s.svc.Windows(ctx, s.id, coordinator.WindowsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if w.First || w.Window.FirstWindowID != "bdeff54f-0701-4681-9db7-9f0d115b43c4" || w.Window.PreviousWindowID != "d1c44683-21c8-4917-a80b-8705bb83f024" || w.Window.WindowNumber != 2 {
		t.Errorf("/windows %+v; want the chain continued from window 1 d1c44683…", w.Window)
	}
}
