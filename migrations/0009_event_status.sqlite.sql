-- Nothing to store: on SQLite the change feed lives in the process (see
-- 0009_event_status.postgres.sql).
SELECT 1;
