#include "detectors/finding.h"

#include <array>

namespace medic::detectors {

namespace {
constexpr std::array<std::string_view, kFindingKindCount> kKinds = {
    "link_flap",        "link_down",     "optics_rx_power", "optics_tx_power", "optics_loss",
    "optics_drift",     "optics_temperature", "optics_bias", "corruption",     "discards",
    "fec_ber",          "fec_uncorrectable", "slow_receiver", "pfc_storm",     "telemetry_stale",
    "probe_loss",       "probe_latency", "prober_loss",   "reflector_loss", "telemetry_outage",
    "telemetry_invalid"};
constexpr std::array<std::string_view, 3> kSeverities = {"info", "warning", "critical"};
}  // namespace

bool is_measurement(FindingKind k) {
  return k == FindingKind::prober_loss || k == FindingKind::reflector_loss || k == FindingKind::telemetry_outage ||
         k == FindingKind::telemetry_invalid;
}

Finding make_finding(FindingKind kind, Severity severity, Time first_seen, Time observed_at) {
  Finding f;
  f.kind = kind;
  f.severity = severity;
  f.first_seen = first_seen;
  f.observed_at = observed_at;
  return f;
}

std::string_view to_string(FindingKind k) { return kKinds[static_cast<size_t>(k)]; }

std::optional<FindingKind> parse_finding_kind(std::string_view s) {
  for (size_t i = 0; i < kKinds.size(); ++i) {
    if (kKinds[i] == s) return static_cast<FindingKind>(i);
  }
  return std::nullopt;
}

std::string_view to_string(Severity s) { return kSeverities[static_cast<size_t>(s)]; }

std::optional<Severity> parse_severity(std::string_view s) {
  for (size_t i = 0; i < kSeverities.size(); ++i) {
    if (kSeverities[i] == s) return static_cast<Severity>(i);
  }
  return std::nullopt;
}

Finding port_finding(const fabric::Topology& topology, fabric::PortId port, FindingKind kind, Severity severity,
                     Time first_seen, Time observed_at) {
  Finding f = make_finding(kind, severity, first_seen, observed_at);
  const fabric::Port& p = topology.port(port);
  f.link = p.link;
  f.port = port;
  f.device = p.device;
  return f;
}

}  // namespace medic::detectors
