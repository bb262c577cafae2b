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
  kCount
};
inline constexpr size_t kIncidentClassCount = static_cast<size_t>(IncidentClass::kCount);
std::string_view to_string(IncidentClass c);
std::optional<IncidentClass> parse_incident_class(std::string_view s);
// Scoped to one device rather than one link.
bool is_device_class(IncidentClass c);
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
