-- SLA verdicts: the breach of a check's SLA its Channels were last told
-- of (no row: none, or never judged), so that a breach and its end are
-- each told once across restarts and leader changes.

-- +goose Up
CREATE TABLE sla_verdicts (
    check_uid TEXT PRIMARY KEY,
    reason    TEXT NOT NULL,
    detail    TEXT NOT NULL DEFAULT '',
    since     BIGINT NOT NULL      -- when it was told, microseconds since the Unix epoch
);

-- +goose Down
DROP TABLE sla_verdicts;
