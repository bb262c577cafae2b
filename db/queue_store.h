// The repair queue's decisions: what people decide about incidents, and the breaker reset.
// Each checks the incident's state and says exactly why it refuses (not_found, conflict,
// invalid), and writes its audit row in the same transaction.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "db/audit_store.h"
#include "db/connection.h"

namespace medic::db {

// Where an incident's approvals stand after one more.
struct Approval {
  int given = 0;       // distinct people who approved it
  int required = 1;    // the policy's number for its class
  bool approved = false;
  std::vector<std::string> by;
};

class QueueStore {
 public:
  explicit QueueStore(Connection& c) : c_(c) {}

  // One person's approval of a waiting drain; the drain is approved once `required`
  // distinct people have approved it (the two-person rule). The same person twice is
  // refused (conflict).
  Result<Approval> approve_incident(int64_t id, const Actor& by, int required, const std::string& reason, Time at);
  Status mark_repaired(int64_t id, const Actor& by, const std::string& reason, Time at);
  // `what`: "reject" (a waiting drain is refused) or "dismiss" (not a fault); either way
  // the incident is dismissed (and its link put back if drained). A reason is required.
  Status dismiss_incident(int64_t id, const Actor& by, const std::string& what, const std::string& reason, Time at);
  // Refused (conflict) when the breaker is not open. A reason is required.
  Status reset_breaker(Time at, const Actor& by, const std::string& reason);
  // Who approved each open incident (or the one given), in the order they did.
  Result<std::map<int64_t, std::vector<std::string>>> approvals(std::optional<int64_t> incident_id);

 private:
  Connection& c_;
};

}  // namespace medic::db
