-- Issue 15: telling people. Every notification goes through a durable outbox: a row per
-- receiver for each change of an incident's state or severity, written by a trigger in the
-- same transaction as the change (whoever makes it: medicd, the API or `medic`), so that no
-- change is told without having happened, none that happened is lost across a crash or a
-- receiver's outage, and each receiver gets an incident's changes in the order they were
-- committed (the incident's row lock orders them; ids of different incidents may not follow
-- commit order, which nothing needs). A row tells the incident as it was at the change.

-- Where notifications go: medicd writes its configured receivers at start-up (and disables
-- the ones no longer configured). Only enabled receivers get new rows.
CREATE TABLE notify_receivers (
    name        text PRIMARY KEY,  -- "alertmanager http://host:9093", "webhook https://..." (no credentials)
    kind        text NOT NULL CHECK (kind IN ('alertmanager', 'webhook')),
    enabled     boolean NOT NULL DEFAULT true,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE notify_outbox (
    id            bigserial PRIMARY KEY,  -- the event id receivers see (X-Medic-Event-Id)
    receiver      text NOT NULL REFERENCES notify_receivers (name),
    incident_id   bigint NOT NULL REFERENCES incidents (id),
    event         text NOT NULL CHECK (event IN ('opened', 'changed', 'resolved')),
    state         text NOT NULL,         -- the incident's state and severity the event tells
    severity      text NOT NULL,
    old_severity  text,                  -- a severity change: the alert with the old one is resolved
    summary       text NOT NULL DEFAULT '',  -- the incident as it was at the change
    blocked_reason text,
    ended_at      timestamptz,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    attempts      integer NOT NULL DEFAULT 0,
    last_error    text,
    delivered_at  timestamptz,
    failed_at     timestamptz            -- refused for good by the receiver (a 4xx): not retried
);
-- What is still owed, per receiver, in commit order.
CREATE INDEX notify_outbox_due ON notify_outbox (receiver, id) WHERE delivered_at IS NULL AND failed_at IS NULL;
CREATE INDEX notify_outbox_incident ON notify_outbox (incident_id);

CREATE FUNCTION notify_incident_change() RETURNS trigger AS $$
DECLARE
    ev text;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.state = OLD.state AND NEW.severity = OLD.severity THEN
        RETURN NULL;
    END IF;
    IF NEW.state IN ('closed', 'dismissed') THEN
        IF TG_OP = 'INSERT' OR OLD.state IN ('closed', 'dismissed') THEN
            RETURN NULL;  -- nothing open was told
        END IF;
        ev := 'resolved';
    ELSIF TG_OP = 'INSERT' OR OLD.state IN ('closed', 'dismissed') THEN
        ev := 'opened';   -- new, or reopened
    ELSE
        ev := 'changed';
    END IF;
    INSERT INTO notify_outbox (receiver, incident_id, event, state, severity, old_severity, summary,
                               blocked_reason, ended_at)
        SELECT r.name, NEW.id, ev, NEW.state, NEW.severity,
               CASE WHEN TG_OP = 'UPDATE' AND NEW.severity <> OLD.severity THEN OLD.severity END,
               NEW.summary, NEW.blocked_reason,
               CASE WHEN ev = 'resolved' THEN coalesce(NEW.closed_at, NEW.dismissed_at) END
        FROM notify_receivers r WHERE r.enabled;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER incidents_notify AFTER INSERT OR UPDATE OF state, severity ON incidents
    FOR EACH ROW EXECUTE FUNCTION notify_incident_change();
