package session

import (
	"bytes"
	"encoding/json"
)

// lineFields is what one entry line holds for contextd: the union of the
// fields of every entry type (Pi session-manager.ts SessionEntry), decoded
// in one pass by decodeLine. Raw values (data, details) alias the line.
type lineFields struct {
	typ, id, parentID, timestamp string
	hasType, hasID               bool
	version                      float64
	hasVersion                   bool
	versionText                  string // version given as a JSON string
	cwd, parentSession           string

	customType string
	message    *Message
	content    Content
	display    bool
	details    []byte
	data       []byte

	summary                string
	summaryBytes           []byte // with a scratch: the summary (decoder.body)
	fromID                 string
	fromHook               bool
	firstKeptEntryID       string
	hasFirstKeptID         bool
	firstKeptEntryIndex    float64
	hasFirstKeptEntryIndex bool
	targetID, label, name  string
	isObject               bool

	// With a scratch (transient decoding), the message and the content
	// parts of each line live here, reused for the next line (Parser.Scratch):
	// a message and a parts slice allocated per line were a sixth of the
	// bytes allocated while indexing.
	msg   Message
	parts []Part

	// context_edit: replacement is null (replacementNull), or an object
	// whose content is a string or an array (replacementOK, content in
	// replacement).
	replacement     Content
	replacementNull bool
	replacementOK   bool
	// compaction: a truthy systemMessage value (Pi 1.x).
	systemMessage bool
}

// decodeLine decodes one line. It fails only when JSON.parse would throw;
// a value of an unexpected type leaves its field empty (Pi keeps the entry).
// A valid line that is not an object gives isObject false.
func decodeLine(line []byte, scratch *StringChunks, f *lineFields, treeOnly bool) (*lineFields, error) {
	d := &decoder{b: line, scratch: scratch, treeOnly: treeOnly}
	parts := f.parts
	clear(parts) // drop the previous line's strings (they pin its chunks)
	*f = lineFields{parts: parts[:0]}
	if scratch != nil {
		scratch.nextLine()
		if f.parts == nil {
			f.parts = make([]Part, 0, 16)
		}
		d.parts = &f.parts
	}
	if d.peek() != '{' {
		if _, err := d.skip(); err != nil {
			return nil, err
		}
		return f, d.end()
	}
	f.isObject = true
	err := d.object(0, func(k []byte) error {
		var err error
		switch string(k) {
		case "type":
			f.typ, f.hasType, err = d.optStr()
		case "id":
			f.id, f.hasID, err = d.optStr()
		case "parentId":
			f.parentID, _, err = d.optStr()
		case "timestamp":
			f.timestamp, _, err = d.optStr()
		case "version":
			if d.peek() == '"' {
				f.versionText, err = d.str()
			} else {
				f.version, f.hasVersion, err = d.optNum()
			}
		case "cwd":
			f.cwd, _, err = d.optStr()
		case "parentSession":
			f.parentSession, _, err = d.optStr()
		case "customType":
			f.customType, _, err = d.optStr()
		case "message":
			if d.peek() == '{' {
				var m *Message
				if d.parts != nil {
					m = &f.msg
				} else {
					m = new(Message)
				}
				err = decodeMessage(d, m)
				f.message = m
			} else {
				f.message = nil
				_, err = d.skip()
			}
		case "content":
			if d.treeOnly {
				err = skipContent(d, 1)
			} else {
				f.content, err = decodeContent(d, 1)
			}
		case "display":
			f.display, err = d.optBool()
		case "details":
			f.details, err = d.skip()
		case "data":
			f.data, err = d.skip()
		case "summary":
			if d.treeOnly && d.peek() == '"' {
				// Only whether it is empty counts (Entry.EmptySummary): a
				// non-empty raw body decodes to a non-empty string.
				var raw []byte
				raw, _, err = d.rawString()
				f.summary = ""
				if len(raw) > 0 {
					f.summary = "-"
				}
			} else if d.scratch != nil {
				f.summaryBytes, err = d.optBody()
			} else {
				f.summary, _, err = d.optText()
			}
		case "fromId":
			f.fromID, _, err = d.optStr()
		case "fromHook":
			f.fromHook, err = d.optBool()
		case "firstKeptEntryId":
			f.firstKeptEntryID, f.hasFirstKeptID, err = d.optStr()
		case "firstKeptEntryIndex":
			f.firstKeptEntryIndex, f.hasFirstKeptEntryIndex, err = d.optNum()
		case "targetId":
			f.targetID, _, err = d.optStr()
		case "label":
			f.label, _, err = d.optStr()
		case "name":
			f.name, _, err = d.optStr()
		case "replacement":
			f.replacementNull, f.replacementOK = false, false
			switch d.peek() {
			case 'n':
				var raw []byte
				raw, err = d.skip()
				f.replacementNull = string(raw) == "null"
			case '{':
				f.replacement, f.replacementOK, err = decodeReplacement(d)
			default:
				_, err = d.skip()
			}
		case "systemMessage":
			var raw []byte
			raw, err = d.skip()
			f.systemMessage = err == nil && truthy(raw)
		default:
			_, err = d.skip()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return f, nil
}

// decodeReplacement decodes a context_edit replacement object; ok reports
// that its content is a string or an array (the last "content" key wins,
// as in JSON.parse).
func decodeReplacement(d *decoder) (c Content, ok bool, err error) {
	err = d.object(1, func(k []byte) error {
		if string(k) != "content" {
			_, err := d.skip()
			return err
		}
		switch d.peek() {
		case '"', '[':
			ok = true
		default:
			ok = false
		}
		var err error
		c, err = decodeContent(d, 2)
		return err
	})
	return c, ok, err
}

// decodeMessage decodes a stored AgentMessage object.
func decodeMessage(d *decoder, m *Message) error {
	return d.object(1, func(k []byte) error {
		var err error
		switch string(k) {
		case "role":
			m.Role, _, err = d.optStr()
		case "content":
			if d.treeOnly {
				err = skipContent(d, 2)
			} else {
				m.Content, err = decodeContent(d, 2)
			}
		case "stopReason":
			m.StopReason, _, err = d.optStr()
		case "toolName":
			m.ToolName, _, err = d.optStr()
		case "toolCallId":
			m.ToolCallID, _, err = d.optStr()
		case "isError":
			m.IsError, err = d.optBool()
		case "command":
			switch {
			case d.treeOnly:
				_, err = d.skip()
			case d.scratch != nil:
				m.CommandBytes, err = d.optBody()
			default:
				m.Command, _, err = d.optText()
			}
		case "output":
			switch {
			case d.treeOnly:
				_, err = d.skip()
			case d.scratch != nil:
				m.OutputBytes, err = d.optBody()
			default:
				m.Output, _, err = d.optText()
			}
		case "excludeFromContext":
			m.ExcludeFromContext, err = d.optBool()
		case "customType":
			m.CustomType, _, err = d.optStr()
		default:
			_, err = d.skip()
		}
		return err
	})
}

// decodeContent decodes a content value: a string, an array of blocks, or
// anything else as empty content (0.85.1 treats null as []).
func decodeContent(d *decoder, depth int) (Content, error) {
	switch d.peek() {
	case '"':
		if d.scratch != nil {
			b, err := d.body()
			return Content{IsString: true, TextBytes: b}, err
		}
		s, err := d.text()
		return Content{IsString: true, Text: s}, err
	case '[':
	default:
		_, err := d.skip()
		return Content{}, err
	}
	d.i++
	c := Content{Parts: []Part{}}
	if d.parts != nil {
		// Transient: the parts go to the line's shared array, each
		// content's slice capped at its own end so that the next one
		// appends past it.
		start := len(*d.parts)
		err := decodeParts(d, depth, func(p Part) { *d.parts = append(*d.parts, p) })
		n := len(*d.parts)
		c.Parts = (*d.parts)[start:n:n]
		return c, err
	}
	return c, decodeParts(d, depth, func(p Part) { c.Parts = append(c.Parts, p) })
}

// decodeParts decodes the elements of a content array (after its "[")
// through its "]", passing each part to add.
func decodeParts(d *decoder, depth int, add func(p Part)) error {
	if d.peek() == ']' {
		d.i++
		return nil
	}
	for {
		d.ws()
		start := d.i
		var p Part
		var err error
		if d.peek() == '{' {
			err = decodePart(d, &p, depth+1)
		} else {
			_, err = d.skip()
		}
		if err != nil {
			return err
		}
		switch p.Type {
		case "text", "thinking", "image", "toolCall": // decodePart's in-place types
		default:
			p.Raw = d.b[start:d.i]
		}
		add(p)
		if done, err := d.arrayNext(); done || err != nil {
			return err
		}
	}
}

// skipContent validates and crosses a content value as decodeContent
// reads it, with the same nesting depths (so that the same lines pass the
// depth limit), decoding nothing (Parser.TreeOnly).
func skipContent(d *decoder, depth int) error {
	if d.peek() != '[' {
		_, err := d.skip()
		return err
	}
	d.i++
	if d.peek() == ']' {
		d.i++
		return nil
	}
	skipMember := func([]byte) error { _, err := d.skip(); return err }
	for {
		var err error
		if d.peek() == '{' {
			err = d.object(depth+1, skipMember)
		} else {
			_, err = d.skip()
		}
		if err != nil {
			return err
		}
		if done, err := d.arrayNext(); done || err != nil {
			return err
		}
	}
}

// rawBody is a text body crossed but not yet decoded (decodePart in a
// transient parse); raw nil: absent or not a string.
type rawBody struct {
	raw        []byte
	esc, ascii bool
}

// optRawBody crosses a text body value, decoding nothing.
func (d *decoder) optRawBody() (rawBody, error) {
	if d.peek() != '"' {
		_, err := d.skip()
		return rawBody{}, err
	}
	raw, esc, err := d.rawString()
	return rawBody{raw, esc, d.ascii}, err
}

// partBody reads a content part's text body in a transient parse. A part
// whose line has at most maxKeptBodies bytes left is decoded now, into
// the body buffer (decodeBody without inPlace: the part's own JSON may
// yet be kept as written, Part.Raw, once its type is known), and into
// *decoded; a longer one is only crossed, into *raw, and decoded by
// decodePart in place once its type is known, so that a tool result of
// megabytes is not copied. The later of two such keys wins, as in
// JSON.parse.
func (d *decoder) partBody(raw *rawBody, decoded *[]byte) error {
	if d.peek() != '"' || len(d.b)-d.i > maxKeptBodies {
		var err error
		*raw, err = d.optRawBody()
		*decoded = nil
		return err
	}
	*raw = rawBody{}
	var err error
	*decoded, err = d.decodeBody(false)
	return err
}

func decodePart(d *decoder, p *Part, depth int) error {
	// In a transient parse the text bodies are decoded once the part's
	// type is known: in place (decoder.body) unless the part's JSON is
	// kept as written (decodeParts sets Raw for the other types).
	var text, thinking rawBody
	defer func() {
		if d.scratch == nil {
			return
		}
		inPlace := p.Type == "text" || p.Type == "thinking" || p.Type == "image" || p.Type == "toolCall"
		if text.raw != nil {
			p.TextBytes = d.bodyOf(text.raw, text.esc, text.ascii, inPlace)
		}
		if thinking.raw != nil {
			p.ThinkingBytes = d.bodyOf(thinking.raw, thinking.esc, thinking.ascii, inPlace)
		}
	}()
	return d.object(depth, func(k []byte) error {
		var err error
		switch string(k) {
		case "type":
			p.Type, _, err = d.optStr()
		case "text":
			if d.scratch != nil {
				err = d.partBody(&text, &p.TextBytes)
			} else {
				p.Text, _, err = d.optText()
			}
		case "thinking":
			if d.scratch != nil {
				err = d.partBody(&thinking, &p.ThinkingBytes)
			} else {
				p.Thinking, _, err = d.optText()
			}
		case "mimeType":
			p.MimeType, _, err = d.optStr()
		case "id":
			p.ID, _, err = d.optStr()
		case "name":
			p.Name, _, err = d.optStr()
		case "namespace":
			p.Namespace, _, err = d.optStr()
		case "arguments":
			var raw []byte
			raw, err = d.skip()
			p.Arguments = json.RawMessage(raw)
		default:
			_, err = d.skip()
		}
		return err
	})
}

// contentFromJSON decodes a content value from its own bytes (for
// Content.UnmarshalJSON).
func contentFromJSON(b []byte) (Content, error) {
	d := &decoder{b: bytes.TrimSpace(b)}
	c, err := decodeContent(d, 0)
	if err != nil {
		return Content{}, err
	}
	return c, d.end()
}
