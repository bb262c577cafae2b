#include "detectors/stale.h"

namespace medic::detectors {

StaleDetector::StaleDetector(const fabric::Topology& topology, StaleConfig config)
    : topology_(topology), config_(config), devices_(topology.devices().size()) {}

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
  // Silent since its last answer, or since polling began if it never answered.
  const Time since = s.last_ok != Time{} ? s.last_ok : s.first_poll;
  if (s.reported || now - since < config_.after) return;
  s.reported = true;
  Finding f;
  f.kind = FindingKind::telemetry_stale;
  f.severity = Severity::warning;
  f.device = device;
  f.first_seen = since;
  f.observed_at = now;
  f.summary = topology_.device(device).name + " has not answered for " + format_duration(now - since) +
              (error.empty() ? "" : " (last error: " + error + ")");
  f.evidence["silent_s"] = seconds(now - since);
  out.push_back(std::move(f));
}

}  // namespace medic::detectors
