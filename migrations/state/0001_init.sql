-- contextd's own state: not derivable from JSONL, kept across index rebuilds.
CREATE TABLE registrations (
    session_id    TEXT PRIMARY KEY,
    session_file  TEXT NOT NULL,
    mode          TEXT NOT NULL CHECK (mode IN ('off','local','tree','remote')),
    agent_name    TEXT NOT NULL,
    registered_at TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);

-- Rollovers (docs/design.md §5.3): one row per new_context rollover, kept after
-- it finishes. Times are RFC 3339 UTC with nanoseconds; '' = not yet.
CREATE TABLE rollovers (
    rollover_id        TEXT PRIMARY KEY,
    session_id         TEXT NOT NULL,
    session_file       TEXT NOT NULL,  -- resolved session file at the tool phase
    mode               TEXT NOT NULL CHECK (mode IN ('local','tree')),
    state              TEXT NOT NULL CHECK (state IN ('pending','settled','committed','completed','aborted')),
    boundary_entry_id  TEXT NOT NULL,  -- the current boundary at the tool phase
    boundary_parent_id TEXT NOT NULL,  -- its parentId ('' = root)
    window_identity    TEXT NOT NULL,  -- window identity JSON of that boundary
    leaf_at_request    TEXT NOT NULL,
    leaf_at_settle     TEXT NOT NULL DEFAULT '',
    summary_entry_id   TEXT NOT NULL DEFAULT '',
    notes              TEXT NOT NULL DEFAULT '', -- note snapshot data JSON materialized at settle
    recovery           TEXT NOT NULL DEFAULT '', -- thread-hint recovery JSON of the closing window, at settle
    plan               TEXT NOT NULL DEFAULT '', -- commit answer JSON (entries to append)
    reason             TEXT NOT NULL DEFAULT '', -- why it was aborted
    requested_at       TEXT NOT NULL,
    settled_at         TEXT NOT NULL DEFAULT '',
    committed_at       TEXT NOT NULL DEFAULT '',
    finished_at        TEXT NOT NULL DEFAULT ''
);
-- One open rollover per session.
CREATE UNIQUE INDEX rollovers_open ON rollovers(session_id) WHERE state IN ('pending','settled','committed');
CREATE INDEX rollovers_session ON rollovers(session_id, requested_at);
