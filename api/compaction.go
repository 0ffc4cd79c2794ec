package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"contextd/coordinator"
)

// registerCompaction registers POST /v1/sessions/{session_id}/compaction
// (docs/design.md §5.2: leaving Tree mode).
func (s *Server) registerCompaction(api huma.API) {
	type compactionInput struct {
		SessionPath
		Body coordinator.CompactionRequest
	}
	op(s, api, huma.Operation{OperationID: "session-compaction", Method: http.MethodPost, Path: "/v1/sessions/{session_id}/compaction",
		Summary:     "Cumulative summary for leaving Tree mode",
		Description: "For Pi's session_before_compact while Tree mode is active: a readable summary of every earlier window of the branch (its archive summary) and a digest of the current window, plus the current boundary as first_kept_entry_id so the current window stays verbatim. 409 when the session is not in Tree mode or the branch has no open window.",
		Tags:        []string{"windows"}, MaxBodyBytes: s.humaBodyLimit()},
		func(ctx context.Context, in *compactionInput) (*jsonBody[coordinator.CompactionAnswer], error) {
			return reply(s.svc.Compaction(ctx, in.SessionID, in.Body))
		})
}
