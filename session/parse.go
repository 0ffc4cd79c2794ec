package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// SkipReason says why a physical line produced no entry. Pi skips blank and
// unparseable lines silently (session-manager.js parseSessionEntryLine);
// contextd skips the same lines and counts them by reason.
type SkipReason string

// Skip reasons, used as metric label values and in session problems.
const (
	SkipNone          SkipReason = ""
	SkipBlank         SkipReason = "blank"          // empty or whitespace-only line
	SkipInvalidJSON   SkipReason = "invalid_json"   // JSON.parse would throw (includes two objects run together)
	SkipNotObject     SkipReason = "not_object"     // valid JSON but not an object
	SkipTooLong       SkipReason = "too_long"       // longer than the configured per-line cap
	SkipMissingID     SkipReason = "missing_id"     // v2+ entry without a string id
	SkipExtraHeader   SkipReason = "extra_header"   // a second `session` line; Pi's index skips it
	SkipBeforeHeader  SkipReason = "not_a_session"  // first parsed line was not a header: nothing is indexed
	SkipInvalidHeader SkipReason = "invalid_header" // header-shaped line whose id is not a string
)

// DefaultMaxLineBytes is the default per-line cap: 64 MiB. Longer lines are
// skipped with SkipTooLong (single tool results of 11 MiB exist in real files).
const DefaultMaxLineBytes = 64 << 20

// ErrNotSession is returned when the first parsed line of a file is not a
// `session` header with a string id: Pi treats such a file as "not a session"
// (loadEntriesFromFile returns []).
var ErrNotSession = fmt.Errorf("not a Pi session: the first parsed line is not a session header with a string id")

// Parser turns physical lines into entries, carrying the state that depends on
// earlier lines: the header (version), the line and entry counters, and for v1
// files the chain of synthetic ids. Its exported fields are the whole state,
// so an indexer can persist them and resume at a byte offset.
type Parser struct {
	Header    *Header // nil until the header line has been parsed
	NotPi     bool    // the first parsed line was not a header: every later line is ignored
	NextLine  int     // 1-based number of the next physical line
	NextSeq   int     // Seq of the next entry
	LastV1ID  string  // v1 files: id of the previous entry (the implicit parent)
	LookupSeq func(seq int) (string, bool)
	// Scratch, when set, makes the Decoded that ParseLine returns
	// transient: the Decoded, its Message and its Parts array are reused
	// by the next call, so the caller must be done with them before
	// parsing the next line; their strings are carved from *Scratch's
	// chunks, never written again (a string kept stays valid, but pins
	// its chunk: clone a short one). The text bodies (message text and
	// thinking, string content, bash command and output, a summary) are
	// not strings at all: they are the ...Bytes fields (Decoded.SummaryBytes,
	// Message.CommandBytes and OutputBytes, Content.TextBytes,
	// Part.TextBytes and ThinkingBytes), aliasing the line (ParseLine
	// rewrites a body with escapes in place: the line's bytes are the
	// caller's to read again only outside its text bodies) or the
	// scratch's reused body buffer, and their string fields are empty.
	// The returned *Entry is reused by the next call too (copy the value
	// to keep it); its strings and the Header are copies of their own.
	// For the indexer, which renders each line before the next: decoded
	// strings are then not allocated one by one (they were half the bytes
	// allocated while indexing), nor are the bodies copied to the heap.
	Scratch *StringChunks
	ent     Entry   // with Scratch: the Entry ParseLine returns, reused for each line
	dec     Decoded // with Scratch: the Decoded ParseLine returns, reused for each line
	// TreeOnly makes ParseLine return the Entry only as the tree needs it
	// (every Entry field is the same) and a Decoded without the bodies
	// (message content, command and output, custom message content,
	// summaries):
	// those values are validated and crossed, not decoded, so the lines
	// accepted and skipped are the same. For the store's first phase,
	// which builds the tree before anything is rendered.
	TreeOnly bool
	lf       *lineFields // with Scratch: reused for each line
}

// SyntheticID is the deterministic id given to the entry on physical line
// `line` of a v1 file (v1 entries have no ids; Pi's migration draws random
// ones, so the same file would get different ids each time). The form
// "v1-" + 8-digit line number cannot collide with Pi's 8-hex ids.
func SyntheticID(line int) string { return fmt.Sprintf("v1-%08d", line) }

// isBlank reports whether line holds only JSON whitespace (what
// `!line.trim()` tests for the lines Pi writes).
func isBlank(line []byte) bool {
	return len(bytes.TrimSpace(line)) == 0
}

// ParseLine parses one physical line (without its "\n") that starts at byte
// offset off. It returns the entry and its decoded bodies, or a skip reason.
// The header line yields neither an entry nor a skip: p.Header is set.
// Lines after a non-header first line are skipped with SkipBeforeHeader.
func (p *Parser) ParseLine(line []byte, off int64) (*Entry, *Decoded, SkipReason) {
	lineNo := p.NextLine
	if lineNo == 0 {
		lineNo = 1
	}
	p.NextLine = lineNo + 1
	if isBlank(line) {
		return nil, nil, SkipBlank
	}
	if p.NotPi {
		return nil, nil, SkipBeforeHeader
	}
	var f *lineFields
	if p.Scratch != nil {
		// Transient: the fields of the previous line are done with too.
		if p.lf == nil {
			p.lf = &lineFields{}
		}
		f = p.lf
	} else {
		f = &lineFields{}
	}
	r, err := decodeLine(line, p.Scratch, f, p.TreeOnly)
	if err != nil {
		return nil, nil, SkipInvalidJSON
	}
	if !r.isObject {
		if p.Header == nil && truthy(line) {
			// Pi: a truthy non-object first value becomes entries[0] and
			// fails the header check (loadEntriesFromFile); falsy values
			// (null, false, 0, "") are dropped like blank lines.
			p.NotPi = true
			return nil, nil, SkipBeforeHeader
		}
		return nil, nil, SkipNotObject
	}
	typ := r.typ
	if p.Header == nil {
		if typ != TypeSession || !r.hasID {
			p.NotPi = true
			return nil, nil, SkipBeforeHeader
		}
		h := &Header{Version: 1, ID: strings.Clone(r.id), Cwd: strings.Clone(r.cwd), ParentSession: strings.Clone(r.parentSession), Timestamp: strings.Clone(r.timestamp)}
		if r.hasVersion && r.version >= 1 {
			h.Version = int(r.version)
		} else if v, err := strconv.ParseFloat(strings.TrimSpace(r.versionText), 64); err == nil && r.versionText != "" && v >= 1 {
			// "version":"3": JavaScript compares the string as a number
			// (migrateToCurrentVersion: version >= 3), so Pi treats it as 3.
			h.Version = int(v)
		}
		p.Header = h
		return nil, nil, SkipNone
	}
	if typ == TypeSession {
		return nil, nil, SkipExtraHeader
	}

	var e *Entry
	var d *Decoded
	if p.Scratch != nil {
		// Transient: the Entry and Decoded are the parser's, reused for
		// the next line (a quarter-million of each were allocated for a
		// 1 GiB session; callers copy the Entry they keep).
		p.dec = Decoded{}
		e, d = &p.ent, &p.dec
	} else {
		e, d = new(Entry), new(Decoded)
	}
	*e = Entry{Seq: p.NextSeq, Line: lineNo, Offset: off, Length: len(line), Type: Intern(typ), Timestamp: p.own(r.timestamp)}
	if p.Header.Version < 2 {
		// migrateV1ToV2: linear chain in file order, fresh ids.
		e.ID = SyntheticID(lineNo)
		e.ParentID = p.LastV1ID
		p.LastV1ID = e.ID
	} else {
		if !r.hasID {
			return nil, nil, SkipMissingID
		}
		e.ID = p.own(r.id)
		e.ParentID = p.own(r.parentID)
	}
	p.NextSeq++

	d.Display = r.display
	switch typ {
	case TypeMessage:
		if m := r.message; m != nil {
			if m.Role == "hookMessage" && p.Header.Version < 3 { // migrateV2ToV3 runs only on files below v3
				m.Role = RoleCustom
			}
			d.Message = m
			e.Role = Intern(m.Role)
			e.StopReason = Intern(m.StopReason)
		}
	case TypeCustomMessage:
		e.CustomType = Intern(r.customType)
		c := r.content
		d.Content = &c
		d.Details = r.details
		if r.customType == CustomTypeWindow {
			e.Window = decodeWindow(r.details)
		}
	case TypeCustom:
		e.CustomType = Intern(r.customType)
		d.Data = r.data
	case TypeBranchSummary:
		e.SetRefs(EntryRefs{FromID: p.own(r.fromID)})
		e.FromHook = r.fromHook
		e.EmptySummary = r.summary == "" && len(r.summaryBytes) == 0
		d.Summary, d.SummaryBytes = r.summary, r.summaryBytes
		d.Details = r.details
	case TypeCompaction:
		e.FromHook = r.fromHook
		d.Summary, d.SummaryBytes = r.summary, r.summaryBytes
		d.Details = r.details
		e.SystemMessage = r.systemMessage
		if r.hasFirstKeptID {
			e.SetRefs(EntryRefs{FirstKeptEntryID: p.own(r.firstKeptEntryID)})
		} else if r.hasFirstKeptEntryIndex && p.Header.Version < 2 && p.LookupSeq != nil {
			// Index into Pi's parsed-entries array, header = 0.
			idx := r.firstKeptEntryIndex
			if idx >= 1 && idx == float64(int(idx)) {
				if id, ok := p.LookupSeq(int(idx) - 1); ok {
					e.SetRefs(EntryRefs{FirstKeptEntryID: id})
				}
			}
		}
	case TypeLabel:
		e.SetRefs(EntryRefs{TargetID: p.own(r.targetID), Label: p.own(r.label)})
	case TypeSessionInfo:
		e.SetRefs(EntryRefs{Name: p.own(r.name)})
	case TypeContextEdit:
		e.SetRefs(EntryRefs{TargetID: p.own(r.targetID)})
		switch {
		case r.replacementNull:
			e.Edit = EditOmit
		case r.replacementOK:
			e.Edit = EditReplace
			c := r.replacement
			d.Replacement = &c
		}
	}
	return e, d, SkipNone
}

// own returns s as the Entry keeps it: a copy of its own when s is carved
// from the parser's chunks (Parser.Scratch), which a kept Entry would
// otherwise pin.
func (p *Parser) own(s string) string {
	if p.Scratch == nil {
		return s
	}
	return strings.Clone(s)
}

// truthy reports whether a valid non-object JSON line is truthy in
// JavaScript (everything but null, false, 0, -0 and "").
func truthy(line []byte) bool {
	switch string(bytes.TrimSpace(line)) {
	case "null", "false", "0", "-0", `""`:
		return false
	}
	return true
}

func decodeWindow(details json.RawMessage) *WindowMarker {
	if len(details) == 0 || details[0] != '{' {
		return nil
	}
	var d struct {
		ID string `json:"id"`
		CM *struct {
			Kind               string          `json:"kind"`
			FirstWindowID      string          `json:"firstWindowId"`
			CurrentWindowID    string          `json:"currentWindowId"`
			PreviousWindowID   string          `json:"previousWindowId"`
			WindowNumber       json.RawMessage `json:"windowNumber"`
			TrimPreviousWindow bool            `json:"trimPreviousWindow"`
			AgentName          string          `json:"agentName"`
			StartEntryID       string          `json:"startEntryId"`
		} `json:"contextManagement"`
	}
	if json.Unmarshal(details, &d) != nil || d.CM == nil {
		return nil
	}
	w := &WindowMarker{
		MarkerID: d.ID, Kind: d.CM.Kind, FirstWindowID: d.CM.FirstWindowID,
		CurrentWindowID: d.CM.CurrentWindowID, PreviousWindowID: d.CM.PreviousWindowID,
		TrimPreviousWindow: d.CM.TrimPreviousWindow, AgentName: d.CM.AgentName, StartEntryID: d.CM.StartEntryID,
	}
	if n, err := strconv.Atoi(string(d.CM.WindowNumber)); err == nil && n >= 0 {
		w.WindowNumber = n
	}
	return w
}

// UnmarshalJSON accepts a string, an array of blocks, or null (0.85.1 treats
// null content as []). Any other JSON value (an object, a number) gives empty
// content and no error: Pi keeps such a message (it copies the stored message
// as is), so the message's role and other fields must still be decoded.
func (c *Content) UnmarshalJSON(b []byte) error {
	got, err := contentFromJSON(b)
	if err != nil {
		*c = Content{}
		return err
	}
	for i := range got.Parts {
		if got.Parts[i].Raw != nil {
			got.Parts[i].Raw = append(json.RawMessage(nil), got.Parts[i].Raw...)
		}
		if got.Parts[i].Arguments != nil {
			got.Parts[i].Arguments = append(json.RawMessage(nil), got.Parts[i].Arguments...)
		}
	}
	*c = got
	return nil
}

// MarshalJSON writes the content back as a string or a block list (blocks
// keep only the fields Part holds).
func (c Content) MarshalJSON() ([]byte, error) {
	if c.IsString {
		return json.Marshal(c.Text)
	}
	if c.Parts == nil {
		return []byte("[]"), nil
	}
	type plain Part
	out := make([]json.RawMessage, 0, len(c.Parts))
	for _, p := range c.Parts {
		if p.Raw != nil {
			out = append(out, p.Raw)
			continue
		}
		b, err := json.Marshal(plain(p))
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return json.Marshal(out)
}
