-- The four objects of the data model and the pool-monitor association, as
-- 0001_init.sqlite.sql with PostgreSQL's types: BOOLEAN flags, DOUBLE
-- PRECISION (PostgreSQL's REAL is single precision), and ids in the "C"
-- collation, so that they sort (and lists page) byte by byte as in SQLite
-- whatever the database's locale. Timestamps are UTC text with nanoseconds
-- (fixed width, so they sort), as in SQLite, so both read them alike.
-- Derived fields (VIP status and pool_id, member status) are not stored.

CREATE TABLE vips (
	id                  TEXT COLLATE "C" PRIMARY KEY,
	name                TEXT NOT NULL DEFAULT '',
	description         TEXT NOT NULL DEFAULT '',
	address             TEXT NOT NULL,
	protocol            TEXT NOT NULL,
	port                INTEGER NOT NULL,
	connection_limit    INTEGER NOT NULL,
	persistence_type    TEXT,              -- NULL: no session persistence
	persistence_timeout INTEGER NOT NULL DEFAULT 0,
	admin_state_up      BOOLEAN NOT NULL,
	mac                 TEXT NOT NULL,
	created_at          TEXT NOT NULL,
	updated_at          TEXT NOT NULL
);

-- One VIP per listener. ICMP has no ports, so any two ICMP VIPs on one
-- address collide whatever their port field says.
CREATE UNIQUE INDEX vips_listener ON vips (address, protocol, (CASE WHEN protocol = 'ICMP' THEN 0 ELSE port END));

CREATE TABLE pools (
	id             TEXT COLLATE "C" PRIMARY KEY,
	name           TEXT NOT NULL DEFAULT '',
	description    TEXT NOT NULL DEFAULT '',
	vip_id         TEXT COLLATE "C" UNIQUE REFERENCES vips (id), -- NULL while it serves no VIP; at most one pool per VIP
	lb_method      TEXT NOT NULL,
	protocol       TEXT NOT NULL,
	admin_state_up BOOLEAN NOT NULL,
	created_at     TEXT NOT NULL,
	updated_at     TEXT NOT NULL
);

CREATE TABLE members (
	id                TEXT COLLATE "C" PRIMARY KEY,
	pool_id           TEXT COLLATE "C" NOT NULL REFERENCES pools (id),
	address           TEXT NOT NULL,
	port              INTEGER NOT NULL,
	weight            INTEGER NOT NULL,
	admin_state_up    BOOLEAN NOT NULL,
	health_status     TEXT NOT NULL,
	health_since      TEXT NOT NULL,
	health_last_check TEXT,                -- NULL: never probed
	health_latency_ms DOUBLE PRECISION NOT NULL DEFAULT 0,
	health_error      TEXT NOT NULL DEFAULT '',
	created_at        TEXT NOT NULL,
	updated_at        TEXT NOT NULL,
	UNIQUE (pool_id, address, port)
);

CREATE TABLE monitors (
	id             TEXT COLLATE "C" PRIMARY KEY,
	name           TEXT NOT NULL DEFAULT '',
	type           TEXT NOT NULL,
	delay          DOUBLE PRECISION NOT NULL,
	timeout        DOUBLE PRECISION NOT NULL,
	max_retries    INTEGER NOT NULL,
	rise           INTEGER NOT NULL,
	http_method    TEXT NOT NULL DEFAULT '',
	url_path       TEXT NOT NULL DEFAULT '',
	expected_codes TEXT NOT NULL DEFAULT '',
	tls_verify     BOOLEAN NOT NULL DEFAULT FALSE,
	admin_state_up BOOLEAN NOT NULL,
	created_at     TEXT NOT NULL,
	updated_at     TEXT NOT NULL
);

CREATE TABLE pool_monitors (
	pool_id    TEXT COLLATE "C" NOT NULL REFERENCES pools (id),
	monitor_id TEXT COLLATE "C" NOT NULL REFERENCES monitors (id),
	PRIMARY KEY (pool_id, monitor_id)
);

-- SQLite's json_group_array, so that lbstore's queries read the same on
-- both databases: the JSON array of the values, '[]' for none.
CREATE AGGREGATE json_group_array (TEXT) (
	SFUNC = array_append,
	STYPE = TEXT[],
	INITCOND = '{}',
	FINALFUNC = array_to_json
);
