-- instance is a random token each sdnlb process draws at start: a node row
-- belongs to one process at a time, so that two processes given the same
-- node id cannot both act as that node (lbstore's RecordNode).
ALTER TABLE cluster_nodes ADD COLUMN instance TEXT NOT NULL DEFAULT '';
