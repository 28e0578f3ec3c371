-- A pool's slow start, in seconds (0: none); a member's capacity in
-- connections (0: no bound); an AGENT monitor's port (0 for the other
-- types).
ALTER TABLE pools ADD COLUMN slow_start REAL NOT NULL DEFAULT 0;
ALTER TABLE members ADD COLUMN capacity INTEGER NOT NULL DEFAULT 0;
ALTER TABLE monitors ADD COLUMN port INTEGER NOT NULL DEFAULT 0;

-- What the member's agent last said, beside its health: the available
-- capacity in percent and when it was said, NULL while no agent answered,
-- and whether it asked for a drain.
ALTER TABLE members ADD COLUMN health_agent_available INTEGER;
ALTER TABLE members ADD COLUMN health_agent_drain INTEGER NOT NULL DEFAULT 0;
ALTER TABLE members ADD COLUMN health_agent_at TEXT;

-- A member its agent drains is out of rotation (see 0003): the condition
-- must stay word for word the one in lbstore's VIP select.
DROP INDEX members_in_rotation;
CREATE INDEX members_in_rotation ON members (pool_id)
	WHERE admin_state_up AND weight > 0 AND NOT health_agent_drain AND health_status IN ('UP', 'NO_MONITOR');
