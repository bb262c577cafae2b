// The audit trail: who changed what, when, from where and why. Every state change made by a
// person or by medicd writes a row, in the same transaction as the change itself (the
// stores do it); the table refuses UPDATE, DELETE and TRUNCATE.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "db/connection.h"

namespace medic::db {

// Who does something, as the audit trail records it.
struct Actor {
  std::string name;    // a user's name, "medicd", or the CLI's --by
  std::string role;    // viewer, operator, admin; daemon (medicd); cli (a shell with the database's URL)
  std::string source;  // the client's address, the daemon's name, "cli on HOST"
};

struct AuditRow {
  int64_t id = 0;
  Time at{};
  std::string who, role, what;
  int64_t incident_id = 0;  // 0: none
  std::string link, reason, source;
  std::string detail_json = "{}";
};

struct AuditFilter {
  std::optional<int64_t> incident_id;
  std::optional<std::string> who;
  std::optional<Time> since;
  int limit = 1000;
};

class AuditStore {
 public:
  explicit AuditStore(Connection& c) : c_(c) {}

  // Oldest first; at most `limit` rows (the newest that many).
  Result<std::vector<AuditRow>> audit(const AuditFilter& filter);

 private:
  Connection& c_;
};

}  // namespace medic::db
