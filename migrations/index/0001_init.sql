-- Derived index: rebuilt from the session JSONL files at any time.
CREATE TABLE sessions (
    file_id        INTEGER PRIMARY KEY,
    path           TEXT NOT NULL UNIQUE,   -- absolute path after resolving symlinks
    session_id     TEXT NOT NULL DEFAULT '',
    header         TEXT NOT NULL DEFAULT '{}', -- session.Header as JSON
    not_pi         INTEGER NOT NULL DEFAULT 0,
    bytes_indexed  INTEGER NOT NULL DEFAULT 0, -- offset after the last complete line indexed
    first_line     BLOB NOT NULL DEFAULT x'', -- sha256 of the first line (rewrite detection)
    dev            INTEGER NOT NULL DEFAULT 0,
    ino            INTEGER NOT NULL DEFAULT 0,
    next_line      INTEGER NOT NULL DEFAULT 1,
    next_seq       INTEGER NOT NULL DEFAULT 0,
    last_v1_id     TEXT NOT NULL DEFAULT '',
    text_bytes     INTEGER NOT NULL DEFAULT 0, -- committed size of the item text file
    stats          TEXT NOT NULL DEFAULT '{}'  -- session.Stats as JSON (skipped lines by reason)
);
CREATE INDEX sessions_by_session_id ON sessions(session_id);

CREATE TABLE entries (
    file_id     INTEGER NOT NULL REFERENCES sessions(file_id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    line        INTEGER NOT NULL,
    off         INTEGER NOT NULL,
    len         INTEGER NOT NULL,
    id          TEXT NOT NULL,
    parent_id   TEXT NOT NULL,
    type        TEXT NOT NULL,
    ts          TEXT NOT NULL,
    custom_type TEXT NOT NULL,
    meta        TEXT NOT NULL,   -- remaining session.Entry fields as JSON ({} when none)
    item        TEXT,            -- history item metadata as JSON, NULL when the entry is not an item
    text_off    INTEGER NOT NULL DEFAULT 0,
    text_len    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (file_id, seq)
) WITHOUT ROWID;

CREATE TABLE tool_calls (
    file_id   INTEGER NOT NULL REFERENCES sessions(file_id) ON DELETE CASCADE,
    call_id   TEXT NOT NULL,
    name      TEXT NOT NULL,
    namespace TEXT NOT NULL,
    action    TEXT NOT NULL,
    PRIMARY KEY (file_id, call_id)
) WITHOUT ROWID;
