package api

import (
	"bytes"
	"encoding/json"

	"contextd/session"
)

// The text of a search query, decoded as the texts it is matched against.
//
// history search_contents matches its query against item texts, which the
// session decoder keeps lone surrogates in: Pi reads its session file with
// JSON.parse, which keeps a `\ud800` escape without its pair as that one
// UTF-16 code unit, and hands it to the model as the same escape
// (JSON.stringify, ECMA-262 "QuoteJSONString"), so the item text holds
// U+D800 in WTF-8 (session/wtf8.go; docs/design.md §4). A query the model
// types with the same text reaches contextd as the same escape (the
// extension sends JSON.stringify of the tool arguments). encoding/json
// would decode it as U+FFFD, which the item does not hold: the query would
// find nothing, or items holding a real U+FFFD. So the history query is
// decoded as item texts are (session.DecodeText): `\ud800` finds the item
// holding that lone surrogate, and a query of U+FFFD (the character, or
// `\ufffd`) finds only items holding U+FFFD, as in Pi the two differ.
//
// notes search_contents decodes its query the same way: append_to_file
// and write_file refuse a lone surrogate (api/notetext.go), but a note
// entry written to the session file without contextd may hold one, which
// notes.DecodeEvent keeps as Pi does; a query holding it finds that line,
// and the search is refused naming the file (notes.MsgFileLoneSurrogate)
// rather than answering U+FFFD in its place. U+FFFD finds only U+FFFD.

// UnmarshalJSON decodes a history search_contents body as encoding/json
// does (huma has validated it against the schema), then decodes its query
// again with session.DecodeText when the body holds a \u escape (only
// then can the two decodings differ). Errors: encoding/json's.
func (b *HistorySearchBody) UnmarshalJSON(data []byte) error {
	type plain HistorySearchBody // the same fields, without this method
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	if err := keptQuery(data, &p.Query); err != nil {
		return err
	}
	*b = HistorySearchBody(p)
	return nil
}

// UnmarshalJSON decodes a notes search_contents body as
// HistorySearchBody.UnmarshalJSON does. Errors: encoding/json's.
func (b *NotesSearchBody) UnmarshalJSON(data []byte) error {
	type plain NotesSearchBody
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	if err := keptQuery(data, &p.Query); err != nil {
		return err
	}
	*b = NotesSearchBody(p)
	return nil
}

// keptQuery decodes the "query" member of the JSON object data again with
// session.DecodeText into query when data holds a \u escape (only then can
// the two decodings differ), picking the member encoding/json picked
// (case-insensitive key, the last one wins). A member that is absent or not
// a string is left as decoded. Errors: encoding/json's.
func keptQuery(data []byte, query *string) error {
	if !bytes.Contains(data, []byte(`\u`)) {
		return nil
	}
	var raw struct {
		Query json.RawMessage `json:"query"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if q, err := session.DecodeText(raw.Query); err == nil {
		*query = q
	}
	return nil
}
