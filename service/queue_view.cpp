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

int role_rank(const std::string& role) {
  if (role == "viewer") return 0;
  if (role == "operator") return 1;
  if (role == "admin") return 2;
  return -1;
}

std::vector<std::string> allowed_actions(const std::string& state, const std::string& role, bool approved_by_me,
                                         bool link_drained) {
  std::vector<std::string> a;
  if (role_rank(role) < role_rank("operator")) return a;
  if (state == "closed" || state == "dismissed") return a;
  const bool waits_for_drain =
      state == "pending_approval" || state == "blocked" || state == "triaged" || state == "detected";
  if (waits_for_drain && !approved_by_me) a.push_back("approve");
  if (waits_for_drain) a.push_back("reject");
  if ((state == "repair_requested" || state == "escalated") && link_drained) a.push_back("repaired");
  a.push_back("dismiss");
  return a;
}

slo::IncidentTimes times_of(const db::IncidentRow& r) {
  slo::IncidentTimes t;
  t.id = r.id;
  t.incident_class = r.incident_class;
  t.open = !r.closed_at && !r.dismissed_at;
  t.started_at = r.started_at;
  t.detected_at = r.detected_at;
  t.mitigated_at = r.mitigated_at;
  t.repaired_at = r.repaired_at;
  t.undrained_at = r.undrained_at;
  return t;
}

json incident_json(const db::IncidentRow& r, std::span<const slo::Target> targets,
                   const std::vector<std::string>& approvals, int approvals_needed, Time now) {
  const std::string waits = waits_for(r.state);
  json budget = nullptr;
  if (const auto b = slo::current_budget(times_of(r), targets, now)) {
    budget = {{"stage", std::string(slo::to_string(b->stage))},
              {"target_s", seconds(b->target)},
              {"elapsed_s", seconds(b->elapsed)},
              {"left_s", seconds(b->left())},
              {"share_left", b->share_left()}};
  }
  const std::optional<Time> since = r.detected_at ? r.detected_at : r.started_at;
  return {{"id", r.id},
          {"class", r.incident_class},
          {"severity", r.severity},
          {"state", r.state},
          {"link", r.link},
          {"device", r.device},
          {"suspect", r.suspect},
          {"suspect_port", r.suspect_port},
          {"summary", r.summary},
          {"reason", r.state == "pending_approval" ? r.approval_reason : r.blocked_reason},
          {"waits_for", waits.empty() ? "medicd" : waits},
          {"approvals", approvals},
          {"approvals_needed", approvals_needed},
          {"link_drain_state", r.link_drain_state},
          {"detected_at", r.detected_at ? format_iso8601(*r.detected_at) : ""},
          {"age_s", since ? seconds(now - *since) : 0.0},
          {"slo_budget", budget}};
}

json open_incidents_json(const std::vector<db::IncidentRow>& rows, std::span<const slo::Target> targets,
                         const std::map<int64_t, std::vector<std::string>>& approvals,
                         const std::function<int(const std::string&)>& approvals_needed, Time now) {
  json a = json::array();
  static const std::vector<std::string> kNone;
  for (const auto& r : rows) {
    const auto it = approvals.find(r.id);
    a.push_back(incident_json(r, targets, it == approvals.end() ? kNone : it->second,
                              approvals_needed(r.incident_class), now));
  }
  return a;
}

json audit_json(const db::AuditRow& r) {
  json detail = json::parse(r.detail_json, nullptr, false);
  if (detail.is_discarded()) detail = json::object();
  return {{"id", r.id},
          {"at", format_iso8601(r.at)},
          {"who", r.who},
          {"role", r.role},
          {"what", r.what},
          {"incident", r.incident_id ? json(r.incident_id) : json(nullptr)},
          {"link", r.link},
          {"reason", r.reason},
          {"source", r.source},
          {"detail", std::move(detail)}};
}

json user_json(const db::UserRow& u) {
  return {{"name", u.name},
          {"role", u.role},
          {"disabled", u.disabled},
          {"created_at", format_iso8601(u.created_at)},
          {"token_set_at", format_iso8601(u.token_set_at)},
          {"disabled_at", u.disabled_at ? format_iso8601(*u.disabled_at) : ""}};
}

}  // namespace medic::service
