// The inventory: the topology's switches and links, and the links' drain and oper states.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "db/connection.h"
#include "fabric/topology.h"
#include "remediation/capacity_view.h"

namespace medic::db {

struct LinkDrainRow {
  std::string link;
  std::string drain_state;  // undrained, draining, drained, undraining
  int64_t incident_id = 0;
};

class InventoryStore {
 public:
  explicit InventoryStore(Connection& c) : c_(c) {}

  // Upserts switches and links from the topology (drain state is kept).
  Status sync_inventory(const fabric::Topology& topology);
  Result<std::vector<LinkDrainRow>> drain_states();
  // The full name of a link given by its name or either endpoint "device:port"; "" if none.
  Result<std::string> resolve_link(const std::string& ref);
  // Whether a switch or host of that name is in the inventory.
  Result<bool> device_known(const std::string& name);
  // Links' oper states as medicd last saw them (for capacity views outside medicd).
  Status set_link_oper(const std::vector<std::pair<std::string, bool>>& links, Time at);
  // Every link not plainly in service (drain state other than undrained, or oper state
  // other than up), by name.
  Result<std::vector<remediation::RecordedLinkState>> link_states();

 private:
  Connection& c_;
};

}  // namespace medic::db
