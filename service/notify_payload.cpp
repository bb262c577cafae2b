#include "service/notify_payload.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "triage/incident.h"

namespace medic::service {

namespace {

bool is_host_class(const std::string& cls) {
  return cls == "slow_receiver" || cls == "pfc_storm" || cls == "host_fault" || cls == "telemetry_stale";
}

std::string where(const db::NotifyEvent& e) {
  if (!e.link.empty()) return e.link;
  if (!e.device.empty()) return e.device;
  return "medicd";
}

std::string state_words(const db::NotifyEvent& e) {
  if (e.event == "resolved") return e.state == "dismissed" ? "was dismissed" : "is closed";
  if (e.state == "pending_approval") return "waits for approval";
  if (e.state == "blocked") return "is blocked" + (e.blocked_reason.empty() ? std::string() : " (" + e.blocked_reason + ")");
  if (e.state == "escalated") return "is escalated to a person";
  if (e.state == "repair_requested") return "waits for a repair";
  if (e.state == "mitigated") return "is drained";
  return "is " + e.state;
}

nlohmann::json alert_labels(const db::NotifyEvent& e, const std::string& severity) {
  nlohmann::json l = {{"alertname", alert_name(e.incident_class)},
                      {"incident", std::to_string(e.incident_id)},
                      {"class", e.incident_class},
                      {"severity", severity},
                      {"owner", owner_of(e)}};
  // Alertmanager drops empty label values: only the ones the incident has.
  if (!e.link.empty()) l["link"] = e.link;
  if (!e.device.empty()) l["device"] = e.device;
  if (!e.zone.empty()) l["zone"] = e.zone;
  if (!e.plane.empty()) l["plane"] = e.plane;
  return l;
}

}  // namespace

std::string owner_of(const db::NotifyEvent& e) {
  const auto cls = triage::parse_incident_class(e.incident_class);
  if (cls && triage::is_measurement_class(*cls)) return "monitoring";
  // A host's own fault (its device is not a switch); a link's fault is the network's even
  // when its suspect end is a NIC.
  if (is_host_class(e.incident_class) && !e.device_is_switch && (!e.device.empty() || e.link.empty())) return "host";
  return "network";
}

std::string alert_name(const std::string& incident_class) {
  std::string out = "Medic";
  bool up = true;
  for (const char c : incident_class) {
    if (c == '_') {
      up = true;
      continue;
    }
    out += up && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    up = false;
  }
  return out;
}

std::string incident_url(const std::string& external_url, int64_t incident_id) {
  if (external_url.empty()) return "";
  return external_url + "/incidents/" + std::to_string(incident_id);
}

std::string one_line(const db::NotifyEvent& e) {
  std::string s = e.incident_class + " on " + where(e) + " (" + e.severity + ") " + state_words(e);
  if (!e.summary.empty()) s += ": " + e.summary;
  return s;
}

std::string alertmanager_body(const std::vector<db::NotifyEvent>& events, const std::string& external_url, Time now,
                              Duration firing_for) {
  nlohmann::json alerts = nlohmann::json::array();
  auto add = [&](nlohmann::json a) {
    // A later event of the same alert replaces the earlier one where it stood.
    for (auto& old : alerts) {
      if (old["labels"] == a["labels"]) {
        old = std::move(a);
        return;
      }
    }
    alerts.push_back(std::move(a));
  };
  for (const auto& e : events) {
    const std::string url = incident_url(external_url, e.incident_id);
    nlohmann::json annotations = {{"summary", one_line(e)}, {"state", e.state}};
    if (!e.summary.empty()) annotations["description"] = e.summary;
    if (!e.blocked_reason.empty() && e.event != "resolved") annotations["blocked_reason"] = e.blocked_reason;
    if (!url.empty()) annotations["runbook_url"] = url;
    const bool resolved = e.event == "resolved";
    // A resolved alert ends when its incident ended, never later than now (an end in the
    // future would keep it firing until then).
    const Time end = resolved ? std::min(e.ended_at.value_or(e.at), now) : now + firing_for;
    nlohmann::json a = {{"labels", alert_labels(e, e.severity)},
                        {"annotations", annotations},
                        {"startsAt", format_iso8601(std::min(e.detected_at, end))},
                        {"endsAt", format_iso8601(end)}};
    if (!url.empty()) a["generatorURL"] = url;
    if (!e.old_severity.empty() && e.old_severity != e.severity) {
      // The alert under the old severity is over.
      nlohmann::json old = a;
      old["labels"] = alert_labels(e, e.old_severity);
      const Time old_end = std::min(e.at, now);
      old["startsAt"] = format_iso8601(std::min(e.detected_at, old_end));  // never after its end
      old["endsAt"] = format_iso8601(old_end);
      add(std::move(old));
    }
    add(std::move(a));
  }
  return alerts.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string webhook_body(const db::NotifyEvent& e, const std::string& external_url) {
  nlohmann::json inc = {{"id", e.incident_id},
                        {"class", e.incident_class},
                        {"state", e.state},
                        {"severity", e.severity},
                        {"owner", owner_of(e)},
                        {"link", e.link},
                        {"device", e.device},
                        {"zone", e.zone},
                        {"plane", e.plane},
                        {"summary", e.summary},
                        {"blocked_reason", e.blocked_reason},
                        {"detected_at", format_iso8601(e.detected_at)},
                        {"url", incident_url(external_url, e.incident_id)}};
  if (!e.old_severity.empty()) inc["old_severity"] = e.old_severity;
  if (e.ended_at) inc["ended_at"] = format_iso8601(*e.ended_at);
  const nlohmann::json body = {
      {"event_id", e.id}, {"event", e.event}, {"at", format_iso8601(e.at)}, {"text", one_line(e)}, {"incident", inc}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace medic::service
