#include "db/capacity_states.h"

#include "db/connection.h"
#include "db/inventory_store.h"

namespace medic::db {

Result<std::vector<LinkCapacityState>> read_link_capacity_states(const std::string& url) {
  try {
    Connection c(url);
    return InventoryStore(c).link_states();
  } catch (const DbError& e) {
    return Error::unavailable(e.what());
  }
}

}  // namespace medic::db
