-- What a CONSISTENT_HASH pool hashes: CONNECTION (the connection, as
-- before) or CLIENT (the client's address).
ALTER TABLE pools ADD COLUMN hash_key TEXT NOT NULL DEFAULT 'CONNECTION';
