package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// compareFile parses the lines of a file with the single-pass decoder and
// with the encoding/json oracle, from the same parser state, fails t where
// they disagree, and returns the number of lines.
func compareFile(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pNew, pOld Parser
	ids := []string{}
	look := func(seq int) (string, bool) {
		if seq < len(ids) {
			return ids[seq], true
		}
		return "", false
	}
	pNew.LookupSeq, pOld.LookupSeq = look, look
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	n := 0
	var off int64
	for sc.Scan() {
		line := sc.Bytes()
		e1, d1, s1 := pNew.ParseLine(line, off)
		e2, d2, s2 := pOld.oracleParseLine(line, off)
		if s1 != s2 || !cmp.Equal(e1, e2) || !cmp.Equal(d1, d2, foldSurrogates) || !cmp.Equal(pNew.Header, pOld.Header) {
			t.Fatalf("%s line %d differs:\nskip %q vs %q\nentry %s\ndecoded %s", path, n+1, s1, s2, cmp.Diff(e2, e1), cmp.Diff(d2, d1))
		}
		if e1 != nil {
			ids = append(ids, e1.ID)
		}
		off += int64(len(line)) + 1
		n++
	}
	return n
}

// TestDecoderAgreesOnFixtures: every line of every fixture decodes to the
// same Entry and Decoded as with encoding/json.
func TestDecoderAgreesOnFixtures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "pi-*", "*.jsonl"))
	if len(files) != 11 {
		t.Fatalf("found %d fixtures, want 11", len(files))
	}
	total := 0
	for _, f := range files {
		total += compareFile(t, f)
	}
	// 1003+1013+914+148+1019+463 (pi-sessions) + 107+63+168+145+119 (pi-tree).
	if total != 5162 {
		t.Errorf("compared %d lines", total)
	}
}

// TestDecoderEdgeCases pins acceptance and values on hand-made lines.
func TestDecoderEdgeCases(t *testing.T) {
	hdr := `{"type":"session","version":3,"id":"s"}`
	cases := []string{
		`{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"x\"y\\\\"}}`,
		`{"type":"message","id":"a","message":{"role":"user","content":"\ud83d\ude00 \ud83d lone \u00e9 \/"}}`,
		`{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"text","text":"t"},{"type":"toolCall","id":"c","name":"notes","arguments":{"action":"read_file", "path" : "x"}},{"type":"odd","v":1},5,null]}}`,
		`{"type":"custom_message","customType":"codex-context-window","content":[],"display":1,"details":{"protocol":1,"contextManagement":{"kind":"window","currentWindowId":"w","windowNumber":2}},"id":"b"}`,
		`{"type":"compaction","id":"c","summary":5,"firstKeptEntryId":"a","fromHook":"yes"}`,
		`{"type":"branch_summary","id":"d","parentId":"a","fromId":"z","summary":""}`,
		`{"type":"label","id":"e","targetId":"a"}`,
		`{"type":"context_edit","id":"f","parentId":"e","targetId":"a","replacement":null}`,
		`{"type":"context_edit","id":"f","targetId":"a","replacement":{"content":"short"}}`,
		`{"type":"context_edit","id":"f","targetId":"a","replacement":{"content":[{"type":"text","text":"t"}],"content":5}}`,
		`{"type":"context_edit","id":"f","targetId":"a","replacement":{"other":1,"content":[{"type":"text","text":"t"},{"type":"image","data":"x","mimeType":"image/png"}]}}`,
		`{"type":"context_edit","id":"f","targetId":"a","replacement":"bare"}`,
		`{"type":"context_edit","id":"f","targetId":"a"}`,
		`{"type":"compaction","id":"c","summary":"s","firstKeptEntryId":"c","systemMessage":{"role":"system","content":"p"}}`,
		`{"type":"compaction","id":"c","summary":"s","systemMessage":null}`,
		`{"type":"usage","id":"u","parentId":"a","kind":"summary","provider":"p","model":"m","usage":{"input":1}}`,
		`{"type":"message","id":"a"}{"type":"message","id":"b"}`,
		`{"type":"message","id":"a",}`,
		`{"type":"message","id":"a","x":01}`,
		`{"type":"message","id":"a","x":1.}`,
		`{"type":"message","id":"a","x":"\x"}`,
		"{\"type\":\"message\",\"id\":\"a\",\"x\":\"tab\there\"}",
		`{"type":"message","id":"a","x":tru}`,
		`[1,2]`,
		`"str"`,
		`{"type":"message","id":"a","x":1e999}`,
		"{\"type\":\"message\",\"id\":\"a\",\"message\":{\"role\":\"user\",\"content\":\"bad \xff utf8\"}}",
		`{"type":"message","id":"a","id":"b","type":"custom","customType":"k","data":{"a":[1,{"b":null}]}}`,
		`  {"type":"message","id":"a"}  `,
		`{"type":"message","id":"h","message":{"role":"hookMessage","content":"x"}}`,
	}
	for _, c := range cases {
		var p1, p2 Parser
		p1.ParseLine([]byte(hdr), 0)
		p2.oracleParseLine([]byte(hdr), 0)
		e1, d1, s1 := p1.ParseLine([]byte(c), 100)
		e2, d2, s2 := p2.oracleParseLine([]byte(c), 100)
		if s1 != s2 || !cmp.Equal(e1, e2) || !cmp.Equal(d1, d2, foldSurrogates) {
			t.Errorf("%s:\nskip %q vs oracle %q\n%s%s", c, s1, s2, cmp.Diff(e2, e1), cmp.Diff(d2, d1, foldSurrogates))
		}
	}
}

// FuzzDecoderAgrees: for any line after a v3 header, the single-pass
// decoder accepts exactly what encoding/json accepts (json.Valid), and
// decodes the same values, escapes included (in keys and in values),
// unless a key equals a known field name only by letter case
// (encoding/json folds case, JSON.parse and the decoder do not).
func FuzzDecoderAgrees(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","id":"a","message":{"role":"user","content":"hi"}}`,
		`{"type":"custom","customType":"codex-context-note","data":{"path":"/root/notes/a","text":"x\ny"},"id":"b","parentId":"a"}`,
		`{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"history","arguments":{"action":"list_items"}}]}}`,
		`{"a":"\u00e9\ud83d"}`, `[]`, `{}{}`, `{"type":"label","id":"x","label":null}`,
		`{"type":"context_edit","id":"e","targetId":"a","replacement":{"content":[{"type":"text","text":"t"}]}}`,
		`{"type":"context_edit","id":"e","targetId":"a","replacement":null}`,
		`{"type":"compaction","id":"c","summary":"s","firstKeptEntryId":"c","systemMessage":{"role":"system","content":"p"}}`,
		// Escapes in keys and values.
		`{"typ\u0065":"message","\u0069d":"\u0061\/b","message":{"role":"us\u0065r","content":"x\ty\u2028\"\\\ud83d\ude00\ud800"}}`,
		`{"type":"custom","customType":"codex-context-note","data":{"p\u0061th":"/root/notes/\u00e9","text":"\b\f\n\r\t"},"id":"b\u0000","parentId":"\udc00"}`,
		`{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","id":"c\"","name":"hist\u006fry","arguments":{"act\u0069on":"r\u00e9ad"}}]}}`,
		`{"type":"message","id":"a","message":{"role":"user","content":"\uD83D\uDE00 \uDBFF\uDFFF \uDFFF\uD800"}}`,
	} {
		f.Add([]byte(s))
	}
	hdr := []byte(`{"type":"session","version":3,"id":"s"}`)
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return
		}
		var p1, p2 Parser
		p1.ParseLine(hdr, 0)
		p2.oracleParseLine(hdr, 0)
		e1, d1, s1 := p1.ParseLine(line, 0)
		e2, d2, s2 := p2.oracleParseLine(line, 0)
		valid := json.Valid(line)
		if (s1 == SkipInvalidJSON) == valid && !isBlank(line) {
			t.Fatalf("accept mismatch: skip %q, json.Valid %v", s1, valid)
		}
		if foldsKey(line) {
			return
		}
		if s1 != s2 || !cmp.Equal(e1, e2) || !cmp.Equal(d1, d2, foldSurrogates) {
			t.Fatalf("decode mismatch: skip %q vs %q\n%s%s", s1, s2, cmp.Diff(e2, e1), cmp.Diff(d2, d1, foldSurrogates))
		}
	})
}

// foldsKey reports whether line may hold a key, once unescaped, that
// equals a known field name only case-insensitively, where the decoders
// differ by design. Keys are read with encoding/json at every depth.
func foldsKey(line []byte) bool {
	var v any
	if json.Unmarshal(line, &v) != nil {
		return false // invalid: both skip the line, whatever its keys
	}
	return foldedKeyIn(v)
}

// knownKeys are the field names the decoders read.
var knownKeys = []string{"type", "id", "parentId", "timestamp", "version", "cwd", "parentSession", "customType", "message", "content", "display", "details", "data", "summary", "fromId", "fromHook", "firstKeptEntryId", "firstKeptEntryIndex", "targetId", "label", "name", "role", "stopReason", "toolName", "toolCallId", "isError", "command", "output", "excludeFromContext", "text", "thinking", "mimeType", "arguments", "namespace", "replacement", "systemMessage"}

func foldedKeyIn(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			for _, known := range knownKeys {
				if k != known && strings.EqualFold(k, known) {
					return true
				}
			}
			if foldedKeyIn(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if foldedKeyIn(x) {
				return true
			}
		}
	}
	return false
}
