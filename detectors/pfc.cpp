#include "detectors/pfc.h"

#include <cmath>
#include <cstdio>

namespace medic::detectors {

using telemetry::Counter;

PfcDetector::PfcDetector(const fabric::Topology& topology, PfcConfig config)
    : topology_(topology), config_(config), ports_(topology.ports().size()) {}

void PfcDetector::observe(const telemetry::PortDelta& d, std::vector<Finding>& out) {
  if (d.port >= ports_.size() || d.interval.count() <= 0 || d.counters_reset) return;
  const fabric::Port& port = topology_.port(d.port);
  if (port.link == fabric::kNone) return;
  const bool on_host = !topology_.device(port.device).is_switch();
  const fabric::PortId peer = topology_.peer(d.port);
  const bool peer_is_host = peer != fabric::kNone && !topology_.device(topology_.port(peer).device).is_switch();
  // Who is pausing whom: a host NIC's tx pause, or a switch port's rx pause (from its peer).
  // Garbage (a non-finite reading) is no reading: NaN would otherwise pass for pausing.
  auto has = [&](Counter c) { return d.has(c) && std::isfinite(d.get(c)); };
  double pauses = -1;
  if (on_host && has(Counter::tx_pause)) {
    pauses = d.get(Counter::tx_pause);
  } else if (!on_host && has(Counter::rx_pause)) {
    pauses = d.get(Counter::rx_pause);
  }
  if (pauses < 0) return;
  PortState& s = ports_[d.port];
  const double rate = pauses / seconds(d.interval);
  if (rate < config_.pause_rate) {
    s.pausing = false;
    s.reported = false;
    return;
  }
  if (!s.pausing) {
    s.pausing = true;
    s.pausing_since = d.time - d.interval;
  }
  if (s.reported || d.time - s.pausing_since < config_.sustain) return;
  s.reported = true;
  const bool host_source = on_host || peer_is_host;
  Finding f = port_finding(topology_, d.port, host_source ? FindingKind::slow_receiver : FindingKind::pfc_storm,
                           Severity::warning, s.pausing_since, d.time);
  // The device at fault: the host that pauses, or the switch at the far end that pauses us.
  if (!on_host && peer != fabric::kNone) f.device = topology_.port(peer).device;
  char buf[240];
  if (host_source) {
    std::snprintf(buf, sizeof buf,
                  "host %s has been pausing its ToR for %s (%.0f pause frames/s seen on %s): a slow receiver, not a "
                  "link fault",
                  topology_.device(f.device).name.c_str(), format_duration(d.time - s.pausing_since).c_str(), rate,
                  topology_.endpoint_name(d.port).c_str());
  } else {
    std::snprintf(buf, sizeof buf, "%s has been pausing %s for %s (%.0f pause frames/s): PFC storm",
                  topology_.device(f.device).name.c_str(), topology_.endpoint_name(d.port).c_str(),
                  format_duration(d.time - s.pausing_since).c_str(), rate);
  }
  f.summary = buf;
  f.evidence["pause_rate"] = rate;
  f.evidence["sustained_s"] = seconds(d.time - s.pausing_since);
  out.push_back(std::move(f));
}

}  // namespace medic::detectors
