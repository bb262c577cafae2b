#include "detectors/stale.h"

#include <cstdio>

#include "common/strings.h"
#include "telemetry/tracker.h"

namespace medic::detectors {

StaleDetector::StaleDetector(const fabric::Topology& topology, StaleConfig config)
    : topology_(topology), config_(config), devices_(topology.devices().size()) {}

void StaleDetector::begin_poll(size_t asked, size_t failed, Time now, std::vector<Finding>& out) {
  const bool outage = telemetry_outage(asked, failed, config_);
  if (outage) {
    if (!outage_) outage_since_ = now;
    outage_ = true;
    if (!outage_reported_ && now - outage_since_ >= config_.after) {
      outage_reported_ = true;
      Finding f = make_finding(FindingKind::telemetry_outage, Severity::warning, outage_since_, now);
      f.summary = std::to_string(failed) + " of " + std::to_string(asked) + " devices have not answered their telemetry for " +
                  format_duration(now - outage_since_) +
                  ": the collector's side (medicd's host or network, or the exporters' host), not each device";
      f.evidence["failed"] = static_cast<double>(failed);
      f.evidence["asked"] = static_cast<double>(asked);
      f.evidence["silent_s"] = seconds(now - outage_since_);
      out.push_back(std::move(f));
    }
    return;
  }
  if (!outage_) return;
  outage_ = false;
  // A device's silence during the outage was the collector's: only the silence before it
  // (and from now on) counts.
  for (auto& d : devices_) {
    if (!d.polled || d.reported) continue;
    const Time since = d.last_ok != Time{} ? d.last_ok : d.first_poll;
    d.last_ok = now - std::max(Duration::zero(), outage_since_ - since);
  }
  if (outage_reported_) {
    outage_reported_ = false;
    Finding f = make_finding(FindingKind::telemetry_outage, Severity::info, outage_since_, now);
    f.clears = true;
    f.summary = "devices answer their telemetry again after " + format_duration(now - outage_since_);
    out.push_back(std::move(f));
  }
}

void StaleDetector::observe(fabric::DeviceId device, bool answered, Time now, const std::string& error,
                            std::vector<Finding>& out) {
  if (device >= devices_.size()) return;
  DeviceState& s = devices_[device];
  if (!s.polled) {
    s.polled = true;
    s.first_poll = now;
  }
  if (answered) {
    s.last_ok = now;
    s.reported = false;
    return;
  }
  // Silent since its last answer, or since polling began if it never answered. During a
  // collector outage nobody is judged.
  if (outage_) return;
  const Time since = s.last_ok != Time{} ? s.last_ok : s.first_poll;
  if (s.reported || now - since < config_.after) return;
  s.reported = true;
  Finding f = make_finding(FindingKind::telemetry_stale, Severity::warning, since, now);
  f.device = device;
  f.summary = topology_.device(device).name + " has not answered for " + format_duration(now - since) +
              (error.empty() ? "" : " (last error: " + error + ")");
  f.evidence["silent_s"] = seconds(now - since);
  out.push_back(std::move(f));
}

InvalidTelemetryDetector::InvalidTelemetryDetector(const fabric::Topology& topology, StaleConfig config)
    : topology_(topology), config_(config), devices_(topology.devices().size()) {}

void InvalidTelemetryDetector::observe(const telemetry::PortDelta& d, std::vector<Finding>& out) {
  if (d.implausible == 0 || d.port >= topology_.ports().size()) return;
  const fabric::DeviceId dev = topology_.port(d.port).device;
  DeviceState& s = devices_[dev];
  s.last_bad = d.time;
  if (s.reported) return;
  s.reported = true;
  reported_.push_back(dev);
  std::string counters;
  for (size_t i = 0; i < telemetry::kCounterCount; ++i) {
    const auto c = static_cast<telemetry::Counter>(i);
    if ((d.implausible & telemetry::bit(c)) == 0) continue;
    if (!counters.empty()) counters += ", ";
    counters += telemetry::to_string(c);
  }
  const fabric::LinkId link = topology_.port(d.port).link;
  const double speed = link != fabric::kNone ? topology_.link(link).speed_gbps : 0.0;
  char value[32];
  std::snprintf(value, sizeof value, "%.6g", d.implausible_value);
  Finding f = make_finding(FindingKind::telemetry_invalid, Severity::warning, d.time, d.time);
  f.device = dev;
  f.port = d.port;
  if (d.went_back) {
    f.summary = topology_.endpoint_name(d.port) + " reported " + counters + " going back (now " + value + ") " +
                std::to_string(telemetry::CounterTracker::kRebaselineAfter) +
                " samples in a row, with no restart between: no delta is taken from them; the device's telemetry is at "
                "fault, not its link";
  } else {
    f.summary = topology_.endpoint_name(d.port) + " reported " + counters + " = " + value +
                (speed > 0 ? ", more than a " + format_number(speed) + " Gb/s port can count" : ", not a value a port can count") +
                " in " + format_duration(d.interval) +
                ": the sample is left out; the device's telemetry is at fault, not its link";
  }
  f.evidence["value"] = d.implausible_value;
  f.evidence["interval_s"] = seconds(d.interval);
  out.push_back(std::move(f));
}

void InvalidTelemetryDetector::end_poll(Time now, std::vector<Finding>& out) {
  for (auto it = reported_.begin(); it != reported_.end();) {
    DeviceState& s = devices_[*it];
    if (now - s.last_bad < config_.after) {
      ++it;
      continue;
    }
    s.reported = false;
    Finding f = make_finding(FindingKind::telemetry_invalid, Severity::info, s.last_bad, now);
    f.device = *it;
    f.clears = true;
    f.summary = topology_.device(*it).name + " has reported only plausible counters for " + format_duration(now - s.last_bad);
    out.push_back(std::move(f));
    it = reported_.erase(it);
  }
}

}  // namespace medic::detectors
