package reliability

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"contextd"
	"contextd/store"
)

// TestEvictionEquivalence: the disk budget evicts derived data only.
// Every probe of the rebuild table answers the same after every session
// but the most recently used was evicted (and re-indexed on demand), as on
// a fresh index of the same files; contextd's own state (registrations,
// and a rollover with its note snapshot and thread-hint recovery) is the
// same after the eviction, after POST /v1/index/rebuild and after a
// restart on a deleted index.
func TestEvictionEquivalence(t *testing.T) {
	root := t.TempDir()
	sessions := filepath.Join(root, "sessions")
	stateDir := filepath.Join(root, "state")
	for _, f := range fixtureFiles(t) {
		copyFile(t, f, filepath.Join(sessions, filepath.Base(f)))
	}
	s1 := startStack(t, sessions, stateDir, stackOptions{})
	regs := map[string]contextd.Registration{
		localBasicID: s1.register(localBasicID, "local-basic.jsonl", contextd.ModeLocal, ""),
		treeBasicID:  s1.register(treeBasicID, "tree-basic.jsonl", contextd.ModeTree, "/root/worker"),
	}
	// A settled rollover: owned state with a note snapshot and the
	// thread-hint recovery of the closing window.
	ctx := context.Background()
	at := time.Date(2026, 7, 7, 16, 0, 0, 0, time.UTC)
	ro := store.Rollover{ID: "5b0c5a43-1d0c-4b7e-9d7e-4f3c2b1a0e9d", SessionID: treeBasicID, SessionFile: filepath.Join(sessions, "tree-basic.jsonl"),
		Mode: contextd.ModeTree, State: store.RolloverPending, BoundaryEntryID: "b0", Window: []byte(`{"window_id":"w0"}`), LeafAtRequest: "l0", RequestedAt: at}
	if err := s1.State.CreateRollover(ctx, ro); err != nil {
		t.Fatal(err)
	}
	if ok, err := s1.State.SettleRollover(ctx, ro.ID, "l1", []byte(`{"files":{"plan.md":"- find the port\n"}}`), []byte(`{"thread_hint":"carry on"}`), at.Add(time.Second)); err != nil || !ok {
		t.Fatalf("settle: %v %v", ok, err)
	}
	owned := stateDump(t, s1.State.DB.Reader)

	probes := buildProbes(t, s1)
	before := record(t, s1, probes)

	// Evict every session's derived data but the most recently used.
	s1.Index.SetMaxIndexBytes(1)
	u, err := s1.Index.EnforceBudget(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s1.Index.SetMaxIndexBytes(0)
	var idx struct {
		Sessions  int   `json:"sessions"`
		Evictions int64 `json:"evictions"`
		UsedBytes int64 `json:"used_bytes"`
	}
	decode(t, s1.must(http.StatusOK, http.MethodGet, "/v1/index", nil), &idx)
	if idx.Sessions != 1 || idx.Evictions != u.Evictions || u.Evictions < 10 || idx.UsedBytes != u.UsedBytes {
		t.Errorf("GET /v1/index after eviction = %+v (EnforceBudget: %+v), want one session left and 10 or more evictions", idx, u)
	}
	notIndexed := 0
	for _, r := range s1.sessionsList() {
		if r.SessionID != "" && !r.Indexed {
			notIndexed++
		}
	}
	if notIndexed < 10 {
		t.Errorf("the listing after eviction shows %d sessions not indexed, want 10 or more", notIndexed)
	}
	if got := stateDump(t, s1.State.DB.Reader); got != owned {
		t.Errorf("owned state changed by the eviction:\n%s\nwant\n%s", got, owned)
	}
	compareRecords(t, "after evicting every session but one", probes, before, record(t, s1, probes))
	checkRegistrations(t, s1, regs)

	decode(t, s1.must(http.StatusOK, http.MethodPost, "/v1/index/rebuild", nil), &struct{}{})
	if got := stateDump(t, s1.State.DB.Reader); got != owned {
		t.Errorf("owned state changed by the rebuild after eviction:\n%s\nwant\n%s", got, owned)
	}
	compareRecords(t, "after eviction and POST /v1/index/rebuild", probes, before, record(t, s1, probes))

	// A fresh index of the same files answers the same.
	s1.stop()
	if err := os.RemoveAll(filepath.Join(stateDir, "index")); err != nil {
		t.Fatal(err)
	}
	s2 := startStack(t, sessions, stateDir, stackOptions{})
	compareRecords(t, "on a fresh index", probes, before, record(t, s2, probes))
	checkRegistrations(t, s2, regs)
	if got := stateDump(t, s2.State.DB.Reader); got != owned {
		t.Errorf("owned state changed on a fresh index:\n%s\nwant\n%s", got, owned)
	}
}

// stateDump prints every row of the state database's tables, in key
// order.
func stateDump(t *testing.T, db *sql.DB) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{"SELECT * FROM registrations ORDER BY session_id", "SELECT * FROM rollovers ORDER BY rollover_id"} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, c := range cols {
				fmt.Fprintf(&b, "%s=%s ", c, vals[i])
			}
			b.WriteString("\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return b.String()
}
