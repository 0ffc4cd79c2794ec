package api

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"testing"

	"contextd"
	"contextd/bench/sessiongen"
	"contextd/coordinator"
	"contextd/store"
)

// Under a 4 MiB memory limit a session may hold store.EntryBudget(4 MiB) =
// 4 MiB × 3/4 / 352 bytes = 8,936 entries (store/toolarge.go); the test
// file has 9,000. An 8 MiB limit holds 17,873.
const (
	tooLargeLimit   = 4 << 20
	tooLargeBudget  = 8936
	tooLargeEntries = 9000
	tooLargeID      = "tiny-9000"
	tooLargeDetail  = "this session has more than 8936 entries, more than contextd's memory limit (--memory-limit 4MiB) can index; restart contextd with --memory-limit 8MiB and /reload, or start a new Pi session (/new)"
)

// checkTooLarge asserts that r is the session_too_large problem: status
// 507, code session_too_large, the detail saying what to do.
func checkTooLarge(t *testing.T, what string, r response) {
	t.Helper()
	if r.Status != http.StatusInsufficientStorage {
		t.Fatalf("%s: status %d, want 507; body %.500s", what, r.Status, r.Body)
	}
	p := r.problem(t)
	if p.Code != string(contextd.ESessionTooLarge) || p.Detail != tooLargeDetail {
		t.Errorf("%s: code %q detail %q, want code %q detail %q", what, p.Code, p.Detail, contextd.ESessionTooLarge, tooLargeDetail)
	}
}

// TestSessionTooLarge (docs/security.md N11): a session with more entries
// than the memory limit can index is refused with the problem
// session_too_large on every route that needs its content, on the full
// index (/context) and on the tree preview (/branch) alike; GET
// /v1/sessions/{id} and the listing say too_large with the same sentence;
// nothing of it stays in memory (no tree, no items); the file is
// untouched. The same file under an 8 MiB limit answers normally.
func TestSessionTooLarge(t *testing.T) {
	if got := store.EntryBudget(tooLargeLimit); got != tooLargeBudget {
		t.Fatalf("EntryBudget(4 MiB) = %d, want %d", got, tooLargeBudget)
	}
	data := sessiongen.TinyChain(tooLargeID, tooLargeEntries)
	for _, tc := range []struct {
		name    string
		preview bool // the first request is a tree read over a preview
	}{{"full index", false}, {"tree preview", true}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.preview {
				old := store.PreviewMinBytes
				store.PreviewMinBytes = 1
				t.Cleanup(func() { store.PreviewMinBytes = old })
			}
			s := newTestServer(t, serverOptions{MemoryLimit: tooLargeLimit})
			path := s.writeFile("tiny.jsonl", data)
			if tc.preview {
				checkTooLarge(t, "GET /branch", s.get("/v1/sessions/"+tooLargeID+"/branch"))
			}
			checkTooLarge(t, "POST /context", s.post("/v1/sessions/"+tooLargeID+"/context", map[string]any{}))
			checkTooLarge(t, "POST /windows", s.post("/v1/sessions/"+tooLargeID+"/windows", map[string]any{}))
			checkTooLarge(t, "GET /branch", s.get("/v1/sessions/"+tooLargeID+"/branch"))
			checkTooLarge(t, "PUT (register)", s.register(tooLargeID, path, contextd.ModeLocal))

			var st coordinator.SessionState
			s.getJSON("/v1/sessions/"+tooLargeID, &st)
			if st.State != string(store.StateTooLarge) || len(st.Problems) != 1 || st.Problems[0].Reason != "too_large" || st.Problems[0].Detail != tooLargeDetail || st.Entries != 0 {
				t.Errorf("GET session: state %q entries %d problems %+v, want too_large, 0 and one too_large problem %q", st.State, st.Entries, st.Problems, tooLargeDetail)
			}
			listed := false
			for _, sum := range s.sessionsList() {
				if sum.File == path {
					listed = true
					if sum.State != "too_large" {
						t.Errorf("listing: state %q, want too_large", sum.State)
					}
				}
			}
			if !listed {
				t.Errorf("listing: %s not listed", path)
			}
			// Nothing of the refused session is held: no tree, no items,
			// no rows' worth of entries.
			sess := s.Index.Session(path)
			if err := sess.Read(func(v *store.View) error {
				if v.Tree != nil || len(v.Items) != 0 || v.State != store.StateTooLarge {
					t.Errorf("refused session holds tree %v, %d items, state %q; want none, 0, too_large", v.Tree != nil, len(v.Items), v.State)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
				t.Errorf("the session file changed (err %v)", err)
			}
		})
	}

	t.Run("larger limit", func(t *testing.T) {
		s := newTestServer(t, serverOptions{MemoryLimit: 8 << 20})
		s.writeFile("tiny.jsonl", data)
		var ans coordinator.ContextAnswer
		s.mustOK("/v1/sessions/"+tooLargeID+"/context", map[string]any{}, &ans)
		if ans.LeafID != fmt.Sprintf("%08x", tooLargeEntries) {
			t.Errorf("/context leaf %q, want %08x", ans.LeafID, tooLargeEntries)
		}
		var st coordinator.SessionState
		s.getJSON("/v1/sessions/"+tooLargeID, &st)
		if st.State != "ok" || st.Entries != tooLargeEntries {
			t.Errorf("GET session: state %q entries %d, want ok and %d", st.State, st.Entries, tooLargeEntries)
		}
	})
}
