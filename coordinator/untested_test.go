package coordinator

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"contextd/session"
)

// TestUntestedPiVersion: a session registered with a Pi newer than
// session.NewestProvenPi (1.6.0) is read with the newest rules, and says so:
// one untested_pi_version problem in GET /v1/sessions/{id} naming the
// version, the proven one and the rules; one warning in the log however
// often and for however many sessions that version registers (another
// untested version gets its own). 1.6.0, 0.86.1 and a Remote session say
// nothing.
func TestUntestedPiVersion(t *testing.T) {
	files := map[string][]byte{}
	for _, sid := range []string{"s1", "s2", "s3"} {
		files[sid+".jsonl"] = handLines(sid, hUser("hi"))
	}
	svc, _ := localService(t, files)
	var logs bytes.Buffer // the test registers from one goroutine
	svc.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	ctx := t.Context()
	register := func(sid, mode, version string) {
		t.Helper()
		if _, _, err := svc.Register(ctx, sid, RegisterRequest{SessionFile: sid + ".jsonl", Mode: mode, PiVersion: version}); err != nil {
			t.Fatal(err)
		}
	}
	problems := func(sid string) []SessionProblem {
		t.Helper()
		st, err := svc.SessionStateOf(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		var out []SessionProblem
		for _, p := range st.Problems {
			if p.Reason == ReasonUntestedPi {
				out = append(out, p)
			}
		}
		return out
	}
	warnings := func(version string) int {
		return strings.Count(logs.String(), `msg="untested Pi version registered" pi_version=`+version+" ")
	}

	register("s1", "local", "1.6.0")
	register("s2", "tree", "0.86.1")
	if p := problems("s1"); len(p) != 0 {
		t.Errorf("1.6.0: %v, want no untested_pi_version", p)
	}
	if p := problems("s2"); len(p) != 0 {
		t.Errorf("0.86.1: %v, want no untested_pi_version", p)
	}
	if strings.Contains(logs.String(), "untested") {
		t.Errorf("proven versions logged: %s", logs.String())
	}

	register("s1", "local", "1.7.0")
	register("s1", "local", "1.7.0")
	register("s2", "tree", "1.7.0")
	for _, sid := range []string{"s1", "s2"} {
		p := problems(sid)
		want := "Pi 1.7.0 is newer than 1.6.0, the newest Pi contextd's projection rules were checked against; contextd reads this session with the newest rules (pi-1.6)"
		if len(p) != 1 || !strings.HasPrefix(p[0].Detail, want) || !strings.Contains(p[0].Detail, "e2e/pi-versions.sh 1.7.0") {
			t.Errorf("%s: %+v, want one untested_pi_version starting %q", sid, p, want)
		}
		br, err := svc.BranchOf(ctx, sid, "", 0)
		if err != nil || br.Rules != session.NewestRules.String() {
			t.Errorf("%s: rules %q (%v), want %s", sid, br.Rules, err, session.NewestRules)
		}
	}
	if n := warnings("1.7.0"); n != 1 {
		t.Errorf("1.7.0 logged %d times, want once:\n%s", n, logs.String())
	}
	register("s3", "local", "2.0.0-rc.1")
	if n := warnings("2.0.0-rc.1"); n != 1 {
		t.Errorf("2.0.0-rc.1 logged %d times, want once:\n%s", n, logs.String())
	}
	register("s3", "remote", "1.8.0")
	if p := problems("s3"); len(p) != 0 || warnings("1.8.0") != 0 {
		t.Errorf("Remote: %v, logged %d times; want nothing (contextd reads no session file)", p, warnings("1.8.0"))
	}
}
