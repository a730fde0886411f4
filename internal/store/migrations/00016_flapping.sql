-- A check that changes state faster than anyone can act on is flapping:
-- past a limit of notified flips within a window, its flips are recorded
-- but held, and the Channels are told once (flapping.go). The row keeps
-- the count: flap_count notified flips since flap_since, or, while the
-- check flaps, the time of its last flip in flap_since.

-- +goose Up
ALTER TABLE checks ADD COLUMN flap_since BIGINT;
ALTER TABLE checks ADD COLUMN flap_count INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE checks DROP COLUMN flap_count;
ALTER TABLE checks DROP COLUMN flap_since;
