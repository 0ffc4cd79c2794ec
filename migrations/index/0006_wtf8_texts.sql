-- Text bodies keep a lone surrogate escape (\ud83d) as WTF-8 instead of
-- U+FFFD (session/wtf8.go): entries indexed before hold U+FFFD in their
-- item texts and search filters. Every session is re-indexed from its
-- JSONL on its next sync (the index is derived; load() finds
-- text_bytes = 0, removes the frame files N.s2/N.s2x and the block count
-- N.blkn and truncates the filters N.blk of the generation in use, and
-- removes the files of every other generation, store/textfiles.go). Every
-- derived column of sessions (0001, 0003, 0005) is reset; path, dev and
-- ino name the file and are set again by the next sync; state.db is not
-- touched.
DELETE FROM entry_blocks;
DELETE FROM tool_calls;
UPDATE sessions SET session_id='', header='{}', not_pi=0, bytes_indexed=0, first_line=x'', next_line=1, next_seq=0, last_v1_id='', text_bytes=0, text_tail=x'', stats='{}', indexed_crc=0, tail_crc=0, mtime_ns=0, ctime_ns=0;
