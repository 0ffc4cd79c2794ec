package notes

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Source is the `source` of every Local/Tree notes result (docs/codex-contract.md
// "Local notes", result shapes).
const Source = "pi-session"

// Bounds of the notes operations (docs/codex-contract.md "Local
// notes", limits). A count argument that is absent, null, zero or negative takes
// its default; one above its maximum is clamped to the maximum.
const (
	DefaultMaxResults        = 20  // list_files_by_prefix max_results: default
	MaxMaxResults            = 100 // list_files_by_prefix max_results: maximum
	DefaultMaxFiles          = 20  // search_contents max_files: default
	MaxMaxFiles              = 100 // search_contents max_files: maximum
	DefaultMaxMatchesPerFile = 20  // search_contents max_matches_per_file: default
	MaxMaxMatchesPerFile     = 100 // search_contents max_matches_per_file: maximum
)

// Values of list_files_by_prefix file_order_by and file_order (docs/codex-contract.md
// "Tool surface" "Namespace notes").
const (
	OrderByName      = "name"
	OrderByCreatedAt = "created_at"
	OrderByUpdatedAt = "updated_at"
	OrderAscending   = "ascending"
	OrderDescending  = "descending"
)

// FileMeta is a note file's metadata as results show it (docs/codex-contract.md "Local notes"):
// {"path", "bytes", "created_at", "updated_at"}.
type FileMeta struct {
	Path      string `json:"path" doc:"Full virtual path of the note file, e.g. /root/notes/plan.md."`
	Bytes     int    `json:"bytes" doc:"Size of the file's text in UTF-8 bytes (at most 1,000,000)."`
	CreatedAt string `json:"created_at" format:"date-time" doc:"When the file was created: ISO-8601 UTC with milliseconds, e.g. 2026-07-06T12:47:08.114Z."`
	UpdatedAt string `json:"updated_at" format:"date-time" doc:"When the file was last written or appended to: ISO-8601 UTC with milliseconds."`
}

// ListFilesByPrefixArgs are the arguments of notes.list_files_by_prefix
// (docs/codex-contract.md "Tool surface" "Namespace notes"). Nil fields are absent.
type ListFilesByPrefixArgs struct {
	Prefix      *string `json:"prefix,omitempty" nullable:"true" doc:"Path prefix: relative to the current agent's notes directory (\"drafts/\") or absolute (\"/root/notes/drafts/\", \"/root/worker/notes/\"); a prefix ending at \"notes\" gets a trailing \"/\". Absent, null or empty: the current agent's notes directory."`
	MaxResults  *int    `json:"max_results,omitempty" nullable:"true" minimum:"1" doc:"Maximum number of files returned: at least 1 (the Codex schema's minimum; 0 or less is refused with 422); absent or null: 20; above 100: 100."`
	FileOrderBy *string `json:"file_order_by,omitempty" nullable:"true" enum:"name,created_at,updated_at" doc:"Sort key: the path (name), the creation time or the last update time. Default name; ties are broken by path."`
	FileOrder   *string `json:"file_order,omitempty" nullable:"true" enum:"ascending,descending" doc:"Sort direction. Default ascending."`
}

// ListResult is the result of list_files_by_prefix: {"source", "files"}.
type ListResult struct {
	Source string     `json:"source" doc:"Always pi-session."`
	Files  []FileMeta `json:"files" doc:"Matching files in the requested order, at most max_results."`
}

// ListFilesByPrefix lists the note files whose full path starts with the
// resolved prefix (ResolvePrefix), sorted by args.FileOrderBy in
// args.FileOrder with ties broken by ascending path, and cut to max_results
// (default DefaultMaxResults, clamped to MaxMaxResults). agent is the current
// agent name ("" means DefaultAgent). Errors: *Error CodeInvalid for a bad
// prefix, agent or enum value.
func ListFilesByPrefix(s *State, agent string, args ListFilesByPrefixArgs) (ListResult, error) {
	prefix, err := ResolvePrefix(agent, args.Prefix)
	if err != nil {
		return ListResult{}, err
	}
	orderBy, err := enumArg("file_order_by", args.FileOrderBy, OrderByName, OrderByName, OrderByCreatedAt, OrderByUpdatedAt)
	if err != nil {
		return ListResult{}, err
	}
	order, err := enumArg("file_order", args.FileOrder, OrderAscending, OrderAscending, OrderDescending)
	if err != nil {
		return ListResult{}, err
	}
	files := s.withPrefix(prefix)
	slices.SortFunc(files, func(a, b File) int {
		var c int
		switch orderBy {
		case OrderByCreatedAt:
			c = cmp.Compare(a.CreatedAt, b.CreatedAt)
		case OrderByUpdatedAt:
			c = cmp.Compare(a.UpdatedAt, b.UpdatedAt)
		default:
			c = strings.Compare(a.Path, b.Path)
		}
		if order == OrderDescending {
			c = -c
		}
		if c == 0 {
			c = strings.Compare(a.Path, b.Path)
		}
		return c
	})
	files = files[:min(len(files), Bound(args.MaxResults, DefaultMaxResults, MaxMaxResults))]
	out := ListResult{Source: Source, Files: make([]FileMeta, len(files))}
	for i, f := range files {
		out.Files[i] = f.Meta()
	}
	return out, nil
}

// ReadFileArgs are the arguments of notes.read_file (docs/codex-contract.md "Tool surface").
type ReadFileArgs struct {
	Path      string `json:"path" doc:"Note file path: relative to the current agent's notes directory (\"plan.md\") or absolute (\"/root/notes/plan.md\")."`
	StartLine *int   `json:"start_line,omitempty" nullable:"true" doc:"First line to return, 1-based and inclusive; negative counts from the end (-1 is the last line). Absent, null or 0: line 1. Clamped to the file's lines."`
	StopLine  *int   `json:"stop_line,omitempty" nullable:"true" doc:"Last line to return, 1-based and inclusive; negative counts from the end. Absent, null or 0: the last line. Clamped to the file's lines. With both given, start_line after stop_line is refused (422)."`
}

// FileContent is a read file: its metadata plus the returned window
// (docs/codex-contract.md "Local notes"): {…FileMeta, "content", "start_line", "stop_line",
// "total_lines"}.
type FileContent struct {
	FileMeta
	Content    string `json:"content" doc:"Lines start_line..stop_line joined with \"\\n\"; the whole text when the window covers every line. Empty when start_line > stop_line."`
	StartLine  int    `json:"start_line" doc:"First returned line, 1-based (0 for an empty file)."`
	StopLine   int    `json:"stop_line" doc:"Last returned line, 1-based inclusive (0 for an empty file)."`
	TotalLines int    `json:"total_lines" doc:"Number of lines: the text split at \"\\n\" (a trailing newline ends in an empty last line); 0 for an empty file."`
}

// ReadResult is the result of read_file: {"source", "file"}, with file null
// when no note exists at the path.
type ReadResult struct {
	Source string       `json:"source" doc:"Always pi-session."`
	File   *FileContent `json:"file" doc:"The file and the requested line window, or null when the file does not exist."`
}

// ReadFile reads the note file at args.Path (ResolveFile) and returns the
// line window [start_line, stop_line] (package doc, "Lines"; docs/codex-contract.md "Local notes"
// "Line indices"): both 1-based and inclusive; a negative value n means line
// total_lines+1+n (-1 is the last line); 0 or nil means the default (1 for
// start, total_lines for stop); the results are clamped to [1, total_lines].
// Both given (non-zero) with start_line after stop_line (compared after
// resolving negatives, before clamping) is refused: *Error CodeInvalid
// naming both. An empty file gives content "" with start_line, stop_line
// and total_lines 0. A missing file gives File == nil. Errors: *Error
// CodeInvalid for a bad path or agent, or a reversed range.
func ReadFile(s *State, agent string, args ReadFileArgs) (ReadResult, error) {
	path, err := ResolveFile(agent, args.Path)
	if err != nil {
		return ReadResult{}, err
	}
	f, ok := s.File(path)
	if !ok {
		return ReadResult{Source: Source}, nil
	}
	lines := splitLines(f.Text)
	total := len(lines)
	if a, b := args.StartLine, args.StopLine; a != nil && b != nil && *a != 0 && *b != 0 && total > 0 {
		// Both given: a range that ends before it starts is a mistake,
		// not an empty read that hides the mistake. Negative values count from the
		// end, so compare them resolved.
		from, to := *a, *b
		if from < 0 {
			from = total + 1 + from
		}
		if to < 0 {
			to = total + 1 + to
		}
		if from > to {
			return ReadResult{}, invalidf(fmt.Sprintf("start_line %d is after stop_line %d (lines %d and %d of %d); pass a start_line at or before stop_line", *a, *b, from, to, total))
		}
	}
	start, stop := lineIndex(args.StartLine, 1, total), lineIndex(args.StopLine, total, total)
	content := ""
	if start >= 1 && start <= stop {
		if err := linesLoneSurrogate(f.Path, lines[start-1:stop], start); err != nil {
			return ReadResult{}, err
		}
		if start == 1 && stop == total {
			content = f.Text
		} else {
			content = strings.Join(lines[start-1:stop], "\n")
		}
	}
	return ReadResult{Source: Source, File: &FileContent{FileMeta: f.Meta(), Content: content, StartLine: start, StopLine: stop, TotalLines: total}}, nil
}

// lineIndex resolves a line argument against total lines (see ReadFile).
func lineIndex(v *int, def, total int) int {
	if total == 0 {
		return 0
	}
	n := def
	if v != nil && *v != 0 {
		n = *v
		if n < 0 {
			n = total + 1 + n
		}
	}
	return max(1, min(n, total))
}

// SearchArgs are the arguments of notes.search_contents (docs/codex-contract.md "Tool surface").
type SearchArgs struct {
	Query             string  `json:"query" doc:"Case-sensitive literal text, matched against each line separately (so a query containing a newline never matches). Required, non-empty."`
	MaxMatchesPerFile *int    `json:"max_matches_per_file,omitempty" nullable:"true" minimum:"1" doc:"Maximum matching lines per file: at least 1 (the Codex schema's minimum; 0 or less is refused with 422); absent or null: 20; above 100: 100."`
	RecentFileFirst   *bool   `json:"recent_file_first,omitempty" nullable:"true" doc:"Order files by creation time, newest first (ties by path). Default false: by path."`
	MaxFiles          *int    `json:"max_files,omitempty" nullable:"true" minimum:"1" doc:"Maximum number of files with matches: at least 1 (the Codex schema's minimum; 0 or less is refused with 422); absent or null: 20; above 100: 100."`
	PathPrefix        *string `json:"path_prefix,omitempty" nullable:"true" doc:"Only search files under this prefix (same rules as list_files_by_prefix prefix). Absent, null or empty: the current agent's notes directory."`
}

// Match is one matching line: {"line_number", "line"}.
type Match struct {
	LineNumber int    `json:"line_number" doc:"1-based line number."`
	Line       string `json:"line" doc:"The whole matching line, without its newline."`
}

// SearchFile is the matches of one file: {"path", "matches"}.
type SearchFile struct {
	Path    string  `json:"path" doc:"Full virtual path of the file."`
	Matches []Match `json:"matches" doc:"Matching lines in line order, at most max_matches_per_file."`
}

// SearchResult is the result of search_contents: {"source", "files"}.
type SearchResult struct {
	Source string       `json:"source" doc:"Always pi-session."`
	Files  []SearchFile `json:"files" doc:"Files with at least one match, at most max_files."`
}

// SearchContents finds the lines containing args.Query (case-sensitive,
// literal, per line; package doc "Lines") in the note files under the
// resolved path_prefix (ResolvePrefix). Files are visited by path, or by
// CreatedAt newest first when recent_file_first is true; files without a
// match are left out; at most max_files files (default DefaultMaxFiles,
// clamped to MaxMaxFiles) and max_matches_per_file matches each (default
// DefaultMaxMatchesPerFile, clamped to MaxMaxMatchesPerFile) are returned.
// Errors: *Error CodeInvalid with MsgQueryRequired for an empty query, or
// for a bad prefix or agent.
func SearchContents(s *State, agent string, args SearchArgs) (SearchResult, error) {
	if args.Query == "" {
		return SearchResult{}, invalidf(MsgQueryRequired)
	}
	prefix, err := ResolvePrefix(agent, args.PathPrefix)
	if err != nil {
		return SearchResult{}, err
	}
	files := s.withPrefix(prefix) // sorted by path
	if args.RecentFileFirst != nil && *args.RecentFileFirst {
		slices.SortStableFunc(files, func(a, b File) int { return cmp.Compare(b.CreatedAt, a.CreatedAt) })
	}
	maxFiles := Bound(args.MaxFiles, DefaultMaxFiles, MaxMaxFiles)
	maxMatches := Bound(args.MaxMatchesPerFile, DefaultMaxMatchesPerFile, MaxMaxMatchesPerFile)
	out := SearchResult{Source: Source, Files: []SearchFile{}}
	for _, f := range files {
		if len(out.Files) == maxFiles {
			break
		}
		if !strings.Contains(f.Text, args.Query) {
			continue
		}
		var matches []Match
		for i, line := range splitLines(f.Text) {
			if strings.Contains(line, args.Query) {
				if err := linesLoneSurrogate(f.Path, []string{line}, i+1); err != nil {
					return SearchResult{}, err
				}
				matches = append(matches, Match{LineNumber: i + 1, Line: line})
				if len(matches) == maxMatches {
					break
				}
			}
		}
		if len(matches) > 0 {
			out.Files = append(out.Files, SearchFile{Path: f.Path, Matches: matches})
		}
	}
	return out, nil
}

// WriteArgs are the arguments of notes.write_file (docs/codex-contract.md "Tool surface").
type WriteArgs struct {
	Path string `json:"path" doc:"Note file path: relative to the current agent's notes directory (\"plan.md\") or absolute (\"/root/notes/plan.md\")."`
	Text string `json:"text" doc:"The file's new full text (replaces any existing content). At most 1,000,000 UTF-8 bytes."`
}

// AppendArgs are the arguments of notes.append_to_file (docs/codex-contract.md "Tool surface").
type AppendArgs struct {
	Path string `json:"path" doc:"Note file path: relative to the current agent's notes directory (\"plan.md\") or absolute (\"/root/notes/plan.md\"). A missing file is created."`
	Text string `json:"text" doc:"Text appended exactly as given (no newline is added). The file must stay at most 1,000,000 UTF-8 bytes."`
}

// WriteResult is the result of write_file and append_to_file:
// {"source", "file"} with the file's metadata after the write.
type WriteResult struct {
	Source string   `json:"source" doc:"Always pi-session."`
	File   FileMeta `json:"file" doc:"The file's metadata after the write."`
}

// NoteData is the data of a codex-context-note entry (docs/codex-contract.md "Local notes"):
// {"protocol":1, "action", "path", "text", "timestamp"}.
type NoteData struct {
	Protocol  int    `json:"protocol" doc:"Always 1."`
	Action    string `json:"action" enum:"append,write" doc:"append or write."`
	Path      string `json:"path" doc:"Full virtual path of the file."`
	Text      string `json:"text" doc:"Appended or written text."`
	Timestamp int64  `json:"timestamp" doc:"Unix milliseconds."`
}

// AppendEntry is a custom entry the extension must append, with
// pi.appendEntry(customType, data), before it returns the tool result
// (docs/design.md §5.1): {"type":"custom", "customType":"codex-context-note",
// "data": NoteData}.
type AppendEntry struct {
	Type       string   `json:"type" enum:"custom" doc:"Always custom."`
	CustomType string   `json:"customType" doc:"Always codex-context-note."`
	Data       NoteData `json:"data" doc:"The note entry's data."`
}

// PlanWrite validates a write_file call against the current state s and
// returns the result the model sees (the file's metadata after the write:
// CreatedAt kept when the file exists, UpdatedAt = now) and the entry that
// performs it, with timestamp now in Unix ms and the resolved path. Nothing
// is changed: the write takes effect when the extension appends the entry.
//
// Errors, with nothing planned: *Error CodeInvalid for a bad path or agent
// (ResolveFile), a path holding a bidirectional control or other invisible
// format character (invisibleInPath; the message names it and its 1-based
// position), text holding a lone surrogate (MsgTextLoneSurrogate: the body
// decoder keeps one as WTF-8, so the escape is refused instead of stored
// as U+FFFD) or text that is not valid UTF-8 (MsgTextNotUTF8); *Error
// CodeTooLarge with MsgFileTooLarge when the text exceeds MaxFileBytes
// (exactly MaxFileBytes is accepted), or MsgSnapshotTooLarge when all files
// together would no longer fit in a note snapshot (MaxSnapshotBytes; the
// reference bounds the note set only by this cap, docs/codex-contract.md "Local notes").
func PlanWrite(s *State, agent string, args WriteArgs, now time.Time) (WriteResult, AppendEntry, error) {
	return plan(s, agent, ActionWrite, args.Path, args.Text, now)
}

// PlanAppend validates an append_to_file call as PlanWrite does; the text is
// appended exactly, and a missing file is created (CreatedAt = now). The
// size limit applies to the file after the append: existing bytes plus
// appended bytes must not exceed MaxFileBytes.
func PlanAppend(s *State, agent string, args AppendArgs, now time.Time) (WriteResult, AppendEntry, error) {
	return plan(s, agent, ActionAppend, args.Path, args.Text, now)
}

func plan(s *State, agent, action, rawPath, text string, now time.Time) (WriteResult, AppendEntry, error) {
	path, err := ResolveFile(agent, rawPath)
	if err != nil {
		return WriteResult{}, AppendEntry{}, err
	}
	if r, pos, ok := invisibleInPath(rawPath); ok {
		return WriteResult{}, AppendEntry{}, invalidf(fmt.Sprintf("Invalid note path %s: it holds %s at character %d, an invisible character that changes how the path displays; remove it from the path",
			quote(rawPath), charName(r), pos))
	}
	if !utf8.ValidString(text) {
		if r, pos, ok := loneSurrogate(text); ok {
			return WriteResult{}, AppendEntry{}, invalidf(fmt.Sprintf(MsgTextLoneSurrogate, r, pos))
		}
		return WriteResult{}, AppendEntry{}, invalidf(MsgTextNotUTF8)
	}
	ts := now.UnixMilli()
	if ts < 0 || ts > MaxTimestamp {
		return WriteResult{}, AppendEntry{}, fmt.Errorf("notes: clock time %v is outside the supported range", now)
	}
	// Apply the event to a one-file scratch state over s to get the exact
	// resulting file and snapshot size without touching s.
	old := s.lookup(path)
	if action == ActionAppend && old != nil && len(old.Text)+len(text) > MaxFileBytes || len(text) > MaxFileBytes {
		return WriteResult{}, AppendEntry{}, tooLarge(MsgFileTooLarge)
	}
	scratch := &State{}
	snapBytes := 0
	if s != nil {
		snapBytes = s.snapBytes
		if old != nil {
			scratch.files = map[string]*stateFile{path: old}
			scratch.snapBytes = snapshotFileJSONLen(old)
		}
	}
	snapBytes -= scratch.snapBytes
	ev := Event{Action: action, Path: path, Text: text, Timestamp: ts}
	if err := scratch.Apply(ev); err != nil {
		return WriteResult{}, AppendEntry{}, err
	}
	snapBytes += scratch.snapBytes
	if old == nil && s.Len() > 0 {
		snapBytes++ // the comma scratch did not count
	}
	if snapshotJSONLen(snapBytes, ts) > MaxSnapshotBytes {
		return WriteResult{}, AppendEntry{}, tooLarge(MsgSnapshotTooLarge)
	}
	f, _ := scratch.File(path)
	return WriteResult{Source: Source, File: f.Meta()},
		AppendEntry{Type: "custom", CustomType: CustomTypeNote, Data: NoteData{Protocol: Protocol, Action: action, Path: path, Text: text, Timestamp: ts}},
		nil
}

// Bound resolves a count argument: nil, zero or negative gives def, a value
// above max gives max (docs/codex-contract.md "Local notes" "Limits"; the seed also takes the
// default for non-integers, which JSON decoding into *int rejects earlier).
func Bound(v *int, def, max int) int {
	if v == nil || *v <= 0 {
		return def
	}
	return min(*v, max)
}

// enumArg validates an optional enum argument; nil or "" gives def.
func enumArg(name string, v *string, def string, allowed ...string) (string, error) {
	if v == nil || *v == "" {
		return def, nil
	}
	if slices.Contains(allowed, *v) {
		return *v, nil
	}
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return "", invalidf(fmt.Sprintf("Invalid %s %s: use %s or %s", name, quote(*v),
		strings.Join(quoted[:len(quoted)-1], ", "), quoted[len(quoted)-1]))
}

// withPrefix returns the files whose path starts with prefix, by path.
func (s *State) withPrefix(prefix string) []File {
	var out []File
	for _, f := range s.Files() {
		if strings.HasPrefix(f.Path, prefix) {
			out = append(out, f)
		}
	}
	return out
}
