-- The alert policy's counts, kept with the facts they count (a restart in
-- the middle of a count changes nothing), and each flip's plain-words
-- detail ("ran longer than 1 h"), written when it happened so a later
-- setting does not reword history. A check stored before that failed its
-- last ping counts one failure.

-- +goose Up
ALTER TABLE checks ADD COLUMN failures BIGINT NOT NULL DEFAULT 0;
ALTER TABLE checks ADD COLUMN fail_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE checks ADD COLUMN successes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE checks ADD COLUMN missed_at BIGINT;
UPDATE checks SET failures = 1 WHERE last_ping_failed;
ALTER TABLE flips ADD COLUMN detail TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE flips DROP COLUMN detail;
ALTER TABLE checks DROP COLUMN missed_at;
ALTER TABLE checks DROP COLUMN successes;
ALTER TABLE checks DROP COLUMN fail_reason;
ALTER TABLE checks DROP COLUMN failures;
