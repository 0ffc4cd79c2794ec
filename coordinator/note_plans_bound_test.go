package coordinator

import (
	"testing"
	"time"
)

// The planned note writes are kept per session only while one is younger
// than notePlanTTL (a minute): a session whose plans all expired is
// dropped from the map, whichever session plans next.
func TestNotePlansForgetIdleSessions(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	p := &notePlans{bySession: map[string][]notePlan{
		"idle":   {{leaf: "a", at: t0}, {leaf: "b", at: t0.Add(time.Second)}},
		"recent": {{leaf: "a", at: t0}, {leaf: "c", at: t0.Add(50 * time.Second)}},
		"empty":  {},
	}}
	// 61 s after idle's last plan, 12 s after recent's.
	p.forgetExpired(t0.Add(62 * time.Second))
	if _, ok := p.bySession["idle"]; ok {
		t.Errorf("idle session kept: its last plan is 61 s old, over the %v TTL", notePlanTTL)
	}
	if _, ok := p.bySession["empty"]; ok {
		t.Errorf("a session with no plans kept")
	}
	if got := len(p.bySession["recent"]); got != 2 {
		t.Errorf("recent session: %d plans kept, want 2 (its last plan is 12 s old)", got)
	}
}
