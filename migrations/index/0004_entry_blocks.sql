-- Entries are stored packed, one entry block per ingest batch: the
-- entry_blocks table holds the entry blocks (store/entryblock.go describes
-- the record format): one INSERT per batch instead of one per 64 entries
-- (docs/benchmarks.md). The entries table goes; every session is re-indexed
-- from its JSONL on its next sync (the index is derived; load() truncates
-- the item-text files to text_bytes = 0).
CREATE TABLE entry_blocks (
    file_id   INTEGER NOT NULL REFERENCES sessions(file_id) ON DELETE CASCADE,
    first_seq INTEGER NOT NULL,  -- Seq of the first entry in data
    n         INTEGER NOT NULL,  -- entries in data
    data      BLOB NOT NULL,     -- n entry records
    PRIMARY KEY (file_id, first_seq)
);
DROP TABLE entries;
DELETE FROM tool_calls;
UPDATE sessions SET session_id='', header='{}', not_pi=0, bytes_indexed=0, first_line=x'', next_line=1, next_seq=0, last_v1_id='', text_bytes=0, stats='{}', indexed_crc=0, tail_crc=0, mtime_ns=0, ctime_ns=0;
