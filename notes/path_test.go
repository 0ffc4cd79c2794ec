package notes

import (
	"errors"
	"strings"
	"testing"

	"contextd"
)

const acceptedForms = `; use a relative path like "plan.md" or an absolute one like "/root/notes/plan.md"`

func TestResolveFile(t *testing.T) {
	long := strings.Repeat("a", MaxPathBytes-len("/root/notes/"))
	tests := []struct {
		name, agent, path string
		want              string // resolved path, or "" for an error
		msg               string // exact error message when want == ""
	}{
		{"relative", "", "plan.md", "/root/notes/plan.md", ""},
		{"relative nested", "/root", "drafts/v1/plan.md", "/root/notes/drafts/v1/plan.md", ""},
		{"relative notes/x is inside notes", "", "notes/x", "/root/notes/notes/x", ""},
		{"relative child/notes/x stays under current agent", "", "child/notes/x", "/root/notes/child/notes/x", ""},
		{"relative for sub-agent", "/root/worker", "plan.md", "/root/worker/notes/plan.md", ""},
		{"absolute own", "", "/root/notes/plan.md", "/root/notes/plan.md", ""},
		{"absolute other agent", "", "/root/child/notes/x", "/root/child/notes/x", ""},
		{"absolute other agent from sub-agent", "/root/worker", "/root/notes/plan.md", "/root/notes/plan.md", ""},
		{"absolute notes/notes", "", "/root/notes/notes/x", "/root/notes/notes/x", ""},
		{"agent named like a sibling", "", "/root/notes_backup/notes/x", "/root/notes_backup/notes/x", ""},
		{"tilde literal", "", "~/plan.md", "/root/notes/~/plan.md", ""},
		{"tilde absolute", "", "/root/notes/~", "/root/notes/~", ""},
		{"percent-encoded dotdot refused", "", "%2e%2e/x", "", `Invalid note path "%2e%2e/x": path components must not be empty, "." or ".."` + acceptedForms},
		{"percent-encoded dotdot absolute refused", "", "/root/notes/%2E%2E", "", `Invalid note path "/root/notes/%2E%2E": path components must not be empty, "." or ".."` + acceptedForms},
		{"half-encoded dotdot refused", "", "x/.%2e", "", `Invalid note path "x/.%2e": path components must not be empty, "." or ".."` + acceptedForms},
		{"percent slash literal", "", "a%2fb", "/root/notes/a%2fb", ""},
		{"unicode", "", "日本語/メモ.md", "/root/notes/日本語/メモ.md", ""},
		{"emoji", "", "📝.md", "/root/notes/📝.md", ""},
		{"dots inside names", "", "a..b/...", "/root/notes/a..b/...", ""},
		{"hidden file", "", ".env", "/root/notes/.env", ""},
		{"spaces kept", "", " plan .md", "/root/notes/ plan .md", ""},
		{"exactly max length", "", long, "/root/notes/" + long, ""},

		{"empty", "", "", "", MsgPathRequired},
		{"dotdot", "", "../x", "", `Invalid note path "../x": path components must not be empty, "." or ".."` + acceptedForms},
		{"trailing dotdot", "", "a/..", "", `Invalid note path "a/..": path components must not be empty, "." or ".."` + acceptedForms},
		{"absolute dotdot", "", "/root/notes/../etc", "", `Invalid note path "/root/notes/../etc": path components must not be empty, "." or ".."` + acceptedForms},
		{"only dotdot", "", "..", "", `Invalid note path "..": path components must not be empty, "." or ".."` + acceptedForms},
		{"dot", "", "./plan.md", "", `Invalid note path "./plan.md": path components must not be empty, "." or ".."` + acceptedForms},
		{"double slash", "", "a//b", "", `Invalid note path "a//b": path components must not be empty, "." or ".."` + acceptedForms},
		{"root double slash", "", "//root/notes/x", "", `Invalid note path "//root/notes/x": path components must not be empty, "." or ".."` + acceptedForms},
		{"notes dir", "", "/root/notes", "", `Invalid note path "/root/notes": it names a notes directory itself, not a file` + acceptedForms},
		{"notes dir slash", "", "/root/notes/", "", `Invalid note path "/root/notes/": it names a notes directory, not a file` + acceptedForms},
		{"other agent notes dir", "", "/root/child/notes", "", `Invalid note path "/root/child/notes": it names a notes directory itself, not a file` + acceptedForms},
		{"trailing slash", "", "drafts/", "", `Invalid note path "drafts/": a file path must not end with "/"` + acceptedForms},
		{"relative notes/ is not the dir", "", "notes/", "", `Invalid note path "notes/": a file path must not end with "/"` + acceptedForms},
		{"sibling prefix", "", "/root/notes_backup/x", "", `Invalid note path "/root/notes_backup/x": an absolute path must have the form <agent>/notes/<name>, with "notes" as a whole component` + acceptedForms},
		{"sibling suffix", "", "/root/notesx", "", `Invalid note path "/root/notesx": an absolute path must have the form <agent>/notes/<name>, with "notes" as a whole component` + acceptedForms},
		{"agent only", "", "/root", "", `Invalid note path "/root": an absolute path must have the form <agent>/notes/<name>, with "notes" as a whole component` + acceptedForms},
		{"not under root", "", "/etc/notes/passwd", "", `Invalid note path "/etc/notes/passwd": an absolute path must start with an agent name under "/root", as in "/root/notes/plan.md" or "/root/worker/notes/plan.md"` + acceptedForms},
		{"notes at index 0", "", "/notes/x", "", `Invalid note path "/notes/x": an absolute path must start with an agent name under "/root", as in "/root/notes/plan.md" or "/root/worker/notes/plan.md"` + acceptedForms},
		{"slash only", "", "/", "", `Invalid note path "/": path components must not be empty, "." or ".."` + acceptedForms},
		{"NUL", "", "a\x00b", "", `Invalid note path "a\x00b": the path must not contain control characters such as NUL, newline or DEL` + acceptedForms},
		{"newline", "", "a\nb", "", `Invalid note path "a\nb": the path must not contain control characters such as NUL, newline or DEL` + acceptedForms},
		{"DEL", "", "a\x7f", "", `Invalid note path "a\x7f": the path must not contain control characters such as NUL, newline or DEL` + acceptedForms},
		{"C1 control", "", "a\u0085", "", `Invalid note path "a\u0085": the path must not contain control characters such as NUL, newline or DEL` + acceptedForms},
		{"backslash", "", `a\b`, "", `Invalid note path "a\\b": components are separated by "/"; backslashes are not allowed` + acceptedForms},
		{"backslash dotdot", "", `..\x`, "", `Invalid note path "..\\x": components are separated by "/"; backslashes are not allowed` + acceptedForms},
		{"invalid UTF-8", "", "a\xffb", "", `Invalid note path "a\xffb": the path must be valid UTF-8` + acceptedForms},
		{"one byte too long", "", long + "b", "", `Invalid note path "` + strings.Repeat("a", maxQuoted) + `"…: the resolved path is longer than 1024 UTF-8 bytes` + acceptedForms},
		{"sub-agent example", "/root/worker", "../x", "", `Invalid note path "../x": path components must not be empty, "." or ".."; use a relative path like "plan.md" or an absolute one like "/root/worker/notes/plan.md"`},
		{"bad agent", "root", "plan.md", "", `Invalid agent name "root": use "/root" or a sub-agent path like "/root/worker"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveFile(tt.agent, tt.path)
			if tt.want != "" {
				if err != nil || got != tt.want {
					t.Fatalf("ResolveFile(%q, %q) = %q, %v; want %q", tt.agent, tt.path, got, err, tt.want)
				}
				return
			}
			var ne *contextd.Error
			if !errors.As(err, &ne) || ne.Code != contextd.EInvalid {
				t.Fatalf("ResolveFile(%q, %q) = %q, %v; want *contextd.Error invalid", tt.agent, tt.path, got, err)
			}
			if ne.Message != tt.msg {
				t.Fatalf("message\n got %s\nwant %s", ne.Message, tt.msg)
			}
		})
	}
}

func TestResolvePrefix(t *testing.T) {
	ptr := func(s string) *string { return &s }
	tests := []struct {
		name   string
		agent  string
		prefix *string
		want   string // "" = error
		msg    string
	}{
		{"nil", "", nil, "/root/notes/", ""},
		{"empty", "", ptr(""), "/root/notes/", ""},
		{"nil sub-agent", "/root/worker", nil, "/root/worker/notes/", ""},
		{"relative dir", "", ptr("drafts/"), "/root/notes/drafts/", ""},
		{"relative partial", "", ptr("pl"), "/root/notes/pl", ""},
		{"relative notes is a name", "", ptr("notes"), "/root/notes/notes", ""},
		{"absolute notes gets slash", "", ptr("/root/notes"), "/root/notes/", ""},
		{"absolute notes slash", "", ptr("/root/notes/"), "/root/notes/", ""},
		{"other agent notes", "", ptr("/root/child/notes"), "/root/child/notes/", ""},
		{"absolute partial", "", ptr("/root/notes/pl"), "/root/notes/pl", ""},
		{"absolute dir", "", ptr("/root/notes/drafts/"), "/root/notes/drafts/", ""},
		{"percent-encoded dotdot prefix refused", "", ptr("%2e%2e/"), "", `Invalid note prefix "%2e%2e/": path components must not be empty, "." or ".."; use a relative prefix like "drafts/" or an absolute one like "/root/notes/"`},
		{"unicode", "", ptr("日本/"), "/root/notes/日本/", ""},

		{"dotdot", "", ptr("../"), "", `Invalid note prefix "../": path components must not be empty, "." or ".."; use a relative prefix like "drafts/" or an absolute one like "/root/notes/"`},
		{"trailing dotdot", "", ptr("/root/notes/.."), "", `Invalid note prefix "/root/notes/..": path components must not be empty, "." or ".."; use a relative prefix like "drafts/" or an absolute one like "/root/notes/"`},
		{"double slash", "", ptr("/root/notes//"), "", `Invalid note prefix "/root/notes//": path components must not be empty, "." or ".."; use a relative prefix like "drafts/" or an absolute one like "/root/notes/"`},
		{"slash", "", ptr("/"), "", `Invalid note prefix "/": path components must not be empty, "." or ".."; use a relative prefix like "drafts/" or an absolute one like "/root/notes/"`},
		{"root only", "", ptr("/root/"), "", `Invalid note prefix "/root/": an absolute prefix must reach an agent's notes directory, as in "/root/notes/" or "/root/worker/notes/"; use a relative prefix like "drafts/" or an absolute one like "/root/notes/"`},
		{"sibling", "", ptr("/root/notes_backup"), "", `Invalid note prefix "/root/notes_backup": an absolute prefix must reach an agent's notes directory, as in "/root/notes/" or "/root/worker/notes/"; use a relative prefix like "drafts/" or an absolute one like "/root/notes/"`},
		{"partial notes", "", ptr("/root/no"), "", `Invalid note prefix "/root/no": an absolute prefix must reach an agent's notes directory, as in "/root/notes/" or "/root/worker/notes/"; use a relative prefix like "drafts/" or an absolute one like "/root/notes/"`},
		{"not root", "", ptr("/tmp/notes/"), "", `Invalid note prefix "/tmp/notes/": an absolute prefix must start with an agent name under "/root", as in "/root/notes/" or "/root/worker/notes/"; use a relative prefix like "drafts/" or an absolute one like "/root/notes/"`},
		{"NUL", "", ptr("a\x00"), "", `Invalid note prefix "a\x00": the path must not contain control characters such as NUL, newline or DEL; use a relative prefix like "drafts/" or an absolute one like "/root/notes/"`},
		{"backslash", "", ptr(`a\`), "", `Invalid note prefix "a\\": components are separated by "/"; backslashes are not allowed; use a relative prefix like "drafts/" or an absolute one like "/root/notes/"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolvePrefix(tt.agent, tt.prefix)
			if tt.want != "" {
				if err != nil || got != tt.want {
					t.Fatalf("got %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			var ne *contextd.Error
			if !errors.As(err, &ne) || ne.Code != contextd.EInvalid || ne.Message != tt.msg {
				t.Fatalf("got %q, %v\nwant error %s", got, err, tt.msg)
			}
		})
	}
}

func TestNormalizeAgent(t *testing.T) {
	for _, ok := range []string{"/root", "/root/worker", "/root/a/b", "/root/notes_x"} {
		if got, err := normalizeAgent(ok); err != nil || got != ok {
			t.Errorf("normalizeAgent(%q) = %q, %v", ok, got, err)
		}
	}
	if got, err := normalizeAgent(""); err != nil || got != DefaultAgent {
		t.Errorf("normalizeAgent(\"\") = %q, %v", got, err)
	}
	for _, bad := range []string{"root", "/", "/root/", "/root//x", "/root/notes", "/root/x/notes", "/root/..", "/other", "/root/a\x00", `/root\x`, "/" + strings.Repeat("r", MaxPathBytes)} {
		_, err := normalizeAgent(bad)
		var ne *contextd.Error
		if !errors.As(err, &ne) || ne.Code != contextd.EInvalid || !strings.HasPrefix(ne.Message, "Invalid agent name ") {
			t.Errorf("normalizeAgent(%q) = %v, want invalid", bad, err)
		}
	}
}

// A rejected path is quoted in the message without cutting a character.
func TestErrorQuoteKeepsUTF8(t *testing.T) {
	p := strings.Repeat("é", 200) + "/.."
	_, err := ResolveFile("", p)
	if err == nil || !strings.Contains(err.Error(), "…") || strings.ContainsRune(err.Error(), '\uFFFD') {
		t.Fatalf("err = %v", err)
	}
}
