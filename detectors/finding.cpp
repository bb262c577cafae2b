#include "detectors/finding.h"

namespace medic::detectors {

std::string_view to_string(FindingKind k) {
  switch (k) {
    case FindingKind::link_flap: return "link_flap";
  }
  return "?";
}

std::optional<FindingKind> parse_finding_kind(std::string_view s) {
  if (s == "link_flap") return FindingKind::link_flap;
  return std::nullopt;
}

std::string_view to_string(Severity s) {
  switch (s) {
    case Severity::info: return "info";
    case Severity::warning: return "warning";
    case Severity::critical: return "critical";
  }
  return "?";
}

}  // namespace medic::detectors
