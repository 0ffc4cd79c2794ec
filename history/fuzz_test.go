package history

import (
	"strings"
	"testing"
	"unicode/utf8"

	"contextd/session"
)

// FuzzReadItemOffsets reads one item at arbitrary (offset, limit) and then
// pages through it with the fuzzed limit. Properties: no panic; the range
// is what SliceChars over the clamped arguments gives (for valid UTF-8,
// the same as slicing []rune); content is valid UTF-8 whenever the text
// is; next_offset_chars is offset + returned code points and present
// exactly when content remains; the pages concatenate to the text byte
// for byte (also for invalid UTF-8, where each invalid byte is one code
// point and a WTF-8 surrogate one: session.CountChars).
func FuzzReadItemOffsets(f *testing.F) {
	const maxFuzzText = 4096
	f.Add("", 0, 0)
	f.Add("hello", 2, 2)
	f.Add("aé👍世e\u0301z", 5, 1)
	f.Add("👨‍👩‍👧 family", -3, 4)
	f.Add("a\xffb\xe4\xb8c", 1, 2)
	f.Add(strings.Repeat("世", 1300), 100, 8001)
	f.Fuzz(func(t *testing.T, text string, offset, limit int) {
		if len(text) > maxFuzzText {
			// Long texts are covered by TestReadItemPagesLargeItem; here they
			// only make coverage-guided minimization crawl.
			t.Skip()
		}
		total := session.CountChars(text)
		b := newBuilder().window("w").item("id", "user", "", "", false, text)
		r, err := b.v.ReadItem(ReadItemArgs{ItemID: "id", WindowID: "w", OffsetChars: &offset, LimitChars: &limit})
		if err != nil || r.Item == nil {
			t.Fatalf("read: %v %+v", err, r.Item)
		}
		it := r.Item
		o := min(max(offset, 0), total)
		l := ClampLimit(&limit, DefaultReadLimitChars, MaxReadLimitChars)
		if want := SliceChars(text, o, l); it.Content != want {
			t.Fatalf("content %q, want %q", it.Content, want)
		}
		if utf8.ValidString(text) {
			rs := []rune(text)
			if want := string(rs[o:min(o+l, len(rs))]); it.Content != want {
				t.Fatalf("content %q, want rune slice %q", it.Content, want)
			}
			if !utf8.ValidString(it.Content) {
				t.Fatalf("invalid UTF-8 content %q", it.Content)
			}
		}
		n := session.CountChars(it.Content)
		if it.TotalChars != total || n > l {
			t.Fatalf("total %d (want %d), %d chars returned (limit %d)", it.TotalChars, total, n, l)
		}
		if (it.NextOffsetChars != nil) != (o+n < total) || it.NextOffsetChars != nil && *it.NextOffsetChars != o+n {
			t.Fatalf("next %v, offset %d + %d of %d", it.NextOffsetChars, o, n, total)
		}
		// Page through the whole item, with the fuzzed limit unless that
		// would take more than about 64 pages (each page rescans the text
		// from its start, and coverage-guided minimization runs this body
		// many times).
		pageLimit := limit
		if l < total/64 {
			pageLimit = min(total/64+1, MaxReadLimitChars)
		}
		var sb strings.Builder
		off := 0
		for pages := 0; ; pages++ {
			if pages > total+1 {
				t.Fatal("paging does not terminate")
			}
			r, err := b.v.ReadItem(ReadItemArgs{ItemID: "id", WindowID: "w", OffsetChars: &off, LimitChars: &pageLimit})
			if err != nil || r.Item == nil {
				t.Fatal(err)
			}
			sb.WriteString(r.Item.Content)
			if r.Item.NextOffsetChars == nil {
				break
			}
			if *r.Item.NextOffsetChars <= off {
				t.Fatalf("next %d does not advance from %d", *r.Item.NextOffsetChars, off)
			}
			off = *r.Item.NextOffsetChars
		}
		if sb.String() != text {
			t.Fatalf("pages %q != text %q", sb.String(), text)
		}
	})
}
