// Package cut finds the distinctive identifiers of a history window: the
// literal strings a model is likely to need again after a rollover cut the
// window from its context (docs/rollover-quality.md). Extraction is deterministic and
// works on the rendered item texts (history.Render), so every identifier
// is a literal substring that history search_contents can find.
//
// Kinds, applied to each item text in this order (a span taken by an
// earlier kind is not read again by a later one):
//
//   - url: http:// or https:// up to whitespace, a quote, <, >, a bracket
//     or a backtick; trailing . , ; : ! ? are not part of it.
//   - path: a run of [A-Za-z0-9_.@+-] segments joined by "/", starting
//     with "/", "~/", "./" or "../", or relative with a last segment that
//     has an extension (".go", ".md": a dot, then 1 to 10 letters or
//     digits); at least two segments. Trailing dots are cut.
//   - commit: 7 to 40 lowercase hex digits between word boundaries with at
//     least one digit and one letter, outside a UUID.
//   - quantity: a number with a unit: ms, us, µs, ns, s, sec, min, h,
//     hours, days, B, bytes, KB, MB, GB, TB, KiB, MiB, GiB, tokens, lines,
//     files, Hz, kHz, MHz, GHz, px, or directly followed by %.
//   - error: a line where error, ERROR, panic, fatal, FAIL, or a word
//     ending in Error or Exception (Error, TypeError), optionally with a
//     [bracketed] tag, is followed by ": " at the start of the line or
//     after a space (so "Error: ENOENT: …", "--- FAIL: TestX",
//     "panic: runtime error: …", but not fmt.Errorf("…") in source
//     code); trimmed, at least 8 bytes; the first 200 bytes (cut at a
//     character boundary), so a prefix search still finds it.
//   - name: in tool results only, a name defined by func, function,
//     class, def, type, interface, struct, enum, const, let, var or fn
//     (Go methods too: func (r *T) Name); at least 3 characters.
//
// Items of the history and notes tools (contextd's own answers) and
// developer items (window boundaries, reminders) are not read: they
// restate ids the model already has.
package cut

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Kinds of identifiers.
const (
	KindURL      = "url"
	KindPath     = "path"
	KindCommit   = "commit"
	KindQuantity = "quantity"
	KindError    = "error"
	KindName     = "name"
)

// MaxErrorBytes bounds an error identifier.
const MaxErrorBytes = 200

// Identifier is one distinctive string of a text.
type Identifier struct {
	Kind  string
	Value string
}

var (
	reURL      = regexp.MustCompile("https?://[^\\s\"'<>()\\[\\]{}`]+")
	rePath     = regexp.MustCompile(`(?:~/|\.\.?/|/)?[A-Za-z0-9_.@+-]+(?:/[A-Za-z0-9_.@+-]+)+`)
	reExt      = regexp.MustCompile(`\.[A-Za-z0-9]{1,10}$`)
	reUUID     = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	reCommit   = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)
	reQuantity = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:\s?(?:ms|us|µs|ns|sec|min|hours|days|bytes|KiB|MiB|GiB|KB|MB|GB|TB|tokens|lines|files|kHz|MHz|GHz|Hz|px|s|h|B)\b|%)`)
	reError    = regexp.MustCompile(`(?:^|\s)(?:error|ERROR|panic|fatal|FAIL|[A-Za-z]*Error|[A-Za-z]*Exception)(?:\[[^\]]*\])?: `)
	reName     = regexp.MustCompile(`\b(?:func(?:\s+\([^)]*\))?|function|class|def|type|interface|struct|enum|const|let|var|fn)\s+([A-Za-z_$][A-Za-z0-9_$]*)`)
)

// Extract returns the identifiers of text in order of first occurrence,
// each once. tool says whether text is a tool result (names are read only
// there).
func Extract(text string, tool bool) []Identifier {
	var out []Identifier
	seen := map[Identifier]bool{}
	add := func(kind, v string) {
		id := Identifier{kind, v}
		if v == "" || seen[id] {
			return
		}
		seen[id] = true
		out = append(out, id)
	}
	// Spans already taken are blanked (same length) for later kinds.
	rest := []byte(text)
	blank := func(loc []int) {
		for i := loc[0]; i < loc[1]; i++ {
			rest[i] = ' '
		}
	}
	for _, loc := range reURL.FindAllIndex(rest, -1) {
		add(KindURL, strings.TrimRight(string(rest[loc[0]:loc[1]]), ".,;:!?"))
		blank(loc)
	}
	for _, loc := range reUUID.FindAllIndex(rest, -1) {
		blank(loc)
	}
	for _, loc := range rePath.FindAllIndex(rest, -1) {
		p := strings.TrimRight(string(rest[loc[0]:loc[1]]), ".")
		body := p
		for _, pre := range []string{"~/", "../", "./", "/"} {
			if strings.HasPrefix(body, pre) {
				body = body[len(pre):]
				break
			}
		}
		abs := body != p
		last := p[strings.LastIndex(p, "/")+1:]
		if last == "" || (!abs && !reExt.MatchString(last)) || (abs && !strings.Contains(body, "/") && !reExt.MatchString(last)) {
			continue // "and/or"; "/tmp" or "./notes" alone: one segment without an extension
		}
		add(KindPath, p)
		blank(loc)
	}
	for _, loc := range reCommit.FindAllIndex(rest, -1) {
		h := string(rest[loc[0]:loc[1]])
		if strings.ContainsAny(h, "0123456789") && strings.ContainsAny(h, "abcdef") {
			add(KindCommit, h)
			blank(loc)
		}
	}
	for _, loc := range reQuantity.FindAllIndex(rest, -1) {
		add(KindQuantity, string(rest[loc[0]:loc[1]]))
	}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if len(line) < 8 || !reError.MatchString(line) {
			continue
		}
		add(KindError, truncate(line, MaxErrorBytes))
	}
	if tool {
		for _, m := range reName.FindAllStringSubmatch(text, -1) {
			if len(m[1]) >= 3 {
				add(KindName, m[1])
			}
		}
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.TrimSpace(s[:n])
}
