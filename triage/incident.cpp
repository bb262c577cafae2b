#include "triage/incident.h"

#include <array>

namespace medic::triage {

namespace {
constexpr std::array<std::string_view, static_cast<size_t>(IncidentState::kCount)> kStates = {
    "detected",  "triaged",   "blocked", "pending_approval", "mitigated", "repair_requested", "repaired",
    "validating", "validated", "undrained", "closed",         "dismissed", "escalated"};
constexpr std::array<std::string_view, kIncidentClassCount> kClasses = {
    "link_flap",     "link_down", "optics",          "corruption",   "fec",        "discards",
    "slow_receiver", "pfc_storm", "telemetry_stale", "switch_fault", "host_fault", "gray_failure",
    "prober_fault",  "reflector_fault", "telemetry_outage", "telemetry_invalid"};
}  // namespace

std::string_view to_string(IncidentClass c) { return kClasses[static_cast<size_t>(c)]; }

std::optional<IncidentClass> parse_incident_class(std::string_view s) {
  for (size_t i = 0; i < kClasses.size(); ++i) {
    if (kClasses[i] == s) return static_cast<IncidentClass>(i);
  }
  return std::nullopt;
}

bool is_device_class(IncidentClass c) {
  return c == IncidentClass::slow_receiver || c == IncidentClass::telemetry_stale ||
         c == IncidentClass::switch_fault || c == IncidentClass::host_fault || is_measurement_class(c);
}

bool is_measurement_class(IncidentClass c) {
  return c == IncidentClass::prober_fault || c == IncidentClass::reflector_fault ||
         c == IncidentClass::telemetry_outage || c == IncidentClass::telemetry_invalid;
}

IncidentClass class_of(detectors::FindingKind k) {
  using K = detectors::FindingKind;
  switch (k) {
    case K::link_flap: return IncidentClass::link_flap;
    case K::link_down: return IncidentClass::link_down;
    case K::optics_rx_power:
    case K::optics_tx_power:
    case K::optics_loss:
    case K::optics_drift:
    case K::optics_temperature:
    case K::optics_bias: return IncidentClass::optics;
    case K::corruption: return IncidentClass::corruption;
    case K::discards: return IncidentClass::discards;
    case K::fec_ber:
    case K::fec_uncorrectable: return IncidentClass::fec;
    case K::slow_receiver: return IncidentClass::slow_receiver;
    case K::pfc_storm: return IncidentClass::pfc_storm;
    case K::telemetry_stale: return IncidentClass::telemetry_stale;
    case K::probe_loss:
    case K::probe_latency: return IncidentClass::gray_failure;
    case K::prober_loss: return IncidentClass::prober_fault;
    case K::reflector_loss: return IncidentClass::reflector_fault;
    case K::telemetry_outage: return IncidentClass::telemetry_outage;
    case K::telemetry_invalid: return IncidentClass::telemetry_invalid;
    case K::kCount: break;
  }
  return IncidentClass::link_flap;
}

std::string_view to_string(IncidentState s) { return kStates[static_cast<size_t>(s)]; }

std::optional<IncidentState> parse_incident_state(std::string_view s) {
  for (size_t i = 0; i < kStates.size(); ++i) {
    if (kStates[i] == s) return static_cast<IncidentState>(i);
  }
  return std::nullopt;
}

bool is_open(IncidentState s) {
  return s != IncidentState::closed && s != IncidentState::dismissed;
}

}  // namespace medic::triage
