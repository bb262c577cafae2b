#include "service/queue_view.h"

#include "common/time.h"

namespace medic::service {

using nlohmann::json;

std::string waits_for(const std::string& state) {
  if (state == "pending_approval") return "approval";
  if (state == "blocked") return "capacity";
  if (state == "repair_requested") return "repair";
  if (state == "escalated") return "a person";
  if (state == "validating" || state == "repaired") return "validation";
  return "";
}

json queue_json(const std::vector<db::CaseRow>& cases) {
  json a = json::array();
  for (const auto& r : cases) {
    const std::string waits = waits_for(r.state);
    if (waits.empty()) continue;
    a.push_back({{"id", r.id},
                 {"class", r.incident_class},
                 {"severity", r.severity},
                 {"link", r.link},
                 {"state", r.state},
                 {"waits_for", waits},
                 {"reason", r.reason},
                 {"approved_by", r.approved_by},
                 {"loss", r.loss},
                 {"validation_failures", r.validation_failures},
                 {"detected_at", r.detected_at ? format_iso8601(*r.detected_at) : ""}});
  }
  return a;
}

}  // namespace medic::service
