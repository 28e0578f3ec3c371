-- The length of the prefix an IPv6 client of a pool is known by, for
-- SOURCE_IP balancing and persistence (128: the address).
ALTER TABLE pools ADD COLUMN client_ipv6_prefix INTEGER NOT NULL DEFAULT 128;
