-- A run is its success or fail ping while the ping log holds it, and a row
-- of runs once the log lets the ping go: a ping writes one row, not two.
-- The ping keeps the run's duration (from its start) for that.
--
-- A check's row keeps when the newest run the store let go ended, so the
-- statistics know how far back its runs are whole: a window that reaches
-- past it is partial, and a trend needs the window before held whole too.
-- (Counting pings against the limit cannot say it: the runs read for a
-- window never show the ones before it.)
--
-- The runs that migration 12 recorded for pings still in the log give
-- their durations to the pings and leave the runs table. Checks that
-- pinged before migration 12 get their last success from the log; what the
-- store cannot have kept (neither the log nor the runs hold the check's
-- first pings) is marked let go: runs_dropped is then just before the oldest run held.

-- +goose Up
ALTER TABLE pings ADD COLUMN duration BIGINT;
UPDATE pings SET duration = (SELECT runs.duration FROM runs WHERE runs.check_uid = pings.check_uid AND runs.n = pings.n)
    WHERE kind IN ('success', 'fail');
DELETE FROM runs WHERE EXISTS (SELECT 1 FROM pings WHERE pings.check_uid = runs.check_uid AND pings.n = runs.n);
ALTER TABLE checks ADD COLUMN runs_dropped BIGINT;
UPDATE checks SET last_success = (SELECT MAX(created) FROM pings WHERE check_uid = checks.uid AND kind = 'success')
    WHERE last_success IS NULL;
UPDATE checks SET runs_dropped = COALESCE((SELECT MIN(t) - 1 FROM (
        SELECT MIN(ended) AS t FROM runs WHERE check_uid = checks.uid
        UNION ALL SELECT MIN(created) FROM pings WHERE check_uid = checks.uid AND kind IN ('success', 'fail')) AS oldest),
        last_ping)
    WHERE n_pings > 0 AND NOT EXISTS (SELECT 1 FROM pings WHERE check_uid = checks.uid AND n = 1)
        AND NOT EXISTS (SELECT 1 FROM runs WHERE check_uid = checks.uid AND n <= 2);

-- +goose Down
ALTER TABLE checks DROP COLUMN runs_dropped;
INSERT INTO runs (check_uid, n, ended, failed, duration)
    SELECT check_uid, n, created, kind = 'fail', duration FROM pings WHERE kind IN ('success', 'fail')
    ON CONFLICT (check_uid, n) DO NOTHING;
ALTER TABLE pings DROP COLUMN duration;
