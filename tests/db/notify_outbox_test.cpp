// The notification outbox on the real PostgreSQL: the trigger writes a row per enabled
// receiver in the transaction that changes an incident, and the store hands them out in order
// and records each delivery's outcome.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/db/demo_db.h"
#include "tests/support/epoch.h"

namespace medic::db {
namespace {

using ::testing::ElementsAre;

const std::vector<NotifyReceiver> kTwo = {{"alertmanager http://127.0.0.1:9093", "alertmanager"},
                                          {"webhook http://127.0.0.1:8080/hook", "webhook"}};

int64_t open_flap(DemoDb& d, const std::string& ref, Time when) {
  triage::IncidentUpdate u;
  u.cls = triage::IncidentClass::link_flap;
  u.link = d.link(ref);
  u.severity = detectors::Severity::warning;
  u.detected_at = u.started_at = when;
  u.summary = "carrier changes";
  const auto id = d.db.open_incident(u, d.topo, when);
  EXPECT_TRUE(id.ok()) << id.error();
  return id.ok() ? *id : 0;
}

std::vector<std::string> told(DemoDb& d, const std::string& receiver) {
  const auto due = d.db.due(receiver, 1000);
  EXPECT_TRUE(due.ok()) << due.error();
  std::vector<std::string> out;
  if (!due.ok()) return out;
  for (const auto& e : *due) out.push_back(std::to_string(e.incident_id) + " " + e.event + " " + e.state + " " + e.severity);
  return out;
}

TEST(NotifyOutbox, EveryChangeOfStateOrSeverityIsOwedToEveryEnabledReceiverInOrder) {
  DemoDb d;
  // Before any receiver is configured, changes are owed to nobody.
  open_flap(d, "rtsw0001:eth5", at(0));
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM notify_outbox"), "0");
  ASSERT_TRUE(d.db.set_receivers(kTwo).ok());
  const int64_t id = open_flap(d, "rtsw0001:eth1", at(1));
  ASSERT_TRUE(d.db.set_incident_state(id, triage::IncidentState::pending_approval, at(2)).ok());
  // A change that is not of state or severity tells nothing.
  d.tdb.exec("UPDATE incidents SET summary = 'more carrier changes' WHERE id = " + std::to_string(id));
  d.tdb.exec("UPDATE incidents SET severity = 'critical' WHERE id = " + std::to_string(id));
  ASSERT_TRUE(d.db.set_incident_state(id, triage::IncidentState::closed, at(3)).ok());
  // Closed again (no change) tells nothing; reopened is told as opened.
  ASSERT_TRUE(d.db.set_incident_state(id, triage::IncidentState::closed, at(4)).ok());
  ASSERT_TRUE(d.db.set_incident_state(id, triage::IncidentState::triaged, at(5)).ok());
  const std::string n = std::to_string(id);
  for (const auto& r : kTwo) {
    EXPECT_THAT(told(d, r.name), ElementsAre(n + " opened triaged warning", n + " changed pending_approval warning",
                                             n + " changed pending_approval critical", n + " resolved closed critical",
                                             n + " opened triaged critical"))
        << r.name;
  }
  const auto due = d.db.due(kTwo[0].name, 10);
  ASSERT_TRUE(due.ok());
  const auto& sev = (*due)[2];
  EXPECT_EQ(sev.old_severity, "warning");
  EXPECT_EQ(sev.link, d.link_name("rtsw0001:eth1"));
  EXPECT_EQ(sev.summary, "more carrier changes");
  EXPECT_EQ(sev.zone, "zone1");
  EXPECT_FALSE(sev.device_is_switch) << "a link incident names no device";
  EXPECT_EQ((*due)[3].ended_at, at(3));
  EXPECT_EQ((*due)[0].detected_at, at(1));
}

TEST(NotifyOutbox, AChangeRolledBackOwesNothingAndADisabledReceiverGetsNothingNew) {
  DemoDb d;
  ASSERT_TRUE(d.db.set_receivers(kTwo).ok());
  const int64_t id = open_flap(d, "rtsw0001:eth1", at(1));
  // The outbox row is part of the change's transaction: rolled back with it.
  d.tdb.exec("BEGIN; UPDATE incidents SET state = 'dismissed' WHERE id = " + std::to_string(id) + "; ROLLBACK;");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM notify_outbox WHERE event = 'resolved'"), "0");
  // The webhook is no longer configured: disabled, what it is owed stays.
  ASSERT_TRUE(d.db.set_receivers({kTwo[0]}).ok());
  EXPECT_EQ(d.tdb.scalar("SELECT enabled FROM notify_receivers WHERE kind = 'webhook'"), "f");
  ASSERT_TRUE(d.db.set_incident_state(id, triage::IncidentState::dismissed, at(2)).ok());
  EXPECT_EQ(told(d, kTwo[0].name).size(), 2u);
  EXPECT_EQ(told(d, kTwo[1].name).size(), 1u);
  // Configured again: enabled, and gets what happens from then on.
  ASSERT_TRUE(d.db.set_receivers(kTwo).ok());
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM notify_receivers WHERE enabled"), "2");
}

TEST(NotifyOutbox, DeliveredAndRefusedRowsAreNoLongerDueAndFailuresAreCounted) {
  DemoDb d;
  ASSERT_TRUE(d.db.set_receivers({kTwo[0]}).ok());
  for (int i = 0; i < 4; ++i) open_flap(d, "rtsw0001:eth" + std::to_string(i + 1), at(i));
  auto due = d.db.due(kTwo[0].name, 2);
  ASSERT_TRUE(due.ok());
  ASSERT_EQ(due->size(), 2u);
  EXPECT_LT((*due)[0].id, (*due)[1].id);
  const int64_t first = (*due)[0].id, second = (*due)[1].id;
  ASSERT_TRUE(d.db.attempt_failed({first}, "HTTP 503: busy", false, at(10)).ok());
  ASSERT_TRUE(d.db.attempt_failed({first}, "connection refused", false, at(11)).ok());
  auto st = d.db.status();
  ASSERT_TRUE(st.ok());
  ASSERT_EQ(st->size(), 1u);
  EXPECT_EQ((*st)[0].pending, 4);
  EXPECT_EQ((*st)[0].last_error, "connection refused");
  EXPECT_TRUE((*st)[0].oldest_pending.has_value());
  ASSERT_TRUE(d.db.delivered({first}, at(12)).ok());
  ASSERT_TRUE(d.db.attempt_failed({second}, "HTTP 400: bad alert", true, at(12)).ok());
  // Recording a delivery again changes nothing (its first time stays).
  ASSERT_TRUE(d.db.delivered({first}, at(13)).ok());
  EXPECT_EQ(d.tdb.scalar("SELECT attempts FROM notify_outbox WHERE id = " + std::to_string(first)), "3");
  due = d.db.due(kTwo[0].name, 10);
  ASSERT_TRUE(due.ok());
  EXPECT_EQ(due->size(), 2u);
  EXPECT_GT(due->front().id, second);
  st = d.db.status();
  EXPECT_EQ((*st)[0].pending, 2);
  EXPECT_EQ((*st)[0].delivered, 1);
  EXPECT_EQ((*st)[0].failed, 1);
  // Pruning deletes only what is done and old enough.
  d.tdb.exec("UPDATE notify_outbox SET created_at = created_at - interval '30 days'");
  const auto pruned = d.db.prune(Time(std::chrono::seconds(std::time(nullptr))) - std::chrono::hours(24 * 7));
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(*pruned, 2);
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM notify_outbox"), "2");
}

TEST(NotifyOutbox, StatusOfOneReceiverIsItsRowAlone) {
  DemoDb d;
  ASSERT_TRUE(d.db.set_receivers(kTwo).ok());
  open_flap(d, "rtsw0001:eth1", at(0));
  const auto due = d.db.due(kTwo[1].name, 10);
  ASSERT_TRUE(due.ok());
  ASSERT_EQ(due->size(), 1u);
  ASSERT_TRUE(d.db.delivered({due->front().id}, at(1)).ok());
  const auto all = d.db.status();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);
  for (const auto& r : kTwo) {
    const auto one = d.db.status(r.name);
    ASSERT_TRUE(one.ok());
    ASSERT_EQ(one->size(), 1u) << r.name;
    EXPECT_EQ(one->front().name, r.name);
    EXPECT_EQ(one->front().pending, r.name == kTwo[1].name ? 0 : 1) << r.name;
    EXPECT_EQ(one->front().delivered, r.name == kTwo[1].name ? 1 : 0) << r.name;
  }
  // A name not listed has no row (and a name is data, never SQL).
  const auto none = d.db.status("webhook x' OR '1'='1");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(NotifyOutbox, OpenIncidentsAreListedForRepeatsWithTheirGroups) {
  DemoDb d;
  const int64_t a = open_flap(d, "rtsw0001:eth5", at(1));  // an uplink: the spine end has a plane
  const int64_t b = open_flap(d, "rtsw0002:eth1", at(2));
  ASSERT_TRUE(d.db.set_incident_state(b, triage::IncidentState::closed, at(3)).ok());
  const auto open = d.db.open_incidents("alertmanager x", at(4));
  ASSERT_TRUE(open.ok()) << open.error();
  ASSERT_EQ(open->size(), 1u);
  EXPECT_EQ((*open)[0].incident_id, a);
  EXPECT_EQ((*open)[0].event, "firing");
  EXPECT_EQ((*open)[0].id, 0);
  EXPECT_EQ((*open)[0].at, at(4));
  EXPECT_EQ((*open)[0].zone, "zone1");
  EXPECT_FALSE((*open)[0].plane.empty());
}

}  // namespace
}  // namespace medic::db
