package history

import (
	"strings"
	"unicode/utf8"
)

// MaxIDChars is the most code points of an item or window ID in an
// answer, and MaxNameChars of a tool name or namespace. Pi's entry IDs are
// 8 hex digits and window IDs UUIDs; a longer one (a hostile or damaged
// file: a 1 MiB entry ID, a 200 KB tool name) would make every answer that
// names it that large, past the 8,000-character output bound
// (docs/security.md).
const (
	MaxIDChars   = 256
	MaxNameChars = 256
)

// CutMarker starts a cut ID (BoundID) and ends a cut name (BoundName).
const CutMarker = "…"

// BoundID returns id, or, when it is longer than MaxIDChars code points,
// CutMarker followed by its last MaxIDChars-1 code points. A cut ID is
// still an ID to pass back: read_item and the window_id arguments take it
// as the unique suffix it names (matchesID).
func BoundID(id string) string {
	if len(id) <= MaxIDChars || utf8.RuneCountInString(id) <= MaxIDChars {
		return id
	}
	return CutMarker + lastRunes(id, MaxIDChars-1)
}

// BoundName returns name, or, when it is longer than MaxNameChars code
// points, its first MaxNameChars-1 code points followed by CutMarker (like
// truncated_content, a cut name is for reading; filters match full names).
func BoundName(name string) string {
	if len(name) <= MaxNameChars || utf8.RuneCountInString(name) <= MaxNameChars {
		return name
	}
	n, i := 0, 0
	for i = range name {
		if n == MaxNameChars-1 {
			break
		}
		n++
	}
	return name[:i] + CutMarker
}

// lastRunes returns the last n code points of s.
func lastRunes(s string, n int) string {
	i := len(s)
	for ; n > 0 && i > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}

// matchesID reports whether given names the ID full: equal, or a cut ID
// (BoundID) of it.
func matchesID(full, given string) bool {
	if full == given {
		return true
	}
	rest, ok := strings.CutPrefix(given, CutMarker)
	return ok && len(full) > MaxIDChars && utf8.RuneCountInString(rest) == MaxIDChars-1 && strings.HasSuffix(full, rest)
}
