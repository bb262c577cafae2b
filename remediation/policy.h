// What remediation does with an incident by itself, per class and severity. A drain is
// only for link faults that hurt traffic now and that taking the link out of service cures:
// a link already down carries nothing; a slow receiver is the host's problem; congestion,
// a silent switch or many links of one switch at once need a person.
#pragma once

#include "detectors/finding.h"
#include "triage/incident.h"

namespace medic::remediation {

enum class Mitigation : uint8_t { drain, none };

Mitigation mitigation_for(triage::IncidentClass cls, detectors::Severity severity);

}  // namespace medic::remediation
