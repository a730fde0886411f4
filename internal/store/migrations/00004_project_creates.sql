-- Check creation through the API and ?create=1 takes a project's row lock
-- here (PostgreSQL mode: any replica may create), so that creations in one
-- project happen one at a time, each counting the checks of the last.

-- +goose Up
CREATE TABLE project_creates (
    namespace        TEXT PRIMARY KEY,
    resource_version TEXT NOT NULL DEFAULT ''  -- of the last Check created under the lock
);

-- +goose Down
DROP TABLE project_creates;
