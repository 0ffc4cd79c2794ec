package coordinator

import (
	"fmt"
	"log/slog"
	"sync"

	"contextd"
	"contextd/session"
)

// ReasonUntestedPi is the SessionProblem reason of a session registered
// with a Pi version newer than session.NewestProvenPi: contextd reads it
// with session.NewestRules, which no parity run has checked against that
// Pi (docs/pi-versions.md says how to run one).
const ReasonUntestedPi = "untested_pi_version"

// untestedPi is the untested_pi_version problem of a registration, if its
// pi_version is newer than session.NewestProvenPi. Remote sessions have
// none: contextd reads nothing of them.
func untestedPi(reg *contextd.Registration) (SessionProblem, bool) {
	if reg == nil || reg.Mode == contextd.ModeRemote || !session.Untested(reg.PiVersion) {
		return SessionProblem{}, false
	}
	return SessionProblem{Reason: ReasonUntestedPi, Detail: untestedDetail(reg.PiVersion)}, true
}

// untestedDetail says what contextd does for an untested Pi version and
// how to check it.
func untestedDetail(version string) string {
	return fmt.Sprintf("Pi %s is newer than %s, the newest Pi contextd's projection rules were checked against; contextd reads this session with the newest rules (%s), so history and /context may differ from what this Pi sends the model. Check it with e2e/pi-versions.sh %s (docs/pi-versions.md).",
		version, session.NewestProvenPi, session.NewestRules, version)
}

// untestedLog remembers the untested Pi versions already logged, so that
// each is logged once per process however many sessions register it.
type untestedLog struct {
	mu   sync.Mutex
	seen map[string]bool
}

// logOnce logs version as untested, the first time it is seen.
func (u *untestedLog) logOnce(log *slog.Logger, version string) {
	u.mu.Lock()
	first := !u.seen[version]
	if first {
		if u.seen == nil {
			u.seen = map[string]bool{}
		}
		u.seen[version] = true
	}
	u.mu.Unlock()
	if first {
		log.Warn("untested Pi version registered", "pi_version", version, "proven_through", session.NewestProvenPi, "rules", session.NewestRules.String(), "detail", untestedDetail(version))
	}
}
