package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"contextd"
)

// statusOf maps an application error code to its HTTP status (the one
// table, as in benbjohnson/wtf http.go).
var statusOf = map[string]int{
	contextd.EInvalid:      http.StatusUnprocessableEntity,
	contextd.EBadRequest:   http.StatusBadRequest,
	contextd.ENotFound:     http.StatusNotFound,
	contextd.EConflict:     http.StatusConflict,
	contextd.EPrecondition: http.StatusPreconditionFailed,
	contextd.EGone:         http.StatusGone,
	contextd.EForbidden:    http.StatusForbidden,
	contextd.ETooLarge:     http.StatusRequestEntityTooLarge,
	contextd.EUnauthorized: http.StatusUnauthorized,
	contextd.EUpstream:     http.StatusBadGateway,
	contextd.EUpstreamSlow: http.StatusGatewayTimeout,
	contextd.EInternal:     http.StatusInternalServerError,
}

// problem turns any error into a huma status error. Application errors keep
// their sentence; anything else is logged and answered as a bare 500 that
// never echoes Go error text.
func (s *Server) problem(op string, err error) error {
	code := contextd.ErrorCode(err)
	status, ok := statusOf[code]
	if !ok {
		status = http.StatusInternalServerError
	}
	if status == http.StatusInternalServerError {
		s.log.Error("internal error", "operation", op, "error", err)
		return huma.NewError(status, "Internal error.")
	}
	return huma.NewError(status, contextd.ErrorMessage(err))
}

// writeProblem writes an RFC 9457 problem document outside huma (middleware).
func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	b, _ := json.Marshal(huma.ErrorModel{Title: http.StatusText(status), Status: status, Detail: detail})
	w.Write(b)
}

func quote(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strconv.Quote(s)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func init() {
	// Validation failures list each field in errors[]; also say them in the
	// detail sentence so a person reading only detail knows what to fix.
	// Values are dropped: they may hold note text or encrypted arguments.
	base := huma.NewError
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		if len(errs) == 0 {
			return base(status, msg)
		}
		parts := make([]string, 0, len(errs))
		clean := make([]error, 0, len(errs))
		for _, e := range errs {
			d := &huma.ErrorDetail{Message: e.Error()}
			if dd, ok := e.(huma.ErrorDetailer); ok {
				got := dd.ErrorDetail()
				d = &huma.ErrorDetail{Message: got.Message, Location: got.Location}
			}
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
}
