-- When each notification was queued (storm.go): storm control counts a
-- Channel's recent notifications and groups those that wait together.
-- Rows queued before this migration have none and count as old.

-- +goose Up
ALTER TABLE deliveries ADD COLUMN queued BIGINT;
CREATE INDEX deliveries_queued ON deliveries (namespace, channel, queued);

-- +goose Down
DROP INDEX deliveries_queued;
ALTER TABLE deliveries DROP COLUMN queued;
