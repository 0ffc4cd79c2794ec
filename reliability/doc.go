// Package reliability holds contextd's end-to-end reliability tests. It has
// no code of its own: every test drives a real contextd stack wired as
// cmd/contextd wires it (store index and state database, coordinator with
// the Tree-mode archive hooks, the api router with the rollover routes)
// behind an httptest server on 127.0.0.1, over copies of the fixture
// session files in a temporary directory. Tests that use files written by
// Pi itself need the pinned harness (npm ci --prefix e2e).
//
// TestRebuildEquivalence (rebuild_test.go), docs/design.md §6 invariant 1:
// every fixture of testdata/pi-sessions and testdata/pi-tree plus the
// files e2e.GenSessions writes with Pi's SessionManager are served; a
// table of read requests (GET /v1/sessions, GET /v1/sessions/{id}, …/branch
// at the default and a mid-branch leaf, POST …/context, POST …/windows with
// its fresh UUIDs masked, the four history operations with several
// argument sets and read_item of the first, middle and last items of each
// window, every read notes operation and thread_hint, plus error cases) is
// answered before and after POST /v1/index/rebuild, and again after the
// service is stopped, its index directory deleted and a new service
// started on the same state directory: every status and body, ids
// included, must be identical. Registrations made before (local, tree,
// off, another agent) must survive both. The table is built by probeSets;
// more routes (Tree rollovers, compaction) are one more probeSet.
//
// TestIncrementalEqualsColdEveryFixture (incremental_test.go), invariant
// 3: every fixture (and every GenSessions file), with a CRLF-terminated
// multi-byte line appended, is written in random chunks with a sync after
// each; chunk ends deliberately fall inside a line, inside 2-, 3- and
// 4-byte UTF-8 sequences, before and after the header's newline and between
// "\r" and "\n". After every chunk exactly the complete lines are indexed;
// at the end the whole store view (entries, item metadata, item texts,
// skip statistics and problems, state, sizes) equals a cold index of the
// file, and again after the incremental index is reopened from disk.
//
// TestFilesChangingUnderneath (changes_test.go): a session file that is
// truncated (at a line end, inside a line then completed, inside the
// header), emptied, deleted, replaced by a symlink out of the sessions
// directory, holding invalid UTF-8 inside a message, rewritten as UTF-16,
// header-only, or migrated from v1 to v3 in place by Pi's own
// SessionManager. Each case runs for an unregistered session (found by
// header id) and a registered one. GET /v1/sessions/{id} and GET
// /v1/sessions report a clear state with a problem sentence (or, for an
// unregistered file without a header, the id is unknown: 404); no route
// answers 500; routes that need the content answer 410 with a sentence, or
// serve the valid part, equal to a cold index of the same bytes.
//
// TestIndexedBytesChanged (inplace_test.go): bytes already indexed change
// under the same inode: a same-size rewrite (also with the old mtime
// restored, and while contextd was stopped), a line damaged in place, a
// file shrunk and grown again past its old size between two requests, a
// torn append followed by more appends, and (no change) a plain append.
// Each is re-indexed whole when its indexed bytes changed (counted as
// contextd_index_reindex_total{cause="changed_in_place"}), never
// otherwise; the answers equal a cold index of the new bytes and are the
// same after POST /v1/index/rebuild.
//
// TestConcurrentLoad (load_test.go): 32 clients run history, notes and
// /context requests for about 8 s against two sessions (copies of
// local-basic.jsonl and tree-multi.jsonl) while a writer appends valid Pi
// entries (messages, tool calls and results, note appends, window
// boundaries, some lines in two pieces). Every answer must be 2xx and match
// one state of the file: list_windows and list_files_by_prefix byte for
// byte against the answers computed from a cold in-memory parse of each
// line-boundary prefix, /context's leaf and boundary, the newest items and
// the search hits likewise; answers about the first window never change.
// The request count and p50/p99 latency are logged and written to stderr.
//
// The crash tests (SIGKILL mid-indexing, corrupt or newer index.db) live in
// cmd/contextd/crash_test.go: they need the real binary's main.
package reliability
