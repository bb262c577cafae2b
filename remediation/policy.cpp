#include "remediation/policy.h"

namespace medic::remediation {

Mitigation mitigation_for(triage::IncidentClass cls, detectors::Severity severity) {
  using C = triage::IncidentClass;
  if (severity != detectors::Severity::critical) return Mitigation::none;
  switch (cls) {
    case C::link_flap:
    case C::optics:
    case C::corruption:
    case C::fec:
    case C::gray_failure:
      return Mitigation::drain;
    case C::link_down:        // nothing flows on it already
    case C::discards:         // congestion or a switch problem, not the link
    case C::slow_receiver:    // routed to the host's owner, never drained as a link fault
    case C::pfc_storm:
    case C::telemetry_stale:
    case C::switch_fault:     // a drain per link would take the switch apart piecemeal
    case C::host_fault:
    case C::kCount:
      return Mitigation::none;
  }
  return Mitigation::none;
}

}  // namespace medic::remediation
