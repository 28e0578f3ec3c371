-- A VIP of protocol ANY serves every port, as ICMP does: its port field
-- takes no part in the listener, so two ANY VIPs on one address collide
-- whatever their ports.
DROP INDEX vips_listener;
CREATE UNIQUE INDEX vips_listener ON vips (address, protocol, (CASE WHEN protocol IN ('ICMP', 'ANY') THEN 0 ELSE port END));

-- A pool whose method no client chose balances by the default and says so
-- where Floodlight would (lbMethod "Invalid Method"). Pools stored before
-- this file show the method they have.
ALTER TABLE pools ADD COLUMN lb_method_unset BOOLEAN NOT NULL DEFAULT FALSE;
