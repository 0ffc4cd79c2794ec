package api

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"

	"contextd"
	"contextd/coordinator"
	"contextd/history"
	"contextd/notes"
	"contextd/remote"
)

// register adds every huma operation.
func (s *Server) register(api huma.API) {
	s.registerSessions(api)
	s.registerCodex(api)
	s.registerCompaction(api)
	s.registerRollovers(api)
}

// op registers one operation: h's errors become problem documents
// (Server.problem) named by the operation id, read once from o.
func op[I, O any](s *Server, api huma.API, o huma.Operation, h func(context.Context, *I) (*O, error)) {
	id := o.OperationID
	huma.Register(api, o, func(ctx context.Context, in *I) (*O, error) {
		out, err := h(ctx, in)
		if err != nil {
			return nil, s.problem(id, err)
		}
		return out, nil
	})
}

// jsonBody is the output of an operation that answers T as its 200 body.
type jsonBody[T any] struct{ Body T }

// reply wraps a coordinator answer as the operation's output.
func reply[T any](v T, err error) (*jsonBody[T], error) {
	if err != nil {
		return nil, err
	}
	return &jsonBody[T]{Body: v}, nil
}

// SessionPath names one session.
type SessionPath struct {
	SessionID string `path:"session_id" minLength:"1" maxLength:"256" pattern:"^[A-Za-z0-9][A-Za-z0-9._:@+-]*$" patternDescription:"letters, digits and . _ : @ + - (a Pi session id is a UUID)" doc:"Pi session id (the session header's id): starts with a letter or digit, then letters, digits and . _ : @ + - (Pi writes UUIDs)."`
}

// SessionList is the answer of GET /v1/sessions.
type SessionList struct {
	Sessions []coordinator.SessionSummary `json:"sessions" doc:"Every session file of the sessions directory and every registered session, by file path."`
}

// IndexUsage is the answer of GET /v1/index: the derived index's disk use
// against its budget (store.IndexUsage; docs/index-and-search.md "Disk
// budget").
type IndexUsage struct {
	UsedBytes    int64 `json:"used_bytes" minimum:"0" doc:"Derived bytes of the indexed sessions: their index.db rows (entry blocks, tool calls, text tail) and their item-text and frame-filter files under texts/, measured after each sync that added bytes. This is what the budget bounds."`
	BudgetBytes  int64 `json:"budget_bytes" minimum:"0" doc:"The budget in bytes (--index-max-bytes); 0: none."`
	DiskBytes    int64 `json:"disk_bytes" minimum:"0" doc:"Size of the index directory's files (index.db, -wal, -shm, texts/): used_bytes plus SQLite's page overhead and the free pages it keeps for reuse after evictions."`
	Sessions     int   `json:"sessions" minimum:"0" doc:"Sessions with a derived index."`
	Evictions    int64 `json:"evictions" minimum:"0" doc:"Sessions evicted (their derived data dropped whole, least recently used first) since contextd started; each is re-indexed from its JSONL when next used."`
	EvictedBytes int64 `json:"evicted_bytes" minimum:"0" doc:"Derived bytes the evictions freed."`
}

// IndexRebuild is the answer of POST /v1/index/rebuild.
type IndexRebuild struct {
	Sessions int `json:"sessions" doc:"Sessions in the index after the rebuild."`
}

type registerInput struct {
	SessionPath
	Body coordinator.RegisterRequest
}

// registerOutput is 201 for a new registration, 200 for an update.
type registerOutput struct {
	Status int
	Body   RegisterAnswer
}

// RegisterAnswer is the answer of PUT /v1/sessions/{id}: the registration
// and what the registering Pi must be told.
type RegisterAnswer struct {
	contextd.Registration
	Problems []coordinator.SessionProblem `json:"problems,omitempty" doc:"concurrent_writers: another live Pi process has this session registered (both are told; docs/design.md §4 Two Pis on one session). interrupted_rollover: a rollover the previous Pi left open before anything of it reached the file was aborted (coordinator/orphan.go)."`
}

type branchInput struct {
	SessionPath
	LeafID string `query:"leaf_id" maxLength:"256" doc:"Leaf entry id; default the last entry of the file."`
	Tail   int    `query:"tail" minimum:"0" maximum:"100000" doc:"Tail form: list only the last N branch ids and context messages, with entry_count and context_count (the whole lengths); 0 or absent lists them all."`
}

type rolloverLoopInput struct {
	SessionPath
	Cursor string `query:"cursor" maxLength:"64" doc:"next_cursor of GET /v1/sessions/{session_id} (rollover_loop) or of the previous page, unchanged; absent for the most recent ids."`
	Limit  int    `query:"limit" minimum:"1" maximum:"100" default:"25" doc:"Window ids per page: 1 to 100, default 25."`
}

type contextInput struct {
	SessionPath
	Body coordinator.ContextRequest
}

type windowsInput struct {
	SessionPath
	Body coordinator.WindowsRequest
}

func (s *Server) registerSessions(api huma.API) {
	tags := []string{"sessions"}
	op(s, api, huma.Operation{OperationID: "list-sessions", Method: http.MethodGet, Path: "/v1/sessions", Tags: tags,
		Summary: "List sessions", Description: "Lists every session file of the sessions directory without indexing any: sessions with a derived index (used since they were last evicted) are synced and listed with their entry count, bytes, leaf, windows, archives and problems; the others from their header and file metadata, with indexed false."},
		func(ctx context.Context, _ *struct{}) (*jsonBody[SessionList], error) {
			list, err := s.svc.ListSessions(ctx)
			if list == nil {
				list = []coordinator.SessionSummary{}
			}
			return reply(SessionList{Sessions: list}, err)
		})

	op(s, api, huma.Operation{OperationID: "get-session", Method: http.MethodGet, Path: "/v1/sessions/{session_id}", Tags: tags,
		Summary: "Session state", Description: "Mode, leaf, current window identity, pending and incomplete rollovers, counts and problems."},
		func(ctx context.Context, in *SessionPath) (*jsonBody[coordinator.SessionState], error) {
			return reply(s.svc.SessionStateOf(ctx, in.SessionID))
		})

	op(s, api, huma.Operation{OperationID: "get-rollover-loop", Method: http.MethodGet, Path: "/v1/sessions/{session_id}/rollover_loop", Tags: tags,
		Summary: "Window ids of a rollover loop, by page", Description: "The window ids of the rollover loop on the active branch (rollover_loop of GET /v1/sessions/{session_id}, which names only the 25 most recent), most recent first, one page at a time. Bounds: limit default 25, max 100. A cursor that contextd did not issue, or issued for another session, answers 400; one of a loop that has since ended or been replaced answers 409 (list again without cursor)."},
		func(ctx context.Context, in *rolloverLoopInput) (*jsonBody[coordinator.RolloverLoopPage], error) {
			return reply(s.svc.RolloverLoopPageOf(ctx, in.SessionID, in.Cursor, in.Limit))
		})

	op(s, api, huma.Operation{OperationID: "register-session", Method: http.MethodPut, Path: "/v1/sessions/{session_id}", Tags: tags,
		Summary: "Register a session", Description: "Stores the session's file, mode and agent name as contextd's own state (kept across index rebuilds). 201 when new, 200 when updated.",
		MaxBodyBytes: s.humaBodyLimit()},
		func(ctx context.Context, in *registerInput) (*registerOutput, error) {
			orphan, err := s.svc.AbortOrphanedRollover(ctx, in.SessionID, in.Body.PID)
			if err != nil {
				return nil, err
			}
			reg, created, err := s.svc.Register(ctx, in.SessionID, in.Body)
			if err != nil {
				return nil, err
			}
			st := http.StatusOK
			if created {
				st = http.StatusCreated
			}
			out := &registerOutput{Status: st, Body: RegisterAnswer{Registration: reg}}
			if p := s.svc.WritersProblem(in.SessionID); p != nil {
				out.Body.Problems = append(out.Body.Problems, *p)
			}
			if orphan != nil {
				out.Body.Problems = append(out.Body.Problems, *orphan)
			}
			return out, nil
		})

	// The answer lists every entry of the branch: it is encoded straight
	// from the tree (Service.BranchJSON, the bytes of
	// BranchAnswer.MarshalJSON) and written as bytes (huma would re-scan a
	// marshaler's output), with its schema documented by hand.
	op(s, api, huma.Operation{OperationID: "get-branch", Method: http.MethodGet, Path: "/v1/sessions/{session_id}/branch", Tags: tags,
		Summary: "Active branch and model-visible context", Description: "Entry ids root→leaf (Pi getBranch) and the model-visible context entries with their roles (Pi buildSessionContext).",
		Responses: map[string]*huma.Response{"200": {Description: "The branch and its context entries.",
			Content: map[string]*huma.MediaType{"application/json": {Schema: api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[coordinator.BranchAnswer](), true, "BranchAnswer")}}}}},
		func(ctx context.Context, in *branchInput) (*codexOutput, error) {
			body, err := s.svc.BranchJSON(ctx, in.SessionID, in.LeafID, in.Tail)
			if err != nil {
				return nil, err
			}
			return &codexOutput{ContentType: "application/json", Body: body}, nil
		})

	op(s, api, huma.Operation{OperationID: "session-context", Method: http.MethodPost, Path: "/v1/sessions/{session_id}/context", Tags: []string{"windows"},
		Summary: "What to project before an LLM call", Description: "Current window identity and boundary (Local slice point, never inside a tool call/result pair) and, in Tree mode, the branch summaries to hide.",
		MaxBodyBytes: s.humaBodyLimit()},
		func(ctx context.Context, in *contextInput) (*jsonBody[coordinator.ContextAnswer], error) {
			return reply(s.svc.Context(ctx, in.SessionID, in.Body))
		})

	op(s, api, huma.Operation{OperationID: "session-windows", Method: http.MethodPost, Path: "/v1/sessions/{session_id}/windows", Tags: []string{"windows"},
		Summary: "Boundary to append", Description: "The codex-context-window custom message to append: window 0 when the branch has no boundary (beginning at the branch's first entry when the branch already holds messages: adoption), else the next window (Local new_context) with the thread hint. In Remote mode only window 0, with the thread_hint the extension passes; the file is parsed for that and not indexed.",
		MaxBodyBytes: s.humaBodyLimit()},
		func(ctx context.Context, in *windowsInput) (*jsonBody[coordinator.WindowsAnswer], error) {
			return reply(s.svc.Windows(ctx, in.SessionID, in.Body))
		})

	op(s, api, huma.Operation{OperationID: "get-index", Method: http.MethodGet, Path: "/v1/index", Tags: []string{"index"},
		Summary: "Index disk use", Description: "The derived index's disk use, its budget (--index-max-bytes) and the evictions that keep it within the budget."},
		func(ctx context.Context, _ *struct{}) (*jsonBody[IndexUsage], error) {
			u, err := s.svc.Index.Usage(ctx)
			return reply(IndexUsage{UsedBytes: u.UsedBytes, BudgetBytes: u.BudgetBytes, DiskBytes: u.DiskBytes, Sessions: u.Sessions,
				Evictions: u.Evictions, EvictedBytes: u.EvictedBytes}, err)
		})

	op(s, api, huma.Operation{OperationID: "rebuild-index", Method: http.MethodPost, Path: "/v1/index/rebuild", Tags: []string{"index"},
		Summary: "Rebuild the derived index", Description: "Drops the SQLite index and item texts and rebuilds them from the session files. Registrations and rollovers are kept."},
		func(ctx context.Context, _ *struct{}) (*jsonBody[IndexRebuild], error) {
			n, err := s.svc.Rebuild(ctx)
			return reply(IndexRebuild{Sessions: n}, err)
		})
}

// CodexHeaders are the caller headers Remote mode forwards (docs/codex-contract.md
// "Backend transport" "Auth headers", remote.ForwardedHeaders). The type is exported
// because huma skips unexported embedded structs: with it unexported, no
// header was ever parsed and every Remote call lacked its credentials.
type CodexHeaders struct {
	Authorization string `header:"Authorization" doc:"Remote mode: Bearer ChatGPT access token, forwarded."`
	AccountID     string `header:"ChatGPT-Account-ID" doc:"Remote mode: forwarded."`
	UserAgent     string `header:"User-Agent"`
	Originator    string `header:"originator" doc:"Remote mode: forwarded."`
	ClientVersion string `header:"version" doc:"Remote mode: forwarded."`
	Truncation    string `header:"x-openai-tool-output-truncation-policy" doc:"Remote mode: forwarded."`
}

func (h CodexHeaders) header() http.Header {
	out := http.Header{}
	for k, v := range map[string]string{"Authorization": h.Authorization, "ChatGPT-Account-ID": h.AccountID, "User-Agent": h.UserAgent,
		"originator": h.Originator, "version": h.ClientVersion, "x-openai-tool-output-truncation-policy": h.Truncation} {
		if v != "" {
			out.Set(k, v)
		}
	}
	return out
}

type codexInput[B any] struct {
	CodexHeaders
	RawBody []byte
	Body    B
}

type codexOutput struct {
	ContentType string `header:"Content-Type"`
	Body        []byte
}

// contextOf is implemented by every Codex body.
type contextOf interface {
	callContext() coordinator.CallContext
}

// Bodies of the Codex mirror: the tool arguments plus context (docs/codex-contract.md "Backend transport").
type (
	ListWindowsBody struct {
		history.ListWindowsArgs
		Context coordinator.CallContext `json:"context"`
	}
	ListItemsBody struct {
		history.ListItemsArgs
		Context coordinator.CallContext `json:"context"`
	}
	ReadItemBody struct {
		history.ReadItemArgs
		Context coordinator.CallContext `json:"context"`
	}
	HistorySearchBody struct {
		history.SearchArgs
		Context coordinator.CallContext `json:"context"`
	}
	ListFilesBody struct {
		notes.ListFilesByPrefixArgs
		Context coordinator.CallContext `json:"context"`
	}
	ReadFileBody struct {
		notes.ReadFileArgs
		Context coordinator.CallContext `json:"context"`
	}
	NotesSearchBody struct {
		notes.SearchArgs
		Context coordinator.CallContext `json:"context"`
	}
	AppendBody struct {
		notes.AppendArgs
		Context coordinator.CallContext `json:"context"`
	}
	WriteBody struct {
		notes.WriteArgs
		Context coordinator.CallContext `json:"context"`
	}
	ThreadHintBody struct {
		Context coordinator.CallContext `json:"context"`
	}
)

func (b *ListWindowsBody) callContext() coordinator.CallContext   { return b.Context }
func (b *ListItemsBody) callContext() coordinator.CallContext     { return b.Context }
func (b *ReadItemBody) callContext() coordinator.CallContext      { return b.Context }
func (b *HistorySearchBody) callContext() coordinator.CallContext { return b.Context }
func (b *ListFilesBody) callContext() coordinator.CallContext     { return b.Context }
func (b *ReadFileBody) callContext() coordinator.CallContext      { return b.Context }
func (b *NotesSearchBody) callContext() coordinator.CallContext   { return b.Context }
func (b *AppendBody) callContext() coordinator.CallContext        { return b.Context }
func (b *WriteBody) callContext() coordinator.CallContext         { return b.Context }
func (b *ThreadHintBody) callContext() coordinator.CallContext    { return b.Context }

// registerCodexOp registers POST /alpha/{ns}/v2/{name}, operation id
// "{ns}-{name}". In Remote mode the raw body is forwarded and the
// backend's bytes are returned unchanged (nothing local is read);
// otherwise local runs the operation and its result R, documented as the
// 200 response, is the body.
func registerCodexOp[B, R any, PB interface {
	*B
	contextOf
}](s *Server, api huma.API, ns, name, desc string, local func(ctx context.Context, cc coordinator.CallContext, body *B) (R, error)) {
	o := huma.Operation{OperationID: ns + "-" + name, Method: http.MethodPost, Path: "/alpha/" + ns + "/v2/" + name,
		Summary: ns + "." + name, Description: desc, Tags: []string{ns}, MaxBodyBytes: s.humaBodyLimit(),
		Responses: map[string]*huma.Response{"200": {Description: "The Codex-shaped result (Local/Tree), or the backend's bytes unchanged (Remote).",
			Content: map[string]*huma.MediaType{"application/json": {Schema: api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[R](), true, ns+name+"Result")}}}}}
	op(s, api, o, func(ctx context.Context, in *codexInput[B]) (*codexOutput, error) {
		cc := PB(&in.Body).callContext()
		_, _, mode, err := s.svc.ModeOf(ctx, cc.SessionID)
		if err != nil {
			return nil, err
		}
		if mode == contextd.ModeRemote {
			body, err := s.remote.Forward(ctx, remote.Call{Namespace: ns, Op: name, Body: in.RawBody, Header: in.header()})
			if err != nil {
				return nil, err
			}
			return &codexOutput{ContentType: "application/json", Body: body}, nil
		}
		res, err := local(ctx, cc, &in.Body)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(withArrays(res))
		if err != nil {
			return nil, err
		}
		return &codexOutput{ContentType: "application/json", Body: b}, nil
	})
}

func (s *Server) registerCodex(api huma.API) {
	registerCodexOp(s, api, "history", "list_windows", "Windows of the session: Local, the spans between boundaries on the active branch; Tree, archived windows then the current one. Bounds: limit default 20, max 100.",
		func(ctx context.Context, cc coordinator.CallContext, b *ListWindowsBody) (history.WindowsResult, error) {
			return s.svc.ListWindows(ctx, cc, b.ListWindowsArgs)
		})
	registerCodexOp(s, api, "history", "list_items", "Items of one window or all windows. Bounds: limit default 10 max 25; max_chars_per_item default and max 1,000; total output ≤ 8,000 characters of item JSON.",
		func(ctx context.Context, cc coordinator.CallContext, b *ListItemsBody) (history.ItemsResult, error) {
			return s.svc.ListItems(ctx, cc, b.ListItemsArgs)
		})
	registerCodexOp(s, api, "history", "read_item", "One item by id (exact or unique suffix) in a window, by code-point range: limit_chars default and max 8,000.",
		func(ctx context.Context, cc coordinator.CallContext, b *ReadItemBody) (history.ReadResult, error) {
			return s.svc.ReadItem(ctx, cc, b.ReadItemArgs)
		})
	registerCodexOp(s, api, "history", "search_contents", "Case-sensitive literal substring search over rendered item text (Tree: summaries first).",
		func(ctx context.Context, cc coordinator.CallContext, b *HistorySearchBody) (history.ItemsResult, error) {
			return s.svc.SearchHistory(ctx, cc, b.SearchArgs)
		})
	registerCodexOp(s, api, "notes", "list_files_by_prefix", "Note files under a prefix. Bounds: max_results default 20, max 100.",
		func(ctx context.Context, cc coordinator.CallContext, b *ListFilesBody) (notes.ListResult, error) {
			return s.svc.ListNoteFiles(ctx, cc, b.ListFilesByPrefixArgs)
		})
	registerCodexOp(s, api, "notes", "read_file", "A note file, optionally a 1-based inclusive line range (negative counts from the end).",
		func(ctx context.Context, cc coordinator.CallContext, b *ReadFileBody) (notes.ReadResult, error) {
			return s.svc.ReadNoteFile(ctx, cc, b.ReadFileArgs)
		})
	registerCodexOp(s, api, "notes", "search_contents", "Case-sensitive literal search per line. Bounds: max_files and max_matches_per_file default 20, max 100.",
		func(ctx context.Context, cc coordinator.CallContext, b *NotesSearchBody) (notes.SearchResult, error) {
			return s.svc.SearchNotes(ctx, cc, b.SearchArgs)
		})
	registerCodexOp(s, api, "notes", "append_to_file", "Plans an append: answers the result and the codex-context-note entry to append. Files stay ≤ 1,000,000 UTF-8 bytes.",
		func(ctx context.Context, cc coordinator.CallContext, b *AppendBody) (coordinator.NoteWrite, error) {
			return s.svc.AppendNote(ctx, cc, b.AppendArgs)
		})
	registerCodexOp(s, api, "notes", "write_file", "Plans a full write: answers the result and the codex-context-note entry to append. Files stay ≤ 1,000,000 UTF-8 bytes.",
		func(ctx context.Context, cc coordinator.CallContext, b *WriteBody) (coordinator.NoteWrite, error) {
			return s.svc.WriteNote(ctx, cc, b.WriteArgs)
		})
	registerCodexOp(s, api, "notes", "thread_hint", "Recent notes and previous window history ids, at most 4,000 bytes.",
		func(ctx context.Context, cc coordinator.CallContext, _ *ThreadHintBody) (coordinator.ThreadHintResult, error) {
			return s.svc.ThreadHint(ctx, cc)
		})
}
