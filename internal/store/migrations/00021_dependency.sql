-- A check held by a check it depends on (dependency.go): the parent that
-- holds its notifications now ('' when none does), and since when that
-- parent has been down.

-- +goose Up
ALTER TABLE checks ADD COLUMN dependency TEXT NOT NULL DEFAULT '';
ALTER TABLE checks ADD COLUMN dependency_since BIGINT;

-- +goose Down
ALTER TABLE checks DROP COLUMN dependency_since;
ALTER TABLE checks DROP COLUMN dependency;
