package api

import (
	"net/http"
	"slices"

	"github.com/danielgtaylor/huma/v2"

	"contextd"
)

// The code member of every problem body: a machine-readable kind a client
// branches on instead of the detail sentence (RFC 9457 allows such
// extension members). Its values are listed as the OpenAPI enum of
// ErrorModel.code.

// Codes of problems contextd answers outside its application errors:
// statuses of the HTTP layer (the router, the security middleware, huma's
// validation) and of the request's own fate.
const (
	CodeMethodNotAllowed     contextd.Code = "method_not_allowed"     // 405: no such method on the route
	CodeMisdirected          contextd.Code = "misdirected"            // 421: Host is not a loopback address
	CodeUnsupportedMediaType contextd.Code = "unsupported_media_type" // 415: the body is not application/json
	CodeClientClosed         contextd.Code = "client_closed"          // 499: the client went away (logged only)
	CodeTimeout              contextd.Code = "timeout"                // 503: the request ran past contextd's limit
	CodeDiskFull             contextd.Code = "disk_full"              // 507: the state directory's disk is full
)

// ProblemCodes lists every code a problem body's code member can hold, in
// the order the OpenAPI document lists them (ErrorModel.code's enum).
var ProblemCodes = []contextd.Code{
	contextd.EInvalid, contextd.EAmbiguous, contextd.EBadRequest, contextd.ENotFound, contextd.EConflict,
	contextd.EOpenToolCalls, contextd.ERolloverPending, contextd.ESessionTooLarge, contextd.EPrecondition, contextd.EGone, contextd.EForbidden, contextd.ETooLarge,
	contextd.EUnauthorized, contextd.EUpstream, contextd.EUpstreamSlow, contextd.EUnavailable, contextd.EInternal,
	CodeMethodNotAllowed, CodeMisdirected, CodeUnsupportedMediaType, CodeClientClosed, CodeTimeout, CodeDiskFull,
}

// codeOfStatus is the code of a problem that carries only a status (huma's
// own errors and the middleware's): the application code of that status,
// else the HTTP layer's; any other 4xx is bad_request, anything else
// internal.
func codeOfStatus(status int) contextd.Code {
	switch status {
	case http.StatusBadRequest:
		return contextd.EBadRequest
	case http.StatusUnprocessableEntity:
		return contextd.EInvalid
	case http.StatusConflict:
		return contextd.EConflict
	case http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case http.StatusMisdirectedRequest:
		return CodeMisdirected
	case http.StatusUnsupportedMediaType:
		return CodeUnsupportedMediaType
	case StatusClientClosedRequest:
		return CodeClientClosed
	case http.StatusInsufficientStorage:
		return CodeDiskFull
	}
	for c, st := range statusOf {
		if st == status && c != contextd.EAmbiguous && c != contextd.EOpenToolCalls && c != contextd.ERolloverPending && c != contextd.ESessionTooLarge {
			return c
		}
	}
	if status >= 400 && status < 500 {
		return contextd.EBadRequest
	}
	return contextd.EInternal
}

// ErrorModel is contextd's problem document (RFC 9457,
// application/problem+json): huma's members plus code, the machine-readable
// kind of the problem (one of ProblemCodes). Clients branch on code, never
// on the detail sentence, which may be reworded.
type ErrorModel struct {
	huma.ErrorModel
	Code contextd.Code `json:"code" doc:"What kind of problem this is, for programs: branch on it, never on detail (which may be reworded)."`
}

// TransformSchema lists ProblemCodes as code's enum and makes code required.
func (*ErrorModel) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	if c := s.Properties["code"]; c != nil {
		c.Enum = make([]any, len(ProblemCodes))
		for i, code := range ProblemCodes {
			c.Enum[i] = string(code)
		}
	}
	if !slices.Contains(s.Required, "code") {
		s.Required = append(s.Required, "code")
	}
	return s
}

// withCode is e (a huma error) as contextd's ErrorModel with code.
func withCode(e huma.StatusError, code contextd.Code) huma.StatusError {
	switch m := e.(type) {
	case *ErrorModel:
		m.Code = code
		return m
	case *huma.ErrorModel:
		return &ErrorModel{ErrorModel: *m, Code: code}
	}
	return e
}
