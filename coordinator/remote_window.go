package coordinator

import (
	"errors"
	"io/fs"

	"contextd"
	"contextd/session"
	"contextd/store"
)

// Remote mode's window 0 (docs/design.md §4 "Adoption"). History and notes
// of a Remote session live on the Codex backend, and contextd never
// indexes its file or answers from it. Window 0's identity is still
// contextd's to decide, by the rule Local and Tree follow: when the branch
// already holds messages Pi sends to the model, window 0 begins at the
// branch's first entry (startEntryId), so the model keeps the earlier
// conversation (and the backend sees it in window 0's requests). To
// decide, contextd parses the registered file once, apart from the index
// (nothing is stored and no history answer comes from it). The next
// windows of a Remote session are the extension's (new_context).

// remoteWindowZero answers POST …/windows for a Remote session: window 0's
// boundary, with startEntryId by adoptionStartOf and the Codex backend's
// thread hint the extension fetched (req.ThreadHint). Errors: EConflict
// when the branch already has a boundary; ENotFound for a leaf_id that is
// not in the file; EForbidden for a registered file outside the sessions
// directory.
func (s *Service) remoteWindowZero(t *Target, req WindowsRequest) (WindowsAnswer, error) {
	start, err := s.remoteAdoptionStart(t, req.LeafID)
	if err != nil {
		return WindowsAnswer{}, err
	}
	id := s.newID()
	out := WindowsAnswer{First: true, Window: WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: id, CurrentWindowID: id, StartEntryID: start}}
	out.Append = []Boundary{s.NewBoundary(t.Agent, out.Window, req.ThreadHint)}
	return out, nil
}

// remoteAdoptionStart is window 0's startEntryId for the branch of the
// Remote session's registered file at leafID ("" = the file's last
// entry): "" for a file Pi has not written yet or an unregistered session
// (no file is known).
func (s *Service) remoteAdoptionStart(t *Target, leafID string) (string, error) {
	if !t.Registered || t.Reg.SessionFile == "" {
		return "", nil
	}
	path, err := s.Index.Resolve(t.Reg.SessionFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil // Pi writes the file at the session's first message
	case errors.Is(err, store.ErrOutside):
		return "", outsideError(t.Reg.SessionFile, s.Index.Root())
	case err != nil:
		return "", err
	}
	tree, err := session.Each(path, nil)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && tree == nil) {
		return "", nil
	}
	if err != nil {
		return "", contextd.Errorf(contextd.EConflict, "the session file %s cannot be read as a Pi session (%v)", t.Reg.SessionFile, err)
	}
	seqs, _, err := tree.Branch(leafID)
	var ul *session.ErrUnknownLeaf
	if errors.As(err, &ul) {
		return "", unknownLeaf(leafID, t.SessionID)
	}
	if err != nil {
		return "", err
	}
	for _, q := range seqs {
		if tree.Entry(q).IsBoundary() {
			return "", contextd.Errorf(contextd.EConflict, "the branch of session %q already has a window boundary; in Remote mode the next window starts with new_context", t.SessionID)
		}
	}
	return adoptionStartOf(tree, seqs, t.Rules()), nil
}
