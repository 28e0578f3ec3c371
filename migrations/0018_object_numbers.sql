-- Every VIP and member has a number, which the cookies of its flows
-- carry: given by the store at creation, so that every sdnlb process and
-- every node of a cluster names the object alike on the switches.
-- object_numbers holds, per kind, the last number given: the next is one
-- more, even after the object that had the largest is deleted, so that no
-- number names two objects (a late flow-removed of a deleted object finds
-- nothing). Numbers are below 2^24, the width a cookie gives them; 0 is
-- no number. The rows already stored are numbered in id order.
ALTER TABLE vips ADD COLUMN num INTEGER NOT NULL DEFAULT 0;
ALTER TABLE members ADD COLUMN num INTEGER NOT NULL DEFAULT 0;
UPDATE vips SET num = r.n FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS n FROM vips) AS r WHERE r.id = vips.id;
UPDATE members SET num = r.n FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS n FROM members) AS r WHERE r.id = members.id;
CREATE UNIQUE INDEX vips_num ON vips (num);
CREATE UNIQUE INDEX members_num ON members (num);

CREATE TABLE object_numbers (
	kind TEXT PRIMARY KEY, -- 'vip' or 'member'
	last BIGINT NOT NULL
);
INSERT INTO object_numbers (kind, last) SELECT 'vip', COUNT(*) FROM vips;
INSERT INTO object_numbers (kind, last) SELECT 'member', COUNT(*) FROM members;
