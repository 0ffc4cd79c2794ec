package coordinator

import (
	"context"
	"sync"
	"time"

	"contextd/notes"
	"contextd/session"
)

// Note writes planned together (docs/design.md §5.3.1 "Planned against one
// state"). The calls of one assistant message run in parallel in Pi, so
// two note writes of one message can be planned at the same leaf before
// either entry is in the file; planned alone, each would see a state
// without the other, and a limit the two exceed together would only show
// in the replay, which then drops an entry whose tool result said it
// succeeded. contextd therefore remembers the writes it planned and plans
// each next write against the leaf's notes plus the planned writes whose
// leaf is on the caller's branch and whose entry is not on it yet; a write
// over a limit is refused in its own tool result. Only planning is
// serialized; the entries are still the extension's to append.

// notePlanTTL bounds how long a planned write is remembered: the extension
// appends it before it returns the tool result, within the same second; a write whose extension died before appending it is forgotten after this.
const notePlanTTL = time.Minute

// maxNotePlans bounds the planned writes remembered per session (the
// oldest are forgotten first).
const maxNotePlans = 64

// notePlans holds the planned, not yet seen, note writes per session.
type notePlans struct {
	mu        sync.Mutex // held while a write is planned: one plan at a time
	bySession map[string][]notePlan
}

// forgetExpired drops the sessions whose planned writes are all older
// than notePlanTTL (the caller holds mu), so that bySession holds only the
// sessions that planned a write in the last notePlanTTL, not every session
// that ever did.
func (p *notePlans) forgetExpired(now time.Time) {
	for id, pls := range p.bySession {
		if len(pls) == 0 || now.Sub(pls[len(pls)-1].at) > notePlanTTL {
			delete(p.bySession, id)
		}
	}
}

// notePlan is one planned note write: the leaf it was planned at and its
// event.
type notePlan struct {
	leaf string
	ev   notes.Event
	at   time.Time
}

// planNoteWrite plans one note write (f: notes.PlanWrite or PlanAppend)
// against the caller's branch with the writes planned before it on that
// branch and not yet in the file applied, and remembers it. Errors: as
// onNoteState.
func (s *Service) planNoteWrite(ctx context.Context, cc CallContext, f func(st *notes.State, agent string) (NoteWrite, error)) (NoteWrite, error) {
	var out NoteWrite
	t, err := s.Resolve(ctx, cc.SessionID)
	if err != nil {
		return out, err
	}
	if err := requireLocal(t); err != nil {
		return out, err
	}
	agent := agentOf(t, cc)
	p := s.notePlans
	p.mu.Lock()
	defer p.mu.Unlock()
	now := s.now()
	p.forgetExpired(now)
	err = s.withCachedBranch(t, cc.LeafID, func(b *Branch) error {
		st, err := s.cachedNoteState(b)
		if err != nil {
			return err
		}
		shared := true // st is the memo's until the first plan applies to a copy
		kept := p.bySession[cc.SessionID][:0]
		for _, pl := range p.bySession[cc.SessionID] {
			if now.Sub(pl.at) > notePlanTTL {
				continue
			}
			kept = append(kept, pl)
			on, written, err := planOnBranch(b, pl)
			if err != nil {
				return err
			}
			if on && !written {
				if shared {
					st, shared = st.Clone(), false
				}
				_ = st.Apply(pl.ev) // as the replay will: a refused event changes nothing
			}
		}
		p.bySession[cc.SessionID] = kept
		if out, err = f(st, agent); err != nil {
			return err
		}
		for _, e := range out.Append {
			ev := notes.Event{EntryID: "planned", Action: e.Data.Action, Path: e.Data.Path, Text: e.Data.Text, Timestamp: e.Data.Timestamp}
			p.bySession[cc.SessionID] = append(p.bySession[cc.SessionID], notePlan{leaf: b.Leaf, ev: ev, at: now})
		}
		if n := len(p.bySession[cc.SessionID]); n > maxNotePlans {
			p.bySession[cc.SessionID] = p.bySession[cc.SessionID][n-maxNotePlans:]
		}
		return nil
	})
	return out, err
}

// planOnBranch reports whether pl's leaf is on b, and whether a note entry
// with pl's data follows that leaf on b (Pi has written it).
func planOnBranch(b *Branch, pl notePlan) (on, written bool, err error) {
	tr := b.V.Tree
	at := -1
	for i := len(b.Seqs) - 1; i >= 0; i-- {
		if tr.ID(b.Seqs[i]) == pl.leaf {
			at = i
			break
		}
	}
	if at < 0 {
		return false, false, nil
	}
	for _, sq := range b.Seqs[at+1:] {
		e := tr.Entry(sq)
		if e.Type != session.TypeCustom || e.CustomType != session.CustomTypeNote {
			continue
		}
		_, d, err := b.V.Decode(sq)
		if err != nil {
			return true, false, err
		}
		ev, err := notes.DecodeEvent(e.ID, e.CustomType, d.Data)
		if err != nil {
			continue
		}
		if ev.Action == pl.ev.Action && ev.Path == pl.ev.Path && ev.Text == pl.ev.Text && ev.Timestamp == pl.ev.Timestamp {
			return true, true, nil
		}
	}
	return true, false, nil
}
