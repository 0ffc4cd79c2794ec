package openapi

import (
	"bytes"
	"testing"

	"contextd/api"
)

// TestSpecIsCurrent compares the committed documents with the ones the
// code generates. Regenerate with:
// go run -tags sqlite_fts5 ./cmd/contextd openapi > openapi/openapi.yaml
// go run -tags sqlite_fts5 ./cmd/contextd openapi --openapi-version 3.0 > openapi/openapi-3.0.yaml
func TestSpecIsCurrent(t *testing.T) {
	got, err := api.SpecYAML()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, YAML) {
		t.Error("openapi/openapi.yaml is stale: run `go run -tags sqlite_fts5 ./cmd/contextd openapi > openapi/openapi.yaml`")
	}
	got30, err := api.Spec30YAML()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got30, YAML30) {
		t.Error("openapi/openapi-3.0.yaml is stale: run `go run -tags sqlite_fts5 ./cmd/contextd openapi --openapi-version 3.0 > openapi/openapi-3.0.yaml`")
	}
	for _, route := range []string{"/alpha/history/v2/list_items:", "/alpha/notes/v2/write_file:", "/v1/sessions/{session_id}:", "/v1/index/rebuild:"} {
		if !bytes.Contains(YAML, []byte(route)) {
			t.Errorf("spec lacks %s", route)
		}
	}
}
