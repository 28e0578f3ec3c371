-- A VIP is ACTIVE when a member of its pool is in rotation. Without this
-- index answering that for a pool of 100k members that are all DOWN scans
-- all of them on every VIP read; with it the answer is one index probe.
-- The condition must stay word for word the one in lbstore's VIP select.
CREATE INDEX members_in_rotation ON members (pool_id)
	WHERE admin_state_up AND weight > 0 AND health_status IN ('UP', 'NO_MONITOR');
