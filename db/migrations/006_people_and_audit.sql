-- Issue 13: the people and service accounts who use the repair queue, each with a role and
-- an API token kept only as a salted hash; the audit trail of every state change, which
-- nothing may change or remove; and the approvals of the two-person rule.

CREATE TABLE users (
    id            bigserial PRIMARY KEY,
    name          text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$'),
    role          text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    token_salt    bytea NOT NULL,
    token_hash    bytea NOT NULL,   -- SHA-256 of the salt and the token's secret
    disabled      boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL,
    token_set_at  timestamptz NOT NULL,
    disabled_at   timestamptz
);

CREATE TABLE audit (
    id           bigserial PRIMARY KEY,
    at           timestamptz NOT NULL,
    who          text NOT NULL,
    role         text NOT NULL,     -- viewer, operator, admin; daemon (medicd); cli (a shell on the database)
    what         text NOT NULL,     -- approve, reject, repaired, dismiss, drain, undrain, breaker_open, ...
    incident_id  bigint,
    link         text,
    reason       text,
    source       text NOT NULL DEFAULT '',  -- the client's address, the daemon's name, the CLI's host and user
    detail       jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_incident ON audit (incident_id, id) WHERE incident_id IS NOT NULL;
CREATE INDEX audit_at ON audit (at);
CREATE INDEX audit_who ON audit (who, id);

-- Append-only: no UPDATE, DELETE or TRUNCATE, whoever asks.
CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit trail is append-only: % refused', TG_OP;
END $$;
CREATE TRIGGER audit_no_change BEFORE UPDATE OR DELETE ON audit
    FOR EACH ROW EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit
    FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();

-- One row per person approving an incident's drain; a class may need several (the policy's
-- two-person rule). The same person cannot approve twice.
CREATE TABLE approvals (
    incident_id  bigint NOT NULL REFERENCES incidents (id),
    who          text NOT NULL,
    at           timestamptz NOT NULL,
    PRIMARY KEY (incident_id, who)
);
