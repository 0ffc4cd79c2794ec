-- Pi 1.x entries (context_edit, compaction systemMessage) carry fields that
-- earlier indexes did not keep: forget every indexed row so that each
-- session is re-indexed from its JSONL on its next sync (the index is
-- derived; load() truncates the item-text files to text_bytes = 0).
DELETE FROM entries;
DELETE FROM tool_calls;
UPDATE sessions SET session_id='', header='{}', not_pi=0, bytes_indexed=0, first_line=x'', next_line=1, next_seq=0, last_v1_id='', text_bytes=0, stats='{}';
