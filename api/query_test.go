package api

import (
	"net/http"
	"testing"
)

// TestUnknownQueryParameterRefused: a query parameter the operation does
// not declare is a 422 naming it and the parameters the route takes
// (api/query.go), never an answer that ignored it; declared parameters
// still work.
func TestUnknownQueryParameterRefused(t *testing.T) {
	s := newTestServer(t, serverOptions{}, piTree("local-basic.jsonl"))
	const id = "019f3776-3d33-70c6-baa2-5155ff71613c"
	for _, tc := range []struct{ method, path, detail string }{
		{http.MethodGet, "/v1/sessions/" + id + "/branch?leaf=350a86a9",
			"Invalid request: query.leaf: unknown query parameter; this route takes leaf_id, tail."},
		{http.MethodGet, "/v1/sessions?limit=5&bogus=1",
			"Invalid request: query.bogus: unknown query parameter; this route takes no query parameters; query.limit: unknown query parameter; this route takes no query parameters."},
		{http.MethodPost, "/v1/index/rebuild?force=1",
			"Invalid request: query.force: unknown query parameter; this route takes no query parameters."},
	} {
		r := s.request(tc.method, tc.path, nil, nil)
		var p struct {
			Detail string `json:"detail"`
			Code   string `json:"code"`
		}
		r.decode(t, &p)
		if r.Status != http.StatusUnprocessableEntity || p.Detail != tc.detail || p.Code != "invalid" {
			t.Errorf("%s %s: %d %s, want 422 code invalid with detail %q", tc.method, tc.path, r.Status, r.Body, tc.detail)
		}
	}
	if r := s.get("/v1/sessions/" + id + "/branch?leaf_id=350a86a9&tail=1"); r.Status != http.StatusOK {
		t.Errorf("declared parameters: %d %s, want 200", r.Status, r.Body)
	}
}
