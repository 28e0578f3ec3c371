-- A health event carries the member's new status, so that followers apply
-- it without reloading the whole configuration.
ALTER TABLE events ADD COLUMN status TEXT NOT NULL DEFAULT '';
