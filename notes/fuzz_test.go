package notes

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"contextd"
)

// FuzzResolveFile checks the invariants of ResolveFile and ResolvePrefix on
// arbitrary input, for the root agent and a sub-agent. Seeds are in
// testdata/fuzz/FuzzResolveFile; run with
//
//	go test ./notes/ -run XXX -fuzz FuzzResolveFile -fuzztime 20s
func FuzzResolveFile(f *testing.F) {
	for _, s := range []string{"plan.md", "/root/notes/plan.md", "../x", "/root/notes/", "/root/notes_backup/x", "%2e%2e/x", "a\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		for _, agent := range []string{"/root", "/root/worker"} {
			got, err := ResolveFile(agent, path)
			if err != nil {
				var ne *contextd.Error
				if !errors.As(err, &ne) || ne.Code != contextd.EInvalid || ne.Message == "" {
					t.Fatalf("ResolveFile(%q, %q): error %#v is not an invalid *contextd.Error", agent, path, err)
				}
				if ne.Message != MsgPathRequired && !strings.Contains(ne.Message, `; use a relative path like "plan.md" or an absolute one like "`+agent+`/notes/plan.md"`) {
					t.Fatalf("message names no accepted form: %s", ne.Message)
				}
				if !utf8.ValidString(ne.Message) {
					t.Fatalf("message is not valid UTF-8: %q", ne.Message)
				}
			} else {
				checkResolved(t, agent, path, got)
			}

			prefix, err := ResolvePrefix(agent, &path)
			if err != nil {
				var ne *contextd.Error
				if !errors.As(err, &ne) || ne.Code != contextd.EInvalid {
					t.Fatalf("ResolvePrefix(%q, %q): error %#v", agent, path, err)
				}
				continue
			}
			a := agentPart(prefix)
			if a == "" || !strings.HasPrefix(prefix, "/root") || strings.Contains(prefix, "//") ||
				strings.Contains(prefix+"/", "/../") || strings.Contains(prefix+"/", "/./") || !utf8.ValidString(prefix) || len(prefix) > MaxPathBytes {
				t.Fatalf("ResolvePrefix(%q, %q) = %q breaks an invariant", agent, path, prefix)
			}
			// Every file the prefix matches is inside one agent's notes.
			if got != "" && strings.HasPrefix(got, prefix) && agentPart(got) != a {
				t.Fatalf("prefix %q matches %q of another agent", prefix, got)
			}
		}
	})
}

// checkResolved asserts the invariants of a successful ResolveFile.
func checkResolved(t *testing.T, agent, path, got string) {
	t.Helper()
	a := agentPart(got)
	if a == "" {
		t.Fatalf("ResolveFile(%q, %q) = %q: no <agent>/notes/ part", agent, path, got)
	}
	if _, err := normalizeAgent(a); err != nil {
		t.Fatalf("ResolveFile(%q, %q) = %q: agent part %q is invalid", agent, path, got, a)
	}
	rest := strings.TrimPrefix(got, a+"/notes/")
	switch {
	case rest == "" || strings.HasSuffix(got, "/"):
		t.Fatalf("ResolveFile(%q, %q) = %q: not a file", agent, path, got)
	case strings.Contains(got, "//"), strings.Contains(got+"/", "/../"), strings.Contains(got+"/", "/./"):
		t.Fatalf("ResolveFile(%q, %q) = %q: empty, . or .. component", agent, path, got)
	case !utf8.ValidString(got), strings.ContainsRune(got, '\\'), strings.IndexFunc(got, unicode.IsControl) >= 0:
		t.Fatalf("ResolveFile(%q, %q) = %q: bad characters", agent, path, got)
	case len(got) > MaxPathBytes:
		t.Fatalf("ResolveFile(%q, %q) = %q: too long", agent, path, got)
	}
	if !strings.HasPrefix(path, "/") && got != agent+"/notes/"+path {
		t.Fatalf("relative %q resolved to %q, not under %s/notes/", path, got, agent)
	}
	if strings.HasPrefix(path, "/") && got != path {
		t.Fatalf("absolute %q changed to %q", path, got)
	}
	// Idempotent, and agent-independent once absolute.
	for _, other := range []string{"/root", "/root/other", agent} {
		if again, err := ResolveFile(other, got); err != nil || again != got {
			t.Fatalf("ResolveFile(%q, %q) = %q, %v; want it unchanged", other, got, again, err)
		}
	}
	// A resolved path is a valid note entry path.
	if !canonical(got) {
		t.Fatalf("%q is not canonical", got)
	}
}

// agentPart returns the agent of a resolved path or prefix: the part before
// the first "/notes/" (with "notes" at component index ≥ 1), or "".
func agentPart(p string) string {
	i := strings.Index(p, "/notes/")
	if i <= 0 {
		return ""
	}
	return p[:i]
}
