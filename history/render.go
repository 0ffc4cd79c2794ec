// Package history implements the seed's Local/Tree `history` operations
// (list_windows, list_items, read_item, search_contents) over a view of
// history items that the caller builds from a Pi session: rendering of
// session entries into items (Render), the four operations with the seed's
// bounds and result shapes (View.ListWindows, View.ListItems, View.ReadItem,
// View.Search), and the text access they need (TextSource).
//
// Sources: docs/codex-contract.md "Tool surface" (namespace `history`
// argument fields), "Local history" (windows, bounds, result shapes),
// "Notes entries" (Tree archive manifests); docs/design.md §4-5 (Tree
// archive items, search and error rules).
//
// The package is pure: no filesystem, HTTP or SQL. All character counts and
// offsets are Unicode code points (Go runes); an invalid UTF-8 byte counts
// as one code point, as utf8.RuneCountInString counts it, and a lone
// surrogate kept from the session file (session/wtf8.go) as one.
package history

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"

	"contextd/session"
)

// Roles of history items (docs/codex-contract.md "Tool surface" `role` enum, docs/codex-contract.md "Local history" rendering).
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
	RoleSystem    = "system" // never produced by Render; accepted as a filter value
	RoleDeveloper = "developer"
)

// Flat router tool names and namespaces (docs/codex-contract.md "Modes" "Transport rule",
// docs/codex-contract.md "Local history" "Tool fields"): on the Codex transport Local and Tree expose one
// `history` and one `notes` tool that take an `action` argument.
const (
	NamespaceHistory = "history"
	NamespaceNotes   = "notes"
)

// Item is one rendered history item (docs/codex-contract.md "Local history" "Normalized
// rendering"). Text is the full item content; Chars is its length in
// Unicode code points (session.CountChars(Text): a lone surrogate is one).
type Item struct {
	Role          string // user, assistant, tool or developer
	ToolName      string // "" for non-tool items
	ToolNamespace string // "" when the call carried no namespace
	Summary       bool   // true only for a branch_summary (Tree archive summary, docs/codex-contract.md "Tree archive")
	Text          string
	Chars         int
}

// Call is what a toolResult needs to know about the toolCall it answers:
// the call's tool name, its namespace as written (toolCall.namespace, ""
// when absent) and, for a flat `history`/`notes` router call whose
// arguments hold a string `action`, that action ("" otherwise).
type Call struct {
	Name      string
	Namespace string
	Action    string
}

// CallRecord is one toolCall of an assistant message: its toolCall id (the
// toolResult's toolCallId) and the Call fields. The indexer stores these so
// that a later toolResult can be rendered with CallLookup.
type CallRecord struct {
	ID string
	Call
}

// CallLookup finds the toolCall with the given id (toolResult.toolCallId),
// as recorded from an earlier assistant message by Calls. It reports false
// when the id is unknown.
type CallLookup func(toolCallID string) (Call, bool)

// Calls lists the toolCall parts of an assistant message in content order
// (nil for anything else: no message, another role, string content). Each
// record carries the call id, name, namespace and, for flat router calls
// (name `history` or `notes` with a string `action` argument), the action.
func Calls(d *session.Decoded) []CallRecord { return AppendCalls(nil, d) }

// AppendCalls is Calls appending to out (an indexer reuses one array for
// every line: a new one per assistant message was garbage).
func AppendCalls(out []CallRecord, d *session.Decoded) []CallRecord {
	if d == nil || d.Message == nil || d.Message.Role != session.RoleAssistant {
		return out
	}
	for i := range d.Message.Content.Parts {
		p := &d.Message.Content.Parts[i]
		if p.Type != "toolCall" {
			continue
		}
		out = append(out, CallRecord{ID: p.ID, Call: callOf(p)})
	}
	return out
}

func callOf(p *session.Part) Call {
	c := Call{Name: p.Name, Namespace: p.Namespace}
	if p.Name == NamespaceHistory || p.Name == NamespaceNotes {
		c.Action = routerAction(p.Arguments)
	}
	return c
}

// routerAction returns the string `action` of a flat router call's
// arguments, or "" when the arguments are not an object or action is not a
// string (session.StringMember: read as the extension's router reads it).
func routerAction(args json.RawMessage) string {
	s, _ := session.StringMember(args, "action")
	return s
}

// toolFields maps a call to the item's (tool_name, tool_namespace): a flat
// router call with an action becomes (action, router name); anything else
// keeps (name, namespace as written).
func (c Call) toolFields() (name, namespace string) {
	if (c.Name == NamespaceHistory || c.Name == NamespaceNotes) && c.Action != "" {
		return c.Action, c.Name
	}
	return c.Name, c.Namespace
}

// Render turns one session entry into a history item, following docs/codex-contract.md
// "Local history" "Normalized rendering" and docs/codex-contract.md "Tree archive". It reports false when the entry is
// not a history item.
//
//   - message, role user / assistant → the same role; role toolResult →
//     role `tool`. Text: string content as is, or the parts joined by "\n"
//     (see renderParts).
//   - message, role bashExecution (a user `!cmd`) → role `user`, Text as
//     Pi's bashExecutionToText (messages.ts) for the fields session.Message
//     keeps: "Ran `<command>`\n```\n<output>\n```", or
//     "Ran `<command>`\n(no output)" when output is empty. exitCode,
//     cancelled and fullOutputPath are not in session.Message, so their
//     trailing notes are not rendered. It is kept even when
//     excludeFromContext is set: history is a record, not context.
//   - message, role custom (a v2 hookMessage migrated by Pi) → role
//     `developer`, like custom_message.
//   - custom_message → role `developer`. The seed names only string content;
//     block content is rendered with the same part rules, joined by "\n".
//     Window boundaries and reminders are custom_messages too: Render
//     renders them; it is the window builder that leaves a window's boundary
//     entry out (docs/codex-contract.md "Local history": the entries *after* a boundary belong to its window).
//   - branch_summary → role `assistant`, Summary true, Text = the summary
//     (possibly ""). The seed uses it only as a Tree archive's summary item
//     (docs/codex-contract.md "Tree archive"); whether other branch summaries on a branch (manual /tree
//     summaries) become items is the view builder's choice.
//   - every other entry (custom, compaction, label, model_change,
//     thinking_level_change, session_info, unknown types) and a message
//     whose body did not decode (d.Message nil) → false.
//
// Tool fields: for an assistant message, tool_name and tool_namespace come
// from the first toolCall part (name, namespace as written); for a
// toolResult, tool_name is message.toolName and tool_namespace the
// namespace of the matching toolCall found through calls (nil calls, or an
// unknown id: no namespace). Flat router calls (docs/codex-contract.md "Modes", "Local history"): when
// the tool name is `history` or `notes` and the call's arguments hold a
// string `action`, tool_name becomes that action and tool_namespace becomes
// `history` / `notes`; for a toolResult the action comes from the matching
// toolCall, so without it the item keeps tool_name `history`/`notes` and no
// namespace.
func Render(e *session.Entry, d *session.Decoded, calls CallLookup) (Item, bool) {
	it, _, ok := render(e, d, calls, nil)
	return it, ok
}

// RenderTo is Render for a caller that copies the text elsewhere at once
// (the indexer writes it to the item text files), typically of a transient
// parse (session.Parser.Scratch, whose text bodies are bytes): the item's
// text is returned as text, not in Item.Text (""), and Item.Chars counts
// it. text is the body itself when the item's text is one body held in
// bytes (string content, one text or thinking part, a summary), valid as
// long as the parse's bytes are; otherwise it is written to buf (reset
// first) and text is buf's bytes, the caller's until buf's next use. The
// same rules as Render: the bytes are those of Render's Item.Text.
func RenderTo(buf *bytes.Buffer, e *session.Entry, d *session.Decoded, calls CallLookup) (it Item, text []byte, ok bool) {
	buf.Reset()
	return render(e, d, calls, buf)
}

// body is a text body of a decoded entry: a string, or bytes (b non-nil)
// of a transient parse (session.Parser.Scratch).
type body struct {
	s string
	b []byte
}

func (t body) len() int { return len(t.s) + len(t.b) }

func (t body) writeTo(w textWriter) {
	if t.b != nil {
		w.Write(t.b)
	} else {
		w.WriteString(t.s)
	}
}

// oneBody returns an item text that is one body t: Render (buf nil) as a
// string; RenderTo as bytes, t's own or t's string written to buf.
func oneBody(t body, buf *bytes.Buffer) (string, []byte) {
	switch {
	case buf == nil && t.b != nil:
		return string(t.b), nil
	case buf == nil:
		return t.s, nil
	case t.b != nil:
		return "", t.b
	}
	buf.WriteString(t.s)
	return "", buf.Bytes()
}

// textWriter is what an assembled item text is written to: a
// strings.Builder (Render) or the caller's bytes.Buffer (RenderTo).
type textWriter interface {
	io.Writer
	io.StringWriter
	io.ByteWriter
	Grow(n int)
}

// render is Render, writing an assembled text to buf when buf is not nil
// (RenderTo).
func render(e *session.Entry, d *session.Decoded, calls CallLookup, buf *bytes.Buffer) (it Item, text []byte, ok bool) {
	if e == nil || d == nil {
		return Item{}, nil, false
	}
	content := func(c *session.Content) {
		it.Text, text = contentText(c, buf)
	}
	switch e.Type {
	case session.TypeMessage:
		m := d.Message
		if m == nil {
			return Item{}, nil, false
		}
		switch m.Role {
		case session.RoleUser:
			it.Role = RoleUser
			content(&m.Content)
		case session.RoleAssistant:
			it.Role = RoleAssistant
			content(&m.Content)
			for i := range m.Content.Parts {
				if p := &m.Content.Parts[i]; p.Type == "toolCall" {
					it.ToolName, it.ToolNamespace = callOf(p).toolFields()
					break
				}
			}
		case session.RoleToolResult:
			it.Role = RoleTool
			content(&m.Content)
			it.ToolName = m.ToolName
			if calls != nil && m.ToolCallID != "" {
				if c, ok := calls(m.ToolCallID); ok {
					if (m.ToolName == NamespaceHistory || m.ToolName == NamespaceNotes) && c.Action != "" {
						it.ToolName, it.ToolNamespace = c.Action, m.ToolName
					} else {
						it.ToolNamespace = c.Namespace
					}
				}
			}
		case session.RoleBashExecution:
			it.Role = RoleUser
			command, output := body{m.Command, m.CommandBytes}, body{m.Output, m.OutputBytes}
			if buf != nil {
				writeBash(buf, command, output)
				text = buf.Bytes()
			} else {
				var b strings.Builder
				writeBash(&b, command, output)
				it.Text = b.String()
			}
		case session.RoleCustom:
			it.Role = RoleDeveloper
			content(&m.Content)
		default:
			return Item{}, nil, false
		}
	case session.TypeCustomMessage:
		it.Role = RoleDeveloper
		if d.Content != nil {
			content(d.Content)
		}
	case session.TypeBranchSummary:
		it.Role = RoleAssistant
		it.Summary = true
		it.Text, text = oneBody(body{d.Summary, d.SummaryBytes}, buf)
	default:
		return Item{}, nil, false
	}
	if buf != nil {
		if text == nil {
			text = buf.Bytes() // no content: ""
		}
		it.Chars = session.CountChars(text)
	} else {
		it.Chars = session.CountChars(it.Text)
	}
	return it, text, true
}

// RenderReplacement renders a context_edit's replacement content (Pi 1.x)
// as the text of the item it replaces, with the content rules of Render;
// Role is left empty (the target's role stays), ToolName and ToolNamespace
// are those of the first toolCall part (they apply to an assistant
// target). A string stands for one text block, as Pi reads a string
// replacement of an assistant or tool result; both render the same.
func RenderReplacement(c *session.Content) Item {
	var it Item
	if c == nil {
		return it
	}
	it.Text = renderContent(c)
	for i := range c.Parts {
		if p := &c.Parts[i]; p.Type == "toolCall" {
			it.ToolName, it.ToolNamespace = callOf(p).toolFields()
			break
		}
	}
	it.Chars = session.CountChars(it.Text)
	return it
}

// writeBash writes Pi's bashExecutionToText (messages.ts) restricted to
// the command and output to b.
func writeBash(b textWriter, command, output body) {
	b.Grow(command.len() + output.len() + 32)
	b.WriteString("Ran `")
	command.writeTo(b)
	b.WriteString("`\n")
	if output.len() > 0 {
		b.WriteString("```\n")
		output.writeTo(b)
		b.WriteString("\n```")
	} else {
		b.WriteString("(no output)")
	}
}

// renderContent renders string content as is, or every part (none
// skipped, empty ones included) joined by "\n".
func renderContent(c *session.Content) string {
	s, _ := contentText(c, nil)
	return s
}

// contentText is renderContent; with buf (RenderTo) the text is returned
// as bytes instead (oneBody), a text it has to assemble written to buf.
func contentText(c *session.Content, buf *bytes.Buffer) (string, []byte) {
	if c.IsString {
		return oneBody(body{c.Text, c.TextBytes}, buf)
	}
	if len(c.Parts) == 1 {
		// One text or thinking block (most tool results and user
		// messages): the text itself, not a copy.
		switch p := &c.Parts[0]; p.Type {
		case "text":
			return oneBody(body{p.Text, p.TextBytes}, buf)
		case "thinking":
			return oneBody(body{p.Thinking, p.ThinkingBytes}, buf)
		}
	}
	// Size the builder once: growing it by doubling allocated about as
	// much again as the text.
	n := len(c.Parts)
	for i := range c.Parts {
		p := &c.Parts[i]
		n += len(p.Text) + len(p.TextBytes) + len(p.Thinking) + len(p.ThinkingBytes) + len(p.MimeType) + len(p.Name) + len(p.Arguments) + len(p.Raw) + 32
	}
	if buf != nil {
		writeParts(buf, c, n)
		return "", buf.Bytes()
	}
	var b strings.Builder
	writeParts(&b, c, n)
	return b.String(), nil
}

// writeParts writes every part of c joined by "\n" to b, grown first by n
// bytes.
func writeParts(b textWriter, c *session.Content, n int) {
	b.Grow(n)
	for i := range c.Parts {
		if i > 0 {
			b.WriteByte('\n')
		}
		renderPart(b, &c.Parts[i])
	}
}

// renderPart writes one content part (docs/codex-contract.md "Local history" "Content parts"):
// text → the text; thinking → the thinking text; image → "[image
// <mimeType>]"; toolCall → {"tool":<name>,"arguments":<arguments>} as
// compact JSON with the arguments compacted but otherwise as written (the
// "arguments" key is left out when the call has none, as JSON.stringify
// drops an undefined value); any other part → its JSON as written,
// compacted.
func renderPart(b textWriter, p *session.Part) {
	switch p.Type {
	case "text":
		body{p.Text, p.TextBytes}.writeTo(b)
	case "thinking":
		body{p.Thinking, p.ThinkingBytes}.writeTo(b)
	case "image":
		b.WriteString("[image ")
		b.WriteString(p.MimeType)
		b.WriteByte(']')
	case "toolCall":
		b.WriteString(`{"tool":`)
		b.WriteString(jsonString(p.Name))
		if len(bytes.TrimSpace(p.Arguments)) > 0 {
			b.WriteString(`,"arguments":`)
			writeCompactJSON(b, p.Arguments)
		}
		b.WriteByte('}')
	default:
		raw := p.Raw
		if len(raw) == 0 {
			// A part built by hand: encode the fields it has.
			raw, _ = json.Marshal(p)
		}
		writeCompactJSON(b, raw)
	}
}

// jsonString encodes s as a JSON string without HTML escaping (as
// JSON.stringify does): appendJSONString's encoding.
func jsonString(s string) string {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
	}
	if plain {
		return `"` + s + `"`
	}
	return string(appendJSONString(make([]byte, 0, len(s)+16), s))
}

// writeCompactJSON writes raw without insignificant whitespace (as
// json.Compact does); raw that is not valid JSON is written as is. JSON
// that has no whitespace outside its strings, as Pi writes it
// (JSON.stringify), is written without a second pass.
func writeCompactJSON(b textWriter, raw []byte) {
	if !hasLooseSpace(raw) {
		b.Write(raw)
		return
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		b.Write(raw)
		return
	}
	b.Write(buf.Bytes())
}

// hasLooseSpace reports whether raw holds a JSON whitespace byte outside
// its strings, lexing strings as json.Compact does (a quote opens and
// closes one, a backslash escapes the next byte). A string's closing quote
// is found with bytes.IndexByte: it is the first quote after an even run
// of backslashes (each pair is one escaped backslash).
func hasLooseSpace(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
			return true
		case '"':
			for {
				j := bytes.IndexByte(raw[i+1:], '"')
				if j < 0 {
					return false
				}
				i += 1 + j
				k := i - 1
				for raw[k] == '\\' {
					k--
				}
				if (i-1-k)%2 == 0 {
					break
				}
			}
		}
	}
	return false
}
