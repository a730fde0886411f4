-- Pings a starting manager acknowledged before its cache of Checks was
-- ready (early.go): each kept whole, for the check whose UUID it named, and
-- recorded as an ordinary ping, dated when it arrived, once the cache is
-- ready; the row is deleted in the transaction that records it.

-- +goose Up
CREATE TABLE early_pings (
    id          TEXT PRIMARY KEY,       -- random, chosen by the manager that took the ping
    check_uid   TEXT NOT NULL,          -- the check that held the UUID when the ping came
    namespace   TEXT NOT NULL,
    received    BIGINT NOT NULL,        -- microseconds since the Unix epoch
    kind        TEXT NOT NULL,          -- as the URL says; the check's rules are applied when it is recorded
    rid         TEXT NOT NULL DEFAULT '',
    exit_status INTEGER,
    scheme      TEXT NOT NULL DEFAULT '',
    remote_addr TEXT NOT NULL DEFAULT '',
    method      TEXT NOT NULL DEFAULT '',
    ua          TEXT NOT NULL DEFAULT '',
    body        BYTEA
);
CREATE INDEX early_pings_received ON early_pings (received, id);

-- +goose Down
DROP INDEX early_pings_received;
DROP TABLE early_pings;
