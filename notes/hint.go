package notes

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Thread-hint bounds (docs/codex-contract.md "Thread hint" and
// "Local notes").
const (
	MaxHintBytes    = 4000 // whole hint text, in UTF-8 bytes
	HintNotes       = 5    // note lines at most
	HintUserItemIDs = 5    // user item IDs at most
)

// Fixed parts of the thread hint (docs/codex-contract.md "Local notes").
const (
	hintNotesHeader    = "Recent notes (up to 5, most-recent first):"
	hintRecoveryPrefix = "Previous window history IDs: "
)

// Recovery is the "Previous window history IDs" part of the thread hint
// (docs/codex-contract.md "Local notes"): the window that just ended, the hidden branch summary
// that stands for it (Tree mode) and its latest user messages. Its JSON is
// {"window_id", "summary_item_id"?, "user_item_ids"?}.
type Recovery struct {
	WindowID      string   `json:"window_id" doc:"Window ID of the previous window."`
	SummaryItemID string   `json:"summary_item_id,omitempty" doc:"History item ID of the window's branch summary (Tree mode)."`
	UserItemIDs   []string `json:"user_item_ids,omitempty" doc:"History item IDs of the window's user messages, newest first; at most 5 are used."`
}

// ThreadHint renders the thread-hint text that goes into the next window
// marker (docs/codex-contract.md "Local notes"), or "" when there is
// nothing to say:
//
//	Recent notes (up to 5, most-recent first):
//	- /root/notes/checkpoint.md (13 lines, 473 UTF-8 bytes)
//	Previous window history IDs: {"window_id":"…","user_item_ids":["…"]}
//
// Notes are the HintNotes most recently updated files of s (all agents),
// ordered by UpdatedAt descending then path; lines are counted as in the
// package doc ("1 line", otherwise "n lines"). The recovery line is present
// when recovery names a window; its JSON keeps the first HintUserItemIDs
// user item IDs (the caller gives them newest first).
//
// The text is at most MaxHintBytes UTF-8 bytes. The recovery line is placed
// first in the budget; if it alone is too long, user item IDs are dropped
// from the oldest, then the summary ID, then the line. Note lines are then
// added in order while they fit, stopping at the first that does not (so a
// listed note is never older than an omitted one); without a note line the
// header is omitted too. Nothing is ever cut inside a line or character.
// When a recent note does not fit, the notes part ends with an overflow
// line naming what was left out (ThreadHintReport).
func ThreadHint(s *State, recovery *Recovery) string {
	text, _ := ThreadHintReport(s, recovery)
	return text
}

// HintReport says what the byte cap did to a thread hint.
type HintReport struct {
	Bytes    int      // bytes of the hint text
	LeftOut  []string // paths of the (up to HintNotes) recent notes the cap left out, most recent first
	Reported bool     // the hint names LeftOut in its overflow line
}

// ThreadHintReport is ThreadHint plus what the cap left out (docs/rollover-quality.md:
// an overflow is reported to the model, not cut silently). When the recent
// notes do not all fit, the hint ends its notes part with an overflow line
//
//	Left out by the 4000-byte hint cap: /root/notes/a.md, /root/notes/b.md
//
// naming the left-out paths while they fit, then "and N more" (or only
// "N notes" when no path fits); a note line is given up for it when
// needed. Without room even for "N notes" the overflow goes unreported
// (Reported false). When every recent note fits the hint is exactly the
// reference's.
func ThreadHintReport(s *State, recovery *Recovery) (string, HintReport) {
	rec := recoveryLine(recovery)
	files := s.Files()
	slices.SortStableFunc(files, func(a, b File) int { return cmp.Compare(b.UpdatedAt, a.UpdatedAt) })
	files = files[:min(len(files), HintNotes)]
	var lines []string
	for _, f := range files {
		n := f.Lines()
		unit := "lines"
		if n == 1 {
			unit = "line"
		}
		lines = append(lines, fmt.Sprintf("- %s (%d %s, %d UTF-8 bytes)", f.Path, n, unit, len(f.Text)))
	}
	// size of the hint with notes lines[:k] and an optional overflow line.
	size := func(k int, overflow string) int {
		n := len(rec)
		if k == 0 && overflow == "" {
			return n
		}
		n += len(hintNotesHeader)
		for _, l := range lines[:k] {
			n += 1 + len(l)
		}
		if overflow != "" {
			n += 1 + len(overflow)
		}
		if rec != "" {
			n++
		}
		return n
	}
	k := 0
	for k < len(lines) && size(k+1, "") <= MaxHintBytes {
		k++
	}
	var rep HintReport
	overflow := ""
	if k < len(lines) {
		for _, f := range files[k:] {
			rep.LeftOut = append(rep.LeftOut, f.Path)
		}
		// Give up note lines until an overflow line fits.
		for kk := k; kk >= 0; kk-- {
			left := make([]string, 0, len(files)-kk)
			for _, f := range files[kk:] {
				left = append(left, f.Path)
			}
			if o := overflowLine(left, MaxHintBytes-size(kk, "x")+1); o != "" {
				k, overflow = kk, o
				rep.LeftOut, rep.Reported = left, true
				break
			}
		}
	}
	var b strings.Builder
	if k > 0 || overflow != "" {
		b.WriteString(hintNotesHeader)
		for _, l := range lines[:k] {
			b.WriteString("\n")
			b.WriteString(l)
		}
		if overflow != "" {
			b.WriteString("\n")
			b.WriteString(overflow)
		}
	}
	if rec != "" {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(rec)
	}
	out := truncateUTF8(b.String(), MaxHintBytes)
	rep.Bytes = len(out)
	return out, rep
}

const hintOverflowPrefix = "Left out by the 4000-byte hint cap: "

// overflowLine names paths within budget bytes: as many paths as fit,
// then " and N more"; "N notes" when none fits; "" when not even that.
func overflowLine(paths []string, budget int) string {
	for n := len(paths); n >= 1; n-- {
		l := hintOverflowPrefix + strings.Join(paths[:n], ", ")
		if n < len(paths) {
			l += fmt.Sprintf(" and %d more", len(paths)-n)
		}
		if len(l) <= budget {
			return l
		}
	}
	unit := "notes"
	if len(paths) == 1 {
		unit = "note"
	}
	if l := fmt.Sprintf("%s%d %s", hintOverflowPrefix, len(paths), unit); len(l) <= budget {
		return l
	}
	return ""
}

// recoveryLine renders "Previous window history IDs: <JSON>" within
// MaxHintBytes, or "" (see ThreadHint).
func recoveryLine(r *Recovery) string {
	if r == nil || r.WindowID == "" {
		return ""
	}
	rc := Recovery{WindowID: r.WindowID, SummaryItemID: r.SummaryItemID}
	rc.UserItemIDs = slices.Clone(r.UserItemIDs[:min(len(r.UserItemIDs), HintUserItemIDs)])
	for {
		line := hintRecoveryPrefix + compactJSON(rc)
		if len(line) <= MaxHintBytes {
			return line
		}
		switch {
		case len(rc.UserItemIDs) > 0:
			rc.UserItemIDs = rc.UserItemIDs[:len(rc.UserItemIDs)-1]
		case rc.SummaryItemID != "":
			rc.SummaryItemID = ""
		default:
			return ""
		}
	}
}

// compactJSON encodes v like JavaScript's JSON.stringify: no HTML escaping,
// no trailing newline.
func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only plain structs of strings are encoded here
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// truncateUTF8 cuts s to at most n bytes at a character boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
