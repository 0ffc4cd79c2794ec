package e2e

// Two Pi processes on one session (docs/design.md §4 "Two Pis on one
// session"): the second `pi -c` is warned when it registers, the first at
// its next model call, each once; GET /v1/sessions/{id} lists the problem.

import (
	"strings"
	"testing"
)

func TestPiExtensionTwoPisOneSession(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{{Text: "one"}, {Text: "two"}, {Text: "three"}})
		r.startContextd()
		a := r.startPi()
		defer a.kill()
		a.prompt("first", 1)
		b := r.startPi("--continue") // a second terminal on the same session
		warned := func(p *piProc) []string {
			var out []string
			for _, n := range p.notices("warning") {
				if strings.Contains(n, "2 Pi processes") && strings.Contains(n, "/fork") {
					out = append(out, n)
				}
			}
			return out
		}
		if n := warned(b); len(n) != 1 {
			t.Errorf("the second Pi's warnings = %q, want one at registration", b.notices("warning"))
		}
		a.prompt("second", 2)
		a.prompt("third", 3)
		if n := warned(a); len(n) != 1 {
			t.Errorf("the first Pi's warnings = %q, want one, at its next model call", a.notices("warning"))
		}
		_, sid, _ := r.session()
		var st struct {
			Problems []struct {
				Reason string `json:"reason"`
			} `json:"problems"`
		}
		r.api("GET", "/v1/sessions/"+sid, nil, &st)
		if len(st.Problems) != 1 || st.Problems[0].Reason != "concurrent_writers" {
			t.Errorf("GET session problems = %+v, want one concurrent_writers", st.Problems)
		}
		b.stop()
		a.prompt("after the second Pi left", 4)
		r.api("GET", "/v1/sessions/"+sid, nil, &st)
		if len(st.Problems) != 0 {
			t.Errorf("after the second Pi exited: problems %+v", st.Problems)
		}
	})
}
