-- contextd's own state: not derivable from JSONL, kept across index rebuilds.
CREATE TABLE registrations (
    session_id    TEXT PRIMARY KEY,
    session_file  TEXT NOT NULL,
    mode          TEXT NOT NULL CHECK (mode IN ('off','local','tree','remote')),
    agent_name    TEXT NOT NULL,
    registered_at TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);

CREATE TABLE rollovers (
    rollover_id       TEXT PRIMARY KEY,
    session_id        TEXT NOT NULL,
    mode              TEXT NOT NULL,
    state             TEXT NOT NULL,  -- pending, settled, committed, completed, aborted
    boundary_entry_id TEXT NOT NULL,
    window            TEXT NOT NULL,  -- window identity JSON
    leaf_at_request   TEXT NOT NULL,
    leaf_at_settle    TEXT NOT NULL DEFAULT '',
    summary_entry_id  TEXT NOT NULL DEFAULT '',
    notes             TEXT NOT NULL DEFAULT '', -- materialized note state JSON at settle
    plan              TEXT NOT NULL DEFAULT '', -- committed append plan JSON
    reason            TEXT NOT NULL DEFAULT '',
    requested_at      TEXT NOT NULL,
    settled_at        TEXT NOT NULL DEFAULT '',
    committed_at      TEXT NOT NULL DEFAULT '',
    finished_at       TEXT NOT NULL DEFAULT ''
);
-- One open rollover per session.
CREATE UNIQUE INDEX rollovers_open ON rollovers(session_id) WHERE state IN ('pending','settled','committed');
