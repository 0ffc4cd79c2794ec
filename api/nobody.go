package api

// A body sent to a route that takes none. huma reads no body for an
// operation that declares none, so POST /v1/index/rebuild with {"x":1}
// answered 200 and rebuilt as if nothing had been sent. Every operation
// without a request body now refuses a non-empty one with 422 (docs/api.md
// "OpenAPI and generated clients"), the way refuseUnknownQuery refuses an
// undeclared query parameter. An empty JSON object ({}, JSON whitespace
// allowed around and inside) is accepted: it declares nothing, and generic
// clients (and contextd's own Go test drivers) send it for "no input". The
// extension sends no body at all to these routes (extension/src/client.ts
// sends one only when the operation's body type is defined).

import (
	"bytes"
	"io"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
)

// maxNoBodyPeek is how many body bytes noBodyAllowed reads to tell an
// empty object from anything else; a longer body is refused unread.
const maxNoBodyPeek = 64

// refuseBodyWhereNone is an API middleware answering 422 when an operation
// without a request body receives one that is neither empty nor the empty
// JSON object {}. The body is never echoed.
func refuseBodyWhereNone(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		if ctx.Operation().RequestBody != nil {
			next(ctx)
			return
		}
		r := ctx.BodyReader()
		if r == nil || noBodyAllowed(r) {
			next(ctx)
			return
		}
		huma.WriteErr(api, ctx, http.StatusUnprocessableEntity, "",
			&huma.ErrorDetail{Location: "body", Message: "this route takes no body; send the request without one (or with an empty JSON object {})"})
	}
}

// noBodyAllowed reports whether r holds nothing but JSON whitespace (RFC
// 8259 §2: space, tab, line feed, carriage return) or one empty object {}
// in such whitespace. It reads at most maxNoBodyPeek+1 bytes.
func noBodyAllowed(r io.Reader) bool {
	b, err := io.ReadAll(io.LimitReader(r, maxNoBodyPeek+1))
	if err != nil || len(b) > maxNoBodyPeek {
		return false
	}
	b = bytes.Trim(b, " \t\r\n")
	if len(b) == 0 {
		return true
	}
	if b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	return len(bytes.Trim(b[1:len(b)-1], " \t\r\n")) == 0
}
