#include "detectors/flap.h"

#include <algorithm>
#include <stdexcept>

namespace medic::detectors {

using telemetry::Counter;

void FlapConfig::validate() const {
  if (window.count() <= 0) throw std::invalid_argument("flap.window must be positive");
  if (transitions < 2) throw std::invalid_argument("flap.transitions must be at least 2");
}

FlapDetector::FlapDetector(const fabric::Topology& topology, FlapConfig config)
    : topology_(topology), config_(config), ports_(topology.ports().size()) {
  config_.validate();
}

void FlapDetector::expire(PortState& s, Time now) const {
  while (!s.events.empty() && s.events.front().time <= now - config_.window) {
    s.in_window -= s.events.front().count;
    s.events.pop_front();
  }
}

int FlapDetector::transitions_in_window(fabric::PortId port, Time now) const {
  int n = 0;
  for (const auto& e : ports_[port].events) {
    if (e.time > now - config_.window) n += e.count;
  }
  return n;
}

void FlapDetector::observe(const telemetry::PortDelta& d, std::vector<Finding>& out) {
  if (d.port >= ports_.size()) return;
  PortState& s = ports_[d.port];
  int transitions = 0;
  if (d.counters_reset) {
    // The device restarted its counters: the increases are unknown and the reboot's own
    // down/up is not the link flapping.
  } else if (d.has(Counter::carrier_changes)) {
    transitions = static_cast<int>(std::min(d.get(Counter::carrier_changes), 1e6));
  } else if (d.has(Counter::link_down_events)) {
    transitions = 2 * static_cast<int>(std::min(d.get(Counter::link_down_events), 1e6));
  } else if (d.has(Counter::oper_up) && s.last_oper >= 0) {
    transitions = (d.get(Counter::oper_up) > 0.5) != (s.last_oper == 1) ? 1 : 0;
  }
  if (d.has(Counter::oper_up)) s.last_oper = d.get(Counter::oper_up) > 0.5 ? 1 : 0;
  expire(s, d.time);
  // Nothing left in the window: it has been quiet for a whole window, so a new episode
  // is reported again (checked before adding this delta, which may already flap).
  if (s.events.empty()) s.reported = false;
  if (transitions > 0) {
    s.events.push_back({d.time, transitions});
    s.in_window += transitions;
  }
  if (s.in_window < config_.transitions) return;
  if (s.reported) return;
  s.reported = true;
  const fabric::Port& port = topology_.port(d.port);
  Finding f;
  f.kind = FindingKind::link_flap;
  f.severity = Severity::critical;
  f.link = port.link;
  f.port = d.port;
  f.device = port.device;
  f.first_seen = s.events.front().time;
  f.observed_at = d.time;
  f.summary = std::to_string(s.in_window) + " carrier transitions in " +
              format_duration(config_.window) + " on " + topology_.endpoint_name(d.port);
  f.evidence["transitions"] = s.in_window;
  f.evidence["window_s"] = seconds(config_.window);
  f.evidence["threshold"] = config_.transitions;
  if (d.has(Counter::oper_up)) f.evidence["oper_up"] = d.get(Counter::oper_up);
  out.push_back(std::move(f));
}

}  // namespace medic::detectors
