-- The four objects of the data model and the pool-monitor association.
-- Timestamps are UTC text with nanoseconds (fixed width, so they sort).
-- Derived fields (VIP status and pool_id, member status) are not stored.

CREATE TABLE vips (
	id                  TEXT PRIMARY KEY,
	name                TEXT NOT NULL DEFAULT '',
	description         TEXT NOT NULL DEFAULT '',
	address             TEXT NOT NULL,
	protocol            TEXT NOT NULL,
	port                INTEGER NOT NULL,
	connection_limit    INTEGER NOT NULL,
	persistence_type    TEXT,              -- NULL: no session persistence
	persistence_timeout INTEGER NOT NULL DEFAULT 0,
	admin_state_up      INTEGER NOT NULL,
	mac                 TEXT NOT NULL,
	created_at          TEXT NOT NULL,
	updated_at          TEXT NOT NULL
);

-- One VIP per listener. ICMP has no ports, so any two ICMP VIPs on one
-- address collide whatever their port field says.
CREATE UNIQUE INDEX vips_listener ON vips (address, protocol, CASE WHEN protocol = 'ICMP' THEN 0 ELSE port END);

CREATE TABLE pools (
	id             TEXT PRIMARY KEY,
	name           TEXT NOT NULL DEFAULT '',
	description    TEXT NOT NULL DEFAULT '',
	vip_id         TEXT UNIQUE REFERENCES vips (id), -- NULL while it serves no VIP; at most one pool per VIP
	lb_method      TEXT NOT NULL,
	protocol       TEXT NOT NULL,
	admin_state_up INTEGER NOT NULL,
	created_at     TEXT NOT NULL,
	updated_at     TEXT NOT NULL
);

CREATE TABLE members (
	id                TEXT PRIMARY KEY,
	pool_id           TEXT NOT NULL REFERENCES pools (id),
	address           TEXT NOT NULL,
	port              INTEGER NOT NULL,
	weight            INTEGER NOT NULL,
	admin_state_up    INTEGER NOT NULL,
	health_status     TEXT NOT NULL,
	health_since      TEXT NOT NULL,
	health_last_check TEXT,                -- NULL: never probed
	health_latency_ms REAL NOT NULL DEFAULT 0,
	health_error      TEXT NOT NULL DEFAULT '',
	created_at        TEXT NOT NULL,
	updated_at        TEXT NOT NULL,
	UNIQUE (pool_id, address, port)
);

CREATE TABLE monitors (
	id             TEXT PRIMARY KEY,
	name           TEXT NOT NULL DEFAULT '',
	type           TEXT NOT NULL,
	delay          REAL NOT NULL,
	timeout        REAL NOT NULL,
	max_retries    INTEGER NOT NULL,
	rise           INTEGER NOT NULL,
	http_method    TEXT NOT NULL DEFAULT '',
	url_path       TEXT NOT NULL DEFAULT '',
	expected_codes TEXT NOT NULL DEFAULT '',
	tls_verify     INTEGER NOT NULL DEFAULT 0,
	admin_state_up INTEGER NOT NULL,
	created_at     TEXT NOT NULL,
	updated_at     TEXT NOT NULL
);

CREATE TABLE pool_monitors (
	pool_id    TEXT NOT NULL REFERENCES pools (id),
	monitor_id TEXT NOT NULL REFERENCES monitors (id),
	PRIMARY KEY (pool_id, monitor_id)
);
