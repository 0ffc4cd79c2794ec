package coordinator

import (
	"context"
	"encoding/json"
	"fmt"

	"contextd"
	"contextd/store"
)

// Rollovers a Pi left behind (docs/design.md §5.3 "Interrupted
// rollovers"): Pi killed or closed after new_context's tool phase and
// before anything of the rollover reached the file (Local: before its
// commit; Tree: before its branch summary landed) leaves the rollover
// open in contextd's state, and the session file unchanged: the window it
// was to close goes on. When a Pi registers the session and no other live
// Pi has it registered, nobody can finish that rollover, so it is aborted
// and the registration tells the person. A Tree rollover still pending is
// left to the extension, which settles it at its next agent_settled
// (extension/src/modes/tree.ts); one whose summary is in the file is
// finished from the file (finish.go).

// OrphanAbortReason is the abort reason of a rollover a Pi left behind.
const OrphanAbortReason = "Pi exited before the rollover's window ended"

// AbortOrphanedRollover aborts sessionID's open rollover when Pi process
// pid is about to register the session afresh (writers.fresh) and nothing
// of the rollover is in the file, and returns the interrupted_rollover
// problem that says so; nil when there is nothing to abort. Call it
// before Register.
func (s *Service) AbortOrphanedRollover(ctx context.Context, sessionID string, pid int) (*SessionProblem, error) {
	if !s.writers.fresh(pid, sessionID) {
		return nil, nil
	}
	r, ok, err := s.State.OpenRollover(ctx, sessionID)
	if err != nil || !ok {
		return nil, err
	}
	switch {
	case r.State != store.RolloverPending && r.State != store.RolloverSettled:
		return nil, nil // committed: its entries are planned, finish.go
	case r.Mode == contextd.ModeTree && r.State == store.RolloverPending:
		return nil, nil // the extension settles it
	}
	t, err := s.Resolve(ctx, sessionID)
	if err != nil {
		return nil, nil // the registration reports what is wrong
	}
	if _, inc, err := s.rolloverStatus(ctx, t); err != nil || inc != nil {
		return nil, err // the summary landed: finished from the file
	}
	if _, err := s.AbortRollover(ctx, sessionID, r.ID, AbortRequest{Reason: OrphanAbortReason}); err != nil {
		return nil, err
	}
	var w WindowIdentity
	_ = json.Unmarshal(r.Window, &w)
	return &SessionProblem{Reason: "interrupted_rollover", Detail: fmt.Sprintf(
		"the new_context that was to end window %d was cut short when Pi exited, so window %d goes on with its notes and nothing was archived; "+
			"/contextd new (or the model's next new_context) starts the next window", w.WindowNumber, w.WindowNumber)}, nil
}
