// The database side of richer triage (migration 002): the suspect end, device incidents,
// reopening, severity escalation, findings without an incident, maintenance windows, the
// unique indexes that back triage's one-incident-per-scope rule, and the audit trail of
// every incident state change.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/db/all_stores.h"
#include "fabric/generator.h"
#include "tests/db/demo_db.h"
#include "tests/support/epoch.h"
#include "tests/support/testing.h"

namespace medic::db {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using detectors::FindingKind;
using detectors::Severity;
using triage::IncidentClass;
using triage::IncidentState;

// The demo fabric's database, with the two questions these tests keep asking.
struct ContextDb : DemoDb {
  std::string count(const std::string& table, const std::string& where = "true") const {
    return tdb.scalar("SELECT count(*) FROM " + table + " WHERE " + where);
  }
  IncidentRow incident(int64_t id) {
    IncidentFilter f;
    f.id = id;
    const auto rows = db.incidents(f);
    if (!rows.ok() || rows->size() != 1) throw std::runtime_error("no incident " + std::to_string(id));
    return rows->front();
  }
  // The incident's audit trail as "state" or "state: note".
  std::vector<std::string> events(int64_t id) {
    std::vector<std::string> out;
    const auto ev = db.incident_events(id);
    if (!ev.ok()) throw std::runtime_error(ev.error());
    for (const auto& e : *ev) out.push_back(e.note.empty() ? e.state : e.state + ": " + e.note);
    return out;
  }
};

detectors::Finding finding(const fabric::Topology& t, FindingKind kind, Severity sev, fabric::PortId reporter,
                           Time first, Time seen, const std::string& summary) {
  detectors::Finding f;
  f.kind = kind;
  f.severity = sev;
  f.port = reporter;
  f.link = t.port(reporter).link;
  f.device = t.port(reporter).device;
  f.first_seen = first;
  f.observed_at = seen;
  f.summary = summary;
  f.evidence = {{"value", 1.5}};
  return f;
}

// A link incident as triage hands it over: class, severity and one finding from `reporter`.
triage::IncidentUpdate link_update(const fabric::Topology& t, IncidentClass cls, FindingKind kind, Severity sev,
                                   fabric::PortId reporter, Time first, Time seen, const std::string& summary) {
  triage::IncidentUpdate u;
  u.cls = cls;
  u.link = t.port(reporter).link;
  u.severity = u.previous_severity = sev;
  u.started_at = first;
  u.detected_at = seen;
  u.summary = summary;
  u.findings.push_back(finding(t, kind, sev, reporter, first, seen, summary));
  return u;
}

// A device incident (telemetry_stale, slow_receiver, ...): no link, the device at fault.
triage::IncidentUpdate device_update(const fabric::Topology& t, IncidentClass cls, FindingKind kind,
                                     const std::string& dev, Time first, Time seen) {
  triage::IncidentUpdate u;
  u.cls = cls;
  u.device = *t.find_device(dev);
  u.severity = u.previous_severity = Severity::warning;
  u.started_at = first;
  u.detected_at = seen;
  u.summary = dev + " has not answered for 30s";
  detectors::Finding f;
  f.kind = kind;
  f.severity = Severity::warning;
  f.device = u.device;
  f.first_seen = first;
  f.observed_at = seen;
  f.summary = u.summary;
  u.findings.push_back(f);
  return u;
}

// ---------------------------------------------------------------------------------------
// open_incident

TEST(TriageContextDb, OpenIncidentStoresSuspectDeviceAndFirstEvents) {
  ContextDb d;
  const fabric::PortId reporter = d.port("ctsw001", "eth1");
  auto u = link_update(d.topo, IncidentClass::optics, FindingKind::optics_loss, Severity::critical, reporter, at(1),
                       at(2), "7.20 dB lost from rtsw0001:eth5 to ctsw001:eth1, budget 3.0 dB");
  u.suspect_port = d.port("rtsw0001", "eth5");
  u.suspect = "the transceiver in rtsw0001:eth5 (its transmit power is low)";
  u.findings.front().suspect_port = u.suspect_port;
  u.findings.front().suspect = u.suspect;
  const auto id = d.db.open_incident(u, d.topo, at(2.5));
  ASSERT_TRUE(id.ok()) << id.error();

  const IncidentRow r = d.incident(*id);
  EXPECT_EQ(r.incident_class, "optics");
  EXPECT_EQ(r.state, "triaged");
  EXPECT_EQ(r.severity, "critical");
  EXPECT_EQ(r.link, "rtsw0001:eth5--ctsw001:eth1");
  EXPECT_EQ(r.device, "ctsw001") << "the device that reported the first finding";
  EXPECT_EQ(r.suspect, u.suspect);
  EXPECT_EQ(r.suspect_port, "rtsw0001:eth5");
  EXPECT_EQ(r.reopen_count, 0);
  EXPECT_FALSE(r.reopened_at);

  const auto ev = d.db.incident_events(*id);
  ASSERT_TRUE(ev.ok()) << ev.error();
  ASSERT_EQ(ev->size(), 2u);
  EXPECT_EQ((*ev)[0].state, "detected");
  EXPECT_EQ((*ev)[0].at, at(2));
  EXPECT_EQ((*ev)[0].note, u.summary);
  EXPECT_EQ((*ev)[1].state, "triaged");
  EXPECT_EQ((*ev)[1].at, at(2.5));
  EXPECT_EQ((*ev)[1].note, "");
  EXPECT_LT((*ev)[0].id, (*ev)[1].id);
  EXPECT_TRUE(d.db.incident_events(*id + 1000)->empty());
}

TEST(TriageContextDb, OpenIncidentWithoutSuspectLeavesItNull) {
  ContextDb d;
  const auto u = link_update(d.topo, IncidentClass::corruption, FindingKind::corruption, Severity::critical,
                             d.port("rtsw0002", "eth5"), at(0), at(1), "rtsw0002:eth5 receives corrupted frames");
  const auto id = d.db.open_incident(u, d.topo, at(1));
  ASSERT_TRUE(id.ok()) << id.error();
  EXPECT_EQ(d.count("incidents", "suspect IS NULL AND suspect_port IS NULL"), "1");
  EXPECT_EQ(d.incident(*id).device, "rtsw0002");
}

TEST(TriageContextDb, DeviceIncidentHasNoLink) {
  ContextDb d;
  const auto u = device_update(d.topo, IncidentClass::telemetry_stale, FindingKind::telemetry_stale, "ctsw002", at(0),
                               at(30));
  const auto id = d.db.open_incident(u, d.topo, at(30));
  ASSERT_TRUE(id.ok()) << id.error();
  const IncidentRow r = d.incident(*id);
  EXPECT_EQ(r.incident_class, "telemetry_stale");
  EXPECT_EQ(r.link, "");
  EXPECT_EQ(r.device, "ctsw002");
  EXPECT_EQ(d.count("incidents", "link IS NULL"), "1");
  const auto fs = d.db.findings(*id);
  ASSERT_TRUE(fs.ok()) << fs.error();
  ASSERT_EQ(fs->size(), 1u);
  EXPECT_EQ((*fs)[0].kind, "telemetry_stale");
  EXPECT_EQ((*fs)[0].device, "ctsw002");
  EXPECT_EQ((*fs)[0].link, "");
  EXPECT_EQ((*fs)[0].port, "");
}

// ---------------------------------------------------------------------------------------
// Unique indexes: what triage assumes, the database enforces

TEST(TriageContextDb, OneOpenIncidentPerLinkWhateverItsClass) {
  ContextDb d;
  const fabric::PortId p = d.port("rtsw0001", "eth5");
  const auto flap = link_update(d.topo, IncidentClass::link_flap, FindingKind::link_flap, Severity::critical, p, at(0),
                                at(1), "flapping");
  const auto first = d.db.open_incident(flap, d.topo, at(1));
  ASSERT_TRUE(first.ok()) << first.error();
  // The other end, another class: still the same link.
  const auto corrupt = link_update(d.topo, IncidentClass::corruption, FindingKind::corruption, Severity::critical,
                                   d.port("ctsw001", "eth1"), at(2), at(3), "corrupted frames");
  const auto second = d.db.open_incident(corrupt, d.topo, at(3));
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.error(), HasSubstr("open_incident"));
  EXPECT_THAT(second.error(), HasSubstr("incidents_one_open_per_link"));
  EXPECT_EQ(d.count("incidents"), "1");
  EXPECT_EQ(d.count("findings"), "1") << "the failed insert left no findings";
  EXPECT_EQ(d.count("incident_events"), "2") << "nor events";

  // A device incident of a device on that link is another scope.
  ASSERT_TRUE(d.db.open_incident(device_update(d.topo, IncidentClass::telemetry_stale, FindingKind::telemetry_stale,
                                               "rtsw0001", at(0), at(30)),
                                 d.topo, at(30))
                  .ok());
  // Once the first is closed (or dismissed) the link may have a new one, of any class.
  ASSERT_TRUE(d.db.set_incident_state(*first, IncidentState::closed, at(10)).ok());
  const auto third = d.db.open_incident(corrupt, d.topo, at(11));
  ASSERT_TRUE(third.ok()) << third.error();
  ASSERT_TRUE(d.db.set_incident_state(*third, IncidentState::dismissed, at(12), "false alarm").ok());
  EXPECT_TRUE(d.db.open_incident(flap, d.topo, at(13)).ok());
  // Escalated and blocked incidents are still open.
  const auto other = link_update(d.topo, IncidentClass::optics, FindingKind::optics_loss, Severity::critical,
                                 d.port("rtsw0002", "eth6"), at(0), at(1), "loss");
  const auto oid = d.db.open_incident(other, d.topo, at(1));
  ASSERT_TRUE(oid.ok());
  ASSERT_TRUE(d.db.set_incident_state(*oid, IncidentState::escalated, at(2), "drain failed").ok());
  EXPECT_FALSE(d.db.open_incident(other, d.topo, at(3)).ok());
  ASSERT_TRUE(d.db.set_incident_state(*oid, IncidentState::blocked, at(4), "floor").ok());
  EXPECT_FALSE(d.db.open_incident(other, d.topo, at(5)).ok());
}

TEST(TriageContextDb, OneOpenDeviceIncidentPerClassAndDevice) {
  ContextDb d;
  auto stale = [&](const std::string& dev, double t) {
    return device_update(d.topo, IncidentClass::telemetry_stale, FindingKind::telemetry_stale, dev, at(t), at(t + 30));
  };
  const auto first = d.db.open_incident(stale("ctsw002", 0), d.topo, at(30));
  ASSERT_TRUE(first.ok()) << first.error();
  const auto dup = d.db.open_incident(stale("ctsw002", 5), d.topo, at(35));
  ASSERT_FALSE(dup.ok());
  EXPECT_THAT(dup.error(), HasSubstr("incidents_one_open_per_device"));
  // Another class on the same device, the same class on another device: fine.
  EXPECT_TRUE(d.db.open_incident(device_update(d.topo, IncidentClass::switch_fault, FindingKind::link_down, "ctsw002",
                                               at(0), at(1)),
                                 d.topo, at(1))
                  .ok());
  EXPECT_TRUE(d.db.open_incident(stale("ctsw003", 0), d.topo, at(30)).ok());
  EXPECT_EQ(d.count("incidents", "device = 'ctsw002'"), "2");
  // Dismissed: a new one may open.
  ASSERT_TRUE(d.db.set_incident_state(*first, IncidentState::dismissed, at(40), "answering again").ok());
  EXPECT_TRUE(d.db.open_incident(stale("ctsw002", 50), d.topo, at(80)).ok());
  EXPECT_EQ(d.count("incidents", "device = 'ctsw002' AND class = 'telemetry_stale'"), "2");
}

// ---------------------------------------------------------------------------------------
// reopen_incident

TEST(TriageContextDb, ReopenClearsLaterStagesAndKeepsTheHistory) {
  ContextDb d;
  const fabric::PortId p = d.port("rtsw0001", "eth5");
  auto u = link_update(d.topo, IncidentClass::corruption, FindingKind::corruption, Severity::critical, p, at(0), at(2),
                       "corrupted frames");
  const auto id = d.db.open_incident(u, d.topo, at(2));
  ASSERT_TRUE(id.ok()) << id.error();
  // Its drain was approved (by one of one) before it went ahead.
  ASSERT_TRUE(d.db.approve_incident(*id, person("ana"), 1, "", at(2)).ok());
  for (const auto& [st, t] : std::vector<std::pair<IncidentState, double>>{{IncidentState::mitigated, 3},
                                                                          {IncidentState::repair_requested, 3},
                                                                          {IncidentState::repaired, 100},
                                                                          {IncidentState::validated, 200},
                                                                          {IncidentState::undrained, 300},
                                                                          {IncidentState::closed, 301}}) {
    ASSERT_TRUE(d.db.set_incident_state(*id, st, at(t)).ok());
  }

  // The fault comes back an hour later, seen from the other end.
  auto again = link_update(d.topo, IncidentClass::corruption, FindingKind::corruption, Severity::warning,
                           d.port("ctsw001", "eth1"), at(3600), at(3610), "corrupted frames again");
  again.incident_id = *id;
  again.reopened = true;
  again.suspect = "the fiber or a connector";
  const auto st = d.db.reopen_incident(again, d.topo, at(3611));
  ASSERT_TRUE(st.ok()) << st.error();

  const IncidentRow r = d.incident(*id);
  EXPECT_EQ(r.state, "triaged");
  EXPECT_EQ(r.severity, "warning");
  EXPECT_EQ(r.summary, "corrupted frames again");
  EXPECT_EQ(r.reopen_count, 1);
  EXPECT_EQ(r.reopened_at, at(3611));
  EXPECT_EQ(r.started_at, at(3600));
  EXPECT_EQ(r.detected_at, at(3610));
  EXPECT_EQ(r.triaged_at, at(3611));
  EXPECT_EQ(r.suspect, "the fiber or a connector");
  for (const auto& stage : {r.mitigated_at, r.repair_requested_at, r.repaired_at, r.validated_at, r.undrained_at,
                            r.closed_at, r.dismissed_at, r.escalated_at}) {
    EXPECT_FALSE(stage);
  }
  EXPECT_EQ(r.blocked_reason, "");
  // The old approval does not carry over to the fault that came back.
  EXPECT_EQ(d.tdb.scalar("SELECT coalesce(approved_by, '-') || ' ' || (SELECT count(*) FROM approvals) FROM incidents"),
            "- 0");
  const auto fs = d.db.findings(*id);
  ASSERT_TRUE(fs.ok());
  ASSERT_EQ(fs->size(), 2u);
  EXPECT_EQ((*fs)[1].device, "ctsw001");
  // The earlier stages stay in the audit trail.
  EXPECT_THAT(d.events(*id), ElementsAre("detected: corrupted frames", "triaged", "triaged: drain approved by ana", "mitigated", "repair_requested",
                                         "repaired", "validated", "undrained", "closed",
                                         "reopened: corrupted frames again"));
  const auto ev = d.db.incident_events(*id);
  EXPECT_EQ(ev->back().at, at(3611));
  // It is open again: closed_since no longer has it, and the link takes no second incident.
  EXPECT_TRUE(d.db.closed_since(at(0))->empty());
  EXPECT_FALSE(d.db.open_incident(u, d.topo, at(3700)).ok());

  // Dismissed, then back once more.
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::dismissed, at(4000), "transient").ok());
  again.detected_at = at(5000);
  ASSERT_TRUE(d.db.reopen_incident(again, d.topo, at(5001)).ok());
  EXPECT_EQ(d.incident(*id).reopen_count, 2);
  EXPECT_EQ(d.incident(*id).reopened_at, at(5001));
  EXPECT_FALSE(d.incident(*id).dismissed_at);
}

TEST(TriageContextDb, ReopenOnlyAClosedOrDismissedIncident) {
  ContextDb d;
  const fabric::PortId p = d.port("rtsw0001", "eth5");
  const auto u = link_update(d.topo, IncidentClass::link_flap, FindingKind::link_flap, Severity::critical, p, at(0),
                             at(1), "flapping");
  const auto id = d.db.open_incident(u, d.topo, at(1));
  ASSERT_TRUE(id.ok());
  auto again = u;
  again.incident_id = *id;
  again.reopened = true;
  for (const auto state : {IncidentState::triaged, IncidentState::blocked, IncidentState::mitigated,
                           IncidentState::escalated}) {
    ASSERT_TRUE(d.db.set_incident_state(*id, state, at(2), "x").ok());
    const auto st = d.db.reopen_incident(again, d.topo, at(3));
    ASSERT_FALSE(st.ok()) << triage::to_string(state);
    EXPECT_THAT(st.error(), HasSubstr("no closed incident with id " + std::to_string(*id)));
  }
  EXPECT_EQ(d.incident(*id).reopen_count, 0);
  EXPECT_EQ(d.count("findings"), "1") << "a refused reopen attaches nothing";
  EXPECT_EQ(d.count("incident_events", "state = 'reopened'"), "0");
  again.incident_id = 987654;
  const auto unknown = d.db.reopen_incident(again, d.topo, at(3));
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.error(), HasSubstr("no closed incident with id 987654"));
}

TEST(TriageContextDb, ReopenThatWouldMakeASecondOpenIncidentIsRefusedWhole) {
  ContextDb d;
  const fabric::PortId p = d.port("rtsw0001", "eth5");
  const auto u = link_update(d.topo, IncidentClass::link_flap, FindingKind::link_flap, Severity::critical, p, at(0),
                             at(1), "flapping");
  const auto old_id = d.db.open_incident(u, d.topo, at(1));
  ASSERT_TRUE(old_id.ok());
  ASSERT_TRUE(d.db.set_incident_state(*old_id, IncidentState::closed, at(10)).ok());
  const auto new_id = d.db.open_incident(u, d.topo, at(20));
  ASSERT_TRUE(new_id.ok());
  auto again = u;
  again.incident_id = *old_id;
  again.reopened = true;
  const auto st = d.db.reopen_incident(again, d.topo, at(30));
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.error(), HasSubstr("incidents_one_open_per_link"));
  const IncidentRow r = d.incident(*old_id);
  EXPECT_EQ(r.state, "closed");
  EXPECT_EQ(r.closed_at, at(10));
  EXPECT_EQ(r.reopen_count, 0);
  EXPECT_EQ(d.count("findings", "incident_id = " + std::to_string(*old_id)), "1");
  EXPECT_EQ(d.count("incident_events", "state = 'reopened'"), "0");
}

// ---------------------------------------------------------------------------------------
// add_findings(update): severity only rises

TEST(TriageContextDb, EscalationRaisesSeverityWithAnEvent) {
  ContextDb d;
  const fabric::PortId p = d.port("ctsw001", "eth1");
  const auto u = link_update(d.topo, IncidentClass::optics, FindingKind::optics_rx_power, Severity::warning, p, at(0),
                             at(1), "receive power -7.10 dBm below warning");
  const auto id = d.db.open_incident(u, d.topo, at(1));
  ASSERT_TRUE(id.ok()) << id.error();

  triage::IncidentUpdate up;
  up.incident_id = *id;
  up.cls = IncidentClass::optics;
  up.link = u.link;
  up.previous_severity = Severity::warning;
  up.severity = Severity::critical;
  up.detected_at = at(60);
  up.summary = "7.20 dB lost, budget 3.0 dB";
  up.suspect_port = d.port("rtsw0001", "eth5");
  up.suspect = "the transceiver in rtsw0001:eth5";
  up.findings.push_back(finding(d.topo, FindingKind::optics_loss, Severity::critical, p, at(55), at(60), up.summary));
  ASSERT_TRUE(up.escalated());
  const auto st = d.db.add_findings(up, d.topo);
  ASSERT_TRUE(st.ok()) << st.error();

  IncidentRow r = d.incident(*id);
  EXPECT_EQ(r.severity, "critical");
  EXPECT_EQ(r.summary, up.summary);
  EXPECT_EQ(r.state, "triaged") << "escalating severity is not a state change";
  EXPECT_EQ(r.suspect, "the transceiver in rtsw0001:eth5");
  EXPECT_EQ(r.suspect_port, "rtsw0001:eth5");
  EXPECT_EQ(d.db.findings(*id)->size(), 2u);
  const auto ev = d.db.incident_events(*id);
  ASSERT_TRUE(ev.ok());
  ASSERT_EQ(ev->size(), 3u);
  EXPECT_EQ(ev->back().state, "escalated_severity");
  EXPECT_EQ(ev->back().at, at(60));
  EXPECT_EQ(ev->back().note, "warning -> critical: 7.20 dB lost, budget 3.0 dB");

  // More findings at the same severity: attached, nothing else changes; the first suspect stays.
  triage::IncidentUpdate same = up;
  same.previous_severity = Severity::critical;
  same.summary = "still lossy";
  same.suspect = "somebody else";
  same.suspect_port = d.port("ctsw001", "eth1");
  ASSERT_FALSE(same.escalated());
  ASSERT_TRUE(d.db.add_findings(same, d.topo).ok());
  r = d.incident(*id);
  EXPECT_EQ(r.severity, "critical");
  EXPECT_EQ(r.summary, up.summary);
  EXPECT_EQ(r.suspect, "the transceiver in rtsw0001:eth5");
  EXPECT_EQ(r.suspect_port, "rtsw0001:eth5");
  EXPECT_EQ(d.db.findings(*id)->size(), 3u);
  EXPECT_EQ(d.db.incident_events(*id)->size(), 3u);
}

TEST(TriageContextDb, AddFindingsFillsAMissingSuspect) {
  ContextDb d;
  const fabric::PortId p = d.port("ctsw001", "eth1");
  const auto u = link_update(d.topo, IncidentClass::optics, FindingKind::optics_rx_power, Severity::warning, p, at(0),
                             at(1), "low rx");
  const auto id = d.db.open_incident(u, d.topo, at(1));
  ASSERT_TRUE(id.ok());
  triage::IncidentUpdate more = u;
  more.incident_id = *id;
  more.suspect = "the fiber or a connector between rtsw0001:eth5 and ctsw001:eth1";
  ASSERT_TRUE(d.db.add_findings(more, d.topo).ok());
  const IncidentRow r = d.incident(*id);
  EXPECT_EQ(r.suspect, more.suspect);
  EXPECT_EQ(r.suspect_port, "") << "a fiber is no one end's fault";
  EXPECT_EQ(r.severity, "warning");
}

TEST(TriageContextDb, AStaleEscalationNeverLowersSeverity) {
  ContextDb d;
  const fabric::PortId p = d.port("rtsw0001", "eth5");
  const auto u = link_update(d.topo, IncidentClass::corruption, FindingKind::corruption, Severity::critical, p, at(0),
                             at(1), "corruption, band 1e-4");
  const auto id = d.db.open_incident(u, d.topo, at(1));
  ASSERT_TRUE(id.ok());
  // An update that believes the incident was at info and now rises to warning (a daemon
  // whose view lags the database): the stored critical must stay.
  triage::IncidentUpdate up;
  up.incident_id = *id;
  up.cls = IncidentClass::corruption;
  up.link = u.link;
  up.previous_severity = Severity::info;
  up.severity = Severity::warning;
  up.detected_at = at(5);
  up.summary = "discards";
  up.findings.push_back(finding(d.topo, FindingKind::discards, Severity::warning, p, at(4), at(5), "discards"));
  ASSERT_TRUE(up.escalated());
  ASSERT_TRUE(d.db.add_findings(up, d.topo).ok());
  const IncidentRow r = d.incident(*id);
  EXPECT_EQ(r.severity, "critical");
  EXPECT_EQ(r.summary, "corruption, band 1e-4");
  EXPECT_EQ(d.db.findings(*id)->size(), 2u) << "the finding is still recorded";
  EXPECT_EQ(d.count("incident_events", "state = 'escalated_severity'"), "0");
}

// ---------------------------------------------------------------------------------------
// record_noted and closed_since

TEST(TriageContextDb, NotedFindingsHaveNoIncidentAndSayWhy) {
  ContextDb d;
  ASSERT_TRUE(d.db.record_noted({}, d.topo).ok());
  EXPECT_EQ(d.count("findings"), "0");
  const fabric::PortId p = d.port("rtsw0001", "eth5");
  std::vector<triage::NotedFinding> noted = {
      {finding(d.topo, FindingKind::link_flap, Severity::info, p, at(0), at(1), "one flap"), "noted"},
      {finding(d.topo, FindingKind::optics_loss, Severity::critical, d.port("rtsw0002", "eth6"), at(2), at(3), "loss"),
       "maintenance #3: optics swap"},
  };
  ASSERT_TRUE(d.db.record_noted(noted, d.topo).ok());
  EXPECT_EQ(d.count("findings", "incident_id IS NULL"), "2");
  EXPECT_EQ(d.tdb.column("SELECT kind || ' ' || severity || ' ' || link || ' ' || port || ' ' || note "
                         "FROM findings ORDER BY id"),
            (std::vector<std::string>{"link_flap info rtsw0001:eth5--ctsw001:eth1 rtsw0001:eth5 noted",
                                      "optics_loss critical rtsw0002:eth6--ctsw002:eth2 rtsw0002:eth6 maintenance "
                                      "#3: optics swap"}));
  EXPECT_EQ(d.tdb.scalar("SELECT (extract(epoch from observed_at) * 1000000)::bigint FROM findings WHERE note = 'noted'"),
            std::to_string(at(1).time_since_epoch().count()));
  // Findings attached to incidents have no note.
  const auto id = d.db.open_incident(link_update(d.topo, IncidentClass::link_flap, FindingKind::link_flap,
                                                 Severity::critical, p, at(5), at(6), "flapping"),
                                     d.topo, at(6));
  ASSERT_TRUE(id.ok());
  const auto fs = d.db.findings(*id);
  ASSERT_EQ(fs->size(), 1u);
  EXPECT_EQ((*fs)[0].note, "");
  EXPECT_EQ(d.count("findings", "note IS NULL"), "1");
}

TEST(TriageContextDb, ClosedSinceListsRecentlyClosedAndDismissed) {
  ContextDb d;
  std::vector<int64_t> ids;
  for (const char* l : {"rtsw0001:eth5", "rtsw0002:eth5", "rtsw0003:eth5", "rtsw0004:eth5"}) {
    const auto id = d.db.open_incident(link_update(d.topo, IncidentClass::link_flap, FindingKind::link_flap,
                                                   Severity::critical, *d.topo.find_port(std::string(l).substr(0, 8), "eth5"),
                                                   at(0), at(1), "flapping"),
                                       d.topo, at(1));
    ASSERT_TRUE(id.ok()) << id.error();
    ids.push_back(*id);
  }
  ASSERT_TRUE(d.db.set_incident_state(ids[0], IncidentState::closed, at(100)).ok());
  ASSERT_TRUE(d.db.set_incident_state(ids[1], IncidentState::dismissed, at(200), "noise").ok());
  ASSERT_TRUE(d.db.set_incident_state(ids[3], IncidentState::closed, at(50)).ok());
  // ids[2] stays open.
  const auto device = d.db.open_incident(
      device_update(d.topo, IncidentClass::telemetry_stale, FindingKind::telemetry_stale, "atsw01", at(0), at(30)),
      d.topo, at(30));
  ASSERT_TRUE(device.ok());
  ASSERT_TRUE(d.db.set_incident_state(*device, IncidentState::dismissed, at(150)).ok());

  auto ids_of = [&](Time since) {
    const auto rows = d.db.closed_since(since);
    if (!rows.ok()) throw std::runtime_error(rows.error());
    std::vector<int64_t> out;
    for (const auto& r : *rows) out.push_back(r.id);
    return out;
  };
  EXPECT_THAT(ids_of(at(60)), ElementsAre(ids[0], ids[1], *device));
  EXPECT_THAT(ids_of(at(0)), ElementsAre(ids[0], ids[1], ids[3], *device));
  EXPECT_THAT(ids_of(at(100)), ElementsAre(ids[0], ids[1], *device)) << "since is inclusive";
  EXPECT_THAT(ids_of(at(160)), ElementsAre(ids[1]));
  EXPECT_TRUE(ids_of(at(201)).empty());
  const auto rows = d.db.closed_since(at(60));
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ((*rows)[0].closed_at, at(100));
  EXPECT_FALSE((*rows)[0].dismissed_at);
  EXPECT_EQ((*rows)[1].dismissed_at, at(200));
  EXPECT_EQ((*rows)[1].link, "rtsw0002:eth5--ctsw001:eth2");
  EXPECT_EQ((*rows)[2].device, "atsw01");
  EXPECT_EQ((*rows)[2].link, "");
}

// ---------------------------------------------------------------------------------------
// Maintenance windows

TEST(TriageContextDb, MaintenanceAddListAndEnd) {
  ContextDb d;
  auto add = [&](const std::string& link, const std::string& device, double from, double to, const std::string& why) {
    MaintenanceRow m;
    m.link = link;
    m.device = device;
    m.starts_at = at(from);
    m.ends_at = at(to);
    m.reason = why;
    m.created_by = "alice";
    const auto id = d.db.add_maintenance(m, person("ana"), SystemClock().now());
    if (!id.ok()) throw std::runtime_error(id.error());
    return *id;
  };
  const std::string link = d.link_name("rtsw0001:eth5");
  const int64_t w1 = add(link, "", 0, 100, "optics swap");
  const int64_t w2 = add("", "ctsw002", 50, 150, "line card");
  const int64_t w3 = add("", "rtsw0004", 200, 300, "upgrade");  // later
  const int64_t w4 = add(link, "", 0, 10, "short");              // already over at 20

  auto ids_of = [&](std::optional<Time> when) {
    const auto rows = d.db.maintenance(when);
    if (!rows.ok()) throw std::runtime_error(rows.error());
    std::vector<int64_t> out;
    for (const auto& r : *rows) out.push_back(r.id);
    return out;
  };
  EXPECT_THAT(ids_of(at(20)), ElementsAre(w1, w2, w3)) << "running or still to come, by start";
  EXPECT_THAT(ids_of(std::nullopt), ElementsAre(w1, w4, w2, w3));
  EXPECT_THAT(ids_of(at(100)), ElementsAre(w2, w3)) << "a window is over at its end";
  EXPECT_TRUE(ids_of(at(300)).empty());

  const auto rows = d.db.maintenance(at(20));
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ((*rows)[0].link, link);
  EXPECT_EQ((*rows)[0].device, "");
  EXPECT_EQ((*rows)[0].starts_at, at(0));
  EXPECT_EQ((*rows)[0].ends_at, at(100));
  EXPECT_EQ((*rows)[0].reason, "optics swap");
  EXPECT_EQ((*rows)[0].created_by, "alice");
  EXPECT_EQ((*rows)[1].device, "ctsw002");
  EXPECT_EQ((*rows)[1].link, "");

  // Ending a running window early.
  ASSERT_TRUE(d.db.end_maintenance(w1, person("ana"), at(30)).ok());
  EXPECT_THAT(ids_of(at(40)), ElementsAre(w2, w3));
  EXPECT_EQ((*d.db.maintenance(std::nullopt))[0].ends_at, at(30));
  // A window that is over, or one that does not exist, cannot be ended.
  for (const int64_t id : {w1, w4}) {
    const auto st = d.db.end_maintenance(id, person("ana"), at(40));
    ASSERT_FALSE(st.ok()) << id;
    EXPECT_EQ(st.error(), "maintenance window #" + std::to_string(id) + " is over already");
    EXPECT_EQ(st.kind(), ErrorKind::conflict);
  }
  const auto unknown = d.db.end_maintenance(424242, person("ana"), at(40));
  EXPECT_EQ(unknown.error(), "no maintenance window #424242");
  EXPECT_EQ(unknown.kind(), ErrorKind::not_found);
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM maintenance WHERE id = " + std::to_string(w4) +
                         " AND ends_at = '" + format_iso8601(at(10)) + "'"),
            "1")
      << "a refused end changes nothing";
}

TEST(TriageContextDb, MaintenanceChecks) {
  ContextDb d;
  MaintenanceRow m;
  m.starts_at = at(0);
  m.ends_at = at(10);
  // A link and a device at once, or neither.
  m.link = d.link_name("rtsw0001:eth5");
  m.device = "rtsw0001";
  auto both = d.db.add_maintenance(m, person("ana"), SystemClock().now());
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(both.error(), HasSubstr("add_maintenance"));
  EXPECT_THAT(both.error(), HasSubstr("check constraint"));
  m.link.clear();
  m.device.clear();
  auto neither = d.db.add_maintenance(m, person("ana"), SystemClock().now());
  ASSERT_FALSE(neither.ok());
  EXPECT_THAT(neither.error(), HasSubstr("check constraint"));
  // It must end after it starts.
  m.device = "rtsw0001";
  m.ends_at = at(0);
  auto empty = d.db.add_maintenance(m, person("ana"), SystemClock().now());
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.error(), HasSubstr("check constraint"));
  m.ends_at = at(-5);
  EXPECT_FALSE(d.db.add_maintenance(m, person("ana"), SystemClock().now()).ok());
  // A link the inventory does not know.
  m.device.clear();
  m.link = "no-such-link";
  m.ends_at = at(10);
  auto unknown = d.db.add_maintenance(m, person("ana"), SystemClock().now());
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.error(), HasSubstr("maintenance_link_fkey"));
  EXPECT_EQ(d.count("maintenance"), "0");
  // And a good one goes in.
  m.link = d.link_name("rtsw0001:eth5");
  EXPECT_TRUE(d.db.add_maintenance(m, person("ana"), SystemClock().now()).ok());
  EXPECT_EQ(d.count("maintenance"), "1");
}

// ---------------------------------------------------------------------------------------
// The audit trail

TEST(TriageContextDb, EveryStateChangeIsAnEvent) {
  ContextDb d;
  const auto id = d.db.open_incident(link_update(d.topo, IncidentClass::link_flap, FindingKind::link_flap,
                                                 Severity::critical, d.port("rtsw0003", "eth7"), at(0), at(3),
                                                 "flapping"),
                                     d.topo, at(4));
  ASSERT_TRUE(id.ok());
  const std::string reason = "rtsw0003 uplinks would fall to 50.0% < floor 75.0%";
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::blocked, at(5), reason).ok());
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::blocked, at(6), reason).ok());
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::mitigated, at(7)).ok());
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::mitigated, at(8)).ok());
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::repair_requested, at(8)).ok());
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::escalated, at(9), "repair overdue").ok());
  // A failed call records nothing.
  EXPECT_FALSE(d.db.set_incident_state(*id + 1, IncidentState::closed, at(10)).ok());

  const auto ev = d.db.incident_events(*id);
  ASSERT_TRUE(ev.ok()) << ev.error();
  std::vector<std::string> got;
  for (const auto& e : *ev) got.push_back(e.state + "@" + std::to_string(seconds(e.at - kT0)).substr(0, 3) + " " + e.note);
  EXPECT_THAT(got, ElementsAre("detected@3.0 flapping", "triaged@4.0 ", "blocked@5.0 " + reason,
                               "blocked@6.0 " + reason, "mitigated@7.0 ", "mitigated@8.0 ", "repair_requested@8.0 ",
                               "escalated@9.0 repair overdue"));
  // The stage timestamp is the first time; the trail has every time.
  EXPECT_EQ(d.incident(*id).mitigated_at, at(7));
  EXPECT_EQ(d.count("incident_events"), "8");
}

}  // namespace
}  // namespace medic::db
