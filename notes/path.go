package notes

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultAgent is the agent name used when the caller gives none: the root
// agent (docs/codex-contract.md "Window boundaries": `/root` for the
// main agent).
const DefaultAgent = "/root"

// MaxPathBytes bounds a resolved note path or prefix, in UTF-8 bytes. The
// reference sets no limit; contextd picks 1,024 so that every path fits
// comfortably in a thread-hint line and in an error message.
const MaxPathBytes = 1024

// notesDir is the path component that separates an agent name from a note's
// name inside that agent's notes (docs/codex-contract.md "Tool surface", "<agent_name>/notes").
const notesDir = "notes"

// maxQuoted bounds how much of a rejected path an error message repeats.
const maxQuoted = 120

// ResolveFile turns the `path` argument of read_file, write_file or
// append_to_file into a full virtual note path (docs/codex-contract.md
// "Local notes", path rules).
//
// agent is the current agent name ("" means DefaultAgent): "/root" or a
// sub-agent path such as "/root/worker". A relative path resolves under
// "<agent>/notes/": "plan.md" → "/root/notes/plan.md", and "notes/x" →
// "/root/notes/notes/x". An absolute path must have the form
// "<agent>/notes/<name>" where <agent> is "/root" or a path under it; any
// agent's notes may be named ("/root/worker/notes/x"), as the reference says
// reads and writes may access other agents' notes. The first "notes"
// component after the leading "root" separates the agent from the name.
//
// Refused, with an *Error (CodeInvalid) whose message names an accepted form:
// the empty path (MsgPathRequired); invalid UTF-8; control characters (C0,
// DEL and C1, NUL and newlines included); backslashes; empty, "." and ".."
// components (so "//", "./x", "x/..", "../x"); a trailing "/"; the notes
// directory itself ("/root/notes", "/root/notes/"); absolute paths without a
// notes directory after the agent ("/root/notes_backup/x", "/root/notesx",
// "/etc/passwd") or not under "/root"; results longer than MaxPathBytes.
//
// Components that percent-decode to "." or ".." ("%2e%2e", "%2E.") are
// refused too. Everything else is literal: paths are virtual, not URLs, so
// "a%2fb" is a file named "a%2fb" (never decoded), "~" is literal (docs/codex-contract.md
// "Tool surface"), spaces are kept, and Unicode names are compared byte for byte
// without normalization. The result never contains "//", "/./" or "/../",
// and resolving it again, for any agent, gives it back unchanged.
func ResolveFile(agent, path string) (string, error) {
	a, err := normalizeAgent(agent)
	if err != nil {
		return "", err
	}
	if path == "" {
		return "", invalidf(MsgPathRequired)
	}
	fail := func(reason string) error {
		return invalidf(fmt.Sprintf(`Invalid note path %s: %s; use a relative path like "plan.md" or an absolute one like %q`,
			quote(path), reason, a+"/notes/plan.md"))
	}
	if reason := badChars(path); reason != "" {
		return "", fail(reason)
	}
	full := path
	if !strings.HasPrefix(path, "/") {
		full = a + "/" + notesDir + "/" + path
	}
	body := full[1:]
	if strings.HasSuffix(body, "/") {
		trimmed := strings.TrimSuffix(body, "/")
		if c := strings.Split(trimmed, "/"); len(c) >= 2 && c[0] == "root" && c[len(c)-1] == notesDir && firstNotes(c) == len(c)-1 && validComponents(c) {
			return "", fail("it names a notes directory, not a file")
		}
		return "", fail(`a file path must not end with "/"`)
	}
	comps := strings.Split(body, "/")
	if !validComponents(comps) {
		return "", fail(`path components must not be empty, "." or ".."`)
	}
	if comps[0] != "root" {
		return "", fail(`an absolute path must start with an agent name under "/root", as in "/root/notes/plan.md" or "/root/worker/notes/plan.md"`)
	}
	i := firstNotes(comps)
	if i < 0 {
		return "", fail(`an absolute path must have the form <agent>/notes/<name>, with "notes" as a whole component`)
	}
	if i == len(comps)-1 {
		return "", fail("it names a notes directory itself, not a file")
	}
	if len(full) > MaxPathBytes {
		return "", fail(fmt.Sprintf("the resolved path is longer than %d UTF-8 bytes", MaxPathBytes))
	}
	return full, nil
}

// ResolvePrefix turns the `prefix` argument of list_files_by_prefix or the
// `path_prefix` argument of search_contents into a path prefix; a note
// matches when its full path starts with the prefix, byte for byte
// (docs/codex-contract.md "Local notes", path rules).
//
// A nil or empty prefix is "<agent>/notes/" (agent "" means DefaultAgent).
// A relative prefix resolves under "<agent>/notes/": "drafts/" →
// "/root/notes/drafts/", "pl" → "/root/notes/pl" (matches
// "/root/notes/plan.md"). An absolute prefix must reach an agent's notes
// directory: "/root/notes" and "/root/worker/notes" get a trailing "/"
// (so "/root/notes" never matches "/root/notes_backup/…"), and a prefix may
// end with one "/". The character and component rules of ResolveFile apply
// to every component; the last component may be a partial name.
func ResolvePrefix(agent string, prefix *string) (string, error) {
	a, err := normalizeAgent(agent)
	if err != nil {
		return "", err
	}
	if prefix == nil || *prefix == "" {
		return a + "/" + notesDir + "/", nil
	}
	p := *prefix
	fail := func(reason string) error {
		return invalidf(fmt.Sprintf(`Invalid note prefix %s: %s; use a relative prefix like "drafts/" or an absolute one like %q`,
			quote(p), reason, a+"/notes/"))
	}
	if reason := badChars(p); reason != "" {
		return "", fail(reason)
	}
	full := p
	if !strings.HasPrefix(p, "/") {
		full = a + "/" + notesDir + "/" + p
	}
	body := strings.TrimSuffix(full[1:], "/")
	comps := strings.Split(body, "/")
	if !validComponents(comps) {
		return "", fail(`path components must not be empty, "." or ".."`)
	}
	if comps[0] != "root" {
		return "", fail(`an absolute prefix must start with an agent name under "/root", as in "/root/notes/" or "/root/worker/notes/"`)
	}
	i := firstNotes(comps)
	if i < 0 {
		return "", fail(`an absolute prefix must reach an agent's notes directory, as in "/root/notes/" or "/root/worker/notes/"`)
	}
	if i == len(comps)-1 {
		full = "/" + body + "/"
	}
	if len(full) > MaxPathBytes {
		return "", fail(fmt.Sprintf("the resolved prefix is longer than %d UTF-8 bytes", MaxPathBytes))
	}
	return full, nil
}

// normalizeAgent validates an agent name and returns it, with "" mapped to
// DefaultAgent. A valid agent name is "/root" or "/root/<name>[/<name>…]"
// (docs/codex-contract.md "Window boundaries"; oh-my-pi's sub-agents are "/root/<id>"), with no empty,
// ".", ".." or "notes" component, no trailing "/", and the character rules
// of ResolveFile. Errors are *contextd.Error with contextd.EInvalid.
func normalizeAgent(agent string) (string, error) {
	if agent == "" {
		return DefaultAgent, nil
	}
	fail := func() error {
		return invalidf(fmt.Sprintf(`Invalid agent name %s: use "/root" or a sub-agent path like "/root/worker"`, quote(agent)))
	}
	if !strings.HasPrefix(agent, "/") || badChars(agent) != "" || len(agent) > MaxPathBytes/2 {
		return "", fail()
	}
	comps := strings.Split(agent[1:], "/")
	if !validComponents(comps) || comps[0] != "root" || firstNotes(comps) >= 0 {
		return "", fail()
	}
	return agent, nil
}

// badChars returns why s has characters no note path may hold, or "".
func badChars(s string) string {
	if !utf8.ValidString(s) {
		return "the path must be valid UTF-8"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "the path must not contain control characters such as NUL, newline or DEL"
		}
		if r == '\\' {
			return `components are separated by "/"; backslashes are not allowed`
		}
	}
	return ""
}

// validComponents reports whether no component is empty, "." or "..",
// also once percent-decoded: paths are never URL-decoded here, but a
// component such as "%2e%2e" would become ".." in any layer that does, so
// it is refused as a traversal trap.
func validComponents(comps []string) bool {
	for _, c := range comps {
		if c == "" || c == "." || c == ".." {
			return false
		}
		if strings.IndexByte(c, '%') >= 0 {
			if d, err := url.PathUnescape(c); err == nil && (d == "." || d == "..") {
				return false
			}
		}
	}
	return true
}

// firstNotes returns the index of the first "notes" component at index ≥ 1,
// or -1 (docs/codex-contract.md "Local notes": "a notes component at index ≥ 1").
func firstNotes(comps []string) int {
	for i := 1; i < len(comps); i++ {
		if comps[i] == notesDir {
			return i
		}
	}
	return -1
}

// quote renders s for an error message with Go's %q escaping (control
// characters become visible escapes), cut after maxQuoted bytes at a
// character boundary.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return fmt.Sprintf("%q", s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q…", s[:cut])
}
