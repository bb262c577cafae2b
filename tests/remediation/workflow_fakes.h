// The workflow's fakes, shared by its tests (tests/remediation/workflow_test.cpp) and its
// random-schedule property test: the durable record in memory, the counters, and switches
// that remember their drains and fail on demand.
#pragma once

#include <map>
#include <utility>
#include <string>
#include <vector>

#include "remediation/workflow.h"

namespace medic::remediation::fakes {

using triage::IncidentClass;
using triage::IncidentState;

// The workflow's durable record, in memory, with the database's one rule that matters
// here: one unfinished action per link.
class MemoryStore final : public RemediationStore {
 public:
  struct Action {
    ActionRecord rec;
    std::string end;  // "" while unfinished
    bool drained_after = false;
    std::string reason;
    std::vector<std::string> steps;
  };

  Result<std::vector<CaseRecord>> open_cases() override {
    std::vector<CaseRecord> out;
    for (const auto& [id, c] : cases) {
      if (c.state != IncidentState::closed && c.state != IncidentState::dismissed) out.push_back(c);
    }
    return out;
  }
  Result<std::vector<ActionRecord>> unfinished_actions() override {
    std::vector<ActionRecord> out;
    for (const auto& a : actions) {
      if (a.end.empty()) out.push_back(a.rec);
    }
    return out;
  }
  Result<std::vector<std::pair<fabric::LinkId, Time>>> drains_since(Time since) override {
    std::vector<std::pair<fabric::LinkId, Time>> out;
    for (const auto& a : actions) {
      if (a.rec.kind == ActionKind::drain && a.rec.intent_at >= since) out.emplace_back(a.rec.link, a.rec.intent_at);
    }
    return out;
  }
  Status set_state(int64_t incident, IncidentState state, Time, const std::string& reason) override {
    cases[incident].state = state;
    cases[incident].blocked_reason = reason;
    history[incident].push_back(std::string(triage::to_string(state)));
    return Ok{};
  }
  Status set_states(std::span<const int64_t> incidents, IncidentState state, Time at,
                    std::span<const std::string> reasons) override {
    ++set_states_calls;
    if (!set_states_error.empty()) return Error{set_states_error};
    for (size_t i = 0; i < incidents.size(); ++i) set_state(incidents[i], state, at, reasons[i]);
    return Ok{};
  }
  Status set_validation(int64_t incident, int failures, std::optional<Time> since) override {
    cases[incident].validation_failures = failures;
    cases[incident].validating_since = since;
    return Ok{};
  }
  Result<int64_t> begin_action(const ActionIntent& intent, double traffic_before) override {
    if (!fence_error.empty()) return Error{fence_error};
    for (const auto& a : actions) {
      if (a.rec.link == intent.link && a.end.empty()) return Error{"duplicate key value violates actions_one_intent_per_link"};
    }
    Action a;
    a.rec = {static_cast<int64_t>(actions.size()) + 1, intent.incident_id, intent.link, intent.kind, "intent", intent.at,
             traffic_before};
    actions.push_back(a);
    return a.rec.id;
  }
  Status action_applied(int64_t action, const std::vector<std::string>& steps) override {
    actions[action - 1].rec.state = "applied";
    actions[action - 1].steps = steps;
    return Ok{};
  }
  Status finish_action(int64_t action, const ActionIntent&, ActionEnd end, bool link_drained, const std::string& reason,
                       const std::vector<std::string>& steps, Time) override {
    Action& a = actions[action - 1];
    if (!a.end.empty()) return Error{"action " + std::to_string(action) + " is not unfinished"};
    a.end = std::string(to_string(end));
    a.drained_after = link_drained;
    a.reason = reason;
    a.steps = steps;
    return Ok{};
  }
  Status record_refusal(const ActionIntent&, const std::string& reason) override {
    refusals.push_back(reason);
    return Ok{};
  }
  Result<BreakerState> breaker() override { return breaker_state; }
  Status open_breaker(Time at, const std::string& reason) override {
    breaker_state = {true, at, reason};
    return Ok{};
  }
  Result<int> incidents_opened_since(Time) override { return opened_recently; }

  // A triaged incident on `link`, as the daemon's database would have it.
  void add_incident(int64_t id, fabric::LinkId link, IncidentClass cls = IncidentClass::link_flap, double loss = 1.0) {
    CaseRecord c;
    c.incident_id = id;
    c.link = link;
    c.cls = cls;
    c.severity = detectors::Severity::critical;
    c.state = IncidentState::triaged;
    c.loss = loss;
    cases[id] = c;
  }
  const Action* last_action(fabric::LinkId link) const {
    const Action* found = nullptr;
    for (const auto& a : actions) {
      if (a.rec.link == link) found = &a;
    }
    return found;
  }

  std::map<int64_t, CaseRecord> cases;
  std::map<int64_t, std::vector<std::string>> history;
  std::vector<Action> actions;
  std::vector<std::string> refusals;
  int set_states_calls = 0;
  std::string set_states_error;  // set: set_states refuses (set_state does not)
  BreakerState breaker_state;
  int opened_recently = 0;
  std::string fence_error;
};

class FakeSignals final : public LinkSignals {
 public:
  struct Link {
    double pps = 1000;
    Time from{};
    double peers = 1000;
    int oper = 1;
    double errors = 0;
    bool suppressed = false;
  };
  double tx_pps(fabric::LinkId l) const override { return get(l).pps; }
  Time measured_from(fabric::LinkId l) const override { return get(l).from; }
  double peer_pps(fabric::LinkId l) const override { return get(l).peers; }
  int oper(fabric::LinkId l) const override { return get(l).oper; }
  double error_events(fabric::LinkId l) const override { return get(l).errors; }
  bool flap_suppressed(fabric::LinkId l, Time) const override { return get(l).suppressed; }
  Link& at(fabric::LinkId l) { return links[l]; }

 private:
  Link get(fabric::LinkId l) const {
    const auto it = links.find(l);
    return it == links.end() ? Link{} : it->second;
  }
  std::map<fabric::LinkId, Link> links;
};

// A driver that fails drains on demand and otherwise remembers state like a switch.
class SwitchDriver final : public Driver {
 public:
  std::string kind() const override { return "test"; }
  Result<InterfaceState> drain(const std::string& i) override { return set(i, true); }
  Result<InterfaceState> undrain(const std::string& i) override { return set(i, false); }
  Result<InterfaceState> get_state(const std::string& i) override {
    if (unreachable || lost) return Error{"connection refused"};
    return InterfaceState{i, drained[i], true};
  }
  // A late switch's held calls land now, after the calls it answered meanwhile.
  void settle() {
    for (const auto& [i, v] : pending) drained[i] = v;
    pending.clear();
  }
  std::map<std::string, bool> drained;
  std::vector<std::pair<std::string, bool>> pending;  // a late switch's held calls
  bool fail = false;         // drains refused, nothing done
  bool unreachable = false;  // reads fail
  bool lost = false;         // every call carried out and its answer lost; reads fail
  // Every other call held: its answer lost, the call carried out later (settle), after
  // calls answered in between (a request queued at the switch, overtaken by a newer one).
  bool late = false;
  int calls = 0;

 private:
  Result<InterfaceState> set(const std::string& i, bool drain) {
    ++calls;
    if (late && (hold_next_ = !hold_next_)) {
      pending.emplace_back(i, drain);
      return Error::indeterminate("timeout (after 3 attempts)");
    }
    if (drain && fail) return Error{"HTTP 409: busy"};
    drained[i] = drain;
    if (lost) return Error::indeterminate("timeout (after 3 attempts)");
    return InterfaceState{i, drain, true};
  }
  bool hold_next_ = false;
};

}  // namespace medic::remediation::fakes
