#include "db/capacity_states.h"

#include <pqxx/pqxx>

#include "db/connection.h"

namespace medic::db {

Result<std::vector<LinkCapacityState>> read_link_capacity_states(const std::string& url) {
  auto message = [](const std::exception& e) {
    std::string msg = e.what();
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    return msg;
  };
  std::unique_ptr<pqxx::connection> conn;
  try {
    conn = std::make_unique<pqxx::connection>(url);
  } catch (const std::exception& e) {
    return Error{"cannot connect to PostgreSQL at " + redact_url(url) + ": " + message(e)};
  }
  try {
    pqxx::read_transaction tx(*conn);
    const pqxx::result r = tx.exec_params(
        "SELECT name, drain_state, oper_state FROM links WHERE drain_state <> $1 OR oper_state <> $2 ORDER BY name",
        "undrained", "up");
    std::vector<LinkCapacityState> out;
    out.reserve(r.size());
    for (const auto& row : r) out.push_back({row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<std::string>()});
    return out;
  } catch (const std::exception& e) {
    return Error{"link states: " + message(e)};
  }
}

}  // namespace medic::db
