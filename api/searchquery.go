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
// notes search_contents keeps encoding/json's rule (a lone surrogate
// escape is U+FFFD): a note never holds a lone surrogate, because
// append_to_file and write_file refuse one (api/notetext.go) and the
// session file's note entries are decoded with that rule
// (notes.DecodeEvent), so `\ud800` and U+FFFD find the same lines.

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
	if bytes.Contains(data, []byte(`\u`)) {
		// The same member encoding/json picked (case-insensitive key, the
		// last one wins), as raw JSON.
		var raw struct {
			Query json.RawMessage `json:"query"`
		}
		if err := json.Unmarshal(data, &raw); err != nil {
			return err
		}
		if q, err := session.DecodeText(raw.Query); err == nil {
			p.Query = q
		}
	}
	*b = HistorySearchBody(p)
	return nil
}
