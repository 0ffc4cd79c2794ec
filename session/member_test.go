package session

import "testing"

// StringMember reads obj[key] as JavaScript does after JSON.parse: each
// want is what node 22 gives for JSON.parse(raw).action when it is a
// string; ok is false where it is not one or JSON.parse throws. The one
// difference is written down: a lone surrogate escape, which JavaScript
// keeps, becomes U+FFFD (encoding/json's rule, which routerAction had).
func TestStringMember(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want string
		ok   bool
	}{
		{`{"action":"read_item","item_id":"x"}`, "read_item", true},
		{` { "item_id" : [1,{"a":"b"}] , "action" : "search" } `, "search", true},
		{`{"action":"a","action":"b"}`, "b", true},      // the last wins
		{`{"\u0061ction":"list"}`, "list", true},        // an escaped key
		{`{"action":"x\ny\u00e9"}`, "x\ny\u00e9", true}, // escapes decoded
		{`{"action":"\ud800"}`, "\ufffd", true},         // a lone surrogate
		{`{"Action":"read_item"}`, "", false},           // case-sensitive
		{`{"action":7}`, "", false},                     // not a string
		{`{"action":null}`, "", false},
		{`{}`, "", false},
		{`["action","x"]`, "", false},    // not an object
		{`{"action":"x"} {}`, "", false}, // two values
		{`{"action":"x",}`, "", false},   // not JSON
		{``, "", false},
	} {
		got, ok := StringMember([]byte(tc.raw), "action")
		if got != tc.want || ok != tc.ok {
			t.Errorf("StringMember(%s) = %q, %v; want %q, %v", tc.raw, got, ok, tc.want, tc.ok)
		}
	}
}
