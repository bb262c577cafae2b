#include "detectors/flap.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace medic::detectors {

using telemetry::Counter;

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

Finding FlapDetector::make(const telemetry::PortDelta& d, const PortState& s, Severity sev,
                           FindingKind kind) const {
  Finding f = port_finding(topology_, d.port, kind, sev, d.time, d.time);
  f.evidence["penalty"] = std::round(s.penalty);
  f.evidence["suppress"] = config_.suppress;
  f.evidence["reuse"] = config_.reuse;
  f.evidence["half_life_s"] = seconds(config_.half_life);
  f.evidence["flaps"] = s.flaps_in_episode;
  if (d.has(Counter::oper_up)) f.evidence["oper_up"] = d.get(Counter::oper_up);
  return f;
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
  const double flaps = starts_down ? std::floor(n / 2) : std::ceil(n / 2);
  s.carrier_down = known_oper ? !up : starts_down != odd;

  // Decay to now; a port that has decayed below reuse is released before this interval's
  // flaps are added (the switch would have released it then too).
  const double before = decayed(s, d.time);
  s.penalty = before;
  s.updated = d.time;
  if (s.suppressed && s.penalty < config_.reuse) s.suppressed = false;
  if (before < config_.penalty_per_flap / 2 && !s.suppressed) {
    s.flaps_in_episode = 0;  // the previous episode is forgotten
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
  const std::string ep = topology_.endpoint_name(d.port);
  if (known_oper && !up && !s.down_reported && d.time - s.down_since >= config_.down_hold) {
    s.down_reported = true;
    Finding f = make(d, s, Severity::warning, FindingKind::link_down);
    f.first_seen = s.down_since;
    f.summary = ep + " down for " + format_duration(d.time - s.down_since);
    f.evidence["down_s"] = seconds(d.time - s.down_since);
    out.push_back(std::move(f));
  }

  if (flaps <= 0 || s.suppressed) return;
  char penalty_text[64];
  std::snprintf(penalty_text, sizeof penalty_text, "penalty %.0f", s.penalty);
  if (s.penalty >= config_.suppress) {
    s.suppressed = true;
    Finding f = make(d, s, Severity::critical, FindingKind::link_flap);
    f.first_seen = s.episode_start;
    f.summary = ep + " keeps flapping: " + std::to_string(s.flaps_in_episode) + " flaps since " +
                format_iso8601(s.episode_start).substr(11, 8) + ", " + penalty_text + " >= suppress " +
                std::to_string(static_cast<int>(config_.suppress));
    out.push_back(std::move(f));
  } else {
    Finding f = make(d, s, Severity::info, FindingKind::link_flap);
    f.first_seen = d.time - d.interval;
    f.summary = "flap noted on " + ep + ": " + penalty_text + " (suppress at " +
                std::to_string(static_cast<int>(config_.suppress)) + ")";
    out.push_back(std::move(f));
  }
}

}  // namespace medic::detectors
