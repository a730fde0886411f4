-- Early pings on a store several replicas share (early.go): each names the
-- replica that took it, so that a starting replica records its own before
-- it is ready while the leader records the others'; and the deadline loop
-- leaves alone a check whose early pings wait (early_pings_check).
--
-- whole_replicas: each replica that has read every Check says so here
-- every few seconds. A starting replica takes pings before it has read
-- its own only while no other one does (Store.WholeReplica).

-- +goose Up
ALTER TABLE early_pings ADD COLUMN replica TEXT NOT NULL DEFAULT '';
CREATE INDEX early_pings_check ON early_pings (check_uid);
CREATE TABLE whole_replicas (
    id   TEXT PRIMARY KEY,      -- random, chosen by the replica when its store opened
    seen BIGINT NOT NULL        -- microseconds since the Unix epoch
);

-- +goose Down
DROP TABLE whole_replicas;
DROP INDEX early_pings_check;
ALTER TABLE early_pings DROP COLUMN replica;
