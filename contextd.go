// Package contextd holds the domain types shared by contextd's packages:
// modes, registrations and the coded application error that api/ maps to
// HTTP statuses (the benbjohnson/wtf layout: domain at the root,
// implementations in subpackages, wiring in cmd/contextd).
package contextd

import (
	"errors"
	"fmt"
	"time"
)

// Mode is a session's context-management mode (DESIGN.md §4).
type Mode string

// The four modes. An unregistered session uses the server's default mode.
const (
	ModeOff    Mode = "off"
	ModeLocal  Mode = "local"
	ModeTree   Mode = "tree"
	ModeRemote Mode = "remote"
)

// ParseMode validates a mode name.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case ModeOff, ModeLocal, ModeTree, ModeRemote:
		return Mode(s), nil
	}
	return "", Errorf(EInvalid, "mode %q is not one of off, local, tree, remote", s)
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

// Error codes. api/ maps each to one HTTP status.
const (
	EInvalid      = "invalid"       // 422: the request is well-formed but a value is wrong
	EBadRequest   = "bad_request"   // 400
	ENotFound     = "not_found"     // 404
	EConflict     = "conflict"      // 409: state forbids it (mode off, rollover pending, …)
	EPrecondition = "precondition"  // 412: the session changed under the caller
	EGone         = "gone"          // 410: the session file is gone or unusable
	EForbidden    = "forbidden"     // 403
	ETooLarge     = "too_large"     // 413
	EUnauthorized = "unauthorized"  // 401
	EUpstream     = "upstream"      // 502: Remote backend failed
	EUpstreamSlow = "upstream_slow" // 504: Remote backend timed out
	EUnavailable  = "unavailable"   // 503: contextd cannot serve it until its host is fixed (unreadable sessions directory)
	EInternal     = "internal"      // 500: never shown to the caller
)

// Error is an application error: a code and a sentence the caller can act
// on. Any other error is internal and is never shown to the caller.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Errorf builds an *Error.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err's *Error, or EInternal.
func ErrorCode(err error) string {
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
