// Package openapi holds contextd's generated OpenAPI 3.1 document,
// committed as openapi.yaml. Regenerate it with
//
//	go run -tags sqlite_fts5 ./cmd/contextd openapi > openapi/openapi.yaml
//
// TestSpecIsCurrent fails when the file is stale.
package openapi

import _ "embed"

// YAML is the committed OpenAPI document.
//
//go:embed openapi.yaml
var YAML []byte
