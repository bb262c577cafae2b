// The drain and oper state of links as medicd records them in the links table, read for
// views of the capacity out of medicd (`medic capacity show|whatif --db`). Read-only.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "remediation/capacity_view.h"

namespace medic::db {

using LinkCapacityState = remediation::RecordedLinkState;

// Every link that is not plainly in service (drain state other than undrained, or oper
// state other than up), by name, over a connection of its own to `url`
// (InventoryStore::link_states); a server that cannot be reached or a schema without
// these columns (not migrated) comes back as an Error.
Result<std::vector<LinkCapacityState>> read_link_capacity_states(const std::string& url);

}  // namespace medic::db
