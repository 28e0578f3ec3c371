-- Lists page by id (keyset: id > after ORDER BY id), usually within one
-- pool or for one address; these indexes make such a page a range scan
-- even with 100k members.
CREATE INDEX members_pool_page ON members (pool_id, id);
CREATE INDEX members_address ON members (address, id);
CREATE INDEX vips_address ON vips (address, id);
CREATE INDEX pool_monitors_monitor ON pool_monitors (monitor_id, pool_id);
