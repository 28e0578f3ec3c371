-- Nothing to store: on SQLite the change feed lives in the process, and
-- the write lock is SQLite's own (see 0005_feed.postgres.sql).
SELECT 1;
