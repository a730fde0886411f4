-- People's dashboard sessions (sessions.go), kept in the store so that
-- ending one ends it on every replica at once. A row is keyed by the
-- SHA-256 of the random token the browser's cookie holds, never the token.
-- A subject keeps at most store.MaxSessionsPerSubject rows (its oldest end
-- first) and the table at most store.MaxSessions; the leader's
-- housekeeping deletes the expired ones.

-- +goose Up
CREATE TABLE dashboard_sessions (
    id          TEXT PRIMARY KEY,       -- hex SHA-256 of the cookie's token
    subject     TEXT NOT NULL,          -- the provider's issuer and sub
    username    TEXT NOT NULL,          -- as Kubernetes RBAC is asked about it
    groups_json TEXT NOT NULL,          -- the groups, a JSON array of strings
    csrf        TEXT NOT NULL,
    created     BIGINT NOT NULL,        -- microseconds since the Unix epoch
    expires     BIGINT NOT NULL         -- microseconds since the Unix epoch
);
CREATE INDEX dashboard_sessions_subject ON dashboard_sessions (subject, created);
CREATE INDEX dashboard_sessions_expires ON dashboard_sessions (expires);

-- +goose Down
DROP INDEX dashboard_sessions_expires;
DROP INDEX dashboard_sessions_subject;
DROP TABLE dashboard_sessions;
