// Package archive is Tree mode's archive index (docs/design.md §3, §4;
// docs/codex-contract.md "Notes entries"): manifest validation,
// bounded cycle-safe traversal, the archived windows of a branch and the
// signatures of the branch summaries Tree mode hides from the model.
//
// The index is built from every entry of a session's tree, not only the
// active branch (Build). Each `codex-context-tree-archive` custom entry is a
// manifest; it is valid only when every rule of validate holds, and an
// invalid manifest is unavailable: it never adds a window, never hides a
// summary and never widens a traversal. Per-branch readings (Index.Branch)
// then take the valid manifests whose manifest entry and summary are both
// on the branch.
//
// The index is derived data: Archives caches one index per session file
// and tree length, but every answer can be rebuilt from the JSONL alone and
// the cache is never the authority (docs/design.md §4: "An in-memory set may
// cache the index but cannot be authoritative").
//
// archive is a library over session, store and history: it knows nothing
// of the coordinator, which imports it and reads Tree mode through it.
package archive
