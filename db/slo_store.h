// SLO targets, versioned (each change holds from a time on), and the SLO report read from the
// incidents, their histories and the capacity snapshots.
#pragma once

#include <optional>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "db/audit_store.h"
#include "db/connection.h"
#include "slo/compliance.h"
#include "slo/report.h"
#include "slo/slo.h"

namespace medic::db {

// What `apply_targets` did: the versions it wrote, and the targets in force that the file
// does not name (kept: a target is changed, never removed).
struct AppliedTargets {
  std::vector<slo::TargetVersion> written, unchanged, not_in_file;
};

class SloStore {
 public:
  explicit SloStore(Connection& c) : c_(c) {}

  // The unscoped targets in force now (the repair queue's budgets).
  Result<std::vector<slo::Target>> slo_targets();
  // Every version of every target, by class, stage, scope and time.
  Result<std::vector<slo::TargetVersion>> target_versions();
  // The targets in force at `at` (scoped ones too).
  Result<std::vector<slo::TargetVersion>> targets_at(Time at);
  // One class and stage's unscoped target from `at` on.
  Status set_slo_target(const slo::Target& t, const Actor& by, Time at);
  // A targets file from `from` on, in one transaction: a version for each target that differs
  // from the one in force at `from`; an audit row per version written.
  Result<AppliedTargets> apply_targets(const std::vector<slo::TargetVersion>& targets, Time from, const Actor& by,
                                       Time at);

  // The report over q's window, streaming the incidents that may decide a stage in it
  // (never all incidents at once), then the breaches' histories, the lowest capacity
  // headroom and the repeat offenders.
  Result<slo::Report> report(const slo::ReportQuery& q, Time now);

 private:
  Connection& c_;
};

}  // namespace medic::db
