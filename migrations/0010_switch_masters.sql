-- Every node records, with each heartbeat, the switches it has an OpenFlow
-- connection to; seen_at is in microseconds since the Unix epoch, by the
-- database clock. A row not refreshed within a lease is a node gone.
CREATE TABLE cluster_switches (
	node_id TEXT NOT NULL,
	dpid    TEXT NOT NULL,
	seen_at BIGINT NOT NULL,
	PRIMARY KEY (node_id, dpid)
);

-- The leader's assignment: which node is the OpenFlow MASTER of each
-- switch, and the role generation id that every node asks the switch with.
-- A switch no live node is connected to has no row.
CREATE TABLE switch_masters (
	dpid       TEXT PRIMARY KEY,
	node_id    TEXT NOT NULL,
	generation BIGINT NOT NULL
);
