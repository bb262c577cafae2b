-- Issue 14: SLO targets are versioned. Every change is kept with the time it holds from, so a
-- report over a past window judges each stage by the target in force when it was decided;
-- the first version of a target also holds for all history before it. A target may be
-- scoped to one zone, plane or role (preferred over the unscoped one for that group).
CREATE TABLE slo_target_versions (
    id              bigserial PRIMARY KEY,
    incident_class  text NOT NULL,
    stage           text NOT NULL CHECK (stage IN ('detect', 'mitigate', 'repair', 'restore')),
    scope_kind      text NOT NULL DEFAULT '' CHECK (scope_kind IN ('', 'zone', 'plane', 'role')),
    scope_value     text NOT NULL DEFAULT '',
    target_seconds  double precision NOT NULL CHECK (target_seconds > 0),
    objective       double precision NOT NULL CHECK (objective > 0 AND objective <= 1),
    valid_from      timestamptz NOT NULL,
    applied_at      timestamptz NOT NULL DEFAULT now(),
    applied_by      text NOT NULL DEFAULT '',
    CHECK ((scope_kind = '') = (scope_value = '')),
    UNIQUE (incident_class, stage, scope_kind, scope_value, valid_from)
);

INSERT INTO slo_target_versions (incident_class, stage, target_seconds, objective, valid_from, applied_by)
    SELECT incident_class, stage, target_seconds, objective, now(), 'schema' FROM slo_targets;
DROP TABLE slo_targets;

-- The targets in force now: per target, the latest version from before now, or the first
-- one when all of them hold from later (the first holds for the history before it).
CREATE VIEW slo_targets AS
    SELECT DISTINCT ON (incident_class, stage, scope_kind, scope_value)
           incident_class, stage, scope_kind, scope_value, target_seconds, objective, valid_from
    FROM slo_target_versions
    ORDER BY incident_class, stage, scope_kind, scope_value, (valid_from <= now()) DESC,
             CASE WHEN valid_from <= now() THEN valid_from END DESC, valid_from;

-- The report reads the incidents that may decide a stage in its window: the open ones and
-- those that ended (closed or dismissed) in or after it (snapshots_taken serves its
-- capacity snapshots).
CREATE INDEX incidents_ended ON incidents ((coalesce(closed_at, dismissed_at)));
