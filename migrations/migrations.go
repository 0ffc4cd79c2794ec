// Package migrations holds contextd's numbered SQL migrations, embedded in
// the binary. There are two sets, applied to two SQLite files:
//
//   - index/: the derived index (sessions, entries, tool calls). Everything
//     in it can be rebuilt from the session JSONL files, so a file whose
//     schema is newer than the binary, or corrupt, is deleted and rebuilt.
//   - state/: contextd's own state (session registrations, rollovers). It
//     cannot be derived from JSONL and survives every rebuild.
//
// File names are NNNN_name.sql; a file's number is the schema version it
// produces (PRAGMA user_version), and files apply in order, each in one
// transaction.
package migrations

import "embed"

// Index is the migration set of the derived index database.
//
//go:embed index/*.sql
var Index embed.FS

// State is the migration set of the state database.
//
//go:embed state/*.sql
var State embed.FS
