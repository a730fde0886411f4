-- Which project each check UUID belongs to. spec.uuid is chosen by whoever
-- writes the Check, so a UUID is claimed by the first project whose check
-- uses it, and stays that project's while a check there holds it and for a
-- while after (a re-create by GitOps keeps it): a check in another
-- namespace that names the same UUID never receives its pings.

-- +goose Up
CREATE TABLE uuid_owners (
    uuid      TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    check_uid TEXT NOT NULL DEFAULT '',  -- the Check object holding it; '' once released
    released  BIGINT                     -- when its last holder was forgotten; NULL while held
);
CREATE INDEX uuid_owners_check ON uuid_owners (check_uid) WHERE check_uid <> '';

-- +goose Down
DROP TABLE uuid_owners;
