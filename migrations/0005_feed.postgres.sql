-- The change feed across processes (lbstore's pgFeed). Every write
-- transaction first locks the one row of feed, so the writes of all
-- processes commit one at a time, numbers its events from last_seq, stores
-- them in events and moves last_seq, all before its commit. Processes read
-- the events after the last Seq they passed on, when notified and every
-- second. Only the most recent events are kept: a process that was away
-- longer resyncs.
CREATE TABLE feed (
	id       INTEGER PRIMARY KEY CHECK (id = 1),
	last_seq BIGINT NOT NULL
);
INSERT INTO feed (id, last_seq) VALUES (1, 0);

CREATE TABLE events (
	seq       BIGINT PRIMARY KEY,
	kind      TEXT NOT NULL, -- '' for a resync
	op        TEXT NOT NULL,
	object_id TEXT NOT NULL,
	at        TEXT NOT NULL
);
