-- Fabric snapshots are written in one COPY of every port and read back whole; what made
-- that COPY slow was checking, for every port row, a foreign key (a lookup of the
-- snapshots row) and a B-tree entry (bench/snapshot: together more than half its time).
-- Port rows are only ever written by the transaction that writes their snapshots row
-- (db/snapshots.cpp), each snapshot's rows together, in seq order: a BRIN index finds them,
-- and a trigger deletes them with their snapshot, as the cascade did, once per statement
-- however many snapshots the statement deletes.
ALTER TABLE snapshot_ports DROP CONSTRAINT snapshot_ports_snapshot_id_fkey;
ALTER TABLE snapshot_ports DROP CONSTRAINT snapshot_ports_pkey;
CREATE INDEX snapshot_ports_snapshot ON snapshot_ports USING brin (snapshot_id);

CREATE FUNCTION snapshot_ports_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM snapshot_ports p USING deleted d WHERE p.snapshot_id = d.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER snapshots_delete_ports AFTER DELETE ON snapshots
    REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION snapshot_ports_delete();
