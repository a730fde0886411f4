-- An acknowledged down (ack.go): who acknowledged the check's current
-- down, and when. It holds while the check stays in that down: acked_at
-- is at or after the down's state_since.

-- +goose Up
ALTER TABLE checks ADD COLUMN acked_at BIGINT;
ALTER TABLE checks ADD COLUMN acked_by TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE checks DROP COLUMN acked_by;
ALTER TABLE checks DROP COLUMN acked_at;
