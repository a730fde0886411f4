-- Runs: one row per run that ended (a success or fail ping), kept after the
-- ping log has let the ping go, for run statistics (counts, success rate,
-- duration percentiles, trend). Small rows, no body: a check keeps the runs
-- its last Options.RunLimit pings ended. The ping that ended the run
-- numbers it (n), so a row is the ping's, once, and trimming is a range of
-- the key.

-- A check's row counts its runs by how they ended, for Prometheus's
-- counters, and keeps its last success, however long ago.

-- +goose Up
ALTER TABLE checks ADD COLUMN runs_succeeded BIGINT NOT NULL DEFAULT 0;
ALTER TABLE checks ADD COLUMN runs_failed BIGINT NOT NULL DEFAULT 0;
ALTER TABLE checks ADD COLUMN runs_missed BIGINT NOT NULL DEFAULT 0;
ALTER TABLE checks ADD COLUMN last_success BIGINT;
CREATE TABLE runs (
    check_uid TEXT NOT NULL,
    n         BIGINT NOT NULL,   -- the serial number of the ping that ended the run
    ended     BIGINT NOT NULL,   -- when, in microseconds since the Unix epoch
    failed    BOOLEAN NOT NULL,
    duration  BIGINT,            -- microseconds from its start; NULL when it had none
    PRIMARY KEY (check_uid, n)
);

-- +goose Down
DROP TABLE runs;
ALTER TABLE checks DROP COLUMN last_success;
ALTER TABLE checks DROP COLUMN runs_missed;
ALTER TABLE checks DROP COLUMN runs_failed;
ALTER TABLE checks DROP COLUMN runs_succeeded;
