-- Each delivery's namespace (its check's), so that due deliveries can be
-- read namespace by namespace, each one's earliest first, from an index:
-- the notifier takes namespaces in turns, and one namespace's backlog
-- costs the query no more than any other's.

-- +goose Up
ALTER TABLE deliveries ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
UPDATE deliveries SET namespace = COALESCE((SELECT c.namespace FROM checks c WHERE c.uid = deliveries.check_uid), '');
CREATE INDEX deliveries_due ON deliveries (namespace, next_attempt, check_uid, flip_n, channel) WHERE state = 'pending';

-- +goose Down
DROP INDEX deliveries_due;
ALTER TABLE deliveries DROP COLUMN namespace;
