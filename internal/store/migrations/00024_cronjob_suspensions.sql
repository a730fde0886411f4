-- What the CronJob controller last saw of each CronJob's suspension
-- (cronjobs.go): suspended or not as of seen_until, so that the runs scheduled
-- while it was suspended are not reported missed after a restart or a
-- change of leader either. One row a CronJob that was ever seen suspended;
-- a row older than the controller looks back is forgotten.

-- +goose Up
CREATE TABLE cronjob_suspensions (
    cronjob_uid TEXT PRIMARY KEY,
    namespace   TEXT NOT NULL,
    suspended   BOOLEAN NOT NULL,
    seen_until  BIGINT NOT NULL     -- microseconds since the Unix epoch
);
CREATE INDEX cronjob_suspensions_until ON cronjob_suspensions (seen_until);

-- +goose Down
DROP INDEX cronjob_suspensions_until;
DROP TABLE cronjob_suspensions;
