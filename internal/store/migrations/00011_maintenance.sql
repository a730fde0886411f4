-- Maintenance windows: a check's row keeps the window holding its
-- notifications when it was last written (maintenance, '' for none) and
-- when that window ends, and whether a flip's notification waits for the
-- end (held). A flip that a window held names it (flips.held) and when
-- the window ended (held_until), so the dashboard can say why a
-- notification went out late or not at all, and leave the window out of
-- the check's uptime.

-- +goose Up
ALTER TABLE checks ADD COLUMN maintenance TEXT NOT NULL DEFAULT '';
ALTER TABLE checks ADD COLUMN maintenance_until BIGINT;
ALTER TABLE checks ADD COLUMN held BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE flips ADD COLUMN held TEXT NOT NULL DEFAULT '';
ALTER TABLE flips ADD COLUMN held_until BIGINT;

-- +goose Down
ALTER TABLE flips DROP COLUMN held_until;
ALTER TABLE flips DROP COLUMN held;
ALTER TABLE checks DROP COLUMN held;
ALTER TABLE checks DROP COLUMN maintenance_until;
ALTER TABLE checks DROP COLUMN maintenance;
