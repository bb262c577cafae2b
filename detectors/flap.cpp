#include "detectors/flap.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace medic::detectors {

using telemetry::Counter;

namespace {
constexpr size_t kMaxPendingEvents = 16;  // unconfirmed link-event flaps kept per port
}  // namespace

FlapDetector::FlapDetector(const fabric::Topology& topology, FlapConfig config)
    : topology_(topology), config_(config), ports_(topology.ports().size()) {
  config_.validate();
}

double FlapDetector::decayed(const PortState& s, Time now) const {
  if (s.penalty <= 0 || now <= s.updated) return s.penalty;
  return s.penalty * std::exp2(-seconds(now - s.updated) / seconds(config_.half_life));
}

double FlapDetector::penalty(fabric::PortId port, Time now) const {
  return port < ports_.size() ? decayed(ports_[port], now) : 0.0;
}

bool FlapDetector::suppressed(fabric::LinkId link, Time now) const {
  const auto& l = topology_.link(link);
  for (const fabric::PortId p : {l.a, l.b}) {
    const PortState& s = ports_[p];
    if (s.suppressed && decayed(s, now) >= config_.reuse) return true;
  }
  return false;
}

Finding FlapDetector::make(fabric::PortId port, Time at, const PortState& s, Severity sev, FindingKind kind) const {
  Finding f = port_finding(topology_, port, kind, sev, at, at);
  f.evidence["penalty"] = std::round(s.penalty);
  f.evidence["suppress"] = config_.suppress;
  f.evidence["reuse"] = config_.reuse;
  f.evidence["half_life_s"] = seconds(config_.half_life);
  f.evidence["flaps"] = s.flaps_in_episode;
  if (const auto it = pending_.find(port); it != pending_.end() && !it->second.empty()) {
    f.evidence["unconfirmed_link_events"] = static_cast<double>(it->second.size());
  }
  return f;
}

double FlapDetector::unconfirmed(fabric::PortId port, Time now) const {
  const auto it = pending_.find(port);
  if (it == pending_.end()) return 0;
  double sum = 0;
  for (const Pending& e : it->second) {
    sum += e.added * std::exp2(-std::max(0.0, seconds(now - e.at)) / seconds(config_.half_life));
  }
  return sum;
}

double FlapDetector::confirm(fabric::PortId port, double flaps, Time from, Time to) {
  const auto it = pending_.find(port);
  if (it == pending_.end() || flaps <= 0) return 0;
  // A poll that saw the port flap confirms the notifications of its own interval: an SNMP
  // agent's ifLastChange shows that it flapped, not how often (the notifications count).
  // Older ones wait (a poll that had not seen them yet) and are taken back in time.
  double n = 0;
  auto& q = it->second;
  for (auto e = q.begin(); e != q.end();) {
    if ((from == Time{} || e->at > from) && e->at <= to) {
      e = q.erase(e);
      ++n;
    } else {
      ++e;
    }
  }
  if (q.empty()) pending_.erase(it);
  confirmed_total_ += static_cast<uint64_t>(n);
  return n;
}

void FlapDetector::withdraw_stale(fabric::PortId port, PortState& s, Time now) {
  const auto it = pending_.find(port);
  if (it == pending_.end()) return;
  auto& q = it->second;
  // Taken back: what each added, decayed to now. An event this far in the future is one the
  // clock stepped back from: taken back too, never left pending for good.
  for (auto e = q.begin(); e != q.end();) {
    const Duration age = now - e->at;
    if (age >= config_.trap_confirm || -age >= config_.trap_confirm) {
      s.penalty -= e->added * std::exp2(-std::max(0.0, seconds(age)) / seconds(config_.half_life));
      s.flaps_in_episode = std::max(0, s.flaps_in_episode - 1);
      ++withdrawn_total_;
      e = q.erase(e);
    } else {
      ++e;
    }
  }
  s.penalty = std::max(0.0, s.penalty);
  if (q.empty()) pending_.erase(it);
}

void FlapDetector::link_event(fabric::PortId port, bool up, Time at, std::vector<Finding>& out) {
  if (port >= ports_.size()) return;
  PortState& s = ports_[port];
  const int8_t was = s.live >= 0 ? s.live : s.last_oper;
  s.live = up ? 1 : 0;
  // An up ends a flap; a down after a down (a notification sent twice) is the same flap.
  if (up || was == 0) return;
  auto& q = pending_[port];
  if (q.size() >= kMaxPendingEvents) return;  // a storm of them: the next poll tells
  const Time t = at;
  const double before = decayed(s, t);
  s.penalty = before;
  s.updated = t;
  if (s.suppressed && s.penalty < config_.reuse) s.suppressed = false;
  if (before < config_.penalty_per_flap / 2 && !s.suppressed) {
    s.flaps_in_episode = 0;
    s.event_warned = false;
  }
  if (s.flaps_in_episode == 0) s.episode_start = t;
  ++s.flaps_in_episode;
  const double added = std::min(config_.max_penalty, s.penalty + config_.penalty_per_flap) - s.penalty;
  s.penalty += added;
  q.push_back({t, added});  // what it added, so that taking it back takes no more
  if (s.suppressed) return;  // reported already, on the polls' evidence
  const std::string ep = topology_.endpoint_name(port);
  char penalty_text[64];
  std::snprintf(penalty_text, sizeof penalty_text, "penalty %.0f", s.penalty);
  if (s.penalty >= config_.suppress) {
    if (s.event_warned) return;
    s.event_warned = true;
    Finding f = make(port, t, s, Severity::warning, FindingKind::link_flap);
    f.first_seen = s.episode_start;
    f.summary = ep + " flapping by SNMP linkDown notifications: " + std::to_string(s.flaps_in_episode) +
                " flaps since " + format_iso8601(s.episode_start).substr(11, 8) + ", " + penalty_text +
                " >= suppress " + std::to_string(static_cast<int>(config_.suppress)) +
                "; not drained until a poll confirms";
    out.push_back(std::move(f));
  } else {
    Finding f = make(port, t, s, Severity::info, FindingKind::link_flap);
    f.summary = "flap noted on " + ep + " (SNMP linkDown notification): " + penalty_text + " (suppress at " +
                std::to_string(static_cast<int>(config_.suppress)) + ")";
    out.push_back(std::move(f));
  }
}

void FlapDetector::observe(const telemetry::PortDelta& d, std::vector<Finding>& out) {
  if (d.port >= ports_.size()) return;
  PortState& s = ports_[d.port];
  // Garbage (a non-finite reading) is no reading.
  auto has = [&](Counter c) { return d.has(c) && std::isfinite(d.get(c)); };
  double transitions = 0;
  if (d.counters_reset) {
    // The device restarted its counters: the increases are unknown and the reboot's own
    // down/up is not the link flapping.
  } else if (has(Counter::carrier_changes)) {
    transitions = std::clamp(d.get(Counter::carrier_changes), 0.0, 1e6);
  } else if (has(Counter::link_down_events)) {
    transitions = 2 * std::clamp(d.get(Counter::link_down_events), 0.0, 1e6);
  } else if (has(Counter::oper_up) && s.last_oper >= 0) {
    transitions = (d.get(Counter::oper_up) > 0.5) != (s.last_oper == 1) ? 1 : 0;
  }
  const bool known_oper = has(Counter::oper_up);
  const bool up = known_oper && d.get(Counter::oper_up) > 0.5;

  // A flap is counted at its down transition; the up that ends it is not a second flap,
  // whether it falls in the same interval or the next one.
  const double n = std::round(transitions);
  const bool odd = std::fmod(n, 2.0) == 1.0;
  const bool starts_down = known_oper ? (odd ? up : !up) : s.carrier_down;
  double flaps = starts_down ? std::floor(n / 2) : std::ceil(n / 2);
  s.carrier_down = known_oper ? !up : starts_down != odd;

  // Decay to now; a port that has decayed below reuse is released before this interval's
  // flaps are added (the switch would have released it then too). Flaps that link events
  // counted already are confirmed, not counted again; those the polls never confirmed are
  // taken back.
  const double before = decayed(s, d.time);
  s.penalty = before;
  s.updated = d.time;
  double confirmed = 0;
  const Time previous_poll = s.polled;
  s.polled = d.time;
  if (!pending_.empty()) {  // link events are rare: a poll of a fabric without any pays nothing here
    confirmed = confirm(d.port, flaps, previous_poll, d.time);
    flaps -= std::min(flaps, confirmed);
    withdraw_stale(d.port, s, d.time);
  }
  if (s.suppressed && s.penalty < config_.reuse) s.suppressed = false;
  if (before < config_.penalty_per_flap / 2 && !s.suppressed) {
    s.flaps_in_episode = 0;  // the previous episode is forgotten
    s.event_warned = false;
  }
  if (flaps > 0) {
    if (s.flaps_in_episode == 0) s.episode_start = d.time;
    s.flaps_in_episode += static_cast<int>(flaps);
    s.penalty = std::min(config_.max_penalty, s.penalty + flaps * config_.penalty_per_flap);
  }

  // Down for longer than the hold time: a dead link, not a flapping one.
  if (known_oper) {
    if (up) {
      s.down_reported = false;
      s.down_since = Time{};
    } else if (s.last_oper != 0 || s.down_since == Time{}) {
      s.down_since = d.time;
    }
    s.last_oper = up ? 1 : 0;
  }
  s.live = -1;  // the poll is the truth again
  auto ep = [&] { return topology_.endpoint_name(d.port); };  // for a finding only: not every port every poll
  if (known_oper && !up && !s.down_reported && d.time - s.down_since >= config_.down_hold) {
    s.down_reported = true;
    Finding f = make(d.port, d.time, s, Severity::warning, FindingKind::link_down);
    f.evidence["oper_up"] = 0;
    f.first_seen = s.down_since;
    f.summary = ep() + " down for " + format_duration(d.time - s.down_since);
    f.evidence["down_s"] = seconds(d.time - s.down_since);
    out.push_back(std::move(f));
  }

  if (s.suppressed || (flaps <= 0 && confirmed <= 0)) return;
  char penalty_text[64];
  std::snprintf(penalty_text, sizeof penalty_text, "penalty %.0f", s.penalty);
  // Only confirmed flaps suppress (and so drain); unconfirmed ones may make it a warning.
  const double sure = pending_.empty() ? s.penalty : s.penalty - unconfirmed(d.port, d.time);
  if (sure >= config_.suppress) {
    s.suppressed = true;
    Finding f = make(d.port, d.time, s, Severity::critical, FindingKind::link_flap);
    if (known_oper) f.evidence["oper_up"] = up ? 1 : 0;
    if (confirmed > 0) f.evidence["confirmed_link_events"] = confirmed;
    f.first_seen = s.episode_start;
    f.summary = ep() + " keeps flapping: " + std::to_string(s.flaps_in_episode) + " flaps since " +
                format_iso8601(s.episode_start).substr(11, 8) + ", " + penalty_text + " >= suppress " +
                std::to_string(static_cast<int>(config_.suppress));
    out.push_back(std::move(f));
  } else if (s.penalty >= config_.suppress) {
    if (s.event_warned) return;
    s.event_warned = true;
    Finding f = make(d.port, d.time, s, Severity::warning, FindingKind::link_flap);
    f.first_seen = s.episode_start;
    f.summary = ep() + " flapping: " + std::to_string(s.flaps_in_episode) + " flaps, " + penalty_text +
                " counting SNMP linkDown notifications no poll has confirmed yet; not drained until one does";
    out.push_back(std::move(f));
  } else if (flaps > 0) {
    Finding f = make(d.port, d.time, s, Severity::info, FindingKind::link_flap);
    if (known_oper) f.evidence["oper_up"] = up ? 1 : 0;
    f.first_seen = d.time - d.interval;
    f.summary = "flap noted on " + ep() + ": " + penalty_text + " (suppress at " +
                std::to_string(static_cast<int>(config_.suppress)) + ")";
    out.push_back(std::move(f));
  }
}

}  // namespace medic::detectors
