//go:build !sqlite_fts5

package store

// contextd links SQLite with FTS5 available. Build, vet and test with the tag:
//
//	go build -tags sqlite_fts5 ./...
//
// This file only exists in builds without the tag, and refers to an undefined
// name so that the compiler error names the missing tag.
var _ = build_contextd_with_tags_sqlite_fts5
