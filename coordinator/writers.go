package coordinator

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Concurrent writers (docs/design.md §4 "Two Pis on one session"): two Pi
// processes that append to one session file (two terminals, `pi -c` twice)
// fork it into sibling branches, each Pi seeing only its own: its windows
// and notes are not the other's. contextd cannot tell an idle Pi from a
// busy one, so a second Pi is warned, not refused: the registration of a
// session from a second live Pi process (RegisterRequest.PID) makes both sides' answers carry a concurrent_writers problem (PUT, GET
// /v1/sessions/{id}, /context), which the extension shows once in Pi's UI.
// Nothing is dropped: each branch keeps its notes, and history and notes
// follow the branch of the Pi that asks.

// writer is the session one Pi process registered last, and when.
type writer struct {
	session string
	at      time.Time
}

// writers holds, per Pi process id, the session it registered last: a Pi
// that registers another session (/new, /resume, /fork) leaves the first,
// and one that reloads its extensions (/reload) stays one writer. In
// memory only: after a contextd restart the extensions register again at
// their next session_start.
type writers struct {
	mu    sync.Mutex
	byPID map[int]writer
	alive func(pid int) bool
}

func newWriters() *writers { return &writers{byPID: map[int]writer{}, alive: pidAlive} }

// register records that Pi process pid writes session (pid ≤ 0: unknown,
// not recorded).
func (w *writers) register(pid int, session string, now time.Time) {
	if pid <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.byPID[pid] = writer{session: session, at: now}
}

// problem is the concurrent_writers problem of session, or nil when at
// most one live Pi process has it registered. Processes that ended are
// forgotten.
func (w *writers) problem(session string) *SessionProblem {
	w.mu.Lock()
	defer w.mu.Unlock()
	var pids []int
	for pid, wr := range w.byPID {
		if !w.alive(pid) {
			delete(w.byPID, pid)
			continue
		}
		if wr.session == session {
			pids = append(pids, pid)
		}
	}
	if len(pids) < 2 {
		return nil
	}
	slices.Sort(pids)
	names := make([]string, len(pids))
	for i, p := range pids {
		names[i] = fmt.Sprintf("pid %d", p)
	}
	return &SessionProblem{Reason: "concurrent_writers", Detail: fmt.Sprintf("%d Pi processes (%s) have this session open and append to it: each sees only its own branch, "+
		"so windows and notes written in one are not in the other; close all but one, or continue in a copy with /fork", len(pids), strings.Join(names, ", "))}
}

// fresh reports whether pid (> 0) registering session is a Pi that did not
// have it registered and that no other live Pi process has registered:
// nobody else can be running its rollovers.
func (w *writers) fresh(pid int, session string) bool {
	if pid <= 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if wr, ok := w.byPID[pid]; ok && wr.session == session {
		return false
	}
	for p, wr := range w.byPID {
		if p != pid && wr.session == session && w.alive(p) {
			return false
		}
	}
	return true
}
