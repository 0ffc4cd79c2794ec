package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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
}

// SyntheticID is the deterministic id given to the entry on physical line
// `line` of a v1 file (v1 entries have no ids; Pi's migration draws random
// ones, so the same file would get different ids each time). The form
// "v1-" + 8-digit line number cannot collide with Pi's 8-hex ids.
func SyntheticID(line int) string { return fmt.Sprintf("v1-%08d", line) }

// rawEntry is the decoding target for one line. Fields that only some entry
// types carry are optional.
type rawEntry struct {
	Type      *string          `json:"type"`
	ID        json.RawMessage  `json:"id"`
	ParentID  json.RawMessage  `json:"parentId"`
	Timestamp json.RawMessage  `json:"timestamp"`
	Version   *json.RawMessage `json:"version"`
	Cwd       string           `json:"cwd"`
	Parent    string           `json:"parentSession"`

	CustomType string          `json:"customType"`
	Message    json.RawMessage `json:"message"`
	Content    json.RawMessage `json:"content"`
	Display    bool            `json:"display"`
	Details    json.RawMessage `json:"details"`
	Data       json.RawMessage `json:"data"`

	Summary             string          `json:"summary"`
	FromID              json.RawMessage `json:"fromId"`
	FromHook            bool            `json:"fromHook"`
	FirstKeptEntryID    json.RawMessage `json:"firstKeptEntryId"`
	FirstKeptEntryIndex *float64        `json:"firstKeptEntryIndex"`

	TargetID json.RawMessage `json:"targetId"`
	Label    json.RawMessage `json:"label"`
	Name     json.RawMessage `json:"name"`
}

// str returns the JSON string in raw, or "" when raw is absent, null or not a string.
func str(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// isTypeError reports whether err from json.Unmarshal is only a field of an
// unexpected JSON type (e.g. "display": 1, "cwd": 5, "toolName": 5). Pi keeps
// every line JSON.parse accepts, whatever its field types
// (session-manager.js parseSessionEntryLine), so such a line is still an
// entry: encoding/json has filled every other field, and the mistyped one
// stays zero. Only a syntax error makes a line invalid.
func isTypeError(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te)
}

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
	// Fast reject of non-objects before a full decode.
	trimmed := bytes.TrimLeft(line, " \t\r\n")
	if trimmed[0] != '{' {
		if !json.Valid(line) {
			return nil, nil, SkipInvalidJSON
		}
		if p.Header == nil {
			// Pi: a truthy non-object first value becomes entries[0] and fails the header check.
			if !bytes.Equal(bytes.TrimSpace(line), []byte("null")) && !bytes.Equal(bytes.TrimSpace(line), []byte("false")) && !bytes.Equal(bytes.TrimSpace(line), []byte("0")) && !bytes.Equal(bytes.TrimSpace(line), []byte(`""`)) {
				p.NotPi = true
				return nil, nil, SkipBeforeHeader
			}
		}
		return nil, nil, SkipNotObject
	}
	var r rawEntry
	if err := json.Unmarshal(line, &r); err != nil && !isTypeError(err) {
		return nil, nil, SkipInvalidJSON
	}
	typ := ""
	if r.Type != nil {
		typ = *r.Type
	}
	if p.Header == nil {
		id, ok := str(r.ID)
		if typ != TypeSession || !ok {
			p.NotPi = true
			return nil, nil, SkipBeforeHeader
		}
		h := &Header{Version: 1, ID: id, Cwd: r.Cwd, ParentSession: r.Parent}
		h.Timestamp, _ = str(r.Timestamp)
		if r.Version != nil {
			if v, err := strconv.ParseFloat(string(*r.Version), 64); err == nil && v >= 1 {
				h.Version = int(v)
			}
		}
		p.Header = h
		return nil, nil, SkipNone
	}
	if typ == TypeSession {
		return nil, nil, SkipExtraHeader
	}

	e := &Entry{Seq: p.NextSeq, Line: lineNo, Offset: off, Length: len(line), Type: typ}
	e.Timestamp, _ = str(r.Timestamp)
	if p.Header.Version < 2 {
		// migrateV1ToV2: linear chain in file order, fresh ids.
		e.ID = SyntheticID(lineNo)
		e.ParentID = p.LastV1ID
		p.LastV1ID = e.ID
	} else {
		id, ok := str(r.ID)
		if !ok {
			return nil, nil, SkipMissingID
		}
		e.ID = id
		e.ParentID, _ = str(r.ParentID)
	}
	p.NextSeq++

	d := &Decoded{Display: r.Display}
	switch typ {
	case TypeMessage:
		if len(r.Message) > 0 && r.Message[0] == '{' {
			var m Message
			if err := json.Unmarshal(r.Message, &m); err == nil || isTypeError(err) {
				if m.Role == "hookMessage" { // migrateV2ToV3
					m.Role = RoleCustom
				}
				d.Message = &m
				e.Role = m.Role
				e.StopReason = m.StopReason
			}
		}
	case TypeCustomMessage:
		e.CustomType = r.CustomType
		var c Content
		if len(r.Content) > 0 {
			_ = c.UnmarshalJSON(r.Content)
		}
		d.Content = &c
		d.Details = r.Details
		if r.CustomType == CustomTypeWindow {
			e.Window = decodeWindow(r.Details)
		}
	case TypeCustom:
		e.CustomType = r.CustomType
		d.Data = r.Data
	case TypeBranchSummary:
		e.FromID, _ = str(r.FromID)
		e.FromHook = r.FromHook
		e.EmptySummary = r.Summary == ""
		d.Summary = r.Summary
		d.Details = r.Details
	case TypeCompaction:
		e.FromHook = r.FromHook
		d.Summary = r.Summary
		d.Details = r.Details
		if id, ok := str(r.FirstKeptEntryID); ok {
			e.FirstKeptEntryID = id
		} else if r.FirstKeptEntryIndex != nil && p.Header.Version < 2 && p.LookupSeq != nil {
			// Index into Pi's parsed-entries array, header = 0.
			idx := *r.FirstKeptEntryIndex
			if idx >= 1 && idx == float64(int(idx)) {
				if id, ok := p.LookupSeq(int(idx) - 1); ok {
					e.FirstKeptEntryID = id
				}
			}
		}
	case TypeLabel:
		e.TargetID, _ = str(r.TargetID)
		e.Label, _ = str(r.Label)
	case TypeSessionInfo:
		e.Name, _ = str(r.Name)
	}
	return e, d, SkipNone
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
		} `json:"contextManagement"`
	}
	if json.Unmarshal(details, &d) != nil || d.CM == nil {
		return nil
	}
	w := &WindowMarker{
		MarkerID: d.ID, Kind: d.CM.Kind, FirstWindowID: d.CM.FirstWindowID,
		CurrentWindowID: d.CM.CurrentWindowID, PreviousWindowID: d.CM.PreviousWindowID,
		TrimPreviousWindow: d.CM.TrimPreviousWindow, AgentName: d.CM.AgentName,
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
	*c = Content{}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || bytes.Equal(b, []byte("null")) {
		return nil
	}
	if b[0] != '"' && b[0] != '[' {
		return nil
	}
	if b[0] == '"' {
		c.IsString = true
		return json.Unmarshal(b, &c.Text)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(b, &raws); err != nil {
		return err
	}
	c.Parts = make([]Part, 0, len(raws))
	for _, raw := range raws {
		var p Part
		if len(raw) > 0 && raw[0] == '{' {
			_ = json.Unmarshal(raw, &p)
		}
		switch p.Type {
		case "text", "thinking", "image", "toolCall":
		default:
			p.Raw = raw
		}
		c.Parts = append(c.Parts, p)
	}
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
