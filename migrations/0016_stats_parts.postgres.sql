-- The cluster's traffic counters (lbstore's RecordStats). Each sdnlb
-- process records its part, what its controller counted, every second
-- under an id it draws at start; every node reads the parts and sums
-- them. Times are in microseconds since the Unix epoch, by the database
-- clock; counters are BIGINT (uint64 in Go, below 2^63). Ids are in the
-- "C" collation, as in 0001, so they compare with the configuration's.
--
-- A part's recorded_at is when its process last recorded it. The leader
-- absorbs a part not recorded for a while into its own: it adds the
-- part's counters to its part's rows, deletes the part's rows and keeps
-- the part's row as a tombstone (absorbed, recorded_at then the time of
-- absorption), so that its process, should it come back, cannot record
-- the id again. Tombstones go after a day.
CREATE TABLE stats_parts (
	id          TEXT COLLATE "C" PRIMARY KEY,
	node_id     TEXT COLLATE "C" NOT NULL,
	recorded_at BIGINT NOT NULL,
	absorbed    BOOLEAN NOT NULL DEFAULT FALSE
);

-- Each part's counters of each member and each VIP. A record rewrites
-- only the rows that changed.
CREATE TABLE stats_members (
	part_id     TEXT COLLATE "C" NOT NULL REFERENCES stats_parts (id) ON DELETE CASCADE,
	member_id   TEXT COLLATE "C" NOT NULL,
	connections BIGINT NOT NULL,
	packets_in  BIGINT NOT NULL,
	packets_out BIGINT NOT NULL,
	bytes_in    BIGINT NOT NULL,
	bytes_out   BIGINT NOT NULL,
	opened      BIGINT NOT NULL,
	closed      BIGINT NOT NULL,
	active      BIGINT NOT NULL,
	PRIMARY KEY (part_id, member_id)
);

CREATE TABLE stats_vips (
	part_id TEXT COLLATE "C" NOT NULL REFERENCES stats_parts (id) ON DELETE CASCADE,
	vip_id  TEXT COLLATE "C" NOT NULL,
	refused BIGINT NOT NULL,
	active  BIGINT NOT NULL,
	PRIMARY KEY (part_id, vip_id)
);

-- What each switch's rows had counted, per member, when its master last
-- read them: part_id is the part that wrote them, generation the OpenFlow
-- role generation it mastered the switch under (a smaller one never
-- replaces a larger), released whether that part has since stopped
-- listing the switch, recorded_at when they were last written. They stay
-- when their part is absorbed: the switch's next master counts only
-- beyond them.
CREATE TABLE stats_switches (
	dpid        TEXT COLLATE "C" PRIMARY KEY,
	part_id     TEXT COLLATE "C" NOT NULL,
	generation  BIGINT NOT NULL,
	released    BOOLEAN NOT NULL DEFAULT FALSE,
	recorded_at BIGINT NOT NULL
);

CREATE TABLE stats_switch_members (
	dpid        TEXT COLLATE "C" NOT NULL REFERENCES stats_switches (dpid),
	member_id   TEXT COLLATE "C" NOT NULL,
	packets_in  BIGINT NOT NULL,
	packets_out BIGINT NOT NULL,
	bytes_in    BIGINT NOT NULL,
	bytes_out   BIGINT NOT NULL,
	opened      BIGINT NOT NULL,
	closed      BIGINT NOT NULL,
	PRIMARY KEY (dpid, member_id)
);
