#include "remediation/workflow.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "common/strings.h"

namespace medic::remediation {

using triage::IncidentState;

std::string_view to_string(ActionEnd e) {
  switch (e) {
    case ActionEnd::succeeded: return "succeeded";
    case ActionEnd::failed: return "failed";
    case ActionEnd::rolled_back: return "rolled_back";
    case ActionEnd::reconciled: return "reconciled";
  }
  return "?";
}

namespace {

std::string pps_text(double pps) {
  return pps < 0 ? "unknown" : std::to_string(static_cast<int64_t>(std::llround(pps))) + " pps";
}

bool waiting_to_drain(IncidentState s) {
  return s == IncidentState::detected || s == IncidentState::triaged || s == IncidentState::blocked ||
         s == IncidentState::pending_approval;
}

}  // namespace

WorkflowMetrics::WorkflowMetrics(metrics::Registry& r)
    : drains_started(r.counter("medic_drains_started_total", "Drains begun: intent recorded, switch job queued.")),
      drains_verified(r.counter("medic_drains_succeeded_total", "Drains carried out and verified.")),
      drains_failed(r.counter("medic_drains_failed_total", "Drains that failed at the switch or were rolled back.")),
      drains_rolled_back(r.counter("medic_drains_rolled_back_total",
                                   "Drains rolled back because traffic did not move off the link (also counted as failed).")),
      drains_unknown(r.counter("medic_drains_unknown_total",
                               "Failed drains that may have left an end drained (a call whose answer was lost, or a "
                               "put-back the switch did not confirm): the link is counted as drained until undrained "
                               "(also counted as failed).")),
      undrains_verified(r.counter("medic_undrains_succeeded_total", "Undrains carried out and verified.")),
      undrains_failed(r.counter("medic_undrains_failed_total", "Undrains that failed or were not verified.")),
      refusals(r.counter("medic_drains_refused_total", "Drains held back by capacity floors, the budget or a rate limit.")),
      queued_for_approval(r.counter("medic_queued_for_approval_total", "Drains sent to the repair queue for approval.")),
      validations_failed(r.counter("medic_validations_failed_total", "Repaired links that failed their validation soak.")),
      escalations(r.counter("medic_escalations_total", "Incidents handed to a person: an action failed or a link failed validation.")),
      reconciled(r.counter("medic_actions_reconciled_total", "Unfinished actions reconciled after a restart.")),
      store_errors(r.counter("medic_remediation_store_errors_total", "Remediation records that could not be written or read.")),
      breaker_trips(r.counter("medic_breaker_trips_total", "Times the circuit breaker opened.")),
      switch_queue_full(r.counter("medic_switch_queue_full_total", "Switch jobs that found the queue full and waited a tick.")),
      in_flight(r.gauge("medic_actions_in_flight", "Actions under way: waiting for a switch or for verification.")),
      fault_to_drain_seconds(r.histogram("medic_fault_to_drain_seconds",
                                         "From a fault's first finding to its link's drain verified from the counters.",
                                         metrics::seconds_buckets())),
      switch_call_seconds(r.histogram("medic_switch_call_seconds",
                                      "How long the switches took to answer one drain, undrain or read-back of a link.",
                                      metrics::seconds_buckets())) {}

Workflow::Workflow(const fabric::Topology& topology, CapacityModel& capacity, SwitchRunner& switches,
                   RemediationStore& store, const LinkSignals& signals, RemediationPolicy policy, const Clock& clock,
                   metrics::Registry& registry)
    : topology_(topology),
      capacity_(capacity),
      switches_(switches),
      store_(store),
      signals_(signals),
      policy_(std::move(policy)),
      clock_(clock),
      metrics_(registry) {}

bool Workflow::store_ok(const Status& st, const char* what) {
  if (st.ok()) return true;
  ++metrics_.store_errors;
  spdlog::error("remediation: {}: {}", what, st.error());
  return false;
}

std::optional<IncidentState> Workflow::state_of(int64_t incident) const {
  const auto it = cases_.find(incident);
  if (it == cases_.end()) return std::nullopt;
  return it->second.rec.state;
}

Status Workflow::start() {
  auto cases = store_.open_cases();
  if (!cases.ok()) return cases.failure();
  for (auto& r : *cases) {
    Case c;
    c.rec = r;
    c.written_reason = r.blocked_reason;
    if (r.state == IncidentState::validating) c.errors_at_soak_start = signals_.error_events(r.link);
    cases_[r.incident_id] = std::move(c);
  }
  auto acts = store_.unfinished_actions();
  if (!acts.ok()) return acts.failure();
  // Until its action is reconciled, a link counts as drained: capacity is never overstated.
  for (const auto& a : *acts) capacity_.set_reserved(a.link, true);
  const Time now = clock_.now();
  if (auto recent = store_.drains_since(now - std::max(policy_.per_switch.window, policy_.fabric.window)); recent.ok()) {
    recent_drains_.assign(recent->begin(), recent->end());
  } else {
    return recent.failure();
  }
  if (auto b = store_.breaker(); b.ok()) {
    breaker_ = *b;
  } else {
    return b.failure();
  }
  for (const auto& a : *acts) reconcile_started(a);
  collect(clock_.now());
  return Ok{};
}

Status Workflow::restart() {
  cases_.clear();
  inflight_.clear();
  tickets_.clear();  // answers to jobs queued before are told apart by their tickets, and dropped
  recent_drains_.clear();
  breaker_ = {};
  return start();
}

size_t Workflow::waiting_for_switches() const {
  return static_cast<size_t>(std::count_if(inflight_.begin(), inflight_.end(),
                                           [](const auto& kv) { return kv.second.phase != Phase::verifying; }));
}

Workflow::Case* Workflow::case_of(const InFlight& f) {
  const auto it = cases_.find(f.action.incident_id);
  return it == cases_.end() ? nullptr : &it->second;
}

// The action takes its link and its first job is queued.
void Workflow::launch(InFlight f) {
  const fabric::LinkId link = f.action.link;
  auto [it, fresh] = inflight_.insert_or_assign(link, std::move(f));
  (void)fresh;
  submit(it->second);
}

// Queues the job the action's phase waits for; when the queue is full it is queued again
// next tick (the action keeps its link meanwhile).
void Workflow::submit(InFlight& f) {
  SwitchJob job;
  job.link = f.action.link;
  switch (f.phase) {
    case Phase::switching: job.op = f.action.kind == ActionKind::drain ? SwitchJob::Op::drain : SwitchJob::Op::undrain; break;
    case Phase::rolling_back:
    case Phase::reconcile_undo:
    case Phase::reconcile_undrain: job.op = SwitchJob::Op::undrain; break;
    case Phase::undrain_read:
    case Phase::reconcile_read: job.op = SwitchJob::Op::read_back; break;
    case Phase::verifying: return;
  }
  job.ticket = next_ticket_++;
  if (!switches_.submit(job)) {
    ++metrics_.switch_queue_full;
    f.ticket = 0;
    return;
  }
  f.ticket = job.ticket;
  tickets_[job.ticket] = f.action.link;
}

// The switches' answers: each moves its action on. A runner that answers at once (inline)
// lets an action go through several phases in one pass; a job that failed and is to be
// tried again goes out on the next pass, so an unreachable switch is asked once a pass.
void Workflow::collect(Time now) {
  auto submit_waiting = [&] {
    for (auto& [link, f] : inflight_) {
      if (f.phase != Phase::verifying && f.ticket == 0 && !f.retry && f.action.state != "done") submit(f);
    }
  };
  submit_waiting();
  for (int round = 0; round < 8; ++round) {
    auto results = switches_.take_finished();
    if (results.empty()) break;
    for (SwitchResult& r : results) {
      metrics_.switch_call_seconds.observe(r.seconds);
      const auto t = tickets_.find(r.job.ticket);
      if (t == tickets_.end()) {
        spdlog::info("remediation: answer to an earlier {} of {} dropped (its action was reloaded since)",
                     to_string(r.job.op), topology_.link(r.job.link).name);
        continue;
      }
      tickets_.erase(t);
      const auto it = inflight_.find(r.job.link);
      if (it == inflight_.end() || it->second.ticket != r.job.ticket) continue;
      InFlight& f = it->second;
      f.ticket = 0;
      const Phase before = f.phase;
      const std::string state_before = f.action.state;
      on_result(f, r, now);
      // Still in the same phase, waiting for a switch: it failed and is asked again next pass.
      f.retry = f.phase == before && f.action.state == state_before && f.phase != Phase::verifying;
    }
    submit_waiting();
  }
  for (auto it = inflight_.begin(); it != inflight_.end();) {
    if (it->second.action.state == "done") {
      it = inflight_.erase(it);
      continue;
    }
    it->second.retry = false;
    ++it;
  }
  metrics_.in_flight.set(static_cast<double>(inflight_.size()));
}

void Workflow::on_result(InFlight& f, SwitchResult& r, Time now) {
  switch (f.phase) {
    case Phase::switching:
      if (f.action.kind == ActionKind::drain) {
        on_drain_applied(f, r, now);
      } else {
        on_undrain_applied(f, r, now);
      }
      return;
    case Phase::rolling_back: on_rolled_back(f, r, now); return;
    case Phase::undrain_read: on_undrain_read(f, r, now); return;
    case Phase::reconcile_read: on_reconcile_read(f, r, now); return;
    case Phase::reconcile_undo: on_reconcile_undone(f, r, now); return;
    case Phase::reconcile_undrain: on_reconcile_undrained(f, r, now); return;
    case Phase::verifying: return;
  }
}

// An action found unfinished after a restart: what do the switches say? A drain is read
// back; an undrain is simply finished (undrain is idempotent).
void Workflow::reconcile_started(const ActionRecord& a) {
  InFlight f;
  f.action = a;
  f.phase = a.kind == ActionKind::drain ? Phase::reconcile_read : Phase::reconcile_undrain;
  if (a.kind == ActionKind::undrain) f.steps.push_back("reconcile: finishing the undrain");
  launch(std::move(f));
}

void Workflow::on_reconcile_read(InFlight& f, SwitchResult& r, Time now) {
  const ActionRecord& a = f.action;
  const std::string& name = topology_.link(a.link).name;
  const LinkReadBack& rb = r.read;
  if (!rb.error.empty()) {
    spdlog::warn("reconcile action {} ({} {}): switch not answering, will retry: {}", a.id, to_string(a.kind), name,
                 rb.error);
    return;  // asked again next tick
  }
  ++metrics_.reconciled;
  if (rb.driven > 0 && rb.drained == rb.driven) {
    // The drain went through before the crash: verify it like any other.
    spdlog::info("reconcile action {}: {} is drained at the switch; verifying", a.id, name);
    f.steps.push_back("reconcile: switch reports drained");
    if (!store_ok(store_.action_applied(a.id, f.steps), "action_applied")) return;
    f.action.state = "applied";
    mark_applied(f, now);
    f.phase = Phase::verifying;
    capacity_.set_reserved(a.link, false);
    capacity_.set_drained(a.link, true);
    return;
  }
  // Nothing (or only one end) was drained: undo what was done and let the planner decide again.
  f.steps.push_back("reconcile: " + std::to_string(rb.drained) + " of " + std::to_string(rb.driven) +
                    " ends drained; drain not completed");
  if (rb.drained > 0) {
    f.phase = Phase::reconcile_undo;
    return;  // the undo job is queued by collect()
  }
  SwitchResult none;
  none.outcome.succeeded = true;
  on_reconcile_undone(f, none, now);
}

void Workflow::on_reconcile_undone(InFlight& f, SwitchResult& r, Time now) {
  const ActionRecord& a = f.action;
  const std::string& name = topology_.link(a.link).name;
  if (!r.outcome.succeeded) {
    spdlog::warn("reconcile action {}: could not undo the half-drained {}: {}", a.id, name, r.outcome.error);
    return;  // tried again next tick
  }
  for (auto& step : r.outcome.steps) f.steps.push_back(std::move(step));
  const ActionIntent intent{a.incident_id, a.link, a.kind, a.intent_at};
  if (!store_ok(store_.finish_action(a.id, intent, ActionEnd::reconciled, false,
                                     "interrupted before the switch was drained; will be decided again", f.steps, now),
                "finish_action")) {
    f.phase = Phase::reconcile_read;  // read again and retry
    return;
  }
  capacity_.set_reserved(a.link, false);
  capacity_.set_drained(a.link, false);
  f.action.state = "done";
  spdlog::info("reconcile action {}: {} was not drained; undone and back to the planner", a.id, name);
}

void Workflow::on_reconcile_undrained(InFlight& f, SwitchResult& r, Time now) {
  const ActionRecord& a = f.action;
  if (!r.outcome.succeeded) {
    spdlog::warn("reconcile action {}: undrain of {} failed, will retry: {}", a.id, topology_.link(a.link).name,
                 r.outcome.error);
    return;
  }
  ++metrics_.reconciled;
  for (auto& step : r.outcome.steps) f.steps.push_back(std::move(step));
  if (!store_ok(store_.action_applied(a.id, f.steps), "action_applied")) return;
  f.action.state = "applied";
  mark_applied(f, now);
  f.phase = Phase::verifying;
  // Still counted out of service until the undrain is verified (see on_undrain_applied).
  capacity_.set_reserved(a.link, false);
  capacity_.set_drained(a.link, true);
}

void Workflow::on_update(int64_t incident, fabric::LinkId link, triage::IncidentClass cls,
                         detectors::Severity severity, double loss, Time at, Time fault_at) {
  if (link == fabric::kNone || !drainable(cls)) return;
  auto it = cases_.find(incident);
  if (it == cases_.end()) {
    Case c;
    c.rec.incident_id = incident;
    c.rec.link = link;
    c.rec.cls = cls;
    c.rec.state = IncidentState::triaged;
    it = cases_.emplace(incident, std::move(c)).first;
  }
  Case& c = it->second;
  if (fault_at != Time{} && (!c.rec.fault_at || fault_at < *c.rec.fault_at)) c.rec.fault_at = fault_at;
  c.rec.severity = std::max(c.rec.severity, severity);
  c.rec.loss = std::max(c.rec.loss, loss);
  const Duration mono = clock_.monotonic();
  if (severity >= detectors::Severity::warning) c.last_fault = mono;
  // How long ago the fault began, by the wall clock now, placed on the monotonic clock: a
  // later step of the wall clock does not stretch or shrink the fault-to-drain latency.
  if (c.rec.fault_at && (!c.fault_began || *c.rec.fault_at == fault_at)) {
    c.fault_began = mono - std::max(Duration{0}, at - *c.rec.fault_at);
  }
  // A reopened incident starts over from the decision to drain (its link may still be drained).
  if (c.rec.state == IncidentState::closed || c.rec.state == IncidentState::undrained) c.rec.state = IncidentState::triaged;
}

void Workflow::mark_applied(InFlight& f, Time now) {
  f.applied_at = now;
  f.applied_mono = clock_.monotonic();
  f.from_at_apply = signals_.measured_from(f.action.link);
}

// Whether the link's latest rate was measured over an interval that began after the action
// was applied. Readings are stamped with the wall clock, which may have been stepped since:
// the apply is placed in the wall clock's current frame by the monotonic time elapsed since,
// and a reading the counters have not replaced since the apply is never new, even one
// stamped at the apply's own instant (it was there before the switch was called).
bool Workflow::reading_after_apply(const InFlight& f, Time now) const {
  const Time from = signals_.measured_from(f.action.link);
  if (from == Time{}) return false;
  if (from == f.from_at_apply) return false;
  return from >= now - (clock_.monotonic() - f.applied_mono);
}

void Workflow::set_state(Case& c, IncidentState s, Time now, const std::string& reason) {
  const bool same = c.rec.state == s && c.written_reason == reason;
  if (same) return;
  if (!store_ok(store_.set_state(c.rec.incident_id, s, now, reason), "set_state")) return;
  c.rec.state = s;
  c.written_reason = reason;
}

void Workflow::queue_for_approval(const std::vector<std::pair<Case*, std::string>>& queued, Time now) {
  std::vector<Case*> cases;
  std::vector<int64_t> ids;
  std::vector<std::string> reasons;
  for (const auto& [c, reason] : queued) {
    if (c->rec.state == IncidentState::pending_approval && c->written_reason == reason) continue;
    cases.push_back(c);
    ids.push_back(c->rec.incident_id);
    reasons.push_back(reason);
  }
  if (ids.empty()) return;
  const bool together = ids.size() > 1 && store_.set_states(ids, IncidentState::pending_approval, now, reasons).ok();
  for (size_t i = 0; i < cases.size(); ++i) {
    const bool was = cases[i]->rec.state == IncidentState::pending_approval;
    if (together) {
      cases[i]->rec.state = IncidentState::pending_approval;
      cases[i]->written_reason = reasons[i];
    } else {
      // One, or refused together: one at a time, so that each fails (and is queued again at
      // the next pass) or not on its own.
      set_state(*cases[i], IncidentState::pending_approval, now, reasons[i]);
    }
    if (!was && cases[i]->rec.state == IncidentState::pending_approval) ++metrics_.queued_for_approval;
  }
}

std::vector<int64_t> Workflow::tick() {
  const Time now = clock_.now();
  std::vector<int64_t> closed;
  collect(now);
  refresh_cases();
  check_breaker(now);
  progress_inflight(now);
  for (auto& [id, c] : cases_) {
    if (inflight_.count(c.rec.link) != 0) continue;
    // An action finished but the incident's next state was not written (a crash, a store
    // error): the link's recorded drain state says where the incident is, not a new action.
    if (!capacity_.reserved(c.rec.link)) {
      if (waiting_to_drain(c.rec.state) && capacity_.drained(c.rec.link)) {
        set_state(c, IncidentState::mitigated, now);
      } else if ((c.rec.state == IncidentState::validated || c.rec.state == IncidentState::undrained) &&
                 !capacity_.drained(c.rec.link)) {
        set_state(c, IncidentState::undrained, now);
        set_state(c, IncidentState::closed, now);
      }
    }
    if (c.rec.state == IncidentState::mitigated) set_state(c, IncidentState::repair_requested, now);
    if (c.rec.state == IncidentState::repaired || c.rec.state == IncidentState::validating) progress_validation(c, now);
    if (c.rec.state == IncidentState::validated && !breaker_.open) start_undrain(c, now);
    // Dismissed by a person while drained: the link goes back into service.
    if (c.rec.state == IncidentState::dismissed && capacity_.drained(c.rec.link) && clock_.monotonic() >= c.undrain_after) {
      start_undrain(c, now);
    }
  }
  plan_and_drain(now);
  // Answers already there (a runner that calls the switches at once) move their actions on
  // in this pass.
  collect(clock_.now());
  // Forget what is over: closed here, or dismissed with the link back in service.
  for (auto it = cases_.begin(); it != cases_.end();) {
    const auto s = it->second.rec.state;
    const bool busy = inflight_.count(it->second.rec.link) != 0;
    if (!busy && (s == IncidentState::closed || (s == IncidentState::dismissed && !capacity_.drained(it->second.rec.link)))) {
      if (s == IncidentState::closed) closed.push_back(it->first);
      it = cases_.erase(it);
    } else {
      ++it;
    }
  }
  return closed;
}

// Engineers decide in the database (approve, repaired, dismiss): take their word.
void Workflow::refresh_cases() {
  auto rows = store_.open_cases();
  if (!rows.ok()) {
    ++metrics_.store_errors;
    spdlog::error("remediation: open_cases: {}", rows.error());
    return;
  }
  std::map<int64_t, const CaseRecord*> fresh;
  for (const auto& r : *rows) fresh[r.incident_id] = &r;
  for (auto& [id, c] : cases_) {
    const auto f = fresh.find(id);
    if (f == fresh.end() || f->second->state == IncidentState::dismissed) {
      // No longer open in the store: closed or dismissed by a person.
      if (c.rec.state != IncidentState::closed) c.rec.state = IncidentState::dismissed;
      continue;
    }
    const CaseRecord& r = *f->second;
    c.rec.approved = r.approved;
    if (r.state == IncidentState::repaired && c.rec.state == IncidentState::repair_requested) {
      c.rec.state = IncidentState::repaired;
    } else if (r.state == IncidentState::repaired && c.rec.state == IncidentState::escalated) {
      c.rec.state = IncidentState::repaired;  // a person repaired an escalated link: validate again
      c.rec.validation_failures = 0;
    }
  }
  for (const auto& r : *rows) {
    if (cases_.count(r.incident_id) == 0) {
      Case c;
      c.rec = r;
      c.written_reason = r.blocked_reason;
      cases_[r.incident_id] = std::move(c);
    }
  }
}

void Workflow::check_breaker(Time now) {
  if (breaker_.open) {
    // Reset by a person (medic breaker reset): read it back.
    if (auto b = store_.breaker(); b.ok()) breaker_ = *b;
    if (breaker_.open) return;
    spdlog::info("circuit breaker reset: automatic remediation resumes");
  }
  if (policy_.breaker_incidents <= 0) return;
  auto n = store_.incidents_opened_since(now - policy_.breaker_window);
  if (!n.ok()) {
    ++metrics_.store_errors;
    spdlog::error("remediation: incidents_opened_since: {}", n.error());
    return;
  }
  if (*n <= policy_.breaker_incidents) return;
  const std::string reason = "circuit breaker open: " + std::to_string(*n) + " incidents opened in the last " +
                             format_number(seconds(policy_.breaker_window)) + " s (limit " +
                             std::to_string(policy_.breaker_incidents) + ")";
  if (!store_ok(store_.open_breaker(now, reason), "open_breaker")) return;
  breaker_.open = true;
  breaker_.opened_at = now;
  breaker_.reason = reason;
  ++metrics_.breaker_trips;
  spdlog::error("{}: automatic drains and undrains stop; everything goes to the repair queue", reason);
}

void Workflow::finish(InFlight& f, ActionEnd end, bool drained, const std::string& reason, Time now) {
  const ActionIntent intent{f.action.incident_id, f.action.link, f.action.kind, f.action.intent_at};
  store_ok(store_.finish_action(f.action.id, intent, end, drained, reason, f.steps, now), "finish_action");
  f.action.state = "done";
  if (snapshot_) snapshot_(f.action.incident_id, f.action.id, f.action.link, "after " + std::string(to_string(f.action.kind)) + " (" + std::string(to_string(end)) + ")");
}

void Workflow::progress_inflight(Time now) {
  for (auto it = inflight_.begin(); it != inflight_.end();) {
    InFlight& f = it->second;
    if (f.phase != Phase::verifying) {
      ++it;
      continue;
    }
    const fabric::LinkId link = f.action.link;
    const std::string& name = topology_.link(link).name;
    Case* c = case_of(f);
    const bool fresh = reading_after_apply(f, now);
    const double pps = signals_.tx_pps(link);
    const bool timed_out = clock_.monotonic() - f.applied_mono >= policy_.verify_window;
    bool done = false;
    if (f.action.kind == ActionKind::drain) {
      const double before = f.action.traffic_before;
      const double limit = std::max(before * policy_.verify_moved_fraction, policy_.verify_min_pps);
      const bool vacuous = before < policy_.verify_min_pps;
      if (vacuous || (fresh && pps >= 0 && pps <= limit)) {
        f.steps.push_back(vacuous ? "verify traffic: " + pps_text(before) + " before, nothing to show"
                                  : "verify traffic: " + pps_text(before) + " before, " + pps_text(pps) + " after");
        finish(f, ActionEnd::succeeded, true, "", now);
        ++metrics_.drains_verified;
        if (f.fault_began) {
          metrics_.fault_to_drain_seconds.observe(seconds(clock_.monotonic() - *f.fault_began));
        } else if (f.fault_at && *f.fault_at <= now) {
          metrics_.fault_to_drain_seconds.observe(seconds(now - *f.fault_at));  // reloaded: the wall clock is all there is
        }
        spdlog::info("incident {}: drained {} and verified ({})", f.action.incident_id, name, f.steps.back());
        // Dismissed meanwhile: stays dismissed, and tick() puts the link back.
        if (c != nullptr && c->rec.state != IncidentState::dismissed) {
          set_state(*c, IncidentState::mitigated, now);
          set_state(*c, IncidentState::repair_requested, now);
        }
        done = true;
      } else if (timed_out) {
        // The switch says drained but traffic did not move: put it back and call a person.
        f.why = "traffic did not move off the link within " + format_number(seconds(policy_.verify_window)) + " s (" +
                pps_text(before) + " before, " + (fresh ? pps_text(pps) : "no fresh reading") + " after)";
        f.steps.push_back("verify traffic: " + f.why);
        f.phase = Phase::rolling_back;
        submit(f);
        spdlog::warn("incident {}: drain of {} not verified: {}; rolling back", f.action.incident_id, name, f.why);
      }
    } else {
      // Undrain: the link must be up and carry traffic again if its peers do.
      const double peers = signals_.peer_pps(link);
      const bool expect_traffic = peers >= policy_.verify_min_pps;
      const bool up = signals_.oper(link) != 0;
      if (up && (!expect_traffic || (fresh && pps >= policy_.verify_moved_fraction * peers))) {
        f.steps.push_back("verify traffic: " + pps_text(pps) + " (peers " + pps_text(peers) + ")");
        capacity_.set_drained(link, false);
        finish(f, ActionEnd::succeeded, false, "", now);
        ++metrics_.undrains_verified;
        spdlog::info("incident {}: undrained {} and verified", f.action.incident_id, name);
        if (c != nullptr && c->rec.state != IncidentState::dismissed) {
          set_state(*c, IncidentState::undrained, now);
          set_state(*c, IncidentState::closed, now);
        }
        done = true;
      } else if (timed_out) {
        f.why = std::string(up ? "" : "link down; ") + "traffic did not return within " +
                format_number(seconds(policy_.verify_window)) + " s (" + (fresh ? pps_text(pps) : "no fresh reading") +
                ", peers " + pps_text(peers) + ")";
        f.steps.push_back("verify traffic: " + f.why);
        // What do the switches say now? A drain whose answer was lost may have been carried
        // out after this undrain; the read-back job is queued by collect().
        f.phase = Phase::undrain_read;
        spdlog::warn("incident {}: undrain of {} not verified: {}; reading its ends back", f.action.incident_id, name,
                     f.why);
      }
    }
    it = done ? inflight_.erase(it) : std::next(it);
  }
}

void Workflow::progress_validation(Case& c, Time now) {
  const fabric::LinkId link = c.rec.link;
  if (c.rec.state == IncidentState::repaired) {
    c.rec.validating_since = now;
    c.soak_started = clock_.monotonic();
    c.errors_at_soak_start = signals_.error_events(link);
    store_ok(store_.set_validation(c.rec.incident_id, c.rec.validation_failures, now), "set_validation");
    set_state(c, IncidentState::validating, now);
    spdlog::info("incident {}: {} repaired; validation soak of {} s starts", c.rec.incident_id,
                 topology_.link(link).name, format_number(seconds(policy_.soak)));
    return;
  }
  const Duration mono = clock_.monotonic();
  if (!c.soak_started) {
    // Reloaded while soaking: what the wall clock says has passed, never less than nothing.
    c.soak_started = mono - std::max(Duration{0}, now - c.rec.validating_since.value_or(now));
  }
  std::string failure;
  if (signals_.oper(link) == 0) {
    failure = "link down during the soak";
  } else if (signals_.error_events(link) > c.errors_at_soak_start) {
    failure = "error counters rose by " + format_number(signals_.error_events(link) - c.errors_at_soak_start) +
              " during the soak";
  } else if (c.last_fault && *c.last_fault > *c.soak_started) {
    failure = "a new finding during the soak";
  }
  if (!failure.empty()) {
    ++c.rec.validation_failures;
    ++metrics_.validations_failed;
    c.rec.validating_since.reset();
    c.soak_started.reset();
    store_ok(store_.set_validation(c.rec.incident_id, c.rec.validation_failures, std::nullopt), "set_validation");
    const std::string n = std::to_string(c.rec.validation_failures);
    if (c.rec.validation_failures >= policy_.max_validation_failures) {
      ++metrics_.escalations;
      spdlog::error("incident {}: {} failed validation {} times ({}); escalated, stays drained", c.rec.incident_id,
                    topology_.link(link).name, n, failure);
      set_state(c, IncidentState::escalated, now, "failed validation " + n + " times: " + failure);
    } else {
      spdlog::warn("incident {}: {} failed validation ({}); repair requested again", c.rec.incident_id,
                   topology_.link(link).name, failure);
      set_state(c, IncidentState::repair_requested, now, "validation failed: " + failure);
    }
    return;
  }
  if (mono - *c.soak_started >= policy_.soak && !signals_.flap_suppressed(link, now)) {
    set_state(c, IncidentState::validated, now);
  }
}

bool Workflow::wants_drain(const Case& c) const {
  return waiting_to_drain(c.rec.state) && mitigation_for(c.rec.cls, c.rec.severity) == Mitigation::drain &&
         !capacity_.drained(c.rec.link) && !capacity_.reserved(c.rec.link) && inflight_.count(c.rec.link) == 0;
}

std::string Workflow::rate_limited(fabric::LinkId link, Time now) const {
  const fabric::Link& l = topology_.link(link);
  int fabric_n = 0;
  std::map<fabric::DeviceId, int> per_dev;
  for (const auto& [dl, at] : recent_drains_) {
    if (now - at < policy_.fabric.window) ++fabric_n;
    if (now - at < policy_.per_switch.window) {
      const fabric::Link& d = topology_.link(dl);
      ++per_dev[topology_.port(d.a).device];
      if (topology_.port(d.b).device != topology_.port(d.a).device) ++per_dev[topology_.port(d.b).device];
    }
  }
  if (policy_.fabric.actions > 0 && fabric_n >= policy_.fabric.actions) {
    return "rate limit: " + std::to_string(fabric_n) + " drains in the fabric in the last " +
           format_number(seconds(policy_.fabric.window)) + " s (limit " + std::to_string(policy_.fabric.actions) + ")";
  }
  if (policy_.per_switch.actions > 0) {
    for (const fabric::PortId p : {l.a, l.b}) {
      const fabric::DeviceId d = topology_.port(p).device;
      if (!topology_.device(d).is_switch()) continue;
      if (per_dev[d] >= policy_.per_switch.actions) {
        return "rate limit: " + std::to_string(per_dev[d]) + " drains on " + topology_.device(d).name +
               " in the last " + format_number(seconds(policy_.per_switch.window)) + " s (limit " +
               std::to_string(policy_.per_switch.actions) + ")";
      }
    }
  }
  return "";
}

void Workflow::plan_and_drain(Time now) {
  while (!recent_drains_.empty() &&
         now - recent_drains_.front().second >= std::max(policy_.per_switch.window, policy_.fabric.window)) {
    recent_drains_.pop_front();
  }
  std::vector<DrainCandidate> candidates;
  std::map<int64_t, bool> automatic;
  std::vector<std::pair<Case*, std::string>> queued;
  for (auto& [id, c] : cases_) {
    if (!wants_drain(c)) continue;
    const bool needs_approval = policy_.mode(c.rec.cls) == Mode::approval;
    if (!c.rec.approved && (needs_approval || breaker_.open)) {
      queued.emplace_back(&c, breaker_.open ? breaker_.reason
                                            : std::string(triage::to_string(c.rec.cls)) +
                                                  " drains need approval (remediation policy)");
      continue;
    }
    candidates.push_back({id, c.rec.link, c.rec.loss});
    automatic[id] = !c.rec.approved;
  }
  queue_for_approval(queued, now);
  if (candidates.empty()) return;
  const DrainPlan plan = plan_drains(capacity_, candidates);
  // The blast-radius cap, before anything is touched: too many automatic drains at once
  // is more likely the measurement, or one cause upstream, than that many bad links.
  size_t wanted = 0;
  for (const auto& d : plan.drain) wanted += automatic[d.incident_id] ? 1 : 0;
  // At least one drain: the share of a small fabric's links may be less than one link.
  const double share_cap = std::max(1.0, std::ceil(policy_.blast_share * static_cast<double>(topology_.links().size())));
  const bool capped = wanted > static_cast<size_t>(policy_.blast_drains) || static_cast<double>(wanted) > share_cap;
  if (capped) {
    const std::string reason = "blast radius: " + std::to_string(wanted) + " automatic drains wanted in one pass (cap " +
                               std::to_string(policy_.blast_drains) + ", and " + format_number(share_cap) + ": " +
                               format_percent(policy_.blast_share) + " of " + std::to_string(topology_.links().size()) +
                               " links)";
    if (!breaker_.open && store_ok(store_.open_breaker(now, reason), "open_breaker")) {
      breaker_.open = true;
      breaker_.opened_at = now;
      breaker_.reason = reason;
      ++metrics_.breaker_trips;
      spdlog::error("{}: none is drained; everything goes to the repair queue and the breaker opens", reason);
    }
    queued.clear();
    for (auto& [id, c] : cases_) {
      if (automatic.count(id) && automatic[id]) queued.emplace_back(&c, reason);
    }
    queue_for_approval(queued, now);
  }
  for (const auto& w : plan.wait) {
    auto it = cases_.find(w.candidate.incident_id);
    if (it == cases_.end() || (capped && automatic[w.candidate.incident_id])) continue;
    if (it->second.written_reason != w.reason) {
      ++metrics_.refusals;
      spdlog::warn("incident {}: drain of {} waits: {}", it->first, topology_.link(w.candidate.link).name, w.reason);
      store_ok(store_.record_refusal({it->first, w.candidate.link, ActionKind::drain, now}, w.reason), "record_refusal");
    }
    set_state(it->second, IncidentState::blocked, now, w.reason);
  }
  for (const auto& d : plan.drain) {
    auto it = cases_.find(d.incident_id);
    if (it == cases_.end() || (capped && automatic[d.incident_id])) continue;  // queued above
    if (automatic[d.incident_id]) {
      if (const std::string limited = rate_limited(d.link, now); !limited.empty()) {
        set_state(it->second, IncidentState::blocked, now, limited);
        continue;
      }
    }
    // The planner judged the set; the model must still agree for this link now (earlier
    // drains of this pass changed it).
    if (const DrainCheck check = capacity_.check_drain(d.link); !check.allowed) {
      set_state(it->second, IncidentState::blocked, now, check.reason);
      continue;
    }
    start_drain(it->second, automatic[d.incident_id], now);
  }
}

void Workflow::start_drain(Case& c, bool automatic, Time now) {
  const fabric::LinkId link = c.rec.link;
  const std::string& name = topology_.link(link).name;
  ActionIntent intent{c.rec.incident_id, link, ActionKind::drain, now};
  capacity_.set_reserved(link, true);
  const double before = signals_.tx_pps(link);
  if (snapshot_) snapshot_(c.rec.incident_id, 0, link, "before drain");
  auto id = store_.begin_action(intent, before);
  if (!id.ok()) {
    capacity_.set_reserved(link, false);
    ++metrics_.store_errors;
    spdlog::error("incident {}: drain of {} not started (intent not recorded, switch not touched): {}",
                  c.rec.incident_id, name, id.error());
    return;
  }
  ++metrics_.drains_started;
  if (automatic) recent_drains_.emplace_back(link, now);
  // The intent is durable: now the switches. The link stays reserved until they answer.
  InFlight f;
  f.action = {*id, c.rec.incident_id, link, ActionKind::drain, "intent", now, before};
  f.phase = Phase::switching;
  f.fault_at = c.rec.fault_at;
  f.fault_began = c.fault_began;
  launch(std::move(f));
}

void Workflow::on_drain_applied(InFlight& f, SwitchResult& r, Time now) {
  const fabric::LinkId link = f.action.link;
  const std::string& name = topology_.link(link).name;
  f.steps = std::move(r.outcome.steps);
  capacity_.set_reserved(link, false);
  Case* c = case_of(f);
  if (!r.outcome.succeeded) {
    ++metrics_.drains_failed;
    ++metrics_.escalations;
    // An end the switch may have drained after all (its answer lost) and did not confirm
    // putting back is counted as drained, owed back by this incident like any drain, so no
    // other drain is handed its headroom; its undrain follows the repair.
    std::string why = r.outcome.error;
    const bool unknown = !r.outcome.unknown.empty();
    if (unknown) {
      std::vector<std::string> ends;
      for (const fabric::PortId p : r.outcome.unknown) ends.push_back(topology_.endpoint_name(p));
      why += "; not known to be undrained: " + join(ends, ", ") + " (counted as drained until undrained)";
      capacity_.set_drained(link, true);
      ++metrics_.drains_unknown;
    }
    finish(f, ActionEnd::failed, unknown, why, now);
    spdlog::error("incident {}: drain of {} failed: {}", f.action.incident_id, name, why);
    if (c != nullptr && c->rec.state != IncidentState::dismissed) {
      set_state(*c, IncidentState::escalated, now, "drain failed: " + why);
    }
    return;
  }
  capacity_.set_drained(link, true);
  mark_applied(f, now);
  f.action.state = "applied";
  f.phase = Phase::verifying;
  store_ok(store_.action_applied(f.action.id, f.steps), "action_applied");
  spdlog::info("incident {}: {} drained at the switch; verifying traffic ({} before)", f.action.incident_id, name,
               pps_text(f.action.traffic_before));
}

void Workflow::on_rolled_back(InFlight& f, SwitchResult& r, Time now) {
  const fabric::LinkId link = f.action.link;
  for (auto& step : r.outcome.steps) f.steps.push_back("rollback " + step);
  const bool undone = r.outcome.succeeded;
  if (undone) {
    capacity_.set_drained(link, false);
    finish(f, ActionEnd::rolled_back, false, f.why + "; rolled back", now);
  } else {
    finish(f, ActionEnd::failed, true, f.why + "; rollback failed: " + r.outcome.error, now);
  }
  ++metrics_.drains_failed;
  ++metrics_.drains_rolled_back;
  ++metrics_.escalations;
  spdlog::error("incident {}: drain of {} not verified: {}; {}", f.action.incident_id, topology_.link(link).name, f.why,
                undone ? "rolled back" : "rollback failed: " + r.outcome.error);
  Case* c = case_of(f);
  if (c != nullptr && c->rec.state != IncidentState::dismissed) {
    set_state(*c, IncidentState::escalated, now, "drain not verified: " + f.why);
  }
}

void Workflow::start_undrain(Case& c, Time now) {
  const fabric::LinkId link = c.rec.link;
  const std::string& name = topology_.link(link).name;
  if (!capacity_.drained(link) && !capacity_.reserved(link)) {
    // Nothing to put back: the link never left service (its drain failed and was undone,
    // and a person marked the fault repaired). No switch is called: an undrain whose
    // read-back failed would be rolled back by draining the link, out of service without
    // any capacity check.
    spdlog::info("incident {}: {} is in service already: closed without an undrain", c.rec.incident_id, name);
    if (c.rec.state == IncidentState::validated) {
      set_state(c, IncidentState::undrained, now);
      set_state(c, IncidentState::closed, now);
    }
    return;
  }
  ActionIntent intent{c.rec.incident_id, link, ActionKind::undrain, now};
  auto id = store_.begin_action(intent, signals_.tx_pps(link));
  if (!id.ok()) {
    ++metrics_.store_errors;
    spdlog::error("incident {}: undrain of {} not started: {}", c.rec.incident_id, name, id.error());
    return;
  }
  InFlight f;
  f.action = {*id, c.rec.incident_id, link, ActionKind::undrain, "intent", now, signals_.tx_pps(link)};
  f.phase = Phase::switching;
  if (snapshot_) snapshot_(c.rec.incident_id, *id, link, "before undrain");
  launch(std::move(f));
}

void Workflow::on_undrain_applied(InFlight& f, SwitchResult& r, Time now) {
  const fabric::LinkId link = f.action.link;
  const std::string& name = topology_.link(link).name;
  f.steps = std::move(r.outcome.steps);
  Case* c = case_of(f);
  if (!r.outcome.succeeded) {
    ++metrics_.undrains_failed;
    ++metrics_.escalations;
    // apply_to_link put back what it changed: the link is still drained.
    finish(f, ActionEnd::failed, true, r.outcome.error, now);
    spdlog::error("incident {}: undrain of {} failed: {}", f.action.incident_id, name, r.outcome.error);
    back_off_undrain(c);
    if (c != nullptr && c->rec.state != IncidentState::dismissed) {
      set_state(*c, IncidentState::escalated, now, "undrain failed: " + r.outcome.error);
    }
    return;
  }
  // Counted out of service until the undrain is verified: its headroom is not handed to
  // another drain while the undrain may still fail and be put back (drained again).
  mark_applied(f, now);
  f.action.state = "applied";
  f.phase = Phase::verifying;
  store_ok(store_.action_applied(f.action.id, f.steps), "action_applied");
  spdlog::info("incident {}: {} undrained at the switch; verifying", f.action.incident_id, name);
}

void Workflow::back_off_undrain(Case* c) {
  if (c == nullptr) return;
  const int n = std::min(++c->undrain_failures, 6);
  const auto wait = std::chrono::seconds(std::min(30 << (n - 1), 600));
  c->undrain_after = clock_.monotonic() + std::chrono::duration_cast<Duration>(wait);
}

// An undrain the counters did not confirm, its ends read back. An end that reads drained
// (a drain carried out late, after the undrain: its answer was lost), or a link whose ends
// cannot be read, stays counted as drained and owed back by the incident; a link whose
// ends read undrained is in service and misbehaving, and opens a new finding by itself.
void Workflow::on_undrain_read(InFlight& f, SwitchResult& r, Time now) {
  const fabric::LinkId link = f.action.link;
  const LinkReadBack& rb = r.read;
  std::string why = f.why;
  bool drained = true;
  if (!rb.error.empty()) {
    why += "; ends not read back (" + rb.error + "): counted as drained until undrained";
    f.steps.push_back("read back: " + rb.error);
  } else if (!rb.drained_ports.empty()) {
    std::vector<std::string> ends;
    for (const fabric::PortId p : rb.drained_ports) ends.push_back(topology_.endpoint_name(p));
    why += "; drained at the switch: " + join(ends, ", ") + " (counted as drained until undrained)";
    f.steps.push_back("read back: drained " + join(ends, ", "));
  } else {
    drained = false;
    f.steps.push_back("read back: " + std::to_string(rb.driven) + " ends undrained");
  }
  capacity_.set_drained(link, drained);
  finish(f, ActionEnd::failed, drained, why, now);
  ++metrics_.undrains_failed;
  ++metrics_.escalations;
  spdlog::error("incident {}: undrain of {} not verified: {}", f.action.incident_id, topology_.link(link).name, why);
  Case* c = case_of(f);
  if (drained) back_off_undrain(c);
  if (c != nullptr && c->rec.state != IncidentState::dismissed) {
    set_state(*c, IncidentState::escalated, now, "undrain not verified: " + why);
  }
}

}  // namespace medic::remediation
