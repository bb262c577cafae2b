#include "detectors/corruption.h"

#include <cmath>
#include <cstdio>

namespace medic::detectors {

using telemetry::Counter;

std::string corruption_band(double rate) {
  if (rate >= 1e-3) return "1e-3";
  if (rate >= 1e-4) return "1e-4";
  if (rate >= 1e-5) return "1e-5";
  if (rate >= 1e-8) return "1e-8";
  return "";
}

CorruptionDetector::CorruptionDetector(const fabric::Topology& topology, CorruptionConfig config)
    : topology_(topology), config_(config), ports_(topology.ports().size()) {}

double CorruptionDetector::loss_rate(fabric::PortId port) const {
  if (port >= ports_.size()) return 0;
  const PortState& s = ports_[port];
  return s.frames > 0 ? s.errors / s.frames : 0.0;
}

void CorruptionDetector::observe(const telemetry::PortDelta& d, std::vector<Finding>& out) {
  if (d.port >= ports_.size() || d.interval.count() <= 0 || d.counters_reset) return;
  const fabric::Port& port = topology_.port(d.port);
  if (port.link == fabric::kNone) return;
  PortState& s = ports_[d.port];
  // Garbage (a non-finite reading) is no reading; summed into the window it would poison it.
  auto has = [&](Counter c) { return d.has(c) && std::isfinite(d.get(c)); };
  Bucket b;
  b.time = d.time;
  if (has(Counter::rx_crc_errors)) {
    b.errors = d.get(Counter::rx_crc_errors);
  } else if (has(Counter::rx_errors)) {
    b.errors = d.get(Counter::rx_errors);
  }
  if (has(Counter::rx_packets)) b.frames = d.get(Counter::rx_packets) + b.errors;
  b.discards = (has(Counter::rx_discards) ? d.get(Counter::rx_discards) : 0) +
               (has(Counter::tx_discards) ? d.get(Counter::tx_discards) : 0);
  b.packets = (has(Counter::rx_packets) ? d.get(Counter::rx_packets) : 0) +
              (has(Counter::tx_packets) ? d.get(Counter::tx_packets) : 0);
  if (has(Counter::rx_bytes) || has(Counter::tx_bytes)) {
    const double bytes = std::max(has(Counter::rx_bytes) ? d.get(Counter::rx_bytes) : 0.0,
                                  has(Counter::tx_bytes) ? d.get(Counter::tx_bytes) : 0.0);
    const double capacity = topology_.link(port.link).speed_gbps * 1e9 * seconds(d.interval);
    if (capacity > 0) b.utilization = std::min(1.0, bytes * 8.0 / capacity);
  }
  s.buckets.push_back(b);
  s.errors += b.errors;
  s.frames += b.frames;
  s.discards += b.discards;
  s.packets += b.packets;
  while (!s.buckets.empty() && s.buckets.front().time <= d.time - config_.window) {
    const Bucket& old = s.buckets.front();
    s.errors -= old.errors;
    s.frames -= old.frames;
    s.discards -= old.discards;
    s.packets -= old.packets;
    s.buckets.pop_front();
  }
  if (s.errors < 0.5) s.errors = 0;  // keep float sums from drifting below zero

  const double rate = s.frames > 0 ? s.errors / s.frames : 0.0;
  int level = 0;
  if (s.errors >= config_.min_errors && rate >= config_.critical) {
    level = 2;
  } else if (s.errors >= config_.min_errors && rate >= config_.corrupting) {
    level = 1;
  }
  // Hysteresis on the way down: a level holds until the rate is below half its threshold.
  if (s.level == 2 && level < 2 && s.errors > 0 && rate >= config_.critical / 2) {
    level = 2;
  } else if (s.level >= 1 && level < 1 && s.errors > 0 && rate >= config_.corrupting / 2) {
    level = 1;
  }
  const int before = s.level;
  s.level = level;
  if (level > before) {
    // The first interval in the window with errors, not the window's start.
    Time first = d.time;
    for (const auto& x : s.buckets) {
      if (x.errors > 0) {
        first = x.time;
        break;
      }
    }
    Finding f = port_finding(topology_, d.port, FindingKind::corruption,
                             level == 2 ? Severity::critical : Severity::warning, first, d.time);
    char buf[200];
    std::snprintf(buf, sizeof buf, "%s receives corrupted frames: loss rate %.2e (%.0f of %.3g frames in %s), band %s",
                  topology_.endpoint_name(d.port).c_str(), rate, s.errors, s.frames,
                  format_duration(config_.window).c_str(), corruption_band(rate).c_str());
    f.summary = buf;
    f.evidence["loss_rate"] = rate;
    f.evidence["errors"] = s.errors;
    f.evidence["frames"] = s.frames;
    f.evidence["band"] = std::log10(std::max(rate, 1e-12));
    // Corruption is in the receive path of this port: the far transmitter, the fiber, or
    // this receiver. The optics detector says which when it can.
    out.push_back(std::move(f));
  }
  check_discards(d, s, out);
}

void CorruptionDetector::check_discards(const telemetry::PortDelta& d, PortState& s, std::vector<Finding>& out) {
  if (s.packets < 1e6) return;  // too little traffic to judge a rate
  const double rate = s.discards / s.packets;
  if (rate < config_.discard_rate) {
    if (rate < config_.discard_rate / 2) s.discards_reported = false;
    return;
  }
  if (s.discards_reported) return;
  // Congestion: discards happen under load, or rise and fall with it.
  double mean_u = 0, n = 0;
  for (const auto& b : s.buckets) {
    if (!std::isnan(b.utilization)) {
      mean_u += b.utilization;
      ++n;
    }
  }
  if (n > 0) mean_u /= n;
  double corr = 0;
  if (n >= 3) {
    double mean_r = 0;
    for (const auto& b : s.buckets) {
      if (!std::isnan(b.utilization)) mean_r += b.packets > 0 ? b.discards / b.packets : 0;
    }
    mean_r /= n;
    double sxy = 0, sxx = 0, syy = 0;
    for (const auto& b : s.buckets) {
      if (std::isnan(b.utilization)) continue;
      const double x = b.utilization - mean_u;
      const double y = (b.packets > 0 ? b.discards / b.packets : 0) - mean_r;
      sxy += x * y;
      sxx += x * x;
      syy += y * y;
    }
    if (sxx > 0 && syy > 0) corr = sxy / std::sqrt(sxx * syy);
  }
  // Not enough of the window seen yet to tell congestion from anything else: wait.
  const Duration span = s.buckets.back().time - s.buckets.front().time;
  if (n < 3 || span < config_.window / 2) return;
  // The load the discards happened at (weighted by discards): congestion drops packets
  // when the port is busy, whatever its average.
  double weighted = 0, weight = 0;
  for (const auto& b : s.buckets) {
    if (std::isnan(b.utilization) || !(b.discards > 0)) continue;
    weighted += b.utilization * b.discards;
    weight += b.discards;
  }
  const double load_at_discards = weight > 0 ? weighted / weight : mean_u;
  const bool congestion = load_at_discards >= config_.congestion_utilization || corr >= 0.5;
  s.discards_reported = true;
  Finding f = port_finding(topology_, d.port, FindingKind::discards, congestion ? Severity::info : Severity::warning,
                           s.buckets.front().time, d.time);
  char buf[220];
  std::snprintf(buf, sizeof buf, "%s discards %.2e of packets at %.0f%% utilization: %s",
                topology_.endpoint_name(d.port).c_str(), rate, load_at_discards * 100,
                congestion ? "congestion (discards follow load), not a link fault"
                           : "not explained by load");
  f.summary = buf;
  f.evidence["discard_rate"] = rate;
  f.evidence["utilization"] = mean_u;
  f.evidence["utilization_at_discards"] = load_at_discards;
  f.evidence["load_correlation"] = corr;
  f.evidence["congestion"] = congestion ? 1 : 0;
  out.push_back(std::move(f));
}

}  // namespace medic::detectors
