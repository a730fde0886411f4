-- Ownership rows whose hold has passed are pruned (PruneOwners), and a
-- namespace keeps a bounded number of released rows, the newest: these
-- indexes find the released rows without reading those still held.

-- +goose Up
CREATE INDEX key_owners_released ON key_owners (released) WHERE released IS NOT NULL;
CREATE INDEX key_owners_namespace_released ON key_owners (namespace, released) WHERE released IS NOT NULL;
CREATE INDEX uuid_owners_released ON uuid_owners (released) WHERE released IS NOT NULL;
CREATE INDEX uuid_owners_namespace_released ON uuid_owners (namespace, released) WHERE released IS NOT NULL;

-- +goose Down
DROP INDEX uuid_owners_namespace_released;
DROP INDEX uuid_owners_released;
DROP INDEX key_owners_namespace_released;
DROP INDEX key_owners_released;
