-- Issue 3: richer triage. One open incident per link (any class), device-scoped incidents,
-- the suspect end, reopening, findings recorded without an incident, maintenance windows,
-- and an audit trail of every incident state change.

ALTER TABLE incidents
    ADD COLUMN suspect        text,
    ADD COLUMN suspect_port   text,
    ADD COLUMN reopen_count   integer NOT NULL DEFAULT 0,
    ADD COLUMN reopened_at    timestamptz;

DROP INDEX incidents_one_open_per_link;
CREATE UNIQUE INDEX incidents_one_open_per_link ON incidents (link)
    WHERE state NOT IN ('closed', 'dismissed') AND link IS NOT NULL;
CREATE UNIQUE INDEX incidents_one_open_per_device ON incidents (class, device)
    WHERE state NOT IN ('closed', 'dismissed') AND link IS NULL;

-- Why a finding opened no incident: 'noted' (informational) or 'maintenance #N: reason'.
ALTER TABLE findings ADD COLUMN note text;
CREATE INDEX findings_observed ON findings (observed_at);

CREATE TABLE maintenance (
    id          bigserial PRIMARY KEY,
    link        text REFERENCES links (name),
    device      text,
    starts_at   timestamptz NOT NULL,
    ends_at     timestamptz NOT NULL,
    reason      text NOT NULL DEFAULT '',
    created_by  text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((link IS NULL) <> (device IS NULL)),
    CHECK (ends_at > starts_at)
);
CREATE INDEX maintenance_active ON maintenance (ends_at);

CREATE TABLE incident_events (
    id           bigserial PRIMARY KEY,
    incident_id  bigint NOT NULL REFERENCES incidents (id),
    at           timestamptz NOT NULL,
    state        text NOT NULL,
    note         text NOT NULL DEFAULT ''
);
CREATE INDEX incident_events_incident ON incident_events (incident_id, id);

INSERT INTO slo_targets (incident_class, stage, target_seconds, objective) VALUES
    ('link_down',       'detect',   60,     0.99),
    ('optics',          'detect',   300,    0.95),
    ('optics',          'mitigate', 600,    0.95),
    ('corruption',      'detect',   120,    0.99),
    ('corruption',      'mitigate', 300,    0.99),
    ('fec',             'detect',   120,    0.99),
    ('fec',             'mitigate', 300,    0.99),
    ('slow_receiver',   'detect',   120,    0.95),
    ('pfc_storm',       'detect',   120,    0.95),
    ('telemetry_stale', 'detect',   60,     0.99),
    ('switch_fault',    'detect',   120,    0.99),
    ('gray_failure',    'detect',   120,    0.95),
    ('gray_failure',    'mitigate', 300,    0.95)
ON CONFLICT DO NOTHING;
