// Maintenance windows.
#include "db/maintenance_store.h"

#include <nlohmann/json.hpp>

#include "db/internal.h"
#include "db/inventory_store.h"

namespace medic::db {

using namespace internal;

Result<MaintenanceRow> checked_window(InventoryStore& inventory, MaintenanceRow m) {
  if (m.link.empty() == m.device.empty()) return Error::invalid("a maintenance window names exactly one of link or device");
  if (m.ends_at <= m.starts_at) return Error::invalid("a maintenance window must end after it starts");
  // Findings under a window are not acted on: one cannot silence a link for years.
  if (m.ends_at - m.starts_at > std::chrono::hours(24 * kMaxWindowDays)) {
    return Error::invalid("a maintenance window lasts at most " + std::to_string(kMaxWindowDays) + " days");
  }
  if (m.starts_at - Time{} > std::chrono::hours(24 * 365 * 200)) {
    return Error::invalid("a maintenance window must start before the year 2170");
  }
  if (!m.link.empty()) {
    // A link may be named by either end; the database keeps its full name.
    const auto full = inventory.resolve_link(m.link);
    if (!full.ok()) return full.failure();
    if (full->empty()) return Error::not_found("link " + quote(m.link) + ": no such link in the inventory");
    m.link = *full;
  } else {
    const auto known = inventory.device_known(m.device);
    if (!known.ok()) return known.failure();
    if (!*known) return Error::not_found("device " + quote(m.device) + ": no such switch or host in the inventory");
  }
  return m;
}

Result<int64_t> MaintenanceStore::add_maintenance(const MaintenanceRow& m, const Actor& by, Time at) {
  return c_.run("add_maintenance", [&](Pq& pq) -> Result<int64_t> {
    pqxx::work w(pq.c);
    const auto r = w.exec_params(
        "INSERT INTO maintenance (link, device, starts_at, ends_at, reason, created_by) "
        "VALUES ($1, $2, $3::timestamptz, $4::timestamptz, $5, $6) RETURNING id",
        opt_text(m.link), opt_text(m.device), ts(m.starts_at), ts(m.ends_at), m.reason, m.created_by);
    const int64_t id = r[0][0].as<int64_t>();
    insert_audit(w, by, at, "maintenance_add", 0, m.link, m.reason,
                 nlohmann::json{{"window", id}, {"device", m.device}, {"starts_at", ts(m.starts_at)}, {"ends_at", ts(m.ends_at)}}
                     .dump());
    w.commit();
    return id;
  });
}

Result<std::vector<MaintenanceRow>> MaintenanceStore::maintenance(std::optional<Time> at) {
  return c_.run("maintenance", [&](Pq& pq) -> Result<std::vector<MaintenanceRow>> {
    pqxx::nontransaction n(pq.c);
    const std::string a = at ? ts(*at) : "";
    const auto r = n.exec_params(
        "SELECT id, coalesce(link, ''), coalesce(device, ''), " MEDIC_US("starts_at") ", " MEDIC_US("ends_at")
        ", reason, created_by FROM maintenance WHERE ($1::timestamptz IS NULL OR ends_at > $1::timestamptz) "
        "ORDER BY starts_at, id",
        opt_text(a));
    std::vector<MaintenanceRow> out;
    for (const auto& row : r) {
      MaintenanceRow m;
      m.id = row[0].as<int64_t>();
      m.link = read_text(row[1]);
      m.device = read_text(row[2]);
      m.starts_at = *read_time(row[3]);
      m.ends_at = *read_time(row[4]);
      m.reason = read_text(row[5]);
      m.created_by = read_text(row[6]);
      out.push_back(std::move(m));
    }
    return out;
  });
}

Status MaintenanceStore::end_maintenance(int64_t id, const Actor& by, Time at) {
  return c_.run("end_maintenance", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    const auto r = w.exec_params(
        // A window not yet begun is cancelled: it becomes a moment at `at`, over at once.
        "UPDATE maintenance SET starts_at = least(starts_at, $2::timestamptz), "
        "ends_at = greatest(least(starts_at, $2::timestamptz) + interval '1 microsecond', $2::timestamptz) "
        "WHERE id = $1 AND ends_at > $2::timestamptz",
        id, ts(at));
    if (r.affected_rows() != 1) {
      if (w.exec_params("SELECT 1 FROM maintenance WHERE id = $1", id).empty()) {
        return Error::not_found("no maintenance window #" + std::to_string(id));
      }
      return Error::conflict("maintenance window #" + std::to_string(id) + " is over already");
    }
    insert_audit(w, by, at, "maintenance_end", 0, "", "", "{\"window\": " + std::to_string(id) + "}");
    w.commit();
    return Ok{};
  });
}

}  // namespace medic::db
