-- Which project each project key belongs to: a ping key, badge key or API
-- key (by its SHA-256) that two namespaces' project Secrets hold. As with
-- check UUIDs, the first project to hold it keeps it while it does and for
-- a while after, so that re-creating its Secret cannot hand it to a project
-- that copied it.

-- +goose Up
CREATE TABLE key_owners (
    key_id    TEXT PRIMARY KEY,   -- "ping:", "badge:" or "api:" and the key's SHA-256, hex
    namespace TEXT NOT NULL,
    released  BIGINT              -- when its project stopped holding it; NULL while held
);
CREATE INDEX key_owners_namespace ON key_owners (namespace);

-- +goose Down
DROP TABLE key_owners;
