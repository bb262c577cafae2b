#include "triage/incident.h"

#include <array>

namespace medic::triage {

namespace {
constexpr std::array<std::string_view, 11> kStates = {
    "detected", "triaged",   "blocked", "mitigated", "repair_requested", "repaired",
    "validated", "undrained", "closed",  "dismissed", "escalated"};
}

std::string_view to_string(IncidentClass c) {
  switch (c) {
    case IncidentClass::link_flap: return "link_flap";
  }
  return "?";
}

std::optional<IncidentClass> parse_incident_class(std::string_view s) {
  if (s == "link_flap") return IncidentClass::link_flap;
  return std::nullopt;
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
