-- Issue 5: the remediation workflow. Links carry their oper state (for capacity views out
-- of medicd); incidents can wait for approval and count failed validations; actions can be
-- reconciled after a crash; fabric snapshots keep every port in rows (bulk COPY);
-- the circuit breaker and the leader are recorded.

ALTER TABLE links
    ADD COLUMN oper_state       text NOT NULL DEFAULT 'unknown' CHECK (oper_state IN ('up', 'down', 'unknown')),
    ADD COLUMN oper_changed_at  timestamptz;

ALTER TABLE incidents DROP CONSTRAINT incidents_state_check;
ALTER TABLE incidents ADD CONSTRAINT incidents_state_check CHECK (state IN (
    'detected', 'triaged', 'blocked', 'pending_approval', 'mitigated', 'repair_requested',
    'repaired', 'validating', 'validated', 'undrained', 'closed', 'dismissed', 'escalated'));
ALTER TABLE incidents
    ADD COLUMN validation_failures  integer NOT NULL DEFAULT 0,
    ADD COLUMN validating_since     timestamptz,
    ADD COLUMN approval_reason      text,
    ADD COLUMN approved_by          text,
    ADD COLUMN approved_at          timestamptz,
    ADD COLUMN loss_estimate        double precision;

ALTER TABLE actions DROP CONSTRAINT actions_state_check;
ALTER TABLE actions ADD CONSTRAINT actions_state_check
    CHECK (state IN ('intent', 'applied', 'succeeded', 'failed', 'refused', 'reconciled', 'rolled_back'));
-- applied: the switch did it and said so; the traffic check after it is not done yet.
ALTER TABLE actions
    ADD COLUMN daemon          text NOT NULL DEFAULT '',
    ADD COLUMN traffic_before  double precision;  -- packets/s on the link when the intent was written
-- Never two actions on one link in flight: the database says so, whatever daemons believe.
CREATE UNIQUE INDEX actions_one_intent_per_link ON actions (link) WHERE state IN ('intent', 'applied');

-- Snapshots: incident and action snapshots keep everything in data (JSONB); a fabric
-- snapshot keeps its capacity groups and incidents there and every port as a typed row of
-- snapshot_ports (written with COPY), one nullable column per canonical counter.
ALTER TABLE snapshots
    ADD COLUMN scope       text NOT NULL DEFAULT 'incident' CHECK (scope IN ('incident', 'action', 'fabric')),
    ADD COLUMN port_count  integer NOT NULL DEFAULT 0;
CREATE INDEX snapshots_taken ON snapshots (taken_at);

CREATE TABLE snapshot_ports (
    snapshot_id                  bigint NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,
    seq                          integer NOT NULL,  -- the port's place in the snapshot
    device                       text NOT NULL,
    port                         text NOT NULL,
    link                         text,
    oper                         smallint NOT NULL CHECK (oper IN (-1, 0, 1)),  -- -1 unknown
    drained                      boolean NOT NULL DEFAULT false,
    sampled_at                   timestamptz,      -- NULL: the port never answered
    oper_up                      double precision,
    carrier_changes              double precision,
    link_down_events             double precision,
    rx_packets                   double precision,
    tx_packets                   double precision,
    rx_bytes                     double precision,
    tx_bytes                     double precision,
    rx_errors                    double precision,
    tx_errors                    double precision,
    rx_discards                  double precision,
    tx_discards                  double precision,
    rx_crc_errors                double precision,
    rx_symbol_errors             double precision,
    fec_corrected_bits           double precision,
    fec_corrected_codewords      double precision,
    fec_uncorrectable_codewords  double precision,
    fec_codewords                double precision,
    rx_pause                     double precision,
    tx_pause                     double precision,
    rx_power_dbm                 double precision,
    tx_power_dbm                 double precision,
    laser_bias_ma                double precision,
    temperature_c                double precision,
    pre_fec_ber                  double precision,
    PRIMARY KEY (snapshot_id, seq)
);

-- The circuit breaker: when too many incidents open at once, automatic action stops and
-- everything waits for a person until it is reset.
CREATE TABLE breaker (
    id          integer PRIMARY KEY CHECK (id = 1),
    open        boolean NOT NULL DEFAULT false,
    opened_at   timestamptz,
    reason      text,
    reset_at    timestamptz,
    reset_by    text
);
INSERT INTO breaker (id, open) VALUES (1, false);

-- Which daemon holds the leadership (the advisory lock is the truth; this is for people).
-- epoch grows with every change of leader; an action is only begun by the daemon holding
-- the current epoch, so a deposed leader that has not noticed yet cannot act.
CREATE TABLE leader (
    id          integer PRIMARY KEY CHECK (id = 1),
    daemon      text NOT NULL,
    epoch       bigint NOT NULL,
    since       timestamptz NOT NULL,
    heartbeat   timestamptz NOT NULL
);
