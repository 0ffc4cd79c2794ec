package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"contextd"
)

func openTestState(t *testing.T, path string) *State {
	t.Helper()
	st, err := OpenState(context.Background(), path)
	if err != nil {
		t.Fatalf("open state: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestRolloverLifecycleSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	st := openTestState(t, path)
	t0 := time.Date(2026, 7, 7, 16, 38, 28, 522_000_000, time.UTC)
	r := Rollover{ID: "r1", SessionID: "s1", SessionFile: "/x/s1.jsonl", Mode: contextd.ModeTree, State: RolloverPending,
		BoundaryEntryID: "b3504875", BoundaryParentID: "0af25e58", Window: []byte(`{"currentWindowId":"w0"}`),
		LeafAtRequest: "720d6a83", RequestedAt: t0}
	if err := st.CreateRollover(ctx, r); err != nil {
		t.Fatal(err)
	}
	second := r
	second.ID = "r2"
	if err := st.CreateRollover(ctx, second); !errors.Is(err, ErrRolloverOpen) {
		t.Fatalf("second open rollover: err %v, want ErrRolloverOpen", err)
	}
	other := second
	other.ID, other.SessionID = "r3", "s2"
	if err := st.CreateRollover(ctx, other); err != nil {
		t.Fatalf("rollover of another session: %v", err)
	}
	if n, err := st.CountOpenRollovers(ctx); err != nil || n != 2 {
		t.Fatalf("open rollovers = %d, %v; want 2", n, err)
	}
	// Commit and complete refuse a pending rollover.
	if ok, err := st.CommitRollover(ctx, "r1", "sum", []byte(`{}`), t0); ok || err != nil {
		t.Fatalf("commit of a pending rollover: %v %v, want false nil", ok, err)
	}
	if ok, err := st.CompleteRollover(ctx, "r1", t0); ok || err != nil {
		t.Fatalf("complete of a pending rollover: %v %v, want false nil", ok, err)
	}
	t1 := t0.Add(205 * time.Millisecond)
	if ok, err := st.SettleRollover(ctx, "r1", "42a59a75", []byte(`{"protocol":1}`), []byte(`{"window_id":"w0"}`), t1); !ok || err != nil {
		t.Fatalf("settle: %v %v", ok, err)
	}
	if ok, err := st.SettleRollover(ctx, "r1", "other", nil, nil, t1); ok || err != nil {
		t.Fatalf("second settle: %v %v, want false nil", ok, err)
	}

	// Reopen: the state is on disk.
	st.Close()
	st = openTestState(t, path)
	got, ok, err := st.Rollover(ctx, "r1")
	if err != nil || !ok {
		t.Fatalf("rollover after reopen: %v %v", ok, err)
	}
	if got.State != RolloverSettled || got.LeafAtSettle != "42a59a75" || string(got.Notes) != `{"protocol":1}` ||
		string(got.Recovery) != `{"window_id":"w0"}` || !got.RequestedAt.Equal(t0) || !got.SettledAt.Equal(t1) ||
		!got.CommittedAt.IsZero() || got.Plan != nil || got.BoundaryParentID != "0af25e58" || got.Mode != contextd.ModeTree {
		t.Fatalf("after reopen: %+v", got)
	}
	t2 := t1.Add(time.Second)
	if ok, err := st.CommitRollover(ctx, "r1", "bae0cbce", []byte(`{"append":[]}`), t2); !ok || err != nil {
		t.Fatalf("commit: %v %v", ok, err)
	}
	open, ok, err := st.OpenRollover(ctx, "s1")
	if err != nil || !ok || open.ID != "r1" || open.State != RolloverCommitted || open.SummaryEntryID != "bae0cbce" || string(open.Plan) != `{"append":[]}` {
		t.Fatalf("open rollover: %+v %v %v", open, ok, err)
	}
	t3 := t2.Add(time.Second)
	if ok, err := st.CompleteRollover(ctx, "r1", t3); !ok || err != nil {
		t.Fatalf("complete: %v %v", ok, err)
	}
	if ok, err := st.AbortRollover(ctx, "r1", "late", t3); ok || err != nil {
		t.Fatalf("abort of a completed rollover: %v %v, want false nil", ok, err)
	}
	if _, ok, err := st.OpenRollover(ctx, "s1"); ok || err != nil {
		t.Fatalf("s1 still has an open rollover: %v %v", ok, err)
	}
	// The session may open a new one now.
	if err := st.CreateRollover(ctx, second); err != nil {
		t.Fatalf("new rollover after completion: %v", err)
	}
	if ok, err := st.AbortRollover(ctx, "r2", "navigation cancelled", t3); !ok || err != nil {
		t.Fatalf("abort: %v %v", ok, err)
	}
	ab, _, _ := st.Rollover(ctx, "r2")
	if ab.State != RolloverAborted || ab.Reason != "navigation cancelled" || !ab.FinishedAt.Equal(t3) {
		t.Fatalf("aborted: %+v", ab)
	}
	if n, _ := st.CountOpenRollovers(ctx); n != 1 {
		t.Fatalf("open rollovers = %d, want 1 (s2)", n)
	}
	if _, ok, err := st.Rollover(ctx, "nope"); ok || err != nil {
		t.Fatalf("unknown rollover: %v %v", ok, err)
	}
	if err := st.CreateRollover(ctx, Rollover{ID: "r9", State: RolloverSettled}); err == nil {
		t.Fatal("creating a settled rollover succeeded")
	}
}

// TestRolloverSettleRace: of many concurrent settles exactly one wins.
func TestRolloverSettleRace(t *testing.T) {
	ctx := context.Background()
	st := openTestState(t, filepath.Join(t.TempDir(), "state.db"))
	now := time.Now()
	if err := st.CreateRollover(ctx, Rollover{ID: "r", SessionID: "s", Mode: contextd.ModeLocal, State: RolloverPending, Window: []byte("{}"), RequestedAt: now}); err != nil {
		t.Fatal(err)
	}
	wins := make(chan bool, 8)
	for i := 0; i < 8; i++ {
		go func() {
			ok, err := st.SettleRollover(ctx, "r", "leaf", nil, nil, now)
			if err != nil {
				t.Error(err)
			}
			wins <- ok
		}()
	}
	n := 0
	for i := 0; i < 8; i++ {
		if <-wins {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d settles won, want 1", n)
	}
}
