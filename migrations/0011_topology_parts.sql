-- Every node records its part of the topology (what its controller
-- discovered) every second; seen_at is in microseconds since the Unix
-- epoch, by the database clock. A part not recorded again within a few
-- seconds is of a node gone.
CREATE TABLE topology_parts (
	node_id TEXT PRIMARY KEY,
	seen_at BIGINT NOT NULL
);

-- The items of each part: its switches, links, hosts, port loads and
-- paths, each by kind and its id within the kind, and body the item as
-- JSON. A record rewrites only the items that changed; a part's items go
-- with it.
CREATE TABLE topology_items (
	node_id TEXT NOT NULL REFERENCES topology_parts (node_id) ON DELETE CASCADE,
	kind    TEXT NOT NULL,
	id      TEXT NOT NULL,
	body    TEXT NOT NULL,
	PRIMARY KEY (node_id, kind, id)
);
