// SLO targets and the stage times of incidents, for the SLO report.
#pragma once

#include <optional>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "db/audit_store.h"
#include "db/connection.h"
#include "slo/slo.h"

namespace medic::db {

class SloStore {
 public:
  explicit SloStore(Connection& c) : c_(c) {}

  Result<std::vector<slo::Target>> slo_targets();
  Status set_slo_target(const slo::Target& t, const Actor& by, Time at);
  Result<std::vector<slo::IncidentTimes>> incident_times(std::optional<Time> since);

 private:
  Connection& c_;
};

}  // namespace medic::db
