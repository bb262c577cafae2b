// What people are told: Alertmanager's alerts and the webhooks' JSON, from outbox events.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/token.h"
#include "service/notify_payload.h"
#include "tests/support/epoch.h"

namespace medic::service {
namespace {

db::NotifyEvent flap(const std::string& event, const std::string& state) {
  db::NotifyEvent e;
  e.id = 41;
  e.event = event;
  e.state = state;
  e.severity = "critical";
  e.at = at(100);
  e.incident_id = 7;
  e.incident_class = "link_flap";
  e.link = "rtsw0001:eth5--ctsw0001:eth1";
  e.device = "";
  e.summary = "12 carrier changes in 60 s";
  e.zone = "zone1";
  e.plane = "plane1";
  e.device_is_switch = false;
  e.detected_at = at(10);
  return e;
}

TEST(NotifyPayload, OwnersAreTheNetworkTheHostOrTheMonitoring) {
  auto e = flap("opened", "triaged");
  EXPECT_EQ(owner_of(e), "network");
  // A host that pauses its link: the host's people.
  e.incident_class = "slow_receiver";
  e.device = "host0001";
  EXPECT_EQ(owner_of(e), "host");
  e.incident_class = "pfc_storm";
  EXPECT_EQ(owner_of(e), "host");
  // A PFC storm from a switch is the network's.
  e.device_is_switch = true;
  e.device = "rtsw0001";
  EXPECT_EQ(owner_of(e), "network");
  e.incident_class = "host_fault";
  e.device = "host0002";
  e.device_is_switch = false;
  EXPECT_EQ(owner_of(e), "host");
  // A silent switch is the network's; a silent host, the host's.
  e.incident_class = "telemetry_stale";
  e.device = "ctsw0001";
  e.device_is_switch = true;
  EXPECT_EQ(owner_of(e), "network");
  e.device = "host0003";
  e.device_is_switch = false;
  EXPECT_EQ(owner_of(e), "host");
  for (const char* m : {"prober_fault", "reflector_fault", "telemetry_outage", "telemetry_invalid"}) {
    e.incident_class = m;
    EXPECT_EQ(owner_of(e), "monitoring") << m;
  }
  e.incident_class = "no_such_class";
  EXPECT_EQ(owner_of(e), "network");
}

TEST(NotifyPayload, AlertNamesAreCamelCase) {
  EXPECT_EQ(alert_name("link_flap"), "MedicLinkFlap");
  EXPECT_EQ(alert_name("telemetry_stale"), "MedicTelemetryStale");
  EXPECT_EQ(alert_name("optics"), "MedicOptics");
  EXPECT_EQ(alert_name(""), "Medic");
}

TEST(NotifyPayload, AnOpenIncidentFiresWithItsLabelsAndALinkToItsPage) {
  const auto body = nlohmann::json::parse(
      alertmanager_body({flap("changed", "pending_approval")}, "https://medic.example.net", at(200), std::chrono::minutes(4)));
  ASSERT_EQ(body.size(), 1u);
  const auto& a = body[0];
  EXPECT_EQ(a["labels"], nlohmann::json({{"alertname", "MedicLinkFlap"},
                                         {"incident", "7"},
                                         {"class", "link_flap"},
                                         {"severity", "critical"},
                                         {"owner", "network"},
                                         {"link", "rtsw0001:eth5--ctsw0001:eth1"},
                                         {"zone", "zone1"},
                                         {"plane", "plane1"}}));
  EXPECT_EQ(a["annotations"]["runbook_url"], "https://medic.example.net/incidents/7");
  EXPECT_EQ(a["generatorURL"], "https://medic.example.net/incidents/7");
  EXPECT_EQ(a["annotations"]["summary"],
            "link_flap on rtsw0001:eth5--ctsw0001:eth1 (critical) waits for approval: 12 carrier changes in 60 s");
  EXPECT_EQ(a["annotations"]["state"], "pending_approval");
  EXPECT_EQ(a["startsAt"], format_iso8601(at(10)));
  EXPECT_EQ(a["endsAt"], format_iso8601(at(200) + std::chrono::minutes(4)));
}

TEST(NotifyPayload, AClosedIncidentIsResolvedAtItsEndNeverInTheFuture) {
  auto e = flap("resolved", "closed");
  e.ended_at = at(150);
  auto a = nlohmann::json::parse(alertmanager_body({e}, "", at(200), std::chrono::minutes(4)))[0];
  EXPECT_EQ(a["endsAt"], format_iso8601(at(150)));
  EXPECT_FALSE(a.contains("generatorURL")) << "no external URL: no link";
  EXPECT_FALSE(a["annotations"].contains("runbook_url"));
  EXPECT_EQ(a["annotations"]["summary"], "link_flap on rtsw0001:eth5--ctsw0001:eth1 (critical) is closed: 12 carrier changes in 60 s");
  // An end stamped later than now (another clock) is sent as now.
  e.ended_at = at(900);
  a = nlohmann::json::parse(alertmanager_body({e}, "", at(200), std::chrono::minutes(4)))[0];
  EXPECT_EQ(a["endsAt"], format_iso8601(at(200)));
}

TEST(NotifyPayload, ASeverityChangeResolvesTheOldAlertAndTheLastEventOfAnAlertWins) {
  auto raised = flap("changed", "triaged");
  raised.old_severity = "warning";
  auto closed = flap("resolved", "closed");
  closed.ended_at = at(300);
  const auto body = nlohmann::json::parse(alertmanager_body({flap("opened", "triaged"), raised, closed}, "", at(400),
                                                            std::chrono::minutes(4)));
  ASSERT_EQ(body.size(), 2u);
  EXPECT_EQ(body[0]["labels"]["severity"], "critical");
  EXPECT_EQ(body[0]["endsAt"], format_iso8601(at(300))) << "the close replaced the opening";
  EXPECT_EQ(body[1]["labels"]["severity"], "warning");
  EXPECT_EQ(body[1]["endsAt"], format_iso8601(at(100)));
}

TEST(NotifyPayload, AWebhookCarriesTheEventAndTheIncident) {
  auto e = flap("opened", "blocked");
  e.blocked_reason = "rtsw0001 uplinks would fall to 50% (floor 75%)";
  const auto body = nlohmann::json::parse(webhook_body(e, "http://198.18.0.10:9400"));
  EXPECT_EQ(body["event_id"], 41);
  EXPECT_EQ(body["event"], "opened");
  EXPECT_EQ(body["at"], format_iso8601(at(100)));
  EXPECT_EQ(body["text"],
            "link_flap on rtsw0001:eth5--ctsw0001:eth1 (critical) is blocked (rtsw0001 uplinks would fall to 50% (floor "
            "75%)): 12 carrier changes in 60 s");
  EXPECT_EQ(body["incident"]["id"], 7);
  EXPECT_EQ(body["incident"]["owner"], "network");
  EXPECT_EQ(body["incident"]["url"], "http://198.18.0.10:9400/incidents/7");
  EXPECT_EQ(body["incident"]["blocked_reason"], e.blocked_reason);
  EXPECT_FALSE(body["incident"].contains("ended_at"));
  // Bytes that are not UTF-8 in a summary are replaced, never a crash.
  e.summary = std::string("bad \xff byte");
  const std::string webhook = webhook_body(e, "");
  const std::string alerts = alertmanager_body({e}, "", at(1), std::chrono::minutes(1));
  EXPECT_TRUE(nlohmann::json::accept(webhook)) << webhook;
  EXPECT_TRUE(nlohmann::json::accept(alerts)) << alerts;
  EXPECT_NE(webhook.find("bad "), std::string::npos);
}

TEST(NotifyPayload, TheSignatureIsHmacSha256OfTheBody) {
  // RFC 4231, test case 2.
  EXPECT_EQ(hmac_sha256_signature("Jefe", "what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_NE(hmac_sha256_signature("Jefe", "what do ya want for nothing!"),
            hmac_sha256_signature("Jefe", "what do ya want for nothing?"));
}

}  // namespace
}  // namespace medic::service
