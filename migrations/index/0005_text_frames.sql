-- Item texts are stored in s2-compressed frames of 16 KiB (store/textstore.go)
-- with the raw bytes after the last complete frame kept here, committed with
-- text_bytes; the search frame filters index 12- and 16-grams (store/framefilter.go). Every
-- session is re-indexed from its JSONL on its next sync (the index is
-- derived; load() removes the old raw texts/N.txt files).
ALTER TABLE sessions ADD COLUMN text_tail BLOB NOT NULL DEFAULT x'';
DELETE FROM entry_blocks;
DELETE FROM tool_calls;
UPDATE sessions SET session_id='', header='{}', not_pi=0, bytes_indexed=0, first_line=x'', next_line=1, next_seq=0, last_v1_id='', text_bytes=0, text_tail=x'', stats='{}', indexed_crc=0, tail_crc=0, mtime_ns=0, ctime_ns=0;
