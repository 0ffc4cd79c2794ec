package contextdclient

// Reads results through the Go client oapi-codegen generates from
// openapi/openapi-3.0.yaml; openapi/clients_test.go builds it together with
// the generated code, so a renamed operation, schema or field, or a
// nullable object that is not a pointer, fails the build.

import (
	"context"
	"fmt"
	"net/http"
)

// Usage calls a few routes of a contextd at server with token and
// describes what they answered.
func Usage(ctx context.Context, server, token, sessionID string) ([]string, error) {
	c, err := NewClientWithResponses(server, WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("X-Contextd-Token", token)
		return nil
	}))
	if err != nil {
		return nil, err
	}
	var out []string
	list, err := c.ListSessionsWithResponse(ctx)
	if err != nil {
		return nil, err
	}
	if list.JSON200 == nil {
		return nil, fmt.Errorf("list-sessions: %s", list.Status())
	}
	for _, s := range list.JSON200.Sessions {
		out = append(out, fmt.Sprintf("%s %s %d entries", s.SessionId, s.File, s.Entries))
	}
	st, err := c.GetSessionWithResponse(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if st.JSON200 != nil {
		var w *CoordinatorWindowIdentity = st.JSON200.Window // null when no boundary
		if w != nil {
			out = append(out, fmt.Sprintf("window %d %s", w.WindowNumber, w.CurrentWindowId))
		}
	}
	branch, err := c.GetBranchWithResponse(ctx, sessionID, &GetBranchParams{})
	if err != nil {
		return nil, err
	}
	if branch.JSON200 != nil {
		for _, e := range branch.JSON200.Context {
			if e.Role == CoordinatorBranchEntryRoleToolResult {
				out = append(out, "tool result "+e.EntryId)
			}
		}
	}
	cc := CoordinatorCallContext{SessionId: sessionID}
	read, err := c.HistoryReadItemWithResponse(ctx, &HistoryReadItemParams{}, HistoryReadItemJSONRequestBody{Context: cc, WindowId: "w", ItemId: "i"})
	if err != nil {
		return nil, err
	}
	if read.JSON200 != nil {
		if local, err := read.JSON200.AsHistoryReadResult(); err == nil && local.Item != nil {
			out = append(out, local.Item.Content)
		} else if remote, err := read.JSON200.AsRemoteResult(); err == nil {
			out = append(out, remote.EncryptedOutput)
		}
	}
	file, err := c.NotesReadFileWithResponse(ctx, &NotesReadFileParams{}, NotesReadFileJSONRequestBody{Context: cc, Path: "plan.md"})
	if err != nil {
		return nil, err
	}
	if file.JSON200 != nil {
		if local, err := file.JSON200.AsNotesReadResult(); err == nil && local.File != nil {
			out = append(out, local.File.Content)
		}
	}
	return out, nil
}
