package e2e

// A Pi that writes its session outside contextd's sessions directory (Pi's
// --session-dir, or a contextd started with another --sessions-dir): the
// person is told, in Pi terms, which folder Pi writes to, which one
// contextd reads, and how to fix it.

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPiExtensionSessionDirOutside(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{{Text: "hello back"}})
		r.startContextd()
		other := filepath.Join(r.dir, "elsewhere")
		p := r.startPi("--session-dir", other)
		p.waitFor("the session directory notice", 30*time.Second, func([]map[string]any) bool { return len(p.notices("error")) > 0 })
		want := "Pi writes this session to " + other + ", but contextd reads sessions only from " + r.sessions +
			"; restart contextd with --sessions-dir " + other + ", or start Pi with --session-dir " + r.sessions
		if n := p.notices("error"); len(n) != 1 || !strings.Contains(n[0], want) {
			t.Errorf("notices %q, want one containing %q", n, want)
		}
	})
}
