-- Notices: re-alerts, escalations and failures below a check's threshold,
-- queued in the outbox as flips are, in the transaction that observes
-- them, so they survive a restart and a change of leader. A notice is a
-- row of flips with its kind in notice ('' for a real flip, which is what
-- the API and the dashboard list); since is when the down it is about
-- began (for an up flip, the down it ends). A check's row keeps when its
-- current down was announced (alert_since), its last re-alert
-- (last_notice) and whether it has been escalated.

-- +goose Up
ALTER TABLE flips ADD COLUMN notice TEXT NOT NULL DEFAULT '';
ALTER TABLE flips ADD COLUMN since BIGINT;
ALTER TABLE checks ADD COLUMN alert_since BIGINT;
ALTER TABLE checks ADD COLUMN last_notice BIGINT;
ALTER TABLE checks ADD COLUMN escalated BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE checks DROP COLUMN escalated;
ALTER TABLE checks DROP COLUMN last_notice;
ALTER TABLE checks DROP COLUMN alert_since;
ALTER TABLE flips DROP COLUMN since;
ALTER TABLE flips DROP COLUMN notice;
