package api

import (
	"bytes"
	"encoding/json"

	"contextd/session"
)

// The text and path of a notes write, decoded without changing them.
//
// encoding/json decodes a lone surrogate escape (`\udc00` without its pair)
// as U+FFFD, so "a\udc00b" would be stored as "a\ufffdb": a note the
// caller did not send, with no word said. append_to_file and write_file
// bodies therefore decode their text and path again with
// session.DecodeText, which keeps such an escape as the surrogate itself
// (WTF-8, session/wtf8.go), and the notes planner refuses it with 422
// naming the surrogate and its position (notes.MsgTextLoneSurrogate; an
// invalid path is refused by notes.ResolveFile). A note is UTF-8 and cannot
// hold half of a UTF-16 pair, so refusing is the faithful answer; the
// session file's note entries never hold one because such a write is never
// planned.

// UnmarshalJSON decodes an append_to_file body as encoding/json does (huma
// has validated it against the schema), then keeps lone surrogates in its
// text and path (keepSurrogates). Errors: encoding/json's.
func (b *AppendBody) UnmarshalJSON(data []byte) error {
	type plain AppendBody // the same fields, without this method
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	if err := keepSurrogates(data, &p.Path, &p.Text); err != nil {
		return err
	}
	*b = AppendBody(p)
	return nil
}

// UnmarshalJSON decodes a write_file body as AppendBody.UnmarshalJSON does.
func (b *WriteBody) UnmarshalJSON(data []byte) error {
	type plain WriteBody
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	if err := keepSurrogates(data, &p.Path, &p.Text); err != nil {
		return err
	}
	*b = WriteBody(p)
	return nil
}

// keepSurrogates re-decodes the "path" and "text" members of the JSON
// object data with session.DecodeText when data holds a \u escape (only
// then can the two decodings differ), picking the member encoding/json
// picked. A member that is absent or not a string is left as decoded.
func keepSurrogates(data []byte, path, text *string) error {
	if !bytes.Contains(data, []byte(`\u`)) {
		return nil
	}
	var raw struct {
		Path json.RawMessage `json:"path"`
		Text json.RawMessage `json:"text"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if s, err := session.DecodeText(raw.Path); err == nil {
		*path = s
	}
	if s, err := session.DecodeText(raw.Text); err == nil {
		*text = s
	}
	return nil
}
