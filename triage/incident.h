// Incidents: what triage makes of findings. One incident per fault, with a class that
// decides what remediation does and which runbook applies.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/time.h"
#include "detectors/finding.h"
#include "fabric/topology.h"

namespace medic::triage {

enum class IncidentClass : uint8_t {
  link_flap,
  link_down,
  optics,
  corruption,
  fec,
  discards,
  slow_receiver,    // device: the host that pauses
  pfc_storm,
  telemetry_stale,  // device: the silent switch or host
  switch_fault,     // device: many links of one switch at once
  host_fault,       // device: many links of one host at once
  gray_failure,     // probes lose packets where counters are clean
  // Measurement incidents: the monitoring failed, not the fabric. Never drained; closed by
  // themselves when the measurement works again.
  prober_fault,       // medicd's prober (or the host and network it probes from)
  reflector_fault,    // device: its STAMP reflector loses what it should answer
  telemetry_outage,   // most devices unanswered at once: the collector's side
  telemetry_invalid,  // device: it reports counter values no link can produce
  kCount
};
inline constexpr size_t kIncidentClassCount = static_cast<size_t>(IncidentClass::kCount);
std::string_view to_string(IncidentClass c);
std::optional<IncidentClass> parse_incident_class(std::string_view s);
// Scoped to one device (or, for prober_fault and telemetry_outage, to medicd itself)
// rather than one link.
bool is_device_class(IncidentClass c);
// About the measurement, not the fabric.
bool is_measurement_class(IncidentClass c);
IncidentClass class_of(detectors::FindingKind k);

// Lifecycle: detected -> triaged -> mitigated (drained) -> repair_requested -> repaired ->
// validating -> validated -> undrained -> closed; or blocked (drain refused, waits for
// capacity), pending_approval (in the repair queue), dismissed, escalated.
enum class IncidentState : uint8_t {
  detected,
  triaged,
  blocked,
  pending_approval,
  mitigated,
  repair_requested,
  repaired,
  validating,
  validated,
  undrained,
  closed,
  dismissed,
  escalated,
  kCount
};
std::string_view to_string(IncidentState s);
std::optional<IncidentState> parse_incident_state(std::string_view s);
bool is_open(IncidentState s);

}  // namespace medic::triage
