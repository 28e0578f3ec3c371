-- Whether a node that speaks BGP announces the VIP's address: every VIP
-- is, unless it says otherwise.
ALTER TABLE vips ADD COLUMN announce BOOLEAN NOT NULL DEFAULT TRUE;
