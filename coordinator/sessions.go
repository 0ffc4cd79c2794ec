package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"contextd"
	"contextd/session"
	"contextd/store"
)

// SessionProblem is one thing wrong with a session file: a skipped line, or
// the file's state.
type SessionProblem struct {
	Line   int    `json:"line,omitempty" doc:"1-based line number: of a skipped line, or of the entry a concurrent_writers problem found in the file."`
	Reason string `json:"reason" doc:"blank, invalid_json, not_object, too_long, missing_id, extra_header, not_a_session, missing, outside, unreadable, too_large (more entries than the memory limit can index), invalid_archive, incomplete_rollover, duplicate_session_id (other existing files carry the same header id: copies of one session), concurrent_writers (two live Pi processes registered the session, or the file shows two runs appending at once: each appends its own branch), interrupted_rollover (PUT: a rollover the previous Pi left open before anything of it reached the file was aborted), untested_pi_version (GET /v1/sessions/{session_id}: the registered pi_version is newer than the newest Pi the projection rules were checked against; the newest rules apply); from /context: orphaned_tool_result, duplicate_tool_result, boundary_inside_tool_call, message_inside_tool_call (the tool-call pairing rule)"`
	Detail string `json:"detail,omitempty"`
}

// SessionSummary is one row of GET /v1/sessions.
type SessionSummary struct {
	SessionID  string           `json:"session_id"`
	File       string           `json:"file"`
	Cwd        string           `json:"cwd"`
	Version    int              `json:"version" doc:"Header version (1 when absent)."`
	Mode       contextd.Mode    `json:"mode"`
	Registered bool             `json:"registered"`
	Indexed    bool             `json:"indexed" doc:"The session has a derived index: it was used (registered, or a route read its content) since it was last evicted. GET /v1/sessions indexes nothing: a session not indexed is listed from its header and file metadata, with mode the registration's or the default, and entries, bytes, leaf, windows, archives and skipped empty (docs/index-and-search.md, Index only what is used)."`
	FileBytes  int64            `json:"file_bytes" doc:"Size of the session file in bytes when it was listed (0 when it cannot be read)."`
	ModifiedAt string           `json:"modified_at,omitempty" doc:"The session file's mtime (RFC 3339, UTC) when it was listed; absent when it cannot be read."`
	State      string           `json:"state" doc:"ok; awaiting_file (registered, and Pi has not written the file yet: it writes it at the session's first message); missing (deleted after it was indexed); outside, not_a_session, empty, unreadable; too_large (more entries than contextd's --memory-limit can index: not indexed, the file untouched; the problem's detail says what to do); remote (a Remote session, listed from its registration)" enum:"ok,awaiting_file,missing,outside,not_a_session,empty,unreadable,too_large,remote"`
	Entries    int              `json:"entries"`
	Bytes      int64            `json:"bytes" doc:"Bytes indexed (offset after the last complete line)."`
	Leaf       string           `json:"leaf" doc:"Pi's default leaf: the last entry."`
	Windows    int              `json:"windows" doc:"Window boundaries on the active branch."`
	Archives   int              `json:"archives" doc:"Valid Tree archive manifests in the file (GET /v1/sessions/{id} of a Tree copy made by /clone or /fork: also those whose archived entries are read from its parent session)."`
	Skipped    map[string]int   `json:"skipped" doc:"Skipped lines by reason."`
	Problems   []SessionProblem `json:"problems"`
}

// StateAwaitingFile is the state of a registered session whose file Pi
// has not written yet (it is never listed without its registration).
const StateAwaitingFile = "awaiting_file"

// gone reports whether sess's file was deleted or moved outside the
// sessions directory since it was indexed.
func gone(sess *store.Session) bool {
	var g bool
	_ = sess.Read(func(v *store.View) error {
		g = v.State == store.StateMissing || v.State == store.StateOutside
		return nil
	})
	return g
}

// duplicateProblem is the problem of a session file whose header id is
// also that of other existing files (copies of one session): which file
// contextd serves and where the others are.
func duplicateProblem(others []string, registered bool) SessionProblem {
	rule := "contextd serves the file with the smallest path; register the one Pi writes with PUT /v1/sessions/{id} to choose it"
	if registered {
		rule = "contextd serves the registered file"
	}
	return SessionProblem{Reason: ReasonDuplicateID, Detail: fmt.Sprintf("the header id is also that of %s; %s", strings.Join(others, ", "), rule)}
}

// ReasonDuplicateID is the SessionProblem reason of a session id that the
// headers of several existing files carry.
const ReasonDuplicateID = "duplicate_session_id"

// neverWritten reports whether sess's file does not exist and was never
// indexed.
func neverWritten(sess *store.Session) bool {
	var never bool
	_ = sess.Read(func(v *store.View) error {
		never = v.State == store.StateMissing && v.Tree == nil
		return nil
	})
	return never
}

// summarizeHeader is the listing row of a session file not indexed: its
// header and file metadata only.
func (s *Service) summarizeHeader(h store.FileHeader, reg *contextd.Registration) SessionSummary {
	out := SessionSummary{File: h.Path, Mode: s.DefaultMode, State: string(h.State), FileBytes: h.Size, Skipped: map[string]int{}, Problems: []SessionProblem{}}
	if !h.ModTime.IsZero() {
		out.ModifiedAt = h.ModTime.UTC().Format(time.RFC3339Nano)
	}
	if reg != nil {
		out.Mode, out.Registered = reg.Mode, true
	}
	if h.Header != nil {
		out.SessionID, out.Cwd, out.Version = h.Header.ID, h.Header.Cwd, h.Header.Version
	}
	if h.State != store.StateOK {
		out.Problems = append(out.Problems, SessionProblem{Reason: string(h.State), Detail: h.StateMsg})
	}
	return out
}

func (s *Service) summarize(sess *store.Session, reg *contextd.Registration) SessionSummary {
	out := SessionSummary{File: sess.Path(), Mode: s.DefaultMode, Indexed: true, Skipped: map[string]int{}, Problems: []SessionProblem{}}
	if reg != nil {
		out.Mode, out.Registered = reg.Mode, true
	}
	if fi, err := os.Stat(sess.Path()); err == nil {
		out.ModifiedAt = fi.ModTime().UTC().Format(time.RFC3339Nano)
	}
	_ = sess.Read(func(v *store.View) error {
		out.FileBytes = v.FileSize
		if reg == nil {
			out.Mode = modeHint(v, out.Mode)
		}
		out.State = string(v.State)
		if reg != nil && v.State == store.StateMissing && v.Tree == nil {
			out.State, out.SessionID = StateAwaitingFile, reg.SessionID
		}
		if v.State == store.StateTooLarge {
			out.SessionID = sess.SessionID() // refused: no tree, the header's id is kept
		}
		out.Bytes = v.Bytes
		for r, n := range v.Stats.Skipped {
			out.Skipped[string(r)] = n
		}
		for _, p := range v.Stats.Problems {
			out.Problems = append(out.Problems, SessionProblem{Line: p.Line, Reason: string(p.Reason)})
		}
		if v.State != store.StateOK {
			out.Problems = append(out.Problems, SessionProblem{Reason: string(v.State), Detail: v.StateMsg})
		}
		if v.InFlightTooLong > 0 {
			out.Problems = append(out.Problems, SessionProblem{Reason: string(session.SkipTooLong),
				Detail: fmt.Sprintf("the last line has no newline yet and is already %d bytes, over --max-line-bytes; it is skipped when it ends", v.InFlightTooLong)})
		}
		if v.Tree == nil {
			return nil
		}
		h := v.Tree.Header
		out.SessionID, out.Cwd, out.Version = h.ID, h.Cwd, h.Version
		out.Entries = v.Tree.Len()
		out.Leaf = v.Tree.Leaf()
		if seqs, _, err := v.Tree.Branch(""); err == nil {
			for _, sq := range seqs {
				if v.Tree.Entry(sq).IsBoundary() {
					out.Windows++
				}
			}
		}
		// Archives are read from the file: only count them while it is
		// readable (a missing or outside file has its own problem).
		if v.State == store.StateOK {
			n, probs := s.tree.count(v)
			out.Archives = n
			out.Problems = append(out.Problems, probs...)
		}
		return nil
	})
	return out
}

// ListSessions lists every session file of the sessions directory and
// every registered file, sorted by file path, without indexing any
// (docs/index-and-search.md "Index only what is used"): a session with a
// derived index (used since it was last evicted) is synced and summarized
// whole; any other is summarized from its header and file metadata
// (store.Index.ScanHeaders), with indexed false and no entry counts.
func (s *Service) ListSessions(ctx context.Context) ([]SessionSummary, error) {
	regs, err := s.State.Registrations(ctx)
	if err != nil {
		return nil, err
	}
	// Remote sessions are listed from their registration only: their
	// files are never opened or indexed (docs/security.md).
	remote := map[string]bool{}
	var remotes []SessionSummary
	for _, r := range regs {
		if r.Mode != contextd.ModeRemote {
			continue
		}
		remote[r.SessionFile] = true
		if p, err := s.Index.Resolve(r.SessionFile); err == nil { // a stat, no read
			remote[p] = true
		}
		remotes = append(remotes, SessionSummary{SessionID: r.SessionID, File: r.SessionFile, Mode: r.Mode, Registered: true, State: "remote", Skipped: map[string]int{}, Problems: []SessionProblem{}})
	}
	heads, err := s.Index.ScanHeaders(func(p string) bool { return remote[p] })
	if err != nil {
		return nil, sessionsDirError(err)
	}
	indexed, err := s.Index.IndexedPaths()
	if err != nil {
		return nil, err
	}
	listed := make(map[string]bool, len(heads))
	for _, h := range heads {
		listed[h.Path] = true
	}
	byID := map[string]*contextd.Registration{}
	awaiting := map[string]*contextd.Registration{} // path → registration of a file Pi has not written yet
	for i := range regs {
		r := &regs[i]
		if r.Mode == contextd.ModeRemote {
			continue
		}
		byID[r.SessionID] = r
		p, err := s.Index.Resolve(r.SessionFile)
		if lp, under := s.Index.Lexical(r.SessionFile); under && errors.Is(err, fs.ErrNotExist) {
			// Registered before Pi wrote it (the extension registers at
			// session start): listed at its path as awaiting_file.
			sess := s.Index.Session(lp)
			if err := sess.Sync(ctx); err != nil {
				return nil, err
			}
			if neverWritten(sess) {
				awaiting[lp] = r
			}
			continue
		}
		if err != nil || listed[p] {
			continue
		}
		// A registered file Discover does not list (deeper under the
		// root): listed from its header like the others.
		heads = append(heads, s.Index.HeaderOf(p))
		listed[p] = true
	}
	regOf := func(path, sessionID string) *contextd.Registration {
		reg := byID[sessionID]
		if reg != nil && reg.SessionFile != path {
			return nil // another file with the same header id (a copy): not the registered one
		}
		return reg
	}
	out := remotes
	for _, h := range heads {
		if !indexed[h.Path] && !h.Undecided {
			id := ""
			if h.Header != nil {
				id = h.Header.ID
			}
			out = append(out, s.summarizeHeader(h, regOf(h.Path, id)))
			continue
		}
		sess := s.Index.Session(h.Path)
		if err := sess.Sync(ctx); err != nil {
			return nil, err
		}
		out = append(out, s.summarize(sess, regOf(h.Path, sess.SessionID())))
	}
	// Sessions indexed in this run whose file is no longer discovered
	// (deleted, or moved outside), and registered files Pi has not
	// written yet: synced, so their state (missing, outside) is current.
	for _, sess := range s.Index.Sessions() {
		if listed[sess.Path()] || remote[sess.Path()] {
			continue
		}
		r := awaiting[sess.Path()]
		if r == nil && !sess.Indexed() {
			continue // evicted, or looked at for a refused request
		}
		if err := sess.Sync(ctx); err != nil {
			return nil, err
		}
		reg := regOf(sess.Path(), sess.SessionID())
		if r != nil && neverWritten(sess) {
			reg = r
		}
		if reg == nil && neverWritten(sess) {
			// A path looked at for a registration that since moved
			// elsewhere: no file, nothing indexed, nobody's session.
			continue
		}
		out = append(out, s.summarize(sess, reg))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	// Copies of one session (several existing files with one header id):
	// each row names the others.
	files := map[string][]string{}
	for _, r := range out {
		if r.SessionID != "" && r.State == string(store.StateOK) {
			files[r.SessionID] = append(files[r.SessionID], r.File)
		}
	}
	for i, r := range out {
		same := files[r.SessionID]
		if len(same) < 2 || r.State != string(store.StateOK) {
			continue
		}
		var others []string
		for _, f := range same {
			if f != r.File {
				others = append(others, f)
			}
		}
		reg := byID[r.SessionID]
		out[i].Problems = append(out[i].Problems, duplicateProblem(others, reg != nil && reg.SessionFile == r.File))
	}
	return out, nil
}

// SessionState is GET /v1/sessions/{session_id}.
type SessionState struct {
	SessionSummary
	Header          session.Header         `json:"header"`
	EntriesByType   map[string]int         `json:"entries_by_type"`
	BranchLength    int                    `json:"branch_length"`
	Window          *WindowIdentity        `json:"window" doc:"Current window on the active branch; null when none."`
	BoundaryEntryID string                 `json:"boundary_entry_id,omitempty"`
	NeedsBoundary   bool                   `json:"needs_boundary" doc:"No boundary on the active branch: the extension should append one (POST …/windows)."`
	Registration    *contextd.Registration `json:"registration"`
	Rollover        *RolloverInfo          `json:"rollover" doc:"The open rollover, null when none."`
	Incomplete      *IncompleteRollover    `json:"incomplete_rollover" doc:"A rollover whose branch summary landed but whose manifest did not; its commit can be retried."`
	RolloverLoop    *RolloverLoop          `json:"rollover_loop" doc:"A rollover loop on the active branch: the last 3 or more closed windows held no user message and no successful tool result (docs/modes.md \"Tool-call pairing\"); null when none."`
}

// SessionStateOf answers GET /v1/sessions/{session_id}.
func (s *Service) SessionStateOf(ctx context.Context, sessionID string) (SessionState, error) {
	t, err := s.Resolve(ctx, sessionID)
	if err != nil {
		return SessionState{}, err
	}
	var out SessionState
	if t.Registered {
		r := t.Reg
		out.Registration = &r
	}
	if t.Session == nil { // Remote: nothing local is read
		out.SessionSummary = SessionSummary{SessionID: sessionID, Mode: t.Mode, Registered: t.Registered, State: "remote", Skipped: map[string]int{}, Problems: []SessionProblem{}}
		return out, nil
	}
	var reg *contextd.Registration
	if t.Registered {
		reg = &t.Reg
	}
	out.SessionSummary = s.summarize(t.Session, reg)
	if p, ok := untestedPi(reg); ok {
		out.Problems = append(out.Problems, p)
	}
	if !gone(t.Session) {
		copies, err := s.Index.WithID(ctx, sessionID)
		if err != nil {
			return SessionState{}, err
		}
		var others []string
		for _, c := range copies {
			if c != t.Session && !gone(c) {
				others = append(others, c.Path())
			}
		}
		if len(others) > 0 {
			out.Problems = append(out.Problems, duplicateProblem(others, t.Registered))
		}
	}
	writers := s.writers.problem(sessionID)
	if writers != nil {
		out.Problems = append(out.Problems, *writers)
	}
	out.EntriesByType = map[string]int{}
	_ = t.Session.Read(func(v *store.View) error {
		if v.Tree == nil {
			return nil
		}
		if writers == nil {
			if p := s.interleaves.problem(t.Session.Path(), v.Tree); p != nil {
				out.Problems = append(out.Problems, *p)
			}
		}
		out.Header = v.Tree.Header
		for _, e := range v.Tree.All() {
			out.EntriesByType[e.Type]++
		}
		return nil
	})
	var resumed *Resume
	if out.State == string(store.StateOK) {
		defer s.holdLineage(ctx, t)()
		err = s.withBranch(t, "", func(b *Branch) error {
			out.BranchLength = len(b.Seqs)
			loop, err := rolloverLoop(b)
			if err != nil {
				return err
			}
			out.RolloverLoop = loop
			r := s.resumeOf(b)
			if r != nil && r.Broken != nil {
				out.Problems = append(out.Problems, *r.Broken)
			}
			if r != nil && r.BoundaryEntryID != "" {
				id := r.Window
				out.Window = &id
				if r.Broken == nil {
					resumed = r
					out.NeedsBoundary = true
					return nil
				}
				out.BoundaryEntryID = r.BoundaryEntryID
			} else if i := currentBoundary(b); i >= 0 {
				id := identityOf(new(b.V.Tree.Entry(b.Seqs[i])))
				out.Window = &id
				out.BoundaryEntryID = b.V.Tree.ID(b.Seqs[i])
			} else {
				out.NeedsBoundary = t.Mode == contextd.ModeLocal || t.Mode == contextd.ModeTree
			}
			if t.Mode == contextd.ModeTree {
				// Tree: a boundary that an archive already holds (the user
				// navigated into an archived window) needs a fresh one too.
				var ca ContextAnswer
				if _, err := s.tree.context(b, &ca); err != nil {
					return err
				}
				out.NeedsBoundary = out.NeedsBoundary || ca.NeedsBoundary
				if len(t.parents) > 0 {
					s.countParentArchives(b, &out.SessionSummary)
				}
			}
			return nil
		})
		if err != nil {
			return out, err
		}
	}
	out.Rollover, out.Incomplete, err = s.rolloverStatus(ctx, t)
	if err != nil {
		return out, err
	}
	if resumed != nil && resumed.Missing != nil && out.Rollover == nil {
		// A rollover cut short that contextd's state does not hold (state
		// lost, or run by another process): report it from the file.
		out.Incomplete = &IncompleteRollover{State: IncompleteFromFile, SummaryEntryID: resumed.SummaryEntryID, Missing: resumed.Missing}
	}
	return out, nil
}

// RegisterRequest is the body of PUT /v1/sessions/{session_id}.
type RegisterRequest struct {
	SessionFile string `json:"session_file" minLength:"1" maxLength:"4096" doc:"Path of the session JSONL file: absolute, or relative to the sessions directory. Must resolve (after symlinks) under the sessions directory. May not exist yet (Pi writes it at the first assistant message in 0.85, the first user message in 1.6): the session then answers /context and /windows as one without entries."`
	Mode        string `json:"mode" enum:"off,local,tree,remote" doc:"Context-management mode."`
	AgentName   string `json:"agent_name,omitempty" maxLength:"1024" doc:"Agent path; default /root."`
	PiVersion   string `json:"pi_version,omitempty" maxLength:"64" pattern:"^[0-9]+\\.[0-9]+\\.[0-9]+([-+][0-9A-Za-z.+-]*)?$" doc:"Version of the running Pi (semver, e.g. 0.85.1 or 1.6.0): selects Pi's projection rules for this session. Absent: the newest rules."`
	PID         int    `json:"pid,omitempty" minimum:"0" doc:"The registering Pi's process id: two live Pi processes registered for one session are reported as concurrent_writers (a process that ended is forgotten; one that registers another session leaves this one)."`
}

// Register stores a registration after checking that the file is under the
// sessions directory and, for non-remote modes, that its header id is
// sessionID. It reports whether the registration is new.
func (s *Service) Register(ctx context.Context, sessionID string, req RegisterRequest) (contextd.Registration, bool, error) {
	mode, err := contextd.ParseMode(req.Mode)
	if err != nil {
		return contextd.Registration{}, false, err
	}
	agent := req.AgentName
	if agent == "" {
		agent = contextd.DefaultAgentName
	}
	if agent != "/root" && (len(agent) < 7 || agent[:6] != "/root/") {
		return contextd.Registration{}, false, contextd.Errorf(contextd.EInvalid, "agent_name %q must be /root or start with /root/", agent)
	}
	path, err := s.Index.Resolve(req.SessionFile)
	switch {
	case errors.Is(err, store.ErrOutside):
		return contextd.Registration{}, false, outsideError(req.SessionFile, s.Index.Root())
	case errors.Is(err, fs.ErrNotExist):
		// Pi writes the file late (0.85 at the first assistant message,
		// 1.6 at the first user message) and the extension registers at
		// session_start: a missing file under the sessions directory is
		// registered at its path, and the session answers as one without
		// entries until Pi writes it.
		path, _ = s.Index.Lexical(req.SessionFile)
		err = fs.ErrNotExist
		// …unless the session already has a file: Pi keeps one file per
		// session, so a missing path for an id whose file exists is a
		// mistake that would cut the session off its windows.
		known, kerr := s.Index.WithID(ctx, sessionID)
		if kerr != nil {
			return contextd.Registration{}, false, kerr
		}
		for _, k := range known {
			if k.Path() != path && !gone(k) {
				return contextd.Registration{}, false, contextd.Errorf(contextd.EConflict, "session %q is already in %s, and session_file %q does not exist; register that file (Pi keeps one file per session), or move it to the new path first", sessionID, k.Path(), req.SessionFile)
			}
		}
	case errors.Is(err, store.ErrNotRegular):
		return contextd.Registration{}, false, contextd.Errorf(contextd.EInvalid, "session_file %q is not a regular file; pass the path of a session .jsonl file", req.SessionFile)
	case errors.Is(err, store.ErrChanging):
		return contextd.Registration{}, false, errChanging(sessionID)
	case err != nil:
		// EINVAL (a NUL byte), ENAMETOOLONG, EACCES…: not a usable path.
		return contextd.Registration{}, false, contextd.Errorf(contextd.EInvalid, "session_file %q cannot be opened as a file; pass the path of a session .jsonl file under %s", req.SessionFile, s.Index.Root())
	}
	if err == nil && mode != contextd.ModeRemote {
		sess := s.Index.Session(path)
		if err := sess.Sync(ctx); err != nil {
			return contextd.Registration{}, false, err
		}
		var refusal error
		_ = sess.Read(func(v *store.View) error {
			switch {
			case v.State == store.StateTooLarge:
				refusal = contextd.Errorf(contextd.ESessionTooLarge, "%s", v.StateMsg)
			case v.State != store.StateOK || v.Tree == nil:
				msg := v.StateMsg
				if msg == "" {
					msg = "it has no session header"
				}
				refusal = contextd.Errorf(contextd.EInvalid, "session_file %q is not a Pi session file (%s); register the .jsonl file Pi writes for this session", req.SessionFile, msg)
			case v.Tree.Header.ID != sessionID:
				refusal = contextd.Errorf(contextd.EInvalid, "session_file %q has header id %q, not %q; register it under its own id", req.SessionFile, v.Tree.Header.ID, sessionID)
			}
			return nil
		})
		if refusal != nil {
			// A file that is not one Discover lists must not linger in
			// GET /v1/sessions because of a refused registration.
			if !s.Index.Discoverable(path) {
				if err := s.Index.Forget(ctx, path); err != nil {
					return contextd.Registration{}, false, err
				}
			}
			return contextd.Registration{}, false, refusal
		}
	}
	if path == "" {
		path = req.SessionFile
	}
	reg, created, err := s.State.PutRegistration(ctx, contextd.Registration{SessionID: sessionID, SessionFile: path, Mode: mode, AgentName: agent, PiVersion: req.PiVersion})
	if err == nil {
		if _, untested := untestedPi(&reg); untested {
			s.untested.logOnce(s.Logger, reg.PiVersion)
		}
		s.writers.register(req.PID, sessionID, s.now())
	}
	return reg, created, err
}

// WritersProblem is the concurrent_writers problem of sessionID (two live
// Pi processes registered it), or nil.
func (s *Service) WritersProblem(sessionID string) *SessionProblem {
	return s.writers.problem(sessionID)
}

// BranchEntry is one message of the model-visible context of GET
// …/branch, with the entry that produced it.
type BranchEntry struct {
	EntryID    string `json:"entry_id"`
	Type       string `json:"type"`
	Role       string `json:"role" doc:"Effective role of the context message (Pi's roles, session.ContextRoles): user, assistant, toolResult, bashExecution, custom, system (Pi 1.x system prompt messages, and the systemMessage of a 1.x compaction), branchSummary, compactionSummary; for a message entry the stored role as Pi sends it; unknown when it has none or one Pi does not declare (the message is still listed)."`
	CustomType string `json:"custom_type,omitempty"`
	StopReason string `json:"stop_reason,omitempty"`
	EditID     string `json:"edit_id,omitempty" doc:"The context_edit entry whose replacement content the model is sent instead of the entry's own (Pi 1.x rules). Entries a context_edit omits are not listed."`
}

// BranchAnswer is GET /v1/sessions/{session_id}/branch.
type BranchAnswer struct {
	LeafID   string        `json:"leaf_id"`
	Rules    string        `json:"rules" enum:"pi-0.85,pi-0.86,pi-1.6" doc:"Pi projection rules applied to context: those of the registered pi_version (pi-0.85 below 0.86.0, pi-0.86 for 0.86.x, else pi-1.6); pi-1.6 for an unregistered session or a registration without pi_version."`
	EntryIDs []string      `json:"entry_ids" doc:"Active branch, root to leaf (Pi getBranch)."`
	Cycle    bool          `json:"cycle" doc:"The parent chain loops (never in files Pi writes); the branch stops at the repeat."`
	Context  []BranchEntry `json:"context" doc:"Model-visible context messages in order (Pi buildSessionContext for the rules): one per message, so a Pi 1.x compaction with a systemMessage is listed twice (system, then compactionSummary)."`
	// EntryCount and ContextCount are set only in the tail form (?tail=N):
	// the full lengths of the branch and of the context, of which
	// entry_ids and context hold the last N.
	EntryCount   *int `json:"entry_count,omitempty" doc:"Only with ?tail=N: the length of the whole branch; entry_ids holds its last min(N, entry_count) ids."`
	ContextCount *int `json:"context_count,omitempty" doc:"Only with ?tail=N: the number of context messages; context holds the last min(N, context_count)."`
}

// BranchOf answers GET …/branch for leafID ("" = last entry). tail > 0
// asks for the tail form: only the last tail branch ids and context
// messages, with the full counts (a 1 GiB session's whole answer lists a
// quarter-million ids, 20 MB); tail 0 lists them all.
func (s *Service) BranchOf(ctx context.Context, sessionID, leafID string, tail int) (BranchAnswer, error) {
	var out BranchAnswer
	err := s.branchParts(ctx, sessionID, leafID, tail, func(p *branchParts) {
		out.LeafID, out.Rules, out.Cycle, out.EntryCount, out.ContextCount = p.leaf, p.rules, p.cycle, p.entryCount, p.contextCount
		out.EntryIDs = make([]string, 0, len(p.seqs))
		for _, sq := range p.seqs {
			out.EntryIDs = append(out.EntryIDs, p.tree.ID(sq))
		}
		out.Context = make([]BranchEntry, 0, len(p.msgs))
		for _, m := range p.msgs {
			out.Context = append(out.Context, branchEntryOf(p.tree, m))
		}
	})
	return out, err
}

// BranchJSON is BranchOf encoded as JSON (the bytes BranchAnswer.MarshalJSON
// writes for it), written straight from the entry tree: the whole answer
// of a 1 GiB session is 257k ids and context messages, and the
// BranchAnswer beside its encoding held about 30 MB more at the moment a
// cold index peaks (docs/benchmarks.md: peak RSS ≤ 150 MiB).
func (s *Service) BranchJSON(ctx context.Context, sessionID, leafID string, tail int) ([]byte, error) {
	var b []byte
	err := s.branchParts(ctx, sessionID, leafID, tail, func(p *branchParts) {
		b = appendBranchJSON(nil, p.leaf, p.rules, false, len(p.seqs), func(i int) string { return p.tree.ID(p.seqs[i]) },
			p.cycle, false, len(p.msgs), func(i int) BranchEntry { return branchEntryOf(p.tree, p.msgs[i]) }, p.entryCount, p.contextCount)
	})
	return b, err
}

// branchParts is one /branch answer before it is listed: the tree, the
// branch seqs and context messages (the tail of each for ?tail=N) and the
// scalar fields. Valid only inside branchParts' callback.
type branchParts struct {
	tree                     *session.Tree
	leaf, rules              string
	cycle                    bool
	seqs                     []int
	msgs                     []session.ContextMessage
	entryCount, contextCount *int
}

// branchParts resolves the session for a tree-only read (a cold index
// answers from its tree preview, before the items are built:
// store.TreeOnly) and calls fn with the parts of its /branch answer.
func (s *Service) branchParts(ctx context.Context, sessionID, leafID string, tail int, fn func(p *branchParts)) error {
	t, err := s.Resolve(store.TreeOnly(ctx), sessionID)
	if err != nil {
		return err
	}
	if t.Session == nil {
		return contextd.Errorf(contextd.EConflict, "session %q is in remote mode: contextd does not read its file", sessionID)
	}
	return s.withCachedBranch(t, leafID, func(b *Branch) error {
		p := branchParts{tree: b.V.Tree, leaf: b.Leaf, cycle: b.Cycle, seqs: b.Seqs}
		if tail > 0 {
			n := len(p.seqs)
			p.entryCount = &n
			p.seqs = p.seqs[max(0, n-tail):]
		}
		rules := t.Rules()
		p.rules = rules.String()
		p.msgs = s.projection(b, rules)
		if tail > 0 {
			n := len(p.msgs)
			p.contextCount = &n
			p.msgs = p.msgs[max(0, n-tail):]
		}
		fn(&p)
		return nil
	})
}

// branchEntryOf is the /branch context entry of message m.
func branchEntryOf(tr *session.Tree, m session.ContextMessage) BranchEntry {
	e := tr.Entry(m.Seq)
	be := BranchEntry{EntryID: e.ID, Type: e.Type, Role: m.Role}
	if m.Role == e.Role {
		be.StopReason = e.StopReason
	}
	if !session.KnownContextRole(be.Role) {
		be.Role = session.RoleUnknown
	}
	if e.Type == session.TypeCustomMessage {
		be.CustomType = e.CustomType
	}
	if m.EditSeq >= 0 {
		be.EditID = tr.ID(m.EditSeq)
	}
	return be
}

// Rebuild drops and rebuilds the derived index; registrations and rollovers
// are kept.
func (s *Service) Rebuild(ctx context.Context) (int, error) {
	if err := s.Index.Rebuild(ctx); err != nil {
		var de *store.SessionsDirError
		if errors.As(err, &de) {
			return 0, sessionsDirError(err)
		}
		return 0, fmt.Errorf("rebuild: %w", err)
	}
	return len(s.Index.Sessions()), nil
}

// MarshalJSON writes the answer by hand: a /branch answer of a large
// session lists every entry of the branch twice (31k ids for a 128 MiB
// session), and reflection-based encoding made it the slowest route. The
// output is what encoding/json writes for the same value (checked by
// TestBranchAnswerJSON).
func (a BranchAnswer) MarshalJSON() ([]byte, error) {
	return appendBranchJSON(nil, a.LeafID, a.Rules, a.EntryIDs == nil, len(a.EntryIDs), func(i int) string { return a.EntryIDs[i] },
		a.Cycle, a.Context == nil, len(a.Context), func(i int) BranchEntry { return a.Context[i] }, a.EntryCount, a.ContextCount), nil
}

// appendBranchJSON appends a BranchAnswer as encoding/json writes it: nIDs
// entry ids given by id (null when idsNil), nCtx context entries given by
// entry (null when ctxNil).
func appendBranchJSON(b []byte, leaf, rules string, idsNil bool, nIDs int, id func(i int) string, cycle, ctxNil bool, nCtx int, entry func(i int) BranchEntry, entryCount, contextCount *int) []byte {
	if b == nil {
		b = make([]byte, 0, 64+nIDs*12+nCtx*80)
	}
	b = append(b, `{"leaf_id":`...)
	b = appendJSONString(b, leaf)
	b = append(b, `,"rules":`...)
	b = appendJSONString(b, rules)
	b = append(b, `,"entry_ids":`...)
	if idsNil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range nIDs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, id(i))
		}
		b = append(b, ']')
	}
	b = append(b, `,"cycle":`...)
	b = strconv.AppendBool(b, cycle)
	b = append(b, `,"context":`...)
	if ctxNil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range nCtx {
			if i > 0 {
				b = append(b, ',')
			}
			e := entry(i)
			b = append(b, `{"entry_id":`...)
			b = appendJSONString(b, e.EntryID)
			b = append(b, `,"type":`...)
			b = appendJSONString(b, e.Type)
			b = append(b, `,"role":`...)
			b = appendJSONString(b, e.Role)
			if e.CustomType != "" {
				b = append(b, `,"custom_type":`...)
				b = appendJSONString(b, e.CustomType)
			}
			if e.StopReason != "" {
				b = append(b, `,"stop_reason":`...)
				b = appendJSONString(b, e.StopReason)
			}
			if e.EditID != "" {
				b = append(b, `,"edit_id":`...)
				b = appendJSONString(b, e.EditID)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if entryCount != nil {
		b = strconv.AppendInt(append(b, `,"entry_count":`...), int64(*entryCount), 10)
	}
	if contextCount != nil {
		b = strconv.AppendInt(append(b, `,"context_count":`...), int64(*contextCount), 10)
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string: plain printable ASCII as is,
// anything else through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// outsideError is the EForbidden error for a session_file outside the
// sessions directory root. An absolute path is what the extension sends
// (Pi's getSessionFile): the message is for the Pi user and names the
// folder Pi writes the session to, the one contextd reads, and the two
// fixes (contextd's --sessions-dir, Pi's --session-dir); for Pi's default
// layout, <sessions>/--<cwd>--/<file>.jsonl, it suggests the <sessions>
// folder, which holds every project's sessions. A relative path comes from
// an API client and gets the rule for registrations.
//
// A path that cannot be a Pi session file, because its name does not end in
// ".jsonl" (/etc/passwd), gets no advice to serve its folder: the message
// says what a session file is and where Pi keeps them (docs/pi-facts.md
// "Where files live": <agentDir>/sessions/--<cwd>--/<ts>_<id>.jsonl, or flat
// in Pi's --session-dir). A ".jsonl" outside the root keeps the advice, as
// Pi's --session-dir may name any folder.
func outsideError(sessionFile, root string) error {
	if !strings.HasSuffix(sessionFile, ".jsonl") {
		return contextd.Errorf(contextd.EForbidden, "session_file %q is not a Pi session file: Pi keeps each session as a .jsonl file, <timestamp>_<id>.jsonl, in ~/.pi/agent/sessions/--<cwd>--/ (or flat in the folder Pi's --session-dir names); register that file, which must be under contextd's sessions directory %s", sessionFile, root)
	}
	if !filepath.IsAbs(sessionFile) {
		return contextd.Errorf(contextd.EForbidden, "session_file %q is outside the sessions directory %s; pass a path under it, absolute or relative to it (e.g. \"--<cwd>--/<file>.jsonl\"), or start contextd with --path-map HOST=CONTAINER when Pi sees that directory under another path", sessionFile, root)
	}
	dir := filepath.Dir(sessionFile)
	suggest := dir
	if b := filepath.Base(dir); len(b) > 4 && strings.HasPrefix(b, "--") && strings.HasSuffix(b, "--") {
		suggest = filepath.Dir(dir)
	}
	return contextd.Errorf(contextd.EForbidden, "Pi writes this session to %s, but contextd reads sessions only from %s; restart contextd with --sessions-dir %s, or start Pi with --session-dir %s (a contextd that sees Pi's files under another path, as in a container: --path-map HOST=CONTAINER)", dir, root, suggest, root)
}
