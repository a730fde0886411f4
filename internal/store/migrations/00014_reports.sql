-- Reports: a project's periodic report to a Channel, one row per Channel
-- and period ("2026-W47", "2026-11"), so that it is sent once across
-- restarts and leader changes. A row without sent is a report still owed:
-- attempts so far, when to try again and the last error.

-- +goose Up
CREATE TABLE reports (
    namespace    TEXT NOT NULL,
    channel      TEXT NOT NULL,
    period       TEXT NOT NULL,
    sent         BIGINT,            -- when it was sent, microseconds since the Unix epoch
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_attempt BIGINT NOT NULL DEFAULT 0,
    error        TEXT NOT NULL DEFAULT '',
    created      BIGINT NOT NULL,
    PRIMARY KEY (namespace, channel, period)
);

-- +goose Down
DROP TABLE reports;
