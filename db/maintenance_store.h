// Maintenance windows: findings on a link or device under one are noted, not acted on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "db/audit_store.h"
#include "db/connection.h"

namespace medic::db {

struct MaintenanceRow {
  int64_t id = 0;
  std::string link;    // a link's name, or
  std::string device;  // a device's name
  Time starts_at{}, ends_at{};
  std::string reason, created_by;
};

class InventoryStore;

inline constexpr int kMaxWindowDays = 30;

// A window checked against the inventory before it is added: exactly one of link or device,
// known (a link named by either end gets its full name), ending after it starts. Refused as
// invalid or not_found, with the field.
Result<MaintenanceRow> checked_window(InventoryStore& inventory, MaintenanceRow m);

class MaintenanceStore {
 public:
  explicit MaintenanceStore(Connection& c) : c_(c) {}

  Result<int64_t> add_maintenance(const MaintenanceRow& m, const Actor& by, Time at);
  // Windows not yet over at `at` (all of them when nullopt).
  Result<std::vector<MaintenanceRow>> maintenance(std::optional<Time> active_or_future_at);
  Status end_maintenance(int64_t id, const Actor& by, Time at);

 private:
  Connection& c_;
};

}  // namespace medic::db
