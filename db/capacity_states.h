// The drain and oper state of links as medicd records them in the links table, read for
// views of the capacity out of medicd (`medic capacity show|whatif --db`). Read-only.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace medic::db {

struct LinkCapacityState {
  std::string link;         // the link's full name
  std::string drain_state;  // undrained, draining, drained, undraining
  std::string oper_state;   // up, down, unknown
};

// Every link that is not plainly in service (drain state other than undrained, or oper
// state other than up), by name. Opens a connection of its own to `url` for one read-only
// transaction; a server that cannot be reached or a schema without these columns (not
// migrated) comes back as an Error.
Result<std::vector<LinkCapacityState>> read_link_capacity_states(const std::string& url);

}  // namespace medic::db
