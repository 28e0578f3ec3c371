-- How the data path serves a pool: dispatch SWITCH (the switch picks the
-- member from a select group or hash flows) or CONTROLLER (per-connection
-- packet-in); forwarding NAT or DSR (only the destination MAC rewritten).
-- New pools default to SWITCH and NAT. Pools stored before this file were
-- served per connection by the controller, so they keep that: CONTROLLER.
ALTER TABLE pools ADD COLUMN dispatch TEXT NOT NULL DEFAULT 'SWITCH';
ALTER TABLE pools ADD COLUMN forwarding TEXT NOT NULL DEFAULT 'NAT';
UPDATE pools SET dispatch = 'CONTROLLER';

-- A DSR pool's members must use port 0 (the VIP's) or the VIP's port. The
-- store asks for a member on any other port on every write that could
-- break that; with this index the answer is two range probes however big
-- the pool. It is partial so that the VIP status query keeps
-- members_in_rotation. The condition must stay the one in lbstore's
-- findMemberOffPort.
CREATE INDEX members_pool_port ON members (pool_id, port) WHERE port <> 0;
