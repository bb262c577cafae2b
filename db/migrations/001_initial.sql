-- fabric-medic initial schema: inventory, findings, incidents, actions, snapshots, SLOs.
-- Applied once by `medic db migrate` or at medicd start; recorded in schema_migrations.

CREATE TABLE switches (
    name           text PRIMARY KEY,
    role           text NOT NULL CHECK (role IN ('rtsw', 'ctsw', 'atsw')),
    zone           integer,
    plane          integer,
    telemetry_url  text NOT NULL,
    driver_kind    text NOT NULL,
    driver_url     text NOT NULL DEFAULT '',
    updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE links (
    name              text PRIMARY KEY,
    a_device          text NOT NULL,
    a_port            text NOT NULL,
    b_device          text NOT NULL,
    b_port            text NOT NULL,
    speed_gbps        double precision NOT NULL CHECK (speed_gbps > 0),
    -- One drain-state record per link. 'draining'/'undraining' mean an action is in flight.
    drain_state       text NOT NULL DEFAULT 'undrained'
                      CHECK (drain_state IN ('undrained', 'draining', 'drained', 'undraining')),
    drain_changed_at  timestamptz,
    drain_incident_id bigint,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (a_device, a_port),
    UNIQUE (b_device, b_port)
);

CREATE TABLE incidents (
    id                   bigserial PRIMARY KEY,
    class                text NOT NULL,
    state                text NOT NULL CHECK (state IN (
                           'detected', 'triaged', 'blocked', 'mitigated', 'repair_requested',
                           'repaired', 'validated', 'undrained', 'closed', 'dismissed',
                           'escalated')),
    severity             text NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
    link                 text REFERENCES links (name),
    device               text,
    summary              text NOT NULL DEFAULT '',
    blocked_reason       text,
    started_at           timestamptz,
    detected_at          timestamptz NOT NULL,
    triaged_at           timestamptz,
    mitigated_at         timestamptz,
    repair_requested_at  timestamptz,
    repaired_at          timestamptz,
    validated_at         timestamptz,
    undrained_at         timestamptz,
    closed_at            timestamptz,
    dismissed_at         timestamptz,
    escalated_at         timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX incidents_open ON incidents (state) WHERE state NOT IN ('closed', 'dismissed');
CREATE INDEX incidents_link ON incidents (link);
-- At most one open incident per class and link: the database enforces what triage assumes.
CREATE UNIQUE INDEX incidents_one_open_per_link ON incidents (class, link)
    WHERE state NOT IN ('closed', 'dismissed') AND link IS NOT NULL;

CREATE TABLE findings (
    id           bigserial PRIMARY KEY,
    incident_id  bigint REFERENCES incidents (id),
    kind         text NOT NULL,
    severity     text NOT NULL,
    link         text,
    device       text,
    port         text,
    summary      text NOT NULL,
    evidence     jsonb NOT NULL DEFAULT '{}',
    first_seen   timestamptz NOT NULL,
    observed_at  timestamptz NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX findings_incident ON findings (incident_id);

-- Every action: the intent row is written (and committed) before a switch is touched;
-- the result fills in result_at and state afterwards. A refused action has no intent to
-- execute and is recorded directly as 'refused' with its reason.
CREATE TABLE actions (
    id           bigserial PRIMARY KEY,
    incident_id  bigint REFERENCES incidents (id),
    link         text NOT NULL REFERENCES links (name),
    kind         text NOT NULL CHECK (kind IN ('drain', 'undrain')),
    state        text NOT NULL CHECK (state IN ('intent', 'succeeded', 'failed', 'refused')),
    reason       text,
    steps        jsonb NOT NULL DEFAULT '[]',
    intent_at    timestamptz NOT NULL,
    result_at    timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX actions_incident ON actions (incident_id);
CREATE INDEX actions_unfinished ON actions (state) WHERE state = 'intent';

CREATE TABLE snapshots (
    id           bigserial PRIMARY KEY,
    incident_id  bigint REFERENCES incidents (id),
    action_id    bigint REFERENCES actions (id),
    reason       text NOT NULL,
    taken_at     timestamptz NOT NULL,
    data         jsonb NOT NULL
);
CREATE INDEX snapshots_incident ON snapshots (incident_id);

CREATE TABLE slo_targets (
    incident_class  text NOT NULL,
    stage           text NOT NULL CHECK (stage IN ('detect', 'mitigate', 'repair', 'restore')),
    target_seconds  double precision NOT NULL CHECK (target_seconds > 0),
    objective       double precision NOT NULL DEFAULT 0.99 CHECK (objective > 0 AND objective <= 1),
    PRIMARY KEY (incident_class, stage)
);

INSERT INTO slo_targets (incident_class, stage, target_seconds, objective) VALUES
    ('link_flap', 'detect',   60,     0.99),
    ('link_flap', 'mitigate', 120,    0.99),
    ('link_flap', 'repair',   172800, 0.95),
    ('link_flap', 'restore',  3600,   0.99);
