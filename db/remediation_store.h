// The remediation workflow's records (RemediationRecords: open cases, the action journal
// with its leader fencing, the breaker) and remediation::RemediationStore on top of them
// for medicd (DbRemediationStore: link names and ids translated through the topology).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "db/audit_store.h"
#include "db/connection.h"
#include "db/incident_store.h"
#include "remediation/actions.h"
#include "remediation/workflow.h"

namespace medic::db {

// An open link incident as the workflow and the repair queue see it.
struct CaseRow {
  int64_t id = 0;
  std::string incident_class, severity, state, link, reason, approved_by;
  double loss = 0;
  int validation_failures = 0;
  std::optional<Time> validating_since, detected_at, started_at;
};

struct UnfinishedAction {
  int64_t id = 0, incident_id = 0;
  std::string link, kind, state;
  Time intent_at{};
  double traffic_before = -1;
};

struct ActionRow {
  int64_t id = 0;
  int64_t incident_id = 0;
  std::string link, kind, state, reason, steps_json;
  Time intent_at{};
  std::optional<Time> result_at;
};

struct BreakerRow {
  bool open = false;
  std::optional<Time> opened_at, reset_at;
  std::string reason, reset_by;
};

class RemediationRecords {
 public:
  explicit RemediationRecords(Connection& c) : c_(c) {}
  // Who the audit rows of the actions and the breaker name (medicd and its name).
  void set_actor(Actor a) { actor_ = std::move(a); }

  // Open link incidents, and dismissed ones whose link is still drained for them.
  Result<std::vector<CaseRow>> open_cases();
  Result<std::vector<UnfinishedAction>> unfinished_actions();
  Result<std::vector<std::pair<std::string, Time>>> drains_since(Time since);
  Status set_validation(int64_t incident, int failures, std::optional<Time> since);
  Status set_loss(int64_t incident, double loss);
  // The intent row and the link's drain state in one transaction. With `daemon` set, only
  // while that daemon holds leader epoch `epoch` (fencing); and never while another action
  // on the link is unfinished (unique index).
  Result<int64_t> begin_action(const remediation::ActionIntent& intent, const std::string& link,
                               double traffic_before, const std::string& daemon, int64_t epoch);
  Status action_applied(int64_t action, const std::vector<std::string>& steps);
  Status finish_action(int64_t action, const remediation::ActionIntent& intent, const std::string& end,
                       bool link_drained, const std::string& reason, const std::vector<std::string>& steps,
                       Time at, const std::string& link);
  // A drain the planner held back, with why (an action row in state refused).
  Status write_refusal(const remediation::ActionIntent& intent, const std::string& link_name,
                       const std::string& reason);
  Result<int> incidents_opened_since(Time since);
  Result<BreakerRow> breaker();
  Status open_breaker(Time at, const std::string& reason);
  // Every action (of one incident, when given), newest last.
  Result<std::vector<ActionRow>> actions(std::optional<int64_t> incident_id);

 private:
  Connection& c_;
  Actor actor_{"medicd", "daemon", ""};
};

class DbRemediationStore final : public remediation::RemediationStore {
 public:
  DbRemediationStore(RemediationRecords& records, IncidentStore& incidents, const fabric::Topology& topology)
      : db_(records), incidents_(incidents), topology_(topology) {}
  // Actions are begun only while `daemon` holds leader epoch `epoch` (empty: no fencing).
  void set_fence(std::string daemon, int64_t epoch) {
    daemon_ = std::move(daemon);
    epoch_ = epoch;
  }

  Result<std::vector<remediation::CaseRecord>> open_cases() override;
  Result<std::vector<remediation::ActionRecord>> unfinished_actions() override;
  Result<std::vector<std::pair<fabric::LinkId, Time>>> drains_since(Time since) override;
  Status set_state(int64_t incident, triage::IncidentState state, Time at, const std::string& reason) override;
  Status set_states(std::span<const int64_t> incidents, triage::IncidentState state, Time at,
                    std::span<const std::string> reasons) override;
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
  RemediationRecords& db_;
  IncidentStore& incidents_;
  const fabric::Topology& topology_;
  std::string daemon_;
  int64_t epoch_ = 0;
};

}  // namespace medic::db
