package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"

	"contextd"
	"contextd/store"
)

// statusOf maps an application error code to its HTTP status (the one
// table, as in benbjohnson/wtf http.go).
var statusOf = map[contextd.Code]int{
	contextd.EOpenToolCalls:   http.StatusConflict,
	contextd.ERolloverPending: http.StatusConflict,
	// 507 Insufficient Storage (RFC 4918 §11.5): the server cannot hold
	// what the request needs; the session file is fine, contextd's
	// --memory-limit is what is short (store.EntryBudget).
	contextd.ESessionTooLarge: http.StatusInsufficientStorage,
	contextd.EInvalid:         http.StatusUnprocessableEntity,
	contextd.EAmbiguous:       http.StatusUnprocessableEntity,
	contextd.EBadRequest:      http.StatusBadRequest,
	contextd.ENotFound:        http.StatusNotFound,
	contextd.EConflict:        http.StatusConflict,
	contextd.EPrecondition:    http.StatusPreconditionFailed,
	contextd.EGone:            http.StatusGone,
	contextd.EForbidden:       http.StatusForbidden,
	contextd.ETooLarge:        http.StatusRequestEntityTooLarge,
	contextd.EUnauthorized:    http.StatusUnauthorized,
	contextd.EUpstream:        http.StatusBadGateway,
	contextd.EUpstreamSlow:    http.StatusGatewayTimeout,
	contextd.EUnavailable:     http.StatusServiceUnavailable,
	contextd.EInternal:        http.StatusInternalServerError,
}

// problem turns any error into a huma status error. Application errors keep
// their sentence; anything else is logged and answered as a bare 500 that
// never echoes Go error text.
//
// Three kinds are not the service's fault and say so (docs/security.md): a
// request whose client went away (context canceled) answers 499, logged
// at debug level; a request past its deadline answers 503; a full disk
// answers 507 with a sentence saying so (the failed change was rolled
// back).
func (s *Server) problem(op string, err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		s.log.Debug("client closed the request before the answer", "operation", op)
		return withCode(huma.NewError(StatusClientClosedRequest, "The client closed the request before the answer was ready."), CodeClientClosed)
	case errors.Is(err, context.DeadlineExceeded):
		s.log.Warn("request stopped at its deadline", "operation", op, "deadline", s.cfg.RequestTimeout)
		return withCode(huma.NewError(http.StatusServiceUnavailable, "The request took longer than contextd's limit of "+s.cfg.RequestTimeout.String()+" and was stopped; retry it (indexing goes on from where it stopped)."), CodeTimeout)
	case errors.Is(err, store.ErrFileChanged):
		// The file changed (or was swapped away) between the sync and a
		// read of one of its lines: the read failed cleanly.
		return withCode(huma.NewError(http.StatusPreconditionFailed, store.ErrFileChanged.Error()), contextd.EPrecondition)
	case store.IsDiskFull(err):
		s.log.Error("disk full", "operation", op, "error", err)
		return withCode(huma.NewError(http.StatusInsufficientStorage, "The disk holding contextd's state directory is full, so nothing was changed; free space on that disk and retry."), CodeDiskFull)
	}
	code := contextd.ErrorCode(err)
	status, ok := statusOf[code]
	if !ok {
		status = http.StatusInternalServerError
	}
	if status == http.StatusInternalServerError {
		s.log.Error("internal error", "operation", op, "error", err)
		return withCode(huma.NewError(status, "Internal error."), contextd.EInternal)
	}
	return withCode(huma.NewError(status, contextd.ErrorMessage(err)), code)
}

// StatusClientClosedRequest is the status recorded for a request whose
// client went away before the answer (nginx's 499; no client sees it).
const StatusClientClosedRequest = 499

// writeProblem writes an RFC 9457 problem document outside huma (middleware).
func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	b, _ := json.Marshal(ErrorModel{ErrorModel: huma.ErrorModel{Title: http.StatusText(status), Status: status, Detail: detail}, Code: codeOfStatus(status)})
	w.Write(b)
}

func quote(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strconv.Quote(s)
}

// clip cuts s to 200 bytes (on a rune boundary), for text from the request
// that a detail names.
func clip(s string) string {
	if len(s) <= 200 {
		return s
	}
	i := 200
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// installErrorDetails replaces huma.NewError once per process. huma v2
// offers no per-API error constructor (huma.NewError and
// huma.NewErrorWithContext are package variables its validation and
// handlers call), so New sets the global, guarded by sync.Once, instead
// of an init function doing it on import: a program that imports api but
// builds no server keeps huma's own errors.
var installErrorDetails = sync.OnceFunc(func() {
	// Validation failures list each field in errors[]; also say them in the
	// detail sentence so a person reading only detail knows what to fix.
	// Values are dropped: they may hold note text or encrypted arguments.
	base := huma.NewError
	detailed := func(status int, msg string, errs ...error) huma.StatusError {
		if status == http.StatusInternalServerError && msg == "cannot read request body" {
			var tooBig *http.MaxBytesError
			if len(errs) > 0 && errors.As(errs[0], &tooBig) {
				return base(http.StatusRequestEntityTooLarge, "Request body is larger than the limit; send at most "+itoa(tooBig.Limit)+" bytes.")
			}
			return base(http.StatusBadRequest, bodyReadDetail(errs))
		}
		if len(errs) == 0 {
			return base(status, msg)
		}
		if status == http.StatusBadRequest {
			if d := dupKeyDetail(errs); d != nil {
				return base(http.StatusUnprocessableEntity, "Invalid request: "+d.Location+": "+d.Message+".", d)
			}
		}
		parts := make([]string, 0, len(errs))
		clean := make([]error, 0, len(errs))
		for _, e := range errs {
			d := &huma.ErrorDetail{Message: e.Error()}
			if dd, ok := e.(huma.ErrorDetailer); ok {
				got := dd.ErrorDetail()
				d = &huma.ErrorDetail{Message: got.Message, Location: got.Location}
			}
			d = decodeErrorDetail(d)
			clean = append(clean, d)
			if len(parts) < 5 {
				p := d.Message
				if d.Location != "" {
					p = d.Location + ": " + d.Message
				}
				parts = append(parts, p)
			}
		}
		if len(errs) > 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(errs)-5))
		}
		return base(status, "Invalid request: "+strings.Join(parts, "; ")+".", clean...)
	}
	// Every problem carries the code of its status (problem sets the
	// application error's own code over it).
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		e := detailed(status, msg, errs...)
		return withCode(e, codeOfStatus(e.GetStatus()))
	}
})

// dupKeyDetail finds the duplicate member name strictJSON refused among
// the errors huma reports for a body its decoder refused (one detail at
// location "body" whose message is dupKeyError's), and returns it at the
// name's own location: the body is well-formed JSON whose content is
// refused, 422 like any field the schema refuses. nil when there is none.
func dupKeyDetail(errs []error) *huma.ErrorDetail {
	const tail = ": each name may appear once in an object; send it once, with the value you mean"
	for _, e := range errs {
		dd, ok := e.(huma.ErrorDetailer)
		if !ok {
			continue
		}
		m := dd.ErrorDetail().Message
		rest, ok := strings.CutPrefix(m, dupKeyPrefix)
		if !ok || !strings.HasSuffix(rest, tail) {
			continue
		}
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			continue
		}
		loc, ok := strings.CutPrefix(strings.TrimSuffix(rest[len(q):], tail), " at ")
		if !ok {
			continue
		}
		return &huma.ErrorDetail{Location: loc, Message: dupKeyPrefix + q + " (" + strings.TrimPrefix(tail, ": ") + ")"}
	}
	return nil
}

// decodeErrorDetail rewrites the error huma reports when a body passed
// schema validation but encoding/json could not decode it into the Go
// type (an integer-valued number that does not fit int, such as 1e30 or
// 2.0): the location "body" and a message naming Go types and the value
// become the JSON field's location and a plain sentence, as for every
// other validation error ("body.limit: expected integer …").
func decodeErrorDetail(d *huma.ErrorDetail) *huma.ErrorDetail {
	const pre, mid, typ = "json: cannot unmarshal ", " into Go struct field ", " of type "
	if d.Location != "body" || !strings.HasPrefix(d.Message, pre) {
		return d
	}
	value, rest, ok := strings.Cut(strings.TrimPrefix(d.Message, pre), mid)
	if !ok {
		// "json: cannot unmarshal number 1e309 into Go value of type
		// float64": a number out of float64 range, found before the
		// schema check. Never echo the value (docs/security.md).
		msg := "a JSON value has the wrong type"
		if strings.HasPrefix(value, "number") {
			msg = "a number is outside the range of a 64-bit float (about ±1.8e308); send a finite number"
		}
		return &huma.ErrorDetail{Location: "body", Message: msg}
	}
	field, goType, ok := strings.Cut(rest, typ)
	if !ok {
		return d
	}
	// field is Struct.Embedded.json_name…: keep the JSON names (every
	// JSON name of this API starts with a lower-case letter).
	var path []string
	for _, c := range strings.Split(field, ".")[1:] {
		if c != "" && !(c[0] >= 'A' && c[0] <= 'Z') {
			path = append(path, c)
		}
	}
	if len(path) == 0 {
		return d
	}
	msg := "has the wrong type"
	switch strings.TrimLeft(goType, "*") {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		msg = "expected integer"
		if strings.HasPrefix(value, "number") {
			msg = "expected integer written without a fraction or exponent, between -9223372036854775808 and 9223372036854775807"
		}
	case "string":
		msg = "expected string"
	case "bool":
		msg = "expected boolean"
	case "float32", "float64":
		msg = "expected number"
	}
	return &huma.ErrorDetail{Location: "body." + strings.Join(path, "."), Message: msg}
}

// bodyReadDetail is the 400 detail for a request body that could not be
// read. huma answers 500 "cannot read request body" for any read error but
// a timeout, yet every such error is the client's doing: malformed chunked
// encoding, a body shorter than its Content-Length, a connection cut
// mid-body. The Go error text names the fault and holds no body bytes.
func bodyReadDetail(errs []error) string {
	cause := "the connection ended"
	if len(errs) > 0 && errs[0] != nil {
		cause = errs[0].Error()
		if len(cause) > 200 {
			cause = cause[:200] + "…"
		}
	}
	return "Could not read the request body (" + cause + "); send the whole body with a correct Content-Length or valid chunked encoding."
}
