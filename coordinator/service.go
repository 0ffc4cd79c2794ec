// Package coordinator is contextd's application core: it resolves a session
// (registration, mode, file), reads a consistent view of its index, and
// answers the Codex-shaped history and notes operations, the window
// boundary markers, the per-call context answer and the rollover state
// machine (docs/design.md §4, docs/codex-contract.md "Error texts"). Every write it answers is a plan: entries for
// the extension to append. It never writes a session file.
//
// The coordinator composes the libraries below it and nothing below reaches
// back up: archive (Tree mode's archive index, read through the Service's
// unexported treeArchives), store, history, notes and session never import
// coordinator or api (internal/archtest checks it). New builds the whole
// Service; there are no hooks to fill in afterwards.
package coordinator

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"contextd"
	"contextd/history"
	"contextd/session"
	"contextd/store"
)

// Service answers every session-level request.
type Service struct {
	Index       *store.Index
	State       *store.State
	DefaultMode contextd.Mode // mode of unregistered sessions (default local)
	Logger      *slog.Logger
	Metrics     *Metrics

	now   func() time.Time // the clock (time.Now unless WithClock)
	newID func() string    // window and marker ids (UUID v4 unless WithIDs)
	tree  *treeArchives    // Tree-mode archives (history windows, hidden summaries, counts)
	memo  *memo            // what requests derive from recent states of sessions (memo.go; nil: none)
	// notePlans: note writes planned and not yet in the file (note_plans.go).
	notePlans *notePlans

	untested untestedLog // Pi versions newer than session.NewestProvenPi already logged
	// writers are the Pi processes each session is registered from
	// (writers.go).
	writers *writers
	// interleaves are the concurrent writers each session file shows
	// (writers_file.go).
	interleaves *interleaves
}

// Option sets a seam of a Service when New builds it.
type Option func(*Service)

// WithClock makes now the Service's clock (default time.Now): the times
// of notes, rollovers and the reset log.
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithIDs makes newID the source of window and marker ids (default a
// random UUID v4 each).
func WithIDs(newID func() string) Option { return func(s *Service) { s.newID = newID } }

// New returns a Service with defaults filled in, then opts applied.
func New(index *store.Index, state *store.State, defaultMode contextd.Mode, log *slog.Logger, m *Metrics, opts ...Option) *Service {
	if defaultMode == "" {
		defaultMode = contextd.ModeLocal
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if m == nil {
		m = NewMetrics(nil)
	}
	s := &Service{Index: index, State: state, DefaultMode: defaultMode, Logger: log, Metrics: m,
		now: time.Now, newID: func() string { return uuid.NewString() }, tree: newTreeArchives(m), memo: newMemo(), writers: newWriters(), interleaves: newInterleaves(),
		notePlans: &notePlans{bySession: map[string][]notePlan{}}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Target is a resolved session: its registration (or the defaults of an
// unregistered session), mode and agent name. Session is nil in Remote
// mode, which never touches the local index.
type Target struct {
	SessionID  string
	Registered bool
	Reg        contextd.Registration
	Mode       contextd.Mode
	Agent      string
	Session    *store.Session
	// treeOnly: resolved for a request that reads only the entry tree
	// (store.TreeOnly): its reads may see a cold index's tree preview.
	treeOnly bool
	// scan, when set, is the context of a request that searches item
	// text: its reads first wait for a scan slot (store.Session.ReadScan),
	// so that it takes its view when it can scan.
	scan context.Context
	// scanEveryFrame: the search reads every frame of the item text
	// (store.UnfilteredQuery); its reads hold a scan core for all of
	// their work.
	scanEveryFrame bool
	// parents are views of the parent sessions of a Tree copy, nearest
	// first, while withLineage holds them (lineage.go); nil otherwise.
	parents []*store.View
}

// read is Session.Read, Session.ReadScan for a target that scans, or
// Session.ReadTree for a tree-only target.
func (t *Target) read(fn func(v *store.View) error) error {
	switch {
	case t.treeOnly:
		return t.Session.ReadTree(fn)
	case t.scan != nil:
		return t.Session.ReadScan(t.scan, t.scanEveryFrame, func(v *store.View) error {
			// The parents' windows are searched under this slot and core.
			for _, p := range t.parents {
				defer p.ShareScan(v)()
			}
			return fn(v)
		})
	}
	return t.Session.Read(fn)
}

// Rules is the Pi projection rule set of the target: the one of its
// registered pi_version (session.RulesFor), the newest for an
// unregistered session (or a nil target) or a registration without
// pi_version.
func (t *Target) Rules() session.Rules {
	if t == nil || !t.Registered {
		return session.NewestRules
	}
	return session.RulesFor(t.Reg.PiVersion)
}

// ModeOf returns the registration and mode of sessionID without touching
// the index (Remote mode must never read it).
func (s *Service) ModeOf(ctx context.Context, sessionID string) (contextd.Registration, bool, contextd.Mode, error) {
	reg, ok, err := s.State.Registration(ctx, sessionID)
	if err != nil {
		return reg, false, "", err
	}
	if ok {
		return reg, true, reg.Mode, nil
	}
	return reg, false, s.DefaultMode, nil
}

// Resolve finds sessionID: through its registration's session_file when
// registered, else by header id among the files of the sessions directory;
// an unregistered session's mode is the one its file shows (modeHint).
// The session is synced before it is returned. Errors: ENotFound for an
// unknown id; EForbidden for a registered file outside the sessions
// directory.
func (s *Service) Resolve(ctx context.Context, sessionID string) (*Target, error) {
	if sessionID == "" {
		return nil, contextd.Errorf(contextd.EInvalid, "session_id is required")
	}
	reg, registered, mode, err := s.ModeOf(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	t := &Target{SessionID: sessionID, Registered: registered, Reg: reg, Mode: mode, Agent: contextd.DefaultAgentName, treeOnly: store.IsTreeOnly(ctx)}
	if registered && reg.AgentName != "" {
		t.Agent = reg.AgentName
	}
	if mode == contextd.ModeRemote {
		return t, nil
	}
	if registered {
		path, err := s.Index.Resolve(reg.SessionFile)
		if p, under := s.Index.Lexical(reg.SessionFile); under && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, store.ErrOutside) || errors.Is(err, store.ErrNotRegular)) {
			// The file was deleted, or replaced by a symlink that leads out
			// of the sessions directory, after it was registered. Keep the
			// session at its registered path: its sync records the state
			// (missing, outside) without reading anything outside, GET
			// /v1/sessions/{id} reports it, and routes that need the
			// content answer 410.
			path, err = p, nil
		}
		switch {
		case errors.Is(err, store.ErrOutside):
			return nil, outsideError(reg.SessionFile, s.Index.Root())
		case errors.Is(err, fs.ErrNotExist):
			return nil, contextd.Errorf(contextd.EGone, "the registered session_file of %q does not exist; register the current file with PUT /v1/sessions/%s", sessionID, sessionID)
		case errors.Is(err, store.ErrChanging):
			return nil, errChanging(sessionID)
		case err != nil:
			return nil, err
		}
		t.Session = s.Index.Session(path)
		if err := t.Session.Sync(ctx); err != nil {
			return nil, err
		}
		return t, headerMatches(t)
	}
	sess, ok, err := s.Index.FindByID(ctx, sessionID)
	if err != nil {
		return nil, sessionsDirError(err)
	}
	if !ok {
		return nil, contextd.Errorf(contextd.ENotFound, "no session with id %q in the sessions directory %s; check the id or register its file with PUT /v1/sessions/%s", sessionID, s.Index.Root(), sessionID)
	}
	t.Session = sess
	_ = t.read(func(v *store.View) error {
		t.Mode = modeHintFrom(v, t.Mode, s.memo, sess)
		return nil
	})
	return t, nil
}

// sessionsDirError turns a sessions directory that cannot be listed
// (store.SessionsDirError) into an EUnavailable error that says what to
// fix; other errors are returned unchanged.
func sessionsDirError(err error) error {
	var de *store.SessionsDirError
	if !errors.As(err, &de) {
		return err
	}
	why := de.Err.Error()
	var pe *fs.PathError
	if errors.As(de.Err, &pe) {
		why = pe.Err.Error()
	}
	return contextd.Errorf(contextd.EUnavailable, "contextd cannot list the sessions directory %s (%s); give the user contextd runs as read and execute permission on it (chmod u+rx), or restart contextd with --sessions-dir naming the folder Pi writes sessions to",
		de.Path, why)
}

// usable turns a view's file state into an error for routes that need the
// file's content.
func usable(v *store.View) error {
	switch v.State {
	case store.StateOK:
		if v.Tree == nil {
			return contextd.Errorf(contextd.EGone, "the session file has no header yet")
		}
		return nil
	case store.StateNotPi:
		return contextd.Errorf(contextd.EGone, "the session file is unusable: %s", v.StateMsg)
	case store.StateEmpty:
		return contextd.Errorf(contextd.EGone, "the session file holds no complete header line yet")
	case store.StateTooLarge:
		return contextd.Errorf(contextd.ESessionTooLarge, "%s", v.StateMsg)
	default:
		return contextd.Errorf(contextd.EGone, "the session file cannot be read: %s", v.StateMsg)
	}
}

// Branch is a view and its active branch for one leaf.
type Branch struct {
	V      *store.View
	Leaf   string
	Seqs   []int
	Cycle  bool
	Target *Target
	// boundary is the index in Seqs of the branch's last boundary (-1:
	// none) when the memo's branch keeps it; nil: unknown
	// (currentBoundary).
	boundary *int
}

// Refs is the RefFunc of the branch's history items: store.View.Refs over
// the branch under the target's rules (context edits on the branch apply).
func (b *Branch) Refs() history.RefFunc {
	rules := session.NewestRules
	if b.Target != nil {
		rules = b.Target.Rules()
	}
	return b.V.Refs(b.Seqs, rules)
}

// withBranch reads the session's view and computes the active branch from
// leafID ("" = Pi's default leaf, the last entry). Errors: ENotFound for an
// unknown leaf; EGone for an unusable file.
func (s *Service) withBranch(t *Target, leafID string, fn func(b *Branch) error) error {
	return t.read(func(v *store.View) error {
		if err := usable(v); err != nil {
			return err
		}
		return branchIn(t, v, leafID, fn)
	})
}

// branchIn calls fn with the branch from leafID in v (a usable view of t),
// computed by Tree.Branch. Errors: ENotFound for an unknown leaf.
func branchIn(t *Target, v *store.View, leafID string, fn func(b *Branch) error) error {
	seqs, cycle, err := v.Tree.Branch(leafID)
	var unk *session.ErrUnknownLeaf
	if errors.As(err, &unk) {
		return unknownLeaf(leafID, t.SessionID)
	}
	if err != nil {
		return err
	}
	leaf := leafID
	if leaf == "" {
		leaf = v.Tree.Leaf()
	}
	return fn(&Branch{V: v, Leaf: leaf, Seqs: seqs, Cycle: cycle, Target: t})
}

// unknownLeaf is the ENotFound of a leaf_id that is not an entry of the
// session's file, the same on every route that takes a leaf_id.
func unknownLeaf(leafID, sessionID string) error {
	return contextd.Errorf(contextd.ENotFound, "leaf_id %q is not an entry of session %q; pass the id of an entry in its file, or omit leaf_id to use the last entry", leafID, sessionID)
}

// requireLocal refuses the modes that do not serve local history and notes
// (off and remote) with EConflict.
func requireLocal(t *Target) error {
	switch t.Mode {
	case contextd.ModeOff:
		return contextd.Errorf(contextd.EConflict, "context management is off for session %q; register it with mode local, tree or remote to use history and notes", t.SessionID)
	case contextd.ModeLocal, contextd.ModeTree:
		return nil
	}
	return contextd.Errorf(contextd.EConflict, "session %q is in %s mode", t.SessionID, t.Mode)
}

// headerMatches refuses a registered session whose file now holds another
// session: the header id was checked at registration, but the file may have
// been written later (registered before Pi created it) or replaced since.
// Serving it would plan windows and notes into another session's file.
// Error: EConflict (409) naming both ids.
func headerMatches(t *Target) error {
	var other string
	_ = t.read(func(v *store.View) error {
		if v.Tree != nil && v.Tree.Header.ID != t.SessionID {
			other = v.Tree.Header.ID
		}
		return nil
	})
	if other == "" {
		return nil
	}
	return contextd.Errorf(contextd.EConflict, "the registered session_file %s of session %q holds session %q (its header id); register the file under its own id, or register this session's own file with PUT /v1/sessions/%s", t.Reg.SessionFile, t.SessionID, other, t.SessionID)
}

// errChanging is the 409 of a session file whose path changed while it
// was resolved (store.ErrChanging): nothing was read; a retry resolves it
// again.
func errChanging(sessionID string) error {
	return contextd.Errorf(contextd.EConflict, "the path of the session file of %q changed while it was resolved (a directory of it was swapped with a symlink); nothing was read, retry", sessionID)
}
