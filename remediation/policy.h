// What remediation does with an incident by itself, per class and severity, and the rules
// that keep automatic action in bounds: automatic or approved per class, rate limits per
// switch and fabric-wide, the circuit breaker, how a drain is verified and how a repaired
// link proves itself before it is undrained. Read from data/remediation.json (or the
// operator's file) and validated in full at start-up.
#pragma once

#include <array>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "common/time.h"
#include "detectors/finding.h"
#include "triage/incident.h"
#include "triage/triage.h"

namespace medic::remediation {

// A drain is only for link faults that hurt traffic now and that taking the link out of
// service cures: a link already down carries nothing; a slow receiver is the host's
// problem; congestion, a silent switch or many links of one switch at once need a person.
enum class Mitigation : uint8_t { drain, none };
Mitigation mitigation_for(triage::IncidentClass cls, detectors::Severity severity);
bool drainable(triage::IncidentClass cls);

// How much traffic the faulty link loses, as a fraction of what it carries (0..1), from
// the evidence of its findings: the corruption loss rate, the probe loss, and for a
// flapping or failing link everything (it stalls every flow on it at each flap). The drain
// planner removes the most loss first when the budget is short.
double loss_estimate(const triage::IncidentUpdate& u);

class PolicyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Mode : uint8_t { automatic, approval };
std::string_view to_string(Mode m);

struct RateLimit {
  int actions = 0;  // drains started within `window`; 0: no limit
  Duration window = std::chrono::hours(1);
};

struct RemediationPolicy {
  // Per drainable class: drained by itself, or only after a person approves.
  std::array<Mode, triage::kIncidentClassCount> modes{};
  // Per drainable class: how many distinct people must approve a drain that waits for
  // approval (the two-person rule: 2); 1 by default.
  std::array<int, triage::kIncidentClassCount> approvals = [] {
    std::array<int, triage::kIncidentClassCount> a{};
    a.fill(1);
    return a;
  }();
  RateLimit per_switch{3, std::chrono::hours(1)};
  RateLimit fabric{20, std::chrono::minutes(10)};
  // The breaker opens when more than `breaker_incidents` incidents open within the window.
  int breaker_incidents = 20;
  Duration breaker_window = std::chrono::minutes(5);
  // The blast-radius cap, judged before a pass drains anything: when the automatic drains
  // one pass would start are more than `blast_drains`, or more than `blast_share` of the
  // fabric's links (rounded up, at least one), none is started: all go to the repair queue
  // and the breaker opens.
  // Many links failing at once is more likely the measurement, or one cause upstream.
  int blast_drains = 8;
  double blast_share = 0.05;
  // After a drain the link's traffic must fall below `verify_moved_fraction` of what it
  // carried (or below `verify_min_pps`) within `verify_window`; links carrying less than
  // `verify_min_pps` before have nothing to show.
  Duration verify_window = std::chrono::seconds(30);
  double verify_min_pps = 50;
  double verify_moved_fraction = 0.1;
  // A repaired link must stay up with flat error counters, clean probes and no flap
  // suppression for `soak` before it is undrained; failing that `max_validation_failures`
  // times escalates it.
  Duration soak = std::chrono::minutes(5);
  int max_validation_failures = 2;

  Mode mode(triage::IncidentClass c) const { return modes[static_cast<size_t>(c)]; }
  int approvals_needed(triage::IncidentClass c) const { return approvals[static_cast<size_t>(c)]; }

  // Throws PolicyError "FILE: $.path: problem".
  static RemediationPolicy load_file(const std::string& path);
  static RemediationPolicy parse(std::string_view text, const std::string& source);
};

}  // namespace medic::remediation
