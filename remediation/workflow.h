// The remediation workflow: one persisted state machine per open link incident, from the
// decision to drain to the undrain after a validated repair. Every step that touches a
// switch writes its intent first and its result after; verification follows every action;
// after a restart, unfinished intents are reconciled against what the switches report.
//
//   triaged/blocked --(policy: approval, or breaker open)--> pending_approval --(approved)--+
//        |                                                                                   |
//        +--(planner: floors, budget, rate limits)--> drain: intent -> applied -> verified ---+--> mitigated
//   mitigated -> repair_requested --(engineer: repaired)--> validating --(soak clean)--> validated
//   validated -> undrain: intent -> applied -> verified -> undrained -> closed
//   validating --(fails)--> repair_requested (again) | escalated (max failures, stays drained)
//   drain fails or traffic does not move -> rolled back, escalated (an end whose state is
//     not known after a lost answer: counted as drained, owed back by the incident)
//   undrain fails, or traffic does not return -> escalated; the ends are read back, and a
//     link with an end drained (or unreadable) stays counted as drained
//
// The switches are called through a SwitchRunner (remediation/actions.h): an action waits
// for its switch's answer across ticks, so a slow switch never holds the poll loop, and
// the answer comes back as data that moves the action on. One action per link; the intent
// is durable before its job is queued.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/metrics.h"
#include "common/result.h"
#include "common/time.h"
#include "detectors/finding.h"
#include "remediation/actions.h"
#include "remediation/capacity.h"
#include "remediation/planner.h"
#include "remediation/policy.h"
#include "triage/incident.h"

namespace medic::remediation {

// An open link incident of a drainable class, as the store keeps it.
struct CaseRecord {
  int64_t incident_id = 0;
  fabric::LinkId link = fabric::kNone;
  triage::IncidentClass cls = triage::IncidentClass::link_flap;
  detectors::Severity severity = detectors::Severity::info;
  triage::IncidentState state = triage::IncidentState::triaged;
  double loss = 0;
  int validation_failures = 0;
  std::optional<Time> validating_since;
  bool approved = false;        // a person approved the drain
  std::string blocked_reason;   // or the approval reason, for pending_approval
  std::optional<Time> fault_at; // when the fault began (for the fault-to-drain latency)
};

// An action whose result is not recorded yet.
struct ActionRecord {
  int64_t id = 0;
  int64_t incident_id = 0;
  fabric::LinkId link = fabric::kNone;
  ActionKind kind = ActionKind::drain;
  std::string state;  // intent or applied
  Time intent_at{};
  double traffic_before = -1;
};

struct BreakerState {
  bool open = false;
  std::optional<Time> opened_at;
  std::string reason;
};

// How an action ended (actions.state).
enum class ActionEnd : uint8_t { succeeded, failed, rolled_back, reconciled };
std::string_view to_string(ActionEnd e);

// Where the workflow is made durable (PostgreSQL in medicd, memory in tests). Every call
// is durable when it returns.
class RemediationStore {
 public:
  virtual ~RemediationStore() = default;
  // Open link incidents, and dismissed ones whose link is still drained for them (the
  // undrain is owed even when the dismissal came while no medicd ran).
  virtual Result<std::vector<CaseRecord>> open_cases() = 0;
  virtual Result<std::vector<ActionRecord>> unfinished_actions() = 0;
  // Drain starts (automatic ones) since `since`, for the rate limits after a restart.
  virtual Result<std::vector<std::pair<fabric::LinkId, Time>>> drains_since(Time since) = 0;
  virtual Status set_state(int64_t incident, triage::IncidentState state, Time at, const std::string& reason) = 0;
  // Several incidents to one state, reasons[i] for incidents[i], in one write where the
  // store can (a wave's dozens queued for approval in one pass).
  virtual Status set_states(std::span<const int64_t> incidents, triage::IncidentState state, Time at,
                            std::span<const std::string> reasons) = 0;
  virtual Status set_validation(int64_t incident, int failures, std::optional<Time> since) = 0;
  // The intent row, and the link marked draining/undraining, in one transaction; refused
  // when this daemon no longer leads or another action on the link is unfinished.
  virtual Result<int64_t> begin_action(const ActionIntent& intent, double traffic_before) = 0;
  virtual Status action_applied(int64_t action, const std::vector<std::string>& steps) = 0;
  virtual Status finish_action(int64_t action, const ActionIntent& intent, ActionEnd end, bool link_drained,
                               const std::string& reason, const std::vector<std::string>& steps, Time at) = 0;
  virtual Status record_refusal(const ActionIntent& intent, const std::string& reason) = 0;
  virtual Result<BreakerState> breaker() = 0;
  virtual Status open_breaker(Time at, const std::string& reason) = 0;
  virtual Result<int> incidents_opened_since(Time since) = 0;
};

// What the counters and detectors say about a link now.
class LinkSignals {
 public:
  virtual ~LinkSignals() = default;
  // Packets per second the link carries (the busier end's transmit rate) over the latest
  // interval, -1 when unknown; and when that interval began.
  virtual double tx_pps(fabric::LinkId link) const = 0;
  virtual Time measured_from(fabric::LinkId link) const = 0;
  // What a healthy link of its groups carries now (mean of its in-service peers), -1 unknown.
  virtual double peer_pps(fabric::LinkId link) const = 0;
  virtual int oper(fabric::LinkId link) const = 0;  // -1 unknown, 0 down, 1 up
  // Errors counted on the link's ports since start (monotonic).
  virtual double error_events(fabric::LinkId link) const = 0;
  virtual bool flap_suppressed(fabric::LinkId link, Time now) const = 0;
};

// The workflow's metrics, declared once (common/metrics.h). What was decided is counted
// apart from what the switches carried out (STYLE 6).
struct WorkflowMetrics {
  explicit WorkflowMetrics(metrics::Registry& r);
  metrics::Counter drains_started, drains_verified, drains_failed, drains_rolled_back, drains_unknown;
  metrics::Counter undrains_verified, undrains_failed;
  metrics::Counter refusals, queued_for_approval, validations_failed, escalations;
  metrics::Counter reconciled, store_errors, breaker_trips, switch_queue_full;
  metrics::Gauge in_flight;
  // From the fault's start (its first finding) to the drain verified from the counters.
  metrics::Histogram fault_to_drain_seconds;
  // How long the switches took to answer one job (drain, undrain or read-back).
  metrics::Histogram switch_call_seconds;
};

class Workflow {
 public:
  // Called before and after each action: (incident, action, link, scope "action", reason).
  using SnapshotHook = std::function<void(int64_t incident, int64_t action, fabric::LinkId link, const std::string& why)>;

  Workflow(const fabric::Topology& topology, CapacityModel& capacity, SwitchRunner& switches, RemediationStore& store,
           const LinkSignals& signals, RemediationPolicy policy, const Clock& clock, metrics::Registry& registry);

  void set_snapshot_hook(SnapshotHook hook) { snapshot_ = std::move(hook); }

  // Loads open cases and starts reconciling unfinished actions by asking the switches (the
  // answers move them on in later ticks). Links with drain state drained (from the store's
  // inventory) must already be set in the capacity model. An action whose switch cannot be
  // reached stays unfinished (its link counted as drained) and is asked again every tick.
  Status start();
  // Forgets everything in memory and starts again from the store (leading again after the
  // lock was lost: another daemon may have acted meanwhile). The capacity model's drain
  // states must have been reloaded first.
  Status restart();

  // Triage says something about an incident (new, reopened, escalated, or more findings):
  // `at` when it was seen, `fault_at` when its fault began.
  void on_update(int64_t incident, fabric::LinkId link, triage::IncidentClass cls, detectors::Severity severity,
                 double loss, Time at, Time fault_at = Time{});

  // One pass: the switches' answers, engineers' decisions, the breaker, in-flight actions,
  // validation soaks, and new drains. Returns the incidents closed in this pass (triage
  // forgets them).
  std::vector<int64_t> tick();

  const WorkflowMetrics& metrics() const { return metrics_; }
  size_t open_cases() const { return cases_.size(); }
  std::optional<triage::IncidentState> state_of(int64_t incident) const;
  bool breaker_open() const { return breaker_.open; }
  size_t in_flight() const { return inflight_.size(); }
  // Actions waiting for a switch's answer now.
  size_t waiting_for_switches() const;

 private:
  struct Case {
    CaseRecord rec;
    double errors_at_soak_start = 0;
    // Timers run on the monotonic clock (Clock::monotonic): a wall clock stepped back or
    // forward (NTP) neither holds nor hurries them. The wall times above are what is recorded.
    std::optional<Duration> soak_started;    // monotonic; from validating_since after a restart
    std::optional<Duration> last_fault;      // monotonic: a warning or worse finding arrived then
    std::optional<Duration> fault_began;     // monotonic estimate of rec.fault_at
    std::string written_reason;  // blocked/pending reason last written, to write only changes
    // Dismissed while drained: the undrain is tried again no sooner than this (monotonic),
    // backing off after each failure (undrain_failures) so a switch that keeps failing is
    // not drained and undrained every pass.
    Duration undrain_after{};
    int undrain_failures = 0;
  };
  // An action under way. Its phase says what it waits for: a switch's answer to the job
  // `ticket` (switching, rolling_back, reconcile_*), or the counters (verifying).
  // undrain_read: an undrain not verified by the counters, its ends read back (a drain
  // carried out late, after the undrain, leaves an end drained).
  enum class Phase : uint8_t {
    switching, verifying, rolling_back, undrain_read, reconcile_read, reconcile_undo, reconcile_undrain
  };
  struct InFlight {
    ActionRecord action;
    Phase phase = Phase::switching;
    uint64_t ticket = 0;     // the job it waits for (0: none queued yet: queue it)
    Time applied_at{};
    Duration applied_mono{};  // the verify window runs from here, on the monotonic clock
    Time from_at_apply{};     // signals' measured_from when applied: a reading must be newer
    std::vector<std::string> steps;
    std::string why;         // rolling back, or an undrain's ends read back: why
    std::optional<Time> fault_at;
    std::optional<Duration> fault_began;  // monotonic
    bool retry = false;      // its job failed this pass: asked again next pass
  };

  void reconcile_started(const ActionRecord& a);
  void launch(InFlight f);
  void submit(InFlight& f);
  void collect(Time now);
  void on_result(InFlight& f, SwitchResult& r, Time now);
  void on_drain_applied(InFlight& f, SwitchResult& r, Time now);
  void on_undrain_applied(InFlight& f, SwitchResult& r, Time now);
  void on_rolled_back(InFlight& f, SwitchResult& r, Time now);
  void on_undrain_read(InFlight& f, SwitchResult& r, Time now);
  // A dismissed link's undrain failed: tried again after 30 s, doubling to 10 minutes.
  void back_off_undrain(Case* c);
  void on_reconcile_read(InFlight& f, SwitchResult& r, Time now);
  void on_reconcile_undone(InFlight& f, SwitchResult& r, Time now);
  void on_reconcile_undrained(InFlight& f, SwitchResult& r, Time now);
  Case* case_of(const InFlight& f);
  void refresh_cases();
  void check_breaker(Time now);
  void progress_inflight(Time now);
  void progress_validation(Case& c, Time now);
  void plan_and_drain(Time now);
  void start_drain(Case& c, bool automatic, Time now);
  void start_undrain(Case& c, Time now);
  void finish(InFlight& f, ActionEnd end, bool drained, const std::string& reason, Time now);
  void set_state(Case& c, triage::IncidentState s, Time now, const std::string& reason = "");
  // Cases to pending_approval, each with its reason, in one write (those already there
  // with that reason left out).
  void queue_for_approval(const std::vector<std::pair<Case*, std::string>>& queued, Time now);
  void mark_applied(InFlight& f, Time now);
  bool reading_after_apply(const InFlight& f, Time now) const;
  bool wants_drain(const Case& c) const;
  std::string rate_limited(fabric::LinkId link, Time now) const;
  bool store_ok(const Status& st, const char* what);

  const fabric::Topology& topology_;
  CapacityModel& capacity_;
  SwitchRunner& switches_;
  RemediationStore& store_;
  const LinkSignals& signals_;
  RemediationPolicy policy_;
  const Clock& clock_;
  SnapshotHook snapshot_;
  std::map<int64_t, Case> cases_;
  std::map<fabric::LinkId, InFlight> inflight_;
  uint64_t next_ticket_ = 1;
  std::map<uint64_t, fabric::LinkId> tickets_;  // jobs queued or running, by ticket
  std::deque<std::pair<fabric::LinkId, Time>> recent_drains_;
  BreakerState breaker_;
  WorkflowMetrics metrics_;
};

}  // namespace medic::remediation
