-- A check's row keeps when the newest run the store let go ended, so the
-- statistics know how far back its runs are whole: a window that reaches
-- past it is partial, and a trend needs the window before held whole too.
-- (Counting pings against the limit cannot say it: the runs read for a
-- window never show the ones before it.)

-- The runs of the pings still in the ping log are recorded here for the
-- checks that pinged before the runs table existed (migration 12): their
-- outcomes and last success, without durations (the log does not keep
-- which start began a run). What the store cannot have kept is marked let
-- go (unless the log still holds the check's first ping): runs_dropped is
-- then just before the oldest run held.

-- +goose Up
ALTER TABLE checks ADD COLUMN runs_dropped BIGINT;
INSERT INTO runs (check_uid, n, ended, failed, duration)
    SELECT check_uid, n, created, kind = 'fail', NULL FROM pings WHERE kind IN ('success', 'fail')
    ON CONFLICT (check_uid, n) DO NOTHING;
UPDATE checks SET last_success = (SELECT MAX(created) FROM pings WHERE check_uid = checks.uid AND kind = 'success')
    WHERE last_success IS NULL;
UPDATE checks SET runs_dropped = COALESCE((SELECT MIN(ended) - 1 FROM runs WHERE check_uid = checks.uid), last_ping)
    WHERE n_pings > 0 AND NOT EXISTS (SELECT 1 FROM pings WHERE check_uid = checks.uid AND n = 1);

-- +goose Down
ALTER TABLE checks DROP COLUMN runs_dropped;
