package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"contextd"
	"contextd/migrations"
)

// diskImage copies state.db and, when present, state.db-wal from dir into a
// new directory while the database is still open: the files as a kill -9
// right after the last answer leaves them on disk. wal says what happens to
// the WAL copy: "keep", "remove" or "damage" (its bytes overwritten).
func diskImage(t *testing.T, dir, wal string) string {
	t.Helper()
	out := t.TempDir()
	for _, name := range []string{"state.db", "state.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if name == "state.db-wal" {
			switch wal {
			case "remove":
				continue
			case "damage":
				for i := range b {
					b[i] = 0xA5
				}
			}
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestStateWritesSurviveLostWAL: every acknowledged state write (a
// registration, a rollover created, settled and committed) is in the main
// database file when the method returns, so the files a kill -9 leaves
// behind give back all of it even when state.db-wal is then removed or
// damaged. Before synchronous=FULL plus a checkpoint per write, the rows
// lived only in the WAL and the image opened empty.
func TestStateWritesSurviveLostWAL(t *testing.T) {
	ctx := context.Background()
	for _, wal := range []string{"keep", "remove", "damage"} {
		t.Run(wal, func(t *testing.T) {
			dir := t.TempDir()
			st, err := OpenState(ctx, filepath.Join(dir, "state.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			reg := contextd.Registration{SessionID: "s1", SessionFile: "/s/a.jsonl", Mode: contextd.ModeTree, AgentName: "/root", PiVersion: "0.85.1"}
			if _, _, err := st.PutRegistration(ctx, reg); err != nil {
				t.Fatal(err)
			}
			t0 := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
			r := Rollover{ID: "r1", SessionID: "s1", SessionFile: "/s/a.jsonl", Mode: contextd.ModeTree, State: RolloverPending,
				BoundaryEntryID: "b1", BoundaryParentID: "p1", Window: []byte(`{"currentWindowId":"w0"}`), LeafAtRequest: "l1", RequestedAt: t0}
			if err := st.CreateRollover(ctx, r); err != nil {
				t.Fatal(err)
			}
			if ok, err := st.SettleRollover(ctx, "r1", "l2", []byte(`{"files":[]}`), []byte(`{"window_id":"w0"}`), t0.Add(time.Second)); err != nil || !ok {
				t.Fatalf("settle: %v %v", ok, err)
			}
			if ok, err := st.CommitRollover(ctx, "r1", "s9", []byte(`{"window":{}}`), t0.Add(2*time.Second)); err != nil || !ok {
				t.Fatalf("commit: %v %v", ok, err)
			}
			img := diskImage(t, dir, wal)
			got, err := OpenState(ctx, filepath.Join(img, "state.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer got.Close()
			g, ok, err := got.Registration(ctx, "s1")
			if err != nil || !ok || g.Mode != contextd.ModeTree || g.SessionFile != "/s/a.jsonl" || g.PiVersion != "0.85.1" {
				t.Errorf("registration after kill -9 with WAL %s: %+v %v %v; want mode tree, /s/a.jsonl, 0.85.1", wal, g, ok, err)
			}
			gr, ok, err := got.Rollover(ctx, "r1")
			if err != nil || !ok || gr.State != RolloverCommitted || gr.SummaryEntryID != "s9" || gr.LeafAtSettle != "l2" {
				t.Errorf("rollover after kill -9 with WAL %s: %+v %v %v; want committed with summary s9, leaf at settle l2", wal, gr, ok, err)
			}
			if empty, err := got.Empty(ctx); err != nil || empty {
				t.Errorf("Empty = %v, %v; want false", empty, err)
			}
		})
	}
}

// TestStateEmpty: a new state database is empty; one registration makes
// it not.
func TestStateEmpty(t *testing.T) {
	ctx := context.Background()
	st := openTestState(t, filepath.Join(t.TempDir(), "state.db"))
	if empty, err := st.Empty(ctx); err != nil || !empty {
		t.Fatalf("new: Empty = %v, %v; want true", empty, err)
	}
	if _, _, err := st.PutRegistration(ctx, contextd.Registration{SessionID: "s", SessionFile: "/a.jsonl", Mode: contextd.ModeLocal, AgentName: "/root"}); err != nil {
		t.Fatal(err)
	}
	if empty, err := st.Empty(ctx); err != nil || empty {
		t.Fatalf("after a registration: Empty = %v, %v; want false", empty, err)
	}
}

// BenchmarkStateWrite measures one registration write (an upsert) as
// OpenState runs it (synchronous=FULL and a TRUNCATE checkpoint per write)
// against the index's settings (synchronous=NORMAL, no checkpoint). State
// writes happen on registration and at each rollover step, never on the
// per-model-call path (/context only reads).
func BenchmarkStateWrite(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []string{"full+checkpoint", "normal"} {
		b.Run(mode, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "state.db")
			var st *State
			if mode == "normal" {
				db, err := openDB(ctx, path, migrations.State, "state", "NORMAL", false)
				if err != nil {
					b.Fatal(err)
				}
				st = &State{DB: db, Now: time.Now}
			} else {
				var err error
				if st, err = OpenState(ctx, path); err != nil {
					b.Fatal(err)
				}
			}
			defer st.Close()
			q := `INSERT INTO registrations(session_id, session_file, mode, agent_name, pi_version, registered_at, updated_at) VALUES (?,?,?,?,?,?,?)
ON CONFLICT(session_id) DO UPDATE SET updated_at=excluded.updated_at`
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				args := []any{fmt.Sprint("s", i%50), "/a.jsonl", "local", "/root", "", "t", fmt.Sprint(i)}
				var err error
				if mode == "normal" {
					_, err = st.DB.Writer.ExecContext(ctx, q, args...)
				} else {
					_, err = st.write(ctx, q, args...)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
