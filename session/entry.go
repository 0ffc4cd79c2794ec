// Package session models Pi's session JSONL files (Pi 0.85, format versions
// 1, 2 and 3): the header, entries, the entry tree, the active branch and the
// model-visible context, with the same rules as Pi's
// dist/core/session-manager.js (loadEntriesFromFile, migrateV1ToV2,
// migrateV2ToV3, getBranch, buildContextEntries).
//
// The package knows nothing about HTTP or SQL. It never writes a file.
package session

import (
	"encoding/json"
)

// Entry types written by Pi 0.85 (session-manager.ts SessionEntry). Any other
// type string is kept as a tree node and contributes nothing to context.
const (
	TypeSession             = "session"
	TypeMessage             = "message"
	TypeModelChange         = "model_change"
	TypeThinkingLevelChange = "thinking_level_change"
	TypeCompaction          = "compaction"
	TypeBranchSummary       = "branch_summary"
	TypeCustom              = "custom"
	TypeCustomMessage       = "custom_message"
	TypeLabel               = "label"
	TypeSessionInfo         = "session_info"
	// Pi 1.x (docs/session-format.md of 1.6.0): usage records and
	// context edits. Pi 0.85 reads both as unknown types (tree nodes, no
	// context message).
	TypeUsage       = "usage"        // {kind, provider, model, usage, note?}: a tree node, no context message
	TypeContextEdit = "context_edit" // {targetId, replacement: {content} | null} (Pi 0.87.0)
)

// Message roles stored in `message` entries (pi-ai types.ts, Pi messages.ts).
// Role "hookMessage" in a v1/v2 file is read as RoleCustom, as migrateV2ToV3
// does; Pi leaves it unchanged in a v3 file.
const (
	RoleUser          = "user"
	RoleAssistant     = "assistant"
	RoleToolResult    = "toolResult"
	RoleBashExecution = "bashExecution"
	RoleCustom        = "custom"
	// RoleSystem: Pi 1.x system prompt messages ({sections, toolsAdded,
	// toolsRemoved}), written at a session's first request and whenever
	// the prompt or tools change.
	RoleSystem = "system"
)

// Roles of context messages that are not stored message roles (Pi
// buildSessionContext): a custom_message is sent as RoleCustom, a branch
// summary as RoleBranchSummary, a compaction as RoleCompactionSummary.
// RoleUnknown is contextd's: a message entry without a role.
const (
	RoleBranchSummary     = "branchSummary"
	RoleCompactionSummary = "compactionSummary"
	RoleUnknown           = "unknown"
)

// ContextRoles are the roles of the messages Pi builds a model context
// from, as Pi declares them: user, assistant and toolResult are pi-ai's
// Message union (dist/types.d.ts UserMessage, AssistantMessage,
// ToolResultMessage); bashExecution, custom, branchSummary and
// compactionSummary are the coding agent's CustomAgentMessages
// (dist/core/messages.d.ts, Pi 0.85.1 and 1.6.0); system is pi-ai 1.x's
// SystemMessage (Pi 1.6.0). A message entry may store any other string as
// its role; ContextRole reports it as stored.
var ContextRoles = []string{RoleUser, RoleAssistant, RoleToolResult, RoleBashExecution, RoleCustom, RoleSystem, RoleBranchSummary, RoleCompactionSummary}

// KnownContextRole reports whether role is one of ContextRoles.
func KnownContextRole(role string) bool {
	for _, r := range ContextRoles {
		if r == role {
			return true
		}
	}
	return false
}

// Custom types of the context-management protocol (docs/codex-contract.md
// "Window boundaries", "Notes entries").
const (
	CustomTypeWindow       = "codex-context-window"        // custom_message: window boundary
	CustomTypeNote         = "codex-context-note"          // custom: one note write/append
	CustomTypeNoteSnapshot = "codex-context-note-snapshot" // custom: full note state
	CustomTypeTreeArchive  = "codex-context-tree-archive"  // custom: Tree archive manifest
)

// Header is the first parsed line of a session file (`type: "session"`).
type Header struct {
	// Version is the header's `version`; 1 when absent (legacy v1 files).
	Version       int    `json:"version"`
	ID            string `json:"id"`
	Timestamp     string `json:"timestamp"`
	Cwd           string `json:"cwd"`
	ParentSession string `json:"parentSession,omitempty"`
}

// Entry is the indexed form of one parsed, non-header line: the tree fields,
// the file position, and the few typed fields context, windows, notes and
// archives need. Content bodies are not kept here; they are read from the
// JSONL (by Offset/Length) or from the item text store on demand.
type Entry struct {
	Seq    int   `json:"seq"`    // 0-based index among the file's entries in file order (header excluded)
	Line   int   `json:"line"`   // 1-based physical line number in the file
	Offset int64 `json:"offset"` // byte offset of the line's first byte
	Length int   `json:"length"` // line length in bytes, without the terminating "\n"

	ID       string `json:"id"`                 // Pi entry id; deterministic synthetic id for v1 files (SyntheticID)
	ParentID string `json:"parentId,omitempty"` // "" for a root (JSON null, missing or "")
	Type     string `json:"type"`               // entry type; unknown types are kept
	// Timestamp is the entry's ISO-8601 timestamp. The store's in-memory
	// tree keeps it only for branch_summary entries (its SQLite rows keep
	// every entry's).
	Timestamp string `json:"timestamp,omitempty"`

	CustomType string `json:"customType,omitempty"` // custom, custom_message
	Role       string `json:"role,omitempty"`       // message: message.role (hookMessage → custom)
	StopReason string `json:"stopReason,omitempty"` // message (assistant): stopReason

	FromHook     bool `json:"fromHook,omitempty"`     // branch_summary, compaction
	EmptySummary bool `json:"emptySummary,omitempty"` // branch_summary with "" summary: no context message
	// SystemMessage: a compaction with a systemMessage (Pi 1.x); under
	// the 1.x rules it yields the system message before its summary.
	SystemMessage bool `json:"systemMessage,omitempty"`
	// Edit is a context_edit's kind: EditOmit (replacement null),
	// EditReplace (replacement.content is a string or an array), or
	// EditNone for an edit Pi's appendContextEdit would refuse to write
	// (no replacement, or content of another type); contextd ignores
	// those.
	Edit EditKind `json:"edit,omitempty"`

	// Refs holds the fields of the rarer entry types (branch summaries,
	// compactions, labels, session names, context edits); nil when they
	// are all empty, so that the entry of a message, the common case,
	// stays small (a 1 GiB session keeps a quarter-million entries in
	// memory). Read them with FromID, FirstKeptEntryID, TargetID, Label
	// and Name; set them with SetRefs.
	Refs *EntryRefs `json:"refs,omitempty"`

	// Window is set for a `custom_message` with customType
	// codex-context-window whose details.contextManagement is present.
	Window *WindowMarker `json:"window,omitempty"`
}

// Same reports whether e and o hold the same values in every field (Refs
// and Window compared by value).
func (e Entry) Same(o *Entry) bool {
	if e.Seq != o.Seq || e.Line != o.Line || e.Offset != o.Offset || e.Length != o.Length ||
		e.ID != o.ID || e.ParentID != o.ParentID || e.Type != o.Type || e.Timestamp != o.Timestamp ||
		e.CustomType != o.CustomType || e.Role != o.Role || e.StopReason != o.StopReason ||
		e.FromHook != o.FromHook || e.EmptySummary != o.EmptySummary || e.SystemMessage != o.SystemMessage || e.Edit != o.Edit {
		return false
	}
	if (e.Refs == nil) != (o.Refs == nil) || e.Refs != nil && *e.Refs != *o.Refs {
		return false
	}
	return (e.Window == nil) == (o.Window == nil) && (e.Window == nil || *e.Window == *o.Window)
}

// EntryRefs are the Entry fields of the rarer entry types.
type EntryRefs struct {
	FromID           string `json:"fromId,omitempty"`           // branch_summary
	FirstKeptEntryID string `json:"firstKeptEntryId,omitempty"` // compaction (v1 firstKeptEntryIndex mapped)
	TargetID         string `json:"targetId,omitempty"`         // label, context_edit
	Label            string `json:"label,omitempty"`            // label ("" = clear)
	Name             string `json:"name,omitempty"`             // session_info
}

// SetRefs sets e.Refs to r, or to nil when every field of r is empty.
func (e *Entry) SetRefs(r EntryRefs) {
	if r == (EntryRefs{}) {
		e.Refs = nil
		return
	}
	e.Refs = &r
}

// FromID is a branch_summary's fromId ("" otherwise).
func (e Entry) FromID() string {
	if e.Refs == nil {
		return ""
	}
	return e.Refs.FromID
}

// FirstKeptEntryID is a compaction's firstKeptEntryId (a v1
// firstKeptEntryIndex mapped to its id; "" otherwise).
func (e Entry) FirstKeptEntryID() string {
	if e.Refs == nil {
		return ""
	}
	return e.Refs.FirstKeptEntryID
}

// TargetID is a label's or a context_edit's targetId ("" otherwise).
func (e Entry) TargetID() string {
	if e.Refs == nil {
		return ""
	}
	return e.Refs.TargetID
}

// Label is a label entry's label ("" clears it, and for other types).
func (e Entry) Label() string {
	if e.Refs == nil {
		return ""
	}
	return e.Refs.Label
}

// Name is a session_info entry's name ("" otherwise).
func (e Entry) Name() string {
	if e.Refs == nil {
		return ""
	}
	return e.Refs.Name
}

// EditKind is the kind of a context_edit entry (Entry.Edit).
type EditKind uint8

// Kinds of context edits.
const (
	EditNone    EditKind = iota // not a context_edit, or one contextd ignores
	EditOmit                    // replacement null: the target leaves the context
	EditReplace                 // replacement {content}: the target's content is swapped
)

// WindowMarker is details.contextManagement of a codex-context-window custom
// message (docs/codex-contract.md "Window boundaries"). Only Kind == "window"
// opens a window; "reminder", "urgent", "fallback" and "identity" do not.
type WindowMarker struct {
	MarkerID           string `json:"markerId,omitempty"` // details.id
	Kind               string `json:"kind"`
	FirstWindowID      string `json:"firstWindowId,omitempty"`
	CurrentWindowID    string `json:"currentWindowId,omitempty"`
	PreviousWindowID   string `json:"previousWindowId,omitempty"`
	WindowNumber       int    `json:"windowNumber"`
	TrimPreviousWindow bool   `json:"trimPreviousWindow,omitempty"`
	AgentName          string `json:"agentName,omitempty"`
	// StartEntryID, on a boundary of kind "window", is the entry its
	// window begins at when that entry comes before the boundary: context
	// management was turned on for a branch that already had entries
	// (adoption, docs/design.md §4 "Adoption"), and the window holds the
	// branch's entries from this one on. "" for every other boundary: the
	// window begins after its boundary.
	StartEntryID string `json:"startEntryId,omitempty"`
}

// IsBoundary reports whether e is a window boundary: a codex-context-window
// custom message of kind "window" with a non-empty currentWindowId.
func (e Entry) IsBoundary() bool {
	return e.Type == TypeCustomMessage && e.CustomType == CustomTypeWindow &&
		e.Window != nil && e.Window.Kind == "window" && e.Window.CurrentWindowID != ""
}

// Decoded is a fully decoded entry line, produced by ParseLine alongside the
// Entry. It carries the bodies needed to render history items and to replay
// notes and manifests; callers keep it only as long as they need it.
type Decoded struct {
	Message *Message // message entries
	Content *Content // custom_message content
	Summary string   // branch_summary, compaction
	// SummaryBytes is the summary of a transient parse (Parser.Scratch),
	// valid until the next line is parsed; Summary is then "". Nil
	// otherwise. The same holds for every ...Bytes field below.
	SummaryBytes []byte
	Data         json.RawMessage // custom entries: data (nil when absent)
	Details      json.RawMessage // custom_message, compaction, branch_summary: details
	Display      bool            // custom_message: display
	// Replacement is a context_edit's replacement content (Edit ==
	// EditReplace), as written: a string for an assistant or toolResult
	// target stands for one text block.
	Replacement *Content
}

// Message is a stored AgentMessage (pi-ai types.ts; Pi messages.ts).
type Message struct {
	Role       string  `json:"role"`
	Content    Content `json:"content"`
	StopReason string  `json:"stopReason,omitempty"`
	ToolName   string  `json:"toolName,omitempty"`   // toolResult
	ToolCallID string  `json:"toolCallId,omitempty"` // toolResult
	IsError    bool    `json:"isError,omitempty"`    // toolResult
	// bashExecution fields
	Command            string `json:"command,omitempty"`
	Output             string `json:"output,omitempty"`
	CommandBytes       []byte `json:"-"` // Command of a transient parse (Decoded.SummaryBytes)
	OutputBytes        []byte `json:"-"` // Output of a transient parse
	ExcludeFromContext bool   `json:"excludeFromContext,omitempty"`
	// custom (migrated hookMessage) fields
	CustomType string `json:"customType,omitempty"`
}

// Content is a message content value: either a plain string (Text, with
// IsString set) or a list of content blocks.
type Content struct {
	IsString  bool
	Text      string
	TextBytes []byte // Text of a transient parse (Decoded.SummaryBytes)
	Parts     []Part
}

// Part is one content block: text, thinking, image or toolCall; any other
// block keeps its JSON in Raw.
type Part struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`     // text
	Thinking string `json:"thinking,omitempty"` // thinking
	// TextBytes and ThinkingBytes are Text and Thinking of a transient
	// parse (Decoded.SummaryBytes).
	TextBytes     []byte          `json:"-"`
	ThinkingBytes []byte          `json:"-"`
	MimeType      string          `json:"mimeType,omitempty"`  // image (data is not kept)
	ID            string          `json:"id,omitempty"`        // toolCall
	Name          string          `json:"name,omitempty"`      // toolCall
	Arguments     json.RawMessage `json:"arguments,omitempty"` // toolCall
	Namespace     string          `json:"namespace,omitempty"` // toolCall (0.85 OpenAI Responses)
	Raw           json.RawMessage `json:"-"`                   // any block: its JSON as written
}
