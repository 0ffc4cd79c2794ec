package history

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestEncodedFormsMirrorResults: itemPreviewJSON and itemBodyJSON have
// ItemPreview's and ItemBody's fields, in order, with the same names and
// json tags (the content field typed text), so the encoding is the one
// the OpenAPI document describes.
func TestEncodedFormsMirrorResults(t *testing.T) {
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[ItemPreview](), reflect.TypeFor[itemPreviewJSON]()},
		{reflect.TypeFor[ItemBody](), reflect.TypeFor[itemBodyJSON]()},
	} {
		a, b := pair[0], pair[1]
		if a.NumField() != b.NumField() {
			t.Fatalf("%s has %d fields, %s %d", a, a.NumField(), b, b.NumField())
		}
		for i := range a.NumField() {
			fa, fb := a.Field(i), b.Field(i)
			if fa.Name != fb.Name || fa.Tag.Get("json") != fb.Tag.Get("json") {
				t.Errorf("%s field %d: %s %q, %s has %s %q", a, i, fa.Name, fa.Tag.Get("json"), b, fb.Name, fb.Tag.Get("json"))
			}
			if fa.Type != fb.Type && !(fa.Type.Kind() == reflect.String && fb.Type == reflect.TypeFor[text]()) {
				t.Errorf("%s.%s is %s, its encoded form %s", a, fa.Name, fa.Type, fb.Type)
			}
		}
	}
}

// itemPreviewJSON is ItemPreview as encoding/json encodes it (same
// fields, order and names; the content typed text): the reference of
// ItemPreview.MarshalJSON, which writes the same bytes by hand.
type itemPreviewJSON struct {
	WindowID         string `json:"window_id"`
	ItemID           string `json:"item_id"`
	Role             string `json:"role"`
	ToolName         string `json:"tool_name,omitempty"`
	ToolNamespace    string `json:"tool_namespace,omitempty"`
	Summary          bool   `json:"summary,omitempty"`
	TruncatedContent text   `json:"truncated_content"`
	ContentChars     int    `json:"content_chars"`
}

// TestPreviewJSONIsEncodingJSONs: ItemPreview.MarshalJSON gives, byte for
// byte, encoding/json's encoding of itemPreviewJSON (no HTML escaping),
// and PreviewJSONChars its code points, for previews whose strings hold
// each kind of character JSON escapes or encoding/json replaces: quotes,
// backslashes, control characters, <>&, U+2028/U+2029, invalid UTF-8,
// WTF-8 lone surrogates and astral code points; with and without the
// omitempty fields. One case is written out by hand.
func TestPreviewJSONIsEncodingJSONs(t *testing.T) {
	hand := ItemPreview{WindowID: "w1", ItemID: "i\"2", Role: "tool", ToolName: "bash", Summary: true, TruncatedContent: "a\n<b>\xed\xa0\xbd", ContentChars: 7}
	wantHand := `{"window_id":"w1","item_id":"i\"2","role":"tool","tool_name":"bash","summary":true,"truncated_content":"a\n<b>\ud83d","content_chars":7}`
	if got, _ := hand.MarshalJSON(); string(got) != wantHand {
		t.Fatalf("MarshalJSON = %s, want %s", got, wantHand)
	}
	pieces := []string{"", "plain", `"`, `\`, "\n", "\t", "\x00", "\x1f", "\x7f", "<>&", "\u2028", "\u2029", "\xff", "\xc3", "\xed\xa0\xbd", "\xed\xb8\x80", "é", "😀", "\U0010FFFF", " "}
	r := rand.New(rand.NewPCG(7, 11))
	str := func() string {
		var b strings.Builder
		for range r.IntN(6) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	for i := range 5000 {
		p := ItemPreview{WindowID: str(), ItemID: str(), Role: str(), ToolName: str(), ToolNamespace: str(), Summary: r.IntN(2) == 0, TruncatedContent: str(), ContentChars: r.IntN(1<<20) - 3}
		want, err := marshalPlain(itemPreviewJSON{p.WindowID, p.ItemID, p.Role, p.ToolName, p.ToolNamespace, p.Summary, text(p.TruncatedContent), p.ContentChars})
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.MarshalJSON()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("case %d %#v: MarshalJSON = %s (%v), encoding/json %s", i, p, got, err, want)
		}
		if n := PreviewJSONChars(p); n != utf8.RuneCount(want) {
			t.Fatalf("case %d: PreviewJSONChars = %d, want %d", i, n, utf8.RuneCount(want))
		}
	}
}
