package coordinator

import (
	"os"
	"os/exec"
	"testing"

	"contextd/store"
)

// TestAbortOrphanedRollover: a Local rollover pending when its Pi died is
// aborted when a Pi registers the session afresh, with one
// interrupted_rollover problem saying window 0 goes on; the same Pi
// registering again (a /reload), or a second Pi while the first still
// has the session registered, aborts nothing; a settled one is aborted
// the same way.
func TestAbortOrphanedRollover(t *testing.T) {
	file := handLines("orphan",
		hBoundary(0, "w0", "w0", ""),                  // h0000001
		hUser("roll over"),                            // h0000002
		hAssistant(hCall("c1", "new_context")),        // h0000003
		hResult("c1", "new_context", "A new context"), // h0000004
	)
	svc, _ := localService(t, map[string][]byte{"orphan.jsonl": file})
	ctx := t.Context()
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	me, other := os.Getpid(), child.Process.Pid
	register := func(pid int) *SessionProblem {
		t.Helper()
		p, err := svc.AbortOrphanedRollover(ctx, "orphan", pid)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Register(ctx, "orphan", RegisterRequest{SessionFile: "orphan.jsonl", Mode: "local", PID: pid}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	state := func(id string) store.RolloverState {
		t.Helper()
		r, ok, err := svc.State.Rollover(ctx, id)
		if err != nil || !ok {
			t.Fatalf("rollover %s: %v %v", id, ok, err)
		}
		return r.State
	}
	want := "the new_context that was to end window 0 was cut short when Pi exited, so window 0 goes on with its notes and nothing was archived; " +
		"/contextd new (or the model's next new_context) starts the next window"

	// The Pi that runs the rollover has the session registered: nothing
	// to abort, for itself again or for a second Pi.
	if p := register(me); p != nil {
		t.Fatalf("first registration: %+v", p)
	}
	ro, _, err := svc.CreateRollover(ctx, "orphan", RolloverRequest{LeafID: "h0000004"})
	if err != nil {
		t.Fatal(err)
	}
	if p := register(me); p != nil || state(ro.RolloverID) != store.RolloverPending {
		t.Errorf("the same Pi again: %+v, state %s", p, state(ro.RolloverID))
	}
	if p := register(other); p != nil || state(ro.RolloverID) != store.RolloverPending {
		t.Errorf("a second Pi while the first lives: %+v, state %s", p, state(ro.RolloverID))
	}
	// Both gone (forgotten), a new Pi registers: aborted, and said so.
	svc.writers.byPID = map[int]writer{}
	if p := register(other); p == nil || p.Reason != "interrupted_rollover" || p.Detail != want || state(ro.RolloverID) != store.RolloverAborted {
		t.Errorf("a new Pi: %+v, state %s", p, state(ro.RolloverID))
	}
	// A settled one too.
	ro, _, err = svc.CreateRollover(ctx, "orphan", RolloverRequest{LeafID: "h0000004"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SettleRollover(ctx, "orphan", ro.RolloverID, SettleRequest{LeafID: "h0000004"}); err != nil {
		t.Fatal(err)
	}
	svc.writers.byPID = map[int]writer{}
	if p := register(me); p == nil || p.Detail != want || state(ro.RolloverID) != store.RolloverAborted {
		t.Errorf("settled, a new Pi: %+v, state %s", p, state(ro.RolloverID))
	}
}
