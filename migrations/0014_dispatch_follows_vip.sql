-- A pool whose VIP has session persistence or a connection limit is
-- dispatched by the controller, which alone keeps them; the pool now says
-- so instead of reading SWITCH.
UPDATE pools SET dispatch = 'CONTROLLER'
WHERE dispatch = 'SWITCH'
  AND vip_id IN (SELECT id FROM vips WHERE persistence_type IS NOT NULL OR connection_limit > 0);
