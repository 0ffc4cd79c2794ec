package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"contextd/coordinator"
)

// RolloverPath names one rollover of a session.
type RolloverPath struct {
	SessionPath
	RolloverID string `path:"rollover_id" minLength:"1" maxLength:"256" doc:"Rollover id answered by POST /v1/sessions/{session_id}/rollovers."`
}

const rolloverRefusals = " Refusals: 404 unknown session, rollover or leaf_id (the same answer as every route with a leaf_id); 409 off/remote mode, a rollover already pending, a step out of order or an aborted rollover; 412 session changed, missing boundary, the rollover's boundary or archived leaf no longer in the file, ancestry mismatch, summary not written yet; 422 summary mismatch or a parent cycle."

// registerRollovers registers the rollover routes (docs/design.md §5.3).
func (s *Server) registerRollovers(api huma.API) {
	tags := []string{"rollovers"}

	type createInput struct {
		SessionPath
		Body coordinator.RolloverRequest
	}
	type createOutput struct {
		Status int
		Body   coordinator.RolloverCreated
	}
	op(s, api, huma.Operation{OperationID: "rollover-create", Method: http.MethodPost, Path: "/v1/sessions/{session_id}/rollovers",
		Summary: "Tool phase of new_context", Tags: tags, MaxBodyBytes: s.humaBodyLimit(), DefaultStatus: http.StatusCreated,
		Description: "Records a pending rollover of the current window (Local or Tree mode; Tree needs command_context_ready) and answers the new_context tool result. " +
			"201 when created; 200 when a pending rollover requested at an ancestor of leaf_id already exists (joined, merged: true)." + rolloverRefusals},
		func(ctx context.Context, in *createInput) (*createOutput, error) {
			a, created, err := s.svc.CreateRollover(ctx, in.SessionID, in.Body)
			if err != nil {
				return nil, err
			}
			st := http.StatusOK
			if created {
				st = http.StatusCreated
			}
			return &createOutput{Status: st, Body: a}, nil
		})

	type settleInput struct {
		RolloverPath
		Body coordinator.SettleRequest
	}
	op(s, api, huma.Operation{OperationID: "rollover-settle", Method: http.MethodPost, Path: "/v1/sessions/{session_id}/rollovers/{rollover_id}/settle",
		Summary: "Settled phase: take the pending rollover", Tags: tags, MaxBodyBytes: s.humaBodyLimit(),
		Description: "At agent_settled, with Pi's live leaf: checks the session and the leaf's ancestry, materializes the note state and answers the navigation plan " +
			"(Tree: navigateTree(navigate_to, {summarize: true}); Local: navigate_to null). Repeating answers the same plan." + rolloverRefusals},
		func(ctx context.Context, in *settleInput) (*jsonBody[coordinator.SettleAnswer], error) {
			return reply(s.svc.SettleRollover(ctx, in.SessionID, in.RolloverID, in.Body))
		})

	type commitInput struct {
		RolloverPath
		Body coordinator.CommitRequest
	}
	op(s, api, huma.Operation{OperationID: "rollover-commit", Method: http.MethodPost, Path: "/v1/sessions/{session_id}/rollovers/{rollover_id}/commit",
		Summary: "After navigation: the entries to append", Tags: tags, MaxBodyBytes: s.humaBodyLimit(),
		Description: "Tree: validates the branch_summary (parentId = the boundary's parent, fromId = the archived leaf) and answers the archive manifest, the note snapshot and the next boundary; " +
			"Local: the next boundary. Repeating answers the same plan." + rolloverRefusals},
		func(ctx context.Context, in *commitInput) (*jsonBody[coordinator.CommitAnswer], error) {
			return reply(s.svc.CommitRollover(ctx, in.SessionID, in.RolloverID, in.Body))
		})

	op(s, api, huma.Operation{OperationID: "rollover-complete", Method: http.MethodPost, Path: "/v1/sessions/{session_id}/rollovers/{rollover_id}/complete",
		Summary: "Finish a committed rollover", Tags: tags, MaxBodyBytes: s.humaBodyLimit(),
		Description: "Completes the rollover once the committed entries are in the session file (200, state completed). While some are not there yet it answers 202 with the rollover still committed and waiting_for naming them " +
			"(the extension completes right after appending them; Pi may write the boundary a moment later, and contextd completes the rollover when it reads them). Repeating answers the same." + rolloverRefusals,
		Responses: map[string]*huma.Response{"202": {Description: "Committed; waiting_for names the planned entries the session file does not hold yet.",
			// The schema huma registers for coordinator.RolloverInfo (the 200 answer).
			Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{Ref: "#/components/schemas/CoordinatorRolloverInfo"}}}}}},
		func(ctx context.Context, in *RolloverPath) (*completeOutput, error) {
			info, err := s.svc.CompleteRollover(ctx, in.SessionID, in.RolloverID)
			if err != nil {
				return nil, err
			}
			out := &completeOutput{Status: http.StatusOK, Body: info}
			if len(info.WaitingFor) > 0 {
				out.Status = http.StatusAccepted
			}
			return out, nil
		})

	type abortInput struct {
		RolloverPath
		Body coordinator.AbortRequest
	}
	op(s, api, huma.Operation{OperationID: "rollover-abort", Method: http.MethodPost, Path: "/v1/sessions/{session_id}/rollovers/{rollover_id}/abort",
		Summary: "Abort an open rollover", Tags: tags, MaxBodyBytes: s.humaBodyLimit(),
		Description: "Marks a pending, settled or committed rollover aborted with the reason (e.g. navigation cancelled). Repeating answers the same; a completed rollover is 409."},
		func(ctx context.Context, in *abortInput) (*jsonBody[coordinator.RolloverInfo], error) {
			return reply(s.svc.AbortRollover(ctx, in.SessionID, in.RolloverID, in.Body))
		})

	type logInput struct {
		SessionPath
		coordinator.RolloverLogRequest
	}
	op(s, api, huma.Operation{OperationID: "rollover-log", Method: http.MethodGet, Path: "/v1/sessions/{session_id}/rollovers",
		Summary: "Reset log: every rollover of the session", Tags: tags,
		Description: "Every rollover of the session, oldest first: mode, closed and opened window, archived interval (first and last entry ids, entry and byte counts), " +
			"summary digest, note files and bytes at the cut, note writes of the closed window, state (requested, settled, committed, completed, failed, aborted) with times and durations. " +
			"Rollovers the state database lacks (Local new_context, a lost state.db) are rebuilt from the boundaries and manifests on the branch of leaf_id. " +
			"Refusals: 404 unknown session or leaf; 409 off/remote mode; 410 unusable file."},
		func(ctx context.Context, in *logInput) (*jsonBody[coordinator.RolloverLog], error) {
			return reply(s.svc.Rollovers(ctx, in.SessionID, in.LeafID))
		})

	type cutInput struct {
		SessionPath
		WindowID string `path:"window_id" minLength:"1" maxLength:"256" doc:"Full id of a window a rollover closed (the currentWindowId of its boundary)."`
		LeafID   string `query:"leaf_id" maxLength:"256" doc:"Pi's leaf; default the last entry of the file."`
	}
	op(s, api, huma.Operation{OperationID: "window-cut", Method: http.MethodGet, Path: "/v1/sessions/{session_id}/windows/{window_id}/cut",
		Summary: "What a rollover's cut dropped", Tags: tags,
		Description: "The distinctive identifiers of a closed window (file paths, URLs, commit hashes, numbers with units, error lines, names defined in tool outputs; rules in package cut) " +
			"with the history items holding them, each marked carried (in the note state, the next boundary's thread hint or the Tree summary) or dropped. " +
			"Refusals: 404 unknown session, leaf or window; 409 off/remote mode, or the current window (nothing was cut); 410 unusable file."},
		func(ctx context.Context, in *cutInput) (*jsonBody[coordinator.WindowCut], error) {
			return reply(s.svc.WindowCutOf(ctx, in.SessionID, in.WindowID, in.LeafID))
		})

	op(s, api, huma.Operation{OperationID: "rollover-get", Method: http.MethodGet, Path: "/v1/sessions/{session_id}/rollovers/{rollover_id}",
		Summary: "Inspect a rollover", Tags: tags,
		Description: "The rollover's state, window identities, leaves, summary and times. A committed rollover whose entries are all in the file is completed first."},
		func(ctx context.Context, in *RolloverPath) (*jsonBody[coordinator.RolloverInfo], error) {
			return reply(s.svc.GetRollover(ctx, in.SessionID, in.RolloverID))
		})
}

// completeOutput is the answer of …/complete: 200 completed, 202 waiting
// for the planned entries (RolloverInfo.WaitingFor).
type completeOutput struct {
	Status int
	Body   coordinator.RolloverInfo
}
