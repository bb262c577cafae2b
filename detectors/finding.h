// A finding: one detector's observation that something is wrong with a link, a port or a
// device, with the evidence that made it say so. Findings from every detector and prober
// are plain data that triage correlates into incidents.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/time.h"
#include "fabric/topology.h"

namespace medic::detectors {

enum class FindingKind : uint8_t {
  link_flap,
};
std::string_view to_string(FindingKind k);
std::optional<FindingKind> parse_finding_kind(std::string_view s);

enum class Severity : uint8_t { info, warning, critical };
std::string_view to_string(Severity s);

struct Finding {
  FindingKind kind = FindingKind::link_flap;
  Severity severity = Severity::warning;
  fabric::LinkId link = fabric::kNone;
  fabric::PortId port = fabric::kNone;      // the port that reported it, if any
  fabric::DeviceId device = fabric::kNone;  // the device that reported it
  Time first_seen{};   // best estimate of when the fault began
  Time observed_at{};  // when the detector concluded
  std::string summary; // "8 carrier transitions in 60s on rtsw0001:eth17"
  std::map<std::string, double> evidence;
};

}  // namespace medic::detectors
