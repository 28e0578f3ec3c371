-- Leader election (lbstore's TakeLease). The one row of cluster_lease says
-- which node leads and until when, by the database clock: expires_at is in
-- microseconds since the Unix epoch, so that the conditional statement that
-- takes or renews it compares numbers. generation counts the terms: a
-- takeover increments it, and the leader uses it as the OpenFlow role
-- generation id. holder '' with expires_at 0 is "nobody, expired".
CREATE TABLE cluster_lease (
	id         INTEGER PRIMARY KEY CHECK (id = 1),
	holder     TEXT COLLATE "C" NOT NULL,
	generation BIGINT NOT NULL,
	expires_at BIGINT NOT NULL
);
INSERT INTO cluster_lease (id, holder, generation, expires_at) VALUES (1, '', 0, 0);

-- Every node records itself with each attempt; last_seen is in
-- microseconds since the Unix epoch, by the database clock.
CREATE TABLE cluster_nodes (
	id            TEXT COLLATE "C" PRIMARY KEY,
	api_addr      TEXT NOT NULL,
	openflow_addr TEXT NOT NULL,
	last_seen     BIGINT NOT NULL
);
