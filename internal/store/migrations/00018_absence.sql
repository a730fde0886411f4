-- Vigil's own absence (clock.go). The deadline loop writes a heartbeat in
-- clock's one row (alive), and the start of an absence it has found but
-- not yet applied to every check due in it (away_from). A check whose next
-- failed run fell while Vigil was away keeps the instant Vigil came back
-- in reprieve: that run is expected by then plus the grace.

-- +goose Up
ALTER TABLE checks ADD COLUMN reprieve BIGINT;
CREATE TABLE clock (
    id        INTEGER PRIMARY KEY,
    alive     BIGINT NOT NULL,
    away_from BIGINT
);

-- +goose Down
DROP TABLE clock;
ALTER TABLE checks DROP COLUMN reprieve;
