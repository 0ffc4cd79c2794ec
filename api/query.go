package api

// Unknown query parameters. huma checks the query parameters an operation
// declares and ignores every other one, while a body field it does not
// declare is refused (additionalProperties: false). A misspelt parameter
// (GET /v1/sessions/{id}/branch?leaf=… for leaf_id) then answered 200 for
// the session's last entry as if nothing had been asked. Every operation
// now refuses a query parameter its OpenAPI entry does not list, with 422
// naming the parameter and the ones the route takes (docs/api.md "Errors").

import (
	"net/http"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// maxUnknownQuery bounds the parameters named in one refusal (the first
// ones in byte order).
const maxUnknownQuery = 5

// refuseUnknownQuery is an API middleware answering 422 when the request
// URL holds a query parameter the operation does not declare. Parameter
// names are clipped (clip) and values never echoed.
func refuseUnknownQuery(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		var declared []string
		for _, p := range ctx.Operation().Parameters {
			if p.In == "query" {
				declared = append(declared, p.Name)
			}
		}
		var unknown []string
		u := ctx.URL()
		for name := range u.Query() {
			if !slices.Contains(declared, name) {
				unknown = append(unknown, name)
			}
		}
		if len(unknown) == 0 {
			next(ctx)
			return
		}
		slices.Sort(unknown)
		takes := "this route takes no query parameters"
		if len(declared) > 0 {
			takes = "this route takes " + strings.Join(declared, ", ")
		}
		errs := make([]error, 0, len(unknown))
		for i, name := range unknown {
			if i == maxUnknownQuery {
				break
			}
			errs = append(errs, &huma.ErrorDetail{Location: "query." + clip(name), Message: "unknown query parameter; " + takes})
		}
		huma.WriteErr(api, ctx, http.StatusUnprocessableEntity, "", errs...)
	}
}
