-- The ping store's schema. One dialect for SQLite and PostgreSQL: types both
-- accept (BIGINT, TEXT, BOOLEAN, BYTEA: SQLite stores a blob as it is),
-- instants as microseconds since the Unix epoch, no auto-increment (serial
-- numbers are per check, counted in its row), partial indexes and
-- ON CONFLICT, which both have.

-- +goose Up
CREATE TABLE checks (
    uid              TEXT PRIMARY KEY,        -- the Check object's metadata.uid
    namespace        TEXT NOT NULL,
    name             TEXT NOT NULL,
    n_pings          BIGINT NOT NULL DEFAULT 0,
    n_flips          BIGINT NOT NULL DEFAULT 0,
    last_ping        BIGINT,
    last_ping_failed BOOLEAN NOT NULL DEFAULT FALSE,
    last_start       BIGINT,
    last_start_rid   TEXT NOT NULL DEFAULT '',
    last_duration    BIGINT NOT NULL DEFAULT 0,
    paused_at        BIGINT,
    resumed_at       BIGINT,
    state            TEXT NOT NULL DEFAULT '',
    state_since      BIGINT,
    next_change      BIGINT,                  -- when time alone changes the state: the deadline loop's index
    body_bytes       BIGINT NOT NULL DEFAULT 0,
    version          BIGINT NOT NULL          -- the change number of the last write (changes feed)
);
CREATE INDEX checks_next_change ON checks (next_change) WHERE next_change IS NOT NULL;
CREATE INDEX checks_version ON checks (version);
CREATE INDEX checks_namespace ON checks (namespace, name);

CREATE TABLE pings (
    check_uid    TEXT NOT NULL,
    n            BIGINT NOT NULL,
    kind         TEXT NOT NULL,
    created      BIGINT NOT NULL,
    scheme       TEXT NOT NULL DEFAULT '',
    remote_addr  TEXT NOT NULL DEFAULT '',
    method       TEXT NOT NULL DEFAULT '',
    ua           TEXT NOT NULL DEFAULT '',
    rid          TEXT NOT NULL DEFAULT '',
    exit_status  INTEGER,
    body         BYTEA,
    body_dropped BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (check_uid, n)
);
CREATE INDEX pings_rid ON pings (check_uid, rid) WHERE rid <> '';

CREATE TABLE flips (
    check_uid  TEXT NOT NULL,
    n          BIGINT NOT NULL,
    created    BIGINT NOT NULL,
    up         BOOLEAN NOT NULL,
    from_state TEXT NOT NULL,
    to_state   TEXT NOT NULL,
    reason     TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (check_uid, n)
);
CREATE INDEX flips_created ON flips (created);

-- The notification outbox: one row per flip and channel, written in the
-- transaction that records the flip.
CREATE TABLE deliveries (
    check_uid    TEXT NOT NULL,
    flip_n       BIGINT NOT NULL,
    channel      TEXT NOT NULL,
    state        TEXT NOT NULL,               -- pending, delivered, failed
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_attempt BIGINT NOT NULL,
    last_error   TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (check_uid, flip_n, channel)
);
CREATE INDEX deliveries_pending ON deliveries (next_attempt) WHERE state = 'pending';

-- The change counter: every transaction that changes checks takes the next
-- number, under the row's lock, so numbers follow commit order.
CREATE TABLE changes (
    id    INTEGER PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO changes (id, value) VALUES (1, 0);

-- +goose Down
DROP TABLE changes;
DROP TABLE deliveries;
DROP TABLE flips;
DROP TABLE pings;
DROP TABLE checks;
