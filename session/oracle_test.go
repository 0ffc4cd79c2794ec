package session

// The encoding/json decoder this package used before jsondec.go, kept as
// the oracle that the single-pass decoder must agree with (every fixture
// line, FuzzDecoderAgrees). It differs from Pi in one known way: it
// matches keys case-insensitively; JSON.parse and the new decoder do not.

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

type oracleContentJSON struct{ c Content }

func (o *oracleContentJSON) UnmarshalJSON(b []byte) error { return oracleContent(&o.c, b) }

type oracleMessage struct {
	Role               string            `json:"role"`
	Content            oracleContentJSON `json:"content"`
	StopReason         string            `json:"stopReason,omitempty"`
	ToolName           string            `json:"toolName,omitempty"`
	ToolCallID         string            `json:"toolCallId,omitempty"`
	IsError            bool              `json:"isError,omitempty"`
	Command            string            `json:"command,omitempty"`
	Output             string            `json:"output,omitempty"`
	ExcludeFromContext bool              `json:"excludeFromContext,omitempty"`
	CustomType         string            `json:"customType,omitempty"`
}

func (o *oracleMessage) message() Message {
	return Message{Role: o.Role, Content: o.Content.c, StopReason: o.StopReason, ToolName: o.ToolName, ToolCallID: o.ToolCallID,
		IsError: o.IsError, Command: o.Command, Output: o.Output, ExcludeFromContext: o.ExcludeFromContext, CustomType: o.CustomType}
}

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

	Replacement   json.RawMessage `json:"replacement"`
	SystemMessage json.RawMessage `json:"systemMessage"`
}

// str returns the JSON string in raw, or "" when raw is absent, null or not a string.
func str(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if oracleJSON.unmarshal(raw, &s) != nil {
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
	return oracleJSON.typeError(err)
}

// jsonLib is a JSON library as the oracle uses it.
type jsonLib struct {
	unmarshal func(data []byte, v any) error
	valid     func(data []byte) bool
	// typeError reports whether an error of unmarshal is only a value of
	// an unexpected JSON type.
	typeError func(err error) bool
}

// stdJSON is encoding/json.
var stdJSON = jsonLib{unmarshal: json.Unmarshal, valid: json.Valid, typeError: func(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te)
}}

// oracleJSON is the library the oracle decodes with: encoding/json, but
// for BenchmarkDecoder, which also times the oracle with other libraries.
var oracleJSON = stdJSON

func (p *Parser) oracleParseLine(line []byte, off int64) (*Entry, *Decoded, SkipReason) {
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
		if !oracleJSON.valid(line) {
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
	if err := oracleJSON.unmarshal(line, &r); err != nil && !isTypeError(err) {
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
			} else if sv, ok := str(*r.Version); ok {
				if v, err := strconv.ParseFloat(strings.TrimSpace(sv), 64); err == nil && sv != "" && v >= 1 {
					h.Version = int(v)
				}
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
			var om oracleMessage
			err := oracleJSON.unmarshal(r.Message, &om)
			m := om.message()
			if err == nil || isTypeError(err) {
				if m.Role == "hookMessage" && p.Header.Version < 3 { // migrateV2ToV3 runs only on files below v3
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
			_ = oracleContent(&c, r.Content)
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
		fromID, _ := str(r.FromID)
		e.SetRefs(EntryRefs{FromID: fromID})
		e.FromHook = r.FromHook
		e.EmptySummary = r.Summary == ""
		d.Summary = r.Summary
		d.Details = r.Details
	case TypeCompaction:
		e.FromHook = r.FromHook
		d.Summary = r.Summary
		d.Details = r.Details
		e.SystemMessage = len(r.SystemMessage) > 0 && truthy(r.SystemMessage)
		if id, ok := str(r.FirstKeptEntryID); ok {
			e.SetRefs(EntryRefs{FirstKeptEntryID: id})
		} else if r.FirstKeptEntryIndex != nil && p.Header.Version < 2 && p.LookupSeq != nil {
			// Index into Pi's parsed-entries array, header = 0.
			idx := *r.FirstKeptEntryIndex
			if idx >= 1 && idx == float64(int(idx)) {
				if id, ok := p.LookupSeq(int(idx) - 1); ok {
					e.SetRefs(EntryRefs{FirstKeptEntryID: id})
				}
			}
		}
	case TypeLabel:
		target, _ := str(r.TargetID)
		label, _ := str(r.Label)
		e.SetRefs(EntryRefs{TargetID: target, Label: label})
	case TypeSessionInfo:
		name, _ := str(r.Name)
		e.SetRefs(EntryRefs{Name: name})
	case TypeContextEdit:
		target, _ := str(r.TargetID)
		e.SetRefs(EntryRefs{TargetID: target})
		rb := bytes.TrimSpace(r.Replacement)
		switch {
		case string(rb) == "null":
			e.Edit = EditOmit
		case len(rb) > 0 && rb[0] == '{':
			var o struct {
				Content json.RawMessage `json:"content"`
			}
			if err := oracleJSON.unmarshal(rb, &o); err == nil || isTypeError(err) {
				if cb := bytes.TrimSpace(o.Content); len(cb) > 0 && (cb[0] == '"' || cb[0] == '[') {
					var c Content
					_ = oracleContent(&c, cb)
					e.Edit = EditReplace
					d.Replacement = &c
				}
			}
		}
	}
	return e, d, SkipNone
}

func oracleContent(c *Content, b []byte) error {
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
		return oracleJSON.unmarshal(b, &c.Text)
	}
	var raws []json.RawMessage
	if err := oracleJSON.unmarshal(b, &raws); err != nil {
		return err
	}
	c.Parts = make([]Part, 0, len(raws))
	for _, raw := range raws {
		var p Part
		if len(raw) > 0 && raw[0] == '{' {
			_ = oracleJSON.unmarshal(raw, &p)
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
