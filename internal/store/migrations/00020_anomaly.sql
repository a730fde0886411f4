-- A run judged anomalous (anomaly.go, monitor/anomaly.go) keeps the words
-- of the usual range it was judged by, as it was then: the range moves
-- with every run after it.

-- +goose Up
ALTER TABLE checks ADD COLUMN fail_detail TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE checks DROP COLUMN fail_detail;
