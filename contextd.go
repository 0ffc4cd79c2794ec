// Package contextd holds the domain types shared by contextd's packages:
// modes, registrations and the coded application error that api/ maps to
// HTTP statuses (the benbjohnson/wtf layout: domain at the root,
// implementations in subpackages, wiring in cmd/contextd).
package contextd

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Mode is a session's context-management mode (docs/design.md §4).
type Mode string

// The four modes. An unregistered session uses the server's default mode.
const (
	ModeOff    Mode = "off"
	ModeLocal  Mode = "local"
	ModeTree   Mode = "tree"
	ModeRemote Mode = "remote"
)

// Modes lists every mode in the order messages name them.
var Modes = []Mode{ModeOff, ModeLocal, ModeTree, ModeRemote}

// ParseMode validates a mode name: exactly one of Modes, lowercase (the
// one rule for every reader of a mode: --default-mode, the API's mode
// field, and through internal/sharedrules the extension's settings and
// /contextd mode). Error (EInvalid): `"S" is not a mode; ` + ModeAdvice(s).
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", Errorf(EInvalid, "%q is not a mode; %s", s, ModeAdvice(s))
}

// ModeAdvice is what a refusal of the mode name s says to do: "use tree
// (mode names are lowercase)" when s is a mode in another case, "" when s
// is a mode, else "use off, local, tree or remote".
func ModeAdvice(s string) string {
	for _, m := range Modes {
		if string(m) == s {
			return ""
		}
		if strings.EqualFold(string(m), s) {
			return "use " + string(m) + " (mode names are lowercase)"
		}
	}
	return "use off, local, tree or remote"
}

// DefaultAgentName is the root agent's path (Codex: "/root").
const DefaultAgentName = "/root"

// Registration is what the extension told contextd about a session
// (PUT /v1/sessions/{session_id}). It is contextd's own state: it cannot be
// derived from the JSONL and survives an index rebuild.
type Registration struct {
	SessionID   string `json:"session_id"`
	SessionFile string `json:"session_file"`
	Mode        Mode   `json:"mode"`
	AgentName   string `json:"agent_name"`
	// PiVersion is the running Pi's version ("0.85.1", "1.6.0"); "" when the
	// extension did not report it. It selects Pi's projection rules.
	PiVersion    string    `json:"pi_version"`
	RegisteredAt time.Time `json:"registered_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// Code classifies an application error: what the caller did wrong, or
// what state forbids it. api/ maps each code to one HTTP status (its
// statusOf table); no other package knows HTTP.
type Code string

// The codes of *Error. history and notes use EInvalid, EAmbiguous and
// ETooLarge for their argument and limit errors; the coordinator and the
// store the others.
const (
	EInvalid      Code = "invalid"       // 422: the request is well-formed but a value is wrong
	EAmbiguous    Code = "ambiguous"     // 422: an id suffix matches several items (history read_item)
	EBadRequest   Code = "bad_request"   // 400
	ENotFound     Code = "not_found"     // 404
	EConflict     Code = "conflict"      // 409: state forbids it (mode off, rollover pending, …)
	EPrecondition Code = "precondition"  // 412: the session changed under the caller
	EGone         Code = "gone"          // 410: the session file is gone or unusable
	EForbidden    Code = "forbidden"     // 403
	ETooLarge     Code = "too_large"     // 413: a note file or the note snapshot would exceed its byte limit
	EUnauthorized Code = "unauthorized"  // 401
	EUpstream     Code = "upstream"      // 502: Remote backend failed
	EUpstreamSlow Code = "upstream_slow" // 504: Remote backend timed out
	EUnavailable  Code = "unavailable"   // 503: contextd cannot serve it until its host is fixed (unreadable sessions directory)
	EInternal     Code = "internal"      // 500: never shown to the caller
)

// EOpenToolCalls (409) refuses a window or rollover step while the leaf's
// tool batch has calls without results (a rollover never separates a call
// from its result); the Tree extension settles such a rollover again at
// Pi's next agent_settled.
const EOpenToolCalls Code = "open_tool_calls"

// ERolloverPending (409) refuses a new rollover (new_context, /contextd
// new) while another rollover of the session is open and not superseded
// (coordinator/stale.go). The extension branches on it: the model is told
// in one sentence that it stays in its window, the person that /contextd
// finish finishes the open one; neither is shown an HTTP route.
const ERolloverPending Code = "rollover_pending"

// ESessionTooLarge (507) refuses every route that needs a session's
// content while its file holds more entries than contextd's memory limit
// can index (store.EntryBudget); the message says to restart contextd with
// a larger --memory-limit or start a new Pi session. The extension branches
// on it: it tells the user once and lets Pi use its own context.
const ESessionTooLarge Code = "session_too_large"

// Error is an application error: a code and a sentence the caller (a
// person or the model) can act on. It is the one error type of every
// package; any other error is internal and is never shown to the caller.
type Error struct {
	Code    Code
	Message string
}

// Error returns the message unchanged.
func (e *Error) Error() string { return e.Message }

// Errorf builds an *Error whose message is fmt.Sprintf(format, args...).
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err's *Error (errors.As), or EInternal.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the message of err's *Error, or "Internal error.".
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error."
}
