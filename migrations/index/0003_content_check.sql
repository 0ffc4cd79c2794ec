-- Change detection for bytes already indexed (store/verify.go): the
-- CRC-32C of [0, bytes_indexed), the CRC-32C of its last 64 KiB (the tail
-- window) and the file's mtime and ctime (ns) when they were taken.
-- -1: unknown (a row of an older index); taken at the next sync.
ALTER TABLE sessions ADD COLUMN indexed_crc INTEGER NOT NULL DEFAULT -1;
ALTER TABLE sessions ADD COLUMN tail_crc INTEGER NOT NULL DEFAULT -1;
ALTER TABLE sessions ADD COLUMN mtime_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN ctime_ns INTEGER NOT NULL DEFAULT 0;
