// remediation::RemediationStore on PostgreSQL, for medicd: link names and ids translated
// through the topology, actions fenced by the leader epoch when one is set.
#pragma once

#include <string>

#include "db/database.h"
#include "remediation/workflow.h"

namespace medic::db {

class DbRemediationStore final : public remediation::RemediationStore {
 public:
  DbRemediationStore(Database& db, const fabric::Topology& topology) : db_(db), topology_(topology) {}
  // Actions are begun only while `daemon` holds leader epoch `epoch` (empty: no fencing).
  void set_fence(std::string daemon, int64_t epoch) {
    daemon_ = std::move(daemon);
    epoch_ = epoch;
  }

  Result<std::vector<remediation::CaseRecord>> open_cases() override;
  Result<std::vector<remediation::ActionRecord>> unfinished_actions() override;
  Result<std::vector<std::pair<fabric::LinkId, Time>>> drains_since(Time since) override;
  Status set_state(int64_t incident, triage::IncidentState state, Time at, const std::string& reason) override;
  Status set_validation(int64_t incident, int failures, std::optional<Time> since) override;
  Result<int64_t> begin_action(const remediation::ActionIntent& intent, double traffic_before) override;
  Status action_applied(int64_t action, const std::vector<std::string>& steps) override;
  Status finish_action(int64_t action, const remediation::ActionIntent& intent, remediation::ActionEnd end,
                       bool link_drained, const std::string& reason, const std::vector<std::string>& steps,
                       Time at) override;
  Status record_refusal(const remediation::ActionIntent& intent, const std::string& reason) override;
  Result<remediation::BreakerState> breaker() override;
  Status open_breaker(Time at, const std::string& reason) override;
  Result<int> incidents_opened_since(Time since) override;

 private:
  Database& db_;
  const fabric::Topology& topology_;
  std::string daemon_;
  int64_t epoch_ = 0;
};

}  // namespace medic::db
