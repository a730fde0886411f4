-- The changes feed pages by (version, uid): one transaction gives all the
-- checks it writes one version, and a page may end inside such a group.

-- +goose Up
CREATE INDEX checks_version_uid ON checks (version, uid);
DROP INDEX checks_version;

-- +goose Down
CREATE INDEX checks_version ON checks (version);
DROP INDEX checks_version_uid;
