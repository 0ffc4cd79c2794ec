package history

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"contextd/session"
)

// Item texts in history answers may hold lone surrogates in their WTF-8
// form (session/wtf8.go: Pi's JSON.parse keeps a lone `\ud83d` escape of
// the session file as that code unit). encoding/json would write each of
// their bytes as U+FFFD; ItemPreview and ItemBody write each such
// surrogate as its `\uXXXX` escape instead (lower-case hex, as
// JSON.stringify writes it: ECMA-262 "QuoteJSONString"), so the answer
// holds the escape the session file holds and the extension hands the
// model the string Pi would. Everything else is encoding/json's encoding.

// text is an item text that encodes as described above.
type text string

// MarshalJSON encodes t as a JSON string without HTML escaping (the
// encoder that calls it applies its own).
func (t text) MarshalJSON() ([]byte, error) {
	return t.appendJSON(make([]byte, 0, len(t)+8)), nil
}

// appendJSON appends MarshalJSON's encoding of t to b: appendJSONString's,
// with each WTF-8 surrogate written as its \uXXXX escape.
func (t text) appendJSON(b []byte) []byte {
	s := string(t)
	if strings.IndexByte(s, 0xED) < 0 {
		return appendJSONString(b, s)
	}
	b = append(b, '"')
	run := 0 // start of the bytes not yet written
	for i := 0; i < len(s); {
		r, ok := session.Surrogate(s[i:])
		if !ok {
			i++
			continue
		}
		b = appendJSONStringBody(b, s[run:i])
		const hex = "0123456789abcdef"
		b = append(b, '\\', 'u', hex[r>>12&0xF], hex[r>>8&0xF], hex[r>>4&0xF], hex[r&0xF])
		i += 3
		run = i
	}
	b = appendJSONStringBody(b, s[run:])
	return append(b, '"')
}

// MarshalJSON encodes p with its content's lone surrogates as escapes:
// the fields of ItemPreview in order, under their json names, with
// tool_name, tool_namespace and summary left out when empty, as
// encoding/json encodes itemPreviewJSON (TestPreviewJSONIsEncodingJSONs).
// Written out here, not through an encoder: encoding/json validates and
// compacts a Marshaler's output again, and a search answer measures every
// preview's size (PreviewJSONChars) before it is encoded; that was a
// sixth of the CPU of a search with a hit (docs/benchmarks.md, "Search
// with a hit: previews encoded once").
func (p ItemPreview) MarshalJSON() ([]byte, error) {
	return p.appendJSON(make([]byte, 0, p.jsonSizeHint())), nil
}

// jsonSizeHint is a capacity for p's encoding: its strings and the
// field names.
func (p ItemPreview) jsonSizeHint() int {
	return len(p.WindowID) + len(p.ItemID) + len(p.Role) + len(p.ToolName) + len(p.ToolNamespace) + len(p.TruncatedContent) + 160
}

// appendJSON appends MarshalJSON's encoding of p to b.
func (p ItemPreview) appendJSON(b []byte) []byte {
	b = append(b, `{"window_id":`...)
	b = appendJSONString(b, p.WindowID)
	b = append(b, `,"item_id":`...)
	b = appendJSONString(b, p.ItemID)
	b = append(b, `,"role":`...)
	b = appendJSONString(b, p.Role)
	if p.ToolName != "" {
		b = append(b, `,"tool_name":`...)
		b = appendJSONString(b, p.ToolName)
	}
	if p.ToolNamespace != "" {
		b = append(b, `,"tool_namespace":`...)
		b = appendJSONString(b, p.ToolNamespace)
	}
	if p.Summary {
		b = append(b, `,"summary":true`...)
	}
	b = append(b, `,"truncated_content":`...)
	b = text(p.TruncatedContent).appendJSON(b)
	b = append(b, `,"content_chars":`...)
	b = strconv.AppendInt(b, int64(p.ContentChars), 10)
	return append(b, '}')
}

// itemBodyJSON is ItemBody as it is encoded (same fields, order and names).
type itemBodyJSON struct {
	WindowID        string `json:"window_id"`
	ItemID          string `json:"item_id"`
	Role            string `json:"role"`
	ToolName        string `json:"tool_name,omitempty"`
	ToolNamespace   string `json:"tool_namespace,omitempty"`
	Summary         bool   `json:"summary,omitempty"`
	Content         text   `json:"content"`
	TotalChars      int    `json:"total_chars"`
	NextOffsetChars *int   `json:"next_offset_chars,omitempty"`
}

// MarshalJSON encodes b with its content's lone surrogates as escapes.
func (b ItemBody) MarshalJSON() ([]byte, error) {
	return marshalPlain(itemBodyJSON{b.WindowID, b.ItemID, b.Role, b.ToolName, b.ToolNamespace, b.Summary, text(b.Content), b.TotalChars, b.NextOffsetChars})
}

// marshalPlain is encoding/json's encoding of v without HTML escaping and
// without the encoder's trailing newline.
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
