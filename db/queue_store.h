// The repair queue's decisions: what people decide about incidents, and the breaker reset.
// Each checks the incident's state and says exactly why it refuses (not_found, conflict).
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "common/time.h"
#include "db/connection.h"

namespace medic::db {

class QueueStore {
 public:
  explicit QueueStore(Connection& c) : c_(c) {}

  Status approve_incident(int64_t id, const std::string& by, Time at);
  Status mark_repaired(int64_t id, const std::string& by, Time at);
  Status dismiss_incident(int64_t id, const std::string& by, const std::string& reason, Time at);
  // Refused (conflict) when the breaker is not open.
  Status reset_breaker(Time at, const std::string& by);

 private:
  Connection& c_;
};

}  // namespace medic::db
