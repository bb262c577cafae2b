// Snapshots of the fabric around incidents and actions, and whole-fabric snapshots.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "db/connection.h"
#include "db/incident_store.h"
#include "snapshot/snapshot.h"

namespace medic::db {

struct SnapshotFilter {
  std::optional<int64_t> incident_id;
  std::optional<std::string> scope;  // incident, action or fabric
  int limit = 100;
};

// A stored snapshot as lists show it: no ports, groups or incidents, only their counts.
struct SnapshotRow {
  int64_t id = 0;
  std::string scope, reason, link;
  int64_t incident_id = 0, action_id = 0;  // 0: none
  Time taken_at{};
  int port_count = 0, group_count = 0, incident_count = 0;
};

// An incident as snapshots record it (FabricState::open_incidents).
snapshot::IncidentReading incident_reading(const IncidentRow& r);

class SnapshotStore {
 public:
  explicit SnapshotStore(Connection& c) : c_(c) {}

  // Stores a snapshot in one transaction and returns its id. Incident and action snapshots
  // are one row with everything in `data`; a fabric snapshot writes its ports to
  // snapshot_ports with COPY. incident_id/action_id, when set, must name existing rows.
  Result<int64_t> write_snapshot(const snapshot::Snapshot& s);
  // Either form, ports in the order they were captured; nullopt for an unknown id.
  Result<std::optional<snapshot::Snapshot>> snapshot(int64_t id);
  // Newest first.
  Result<std::vector<SnapshotRow>> snapshots(const SnapshotFilter& filter);
  // Deletes the snapshots taken before `older_than` (their port rows go with them);
  // returns how many.
  Result<int64_t> prune_snapshots(Time older_than);

 private:
  Connection& c_;
};

}  // namespace medic::db
