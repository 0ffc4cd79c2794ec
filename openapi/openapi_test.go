package openapi

import (
	"bytes"
	"testing"

	"contextd/api"
)

// TestSpecIsCurrent compares the committed openapi.yaml with the document
// the code generates. Regenerate with:
// go run -tags sqlite_fts5 ./cmd/contextd openapi > openapi/openapi.yaml
func TestSpecIsCurrent(t *testing.T) {
	got, err := api.SpecYAML()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, YAML) {
		t.Fatal("openapi/openapi.yaml is stale: run `go run -tags sqlite_fts5 ./cmd/contextd openapi > openapi/openapi.yaml`")
	}
	for _, route := range []string{"/alpha/history/v2/list_items:", "/alpha/notes/v2/write_file:", "/v1/sessions/{session_id}:", "/v1/index/rebuild:"} {
		if !bytes.Contains(YAML, []byte(route)) {
			t.Errorf("spec lacks %s", route)
		}
	}
}
