#include "detectors/fec.h"

#include <cmath>
#include <cstdio>

namespace medic::detectors {

using telemetry::Counter;

FecDetector::FecDetector(const fabric::Topology& topology, FecConfig config)
    : topology_(topology), config_(config), ports_(topology.ports().size()) {}

double FecDetector::pre_fec_ber(fabric::PortId port) const {
  return port < ports_.size() ? ports_[port].ber : 0.0;
}

void FecDetector::resum(PortState& s) {
  s.bits = s.codewords = 0;
  s.us = 0;
  s.with_bits = s.with_codewords = 0;
  s.since_resum = 0;
  for (const auto& x : s.buckets) add(s, x, +1);
}

void FecDetector::add(PortState& s, const Bucket& b, double sign) {
  s.bits += sign * b.bits;
  s.codewords += sign * b.codewords;
  s.us += sign > 0 ? b.us : -b.us;
  if (b.has_bits) s.with_bits = sign > 0 ? s.with_bits + 1 : s.with_bits - 1;
  if (b.has_codewords) s.with_codewords = sign > 0 ? s.with_codewords + 1 : s.with_codewords - 1;
}

void FecDetector::observe(const telemetry::PortDelta& d, std::vector<Finding>& out) {
  if (d.port >= ports_.size() || d.counters_reset) return;
  const fabric::Port& port = topology_.port(d.port);
  if (port.link == fabric::kNone) return;
  PortState& s = ports_[d.port];
  // Garbage (a non-finite reading) is no reading; summed into the window it would poison it.
  auto has = [&](Counter c) { return d.has(c) && std::isfinite(d.get(c)); };
  auto ep = [&] { return topology_.endpoint_name(d.port); };  // for a finding only
  auto finding = [&](FindingKind kind, Severity sev) {
    return port_finding(topology_, d.port, kind, sev, s.buckets.empty() ? d.time : s.buckets.front().time, d.time);
  };

  // Uncorrectable codewords: frames were lost.
  if (has(Counter::fec_uncorrectable_codewords) && d.interval.count() > 0) {
    const double unc = d.get(Counter::fec_uncorrectable_codewords);
    if (unc > 0) {
      s.last_uncorrectable = d.time;
      if (!s.uncorrectable_reported) {
        s.uncorrectable_reported = true;
        Finding f = finding(FindingKind::fec_uncorrectable, Severity::critical);
        f.first_seen = d.time - d.interval;
        f.summary = std::to_string(static_cast<long long>(unc)) + " uncorrectable FEC codewords on " + ep() + " in " +
                    format_duration(d.interval);
        f.evidence["uncorrectable"] = unc;
        f.evidence["interval_s"] = seconds(d.interval);
        out.push_back(std::move(f));
      }
    } else if (s.uncorrectable_reported && d.time - s.last_uncorrectable >= config_.window) {
      s.uncorrectable_reported = false;  // a clean window: a new episode may be reported
    }
  }

  Bucket b;
  b.time = d.time;
  b.us = d.interval.count();
  if (has(Counter::fec_corrected_bits)) {
    b.bits = d.get(Counter::fec_corrected_bits);
    b.has_bits = true;
  } else if (has(Counter::fec_corrected_codewords)) {
    b.codewords = d.get(Counter::fec_corrected_codewords);
    b.has_codewords = true;
  }
  if (has(Counter::pre_fec_ber)) b.reported_ber = d.get(Counter::pre_fec_ber);
  if (b.us <= 0 && std::isnan(b.reported_ber)) return;
  while (!s.buckets.empty() && s.buckets.front().time <= d.time - config_.window) {
    add(s, s.buckets.front(), -1);
    s.buckets.pop_front();
  }
  s.buckets.push_back(b);
  add(s, b, +1);
  // Summed afresh when the window held nothing before (no rounding carried over), every
  // kResum buckets, and should a sum overflow (it may be finite again once a huge reading
  // has left).
  if (s.buckets.size() == 1 || ++s.since_resum >= kResum || !std::isfinite(s.bits) || !std::isfinite(s.codewords)) {
    resum(s);
  }

  const double secs = static_cast<double>(s.us) / 1e6;
  const double line_bits = topology_.link(port.link).speed_gbps * 1e9 * secs;
  double ber = 0;
  const char* how = "";
  // Zero corrected codewords (or bits) is a reading too.
  if (s.with_bits > 0 && line_bits > 0) {
    ber = std::max(0.0, s.bits) / line_bits;
    how = "corrected bits";
  } else if (s.with_codewords > 0 && line_bits > 0) {
    ber = std::max(0.0, s.codewords) / line_bits;  // each corrected codeword had at least one bit in error
    how = "corrected codewords (lower bound)";
  } else {
    // Only the device's own reading: the window's highest (looked for only here, where
    // neither count is reported).
    double reported = NAN;
    for (const auto& x : s.buckets) {
      if (!std::isnan(x.reported_ber)) reported = std::isnan(reported) ? x.reported_ber : std::max(reported, x.reported_ber);
    }
    if (std::isnan(reported)) return;
    ber = reported;
    how = "the device's pre-FEC BER";
  }
  s.ber = ber;
  int level = ber >= config_.limit_ber ? 2 : ber >= config_.warning_ber ? 1 : 0;
  if (level < s.level && ber >= config_.warning_ber / 2) level = s.level == 2 && ber >= config_.limit_ber / 2 ? 2 : 1;
  const int before = s.level;
  s.level = level;
  if (level <= before) return;
  Finding f = finding(FindingKind::fec_ber, level == 2 ? Severity::critical : Severity::warning);
  char buf[220];
  std::snprintf(buf, sizeof buf, "pre-FEC BER %.2e on %s (from %s over %s) %s %.1e", ber, ep().c_str(), how,
                format_duration(from_seconds(secs)).c_str(),
                level == 2 ? "at or over the FEC limit" : "above the warning level",
                level == 2 ? config_.limit_ber : config_.warning_ber);
  f.summary = buf;
  f.evidence["pre_fec_ber"] = ber;
  f.evidence["limit_ber"] = config_.limit_ber;
  f.evidence["warning_ber"] = config_.warning_ber;
  out.push_back(std::move(f));
}

}  // namespace medic::detectors
