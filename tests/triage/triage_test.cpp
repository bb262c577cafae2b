#include "triage/triage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "fabric/loader.h"
#include "tests/support/epoch.h"

namespace medic::triage {
namespace {

// What medicd's recorder hands back (triage::Recorded), one incident at a time.
void bind_id(Triage& t, const IncidentUpdate& u, int64_t id) {
  Recorded r;
  r.add_opened(u, id);
  t.apply(r);
}
void close_id(Triage& t, int64_t id, Time at) {
  Recorded r;
  r.closed.emplace_back(id, at);
  t.apply(r);
}

using detectors::Finding;
using detectors::FindingKind;
using detectors::Severity;
using fabric::kNone;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr Duration kOneUs{1};

// rtsw1 has six uplinks, one to each of ctsw1..ctsw6 (links "rtsw1:ethN--ctswN:eth1"), and
// host1's NIC nic0; host1's other NICs go to rtsw2..rtsw4 (one rail per ToR).
fabric::Topology topology() {
  return fabric::parse_topology(R"({
    "switches": [
      {"name": "rtsw1", "role": "rtsw", "telemetry": "http://sim/rtsw1", "driver": {"kind": "dryrun"}},
      {"name": "rtsw2", "role": "rtsw", "telemetry": "http://sim/rtsw2", "driver": {"kind": "dryrun"}},
      {"name": "rtsw3", "role": "rtsw", "telemetry": "http://sim/rtsw3", "driver": {"kind": "dryrun"}},
      {"name": "rtsw4", "role": "rtsw", "telemetry": "http://sim/rtsw4", "driver": {"kind": "dryrun"}},
      {"name": "ctsw1", "role": "ctsw", "telemetry": "http://sim/ctsw1", "driver": {"kind": "dryrun"}},
      {"name": "ctsw2", "role": "ctsw", "telemetry": "http://sim/ctsw2", "driver": {"kind": "dryrun"}},
      {"name": "ctsw3", "role": "ctsw", "telemetry": "http://sim/ctsw3", "driver": {"kind": "dryrun"}},
      {"name": "ctsw4", "role": "ctsw", "telemetry": "http://sim/ctsw4", "driver": {"kind": "dryrun"}},
      {"name": "ctsw5", "role": "ctsw", "telemetry": "http://sim/ctsw5", "driver": {"kind": "dryrun"}},
      {"name": "ctsw6", "role": "ctsw", "telemetry": "http://sim/ctsw6", "driver": {"kind": "dryrun"}}
    ],
    "hosts": [{"name": "host1", "nics": ["nic0", "nic1", "nic2", "nic3"]}],
    "links": [
      {"a": "rtsw1:eth1", "b": "ctsw1:eth1", "speed_gbps": 400},
      {"a": "rtsw1:eth2", "b": "ctsw2:eth1", "speed_gbps": 400},
      {"a": "rtsw1:eth3", "b": "ctsw3:eth1", "speed_gbps": 400},
      {"a": "rtsw1:eth4", "b": "ctsw4:eth1", "speed_gbps": 400},
      {"a": "rtsw1:eth5", "b": "ctsw5:eth1", "speed_gbps": 400},
      {"a": "rtsw1:eth6", "b": "ctsw6:eth1", "speed_gbps": 400},
      {"a": "host1:nic0", "b": "rtsw1:eth7", "speed_gbps": 400},
      {"a": "host1:nic1", "b": "rtsw2:eth7", "speed_gbps": 400},
      {"a": "host1:nic2", "b": "rtsw3:eth7", "speed_gbps": 400},
      {"a": "host1:nic3", "b": "rtsw4:eth7", "speed_gbps": 400}
    ]
  })",
                                "triage.json");
}

enum End { a_end, b_end };

class TriageTest : public ::testing::Test {
 protected:
  fabric::LinkId link(const std::string& endpoint) const { return *topo.find_link(endpoint); }
  fabric::DeviceId dev(const std::string& name) const { return *topo.find_device(name); }

  // A finding reported by one end of a link, concluded at `t`, begun 10 s earlier.
  Finding on_link(FindingKind kind, Severity sev, fabric::LinkId l, End end, Time t, std::string summary = "") const {
    Finding f;
    f.kind = kind;
    f.severity = sev;
    f.link = l;
    f.port = end == a_end ? topo.link(l).a : topo.link(l).b;
    f.device = topo.port(f.port).device;
    f.first_seen = t - seconds(10);
    f.observed_at = t;
    f.summary = summary.empty() ? std::string(detectors::to_string(kind)) + " on " + topo.endpoint_name(f.port) : summary;
    return f;
  }
  Finding on_device(FindingKind kind, fabric::DeviceId d, Time t) const {
    Finding f;
    f.kind = kind;
    f.severity = Severity::warning;
    f.device = d;
    f.first_seen = t - seconds(30);
    f.observed_at = t;
    f.summary = (d == kNone ? std::string("medicd") : topo.device(d).name) + " " + std::string(detectors::to_string(kind));
    return f;
  }
  // Binds every new update of `r` to the next id, as the daemon does after inserting it.
  std::vector<int64_t> bind_new(Triage& t, const TriageResult& r) {
    std::vector<int64_t> ids;
    for (const auto& u : r.updates) {
      if (!u.is_new()) continue;
      bind_id(t, u, next_id_);
      ids.push_back(next_id_++);
    }
    return ids;
  }

  // Two uplinks of rtsw1 go down at kT0 and get incidents of their own (ids 1 and 2); two
  // more fail at `later`.
  TriageResult two_then_two(Triage& t, Time later) {
    const std::vector<Finding> first = {on_link(FindingKind::link_down, Severity::warning, up1, a_end, kT0),
                                        on_link(FindingKind::link_down, Severity::warning, up2, a_end, kT0)};
    const TriageResult r0 = t.process(first, kT0);
    EXPECT_EQ(r0.updates.size(), 2u);
    for (size_t i = 0; i < r0.updates.size(); ++i) bind_id(t, r0.updates[i], 1 + static_cast<int64_t>(i));
    const std::vector<Finding> second = {on_link(FindingKind::link_flap, Severity::critical, up3, a_end, later),
                                         on_link(FindingKind::corruption, Severity::warning, up4, b_end, later)};
    return t.process(second, later);
  }

  fabric::Topology topo = topology();
  fabric::LinkId up1 = link("rtsw1:eth1"), up2 = link("rtsw1:eth2"), up3 = link("rtsw1:eth3"),
                 up4 = link("rtsw1:eth4"), up5 = link("rtsw1:eth5"), up6 = link("rtsw1:eth6");
  fabric::LinkId nic0 = link("host1:nic0"), nic1 = link("host1:nic1"), nic2 = link("host1:nic2"),
                 nic3 = link("host1:nic3");
  int64_t next_id_ = 100;
};

// ---------------------------------------------------------------------------------------
// One incident per link

TEST_F(TriageTest, BothEndsOfALinkAreOneIncident) {
  Triage t(topo);
  Finding a = on_link(FindingKind::link_flap, Severity::critical, up1, a_end, kT0, "a end flapping");
  a.first_seen = kT0 - seconds(30);
  Finding b = on_link(FindingKind::link_flap, Severity::critical, up1, b_end, kT0 - seconds(5), "b end flapping");
  const std::vector<Finding> fs = {a, b};
  const TriageResult r = t.process(fs, kT0);
  ASSERT_EQ(r.updates.size(), 1u);
  EXPECT_THAT(r.noted, IsEmpty());
  const IncidentUpdate& u = r.updates[0];
  EXPECT_TRUE(u.is_new());
  EXPECT_FALSE(u.reopened);
  EXPECT_FALSE(u.escalated());
  EXPECT_EQ(u.cls, IncidentClass::link_flap);
  EXPECT_EQ(u.link, up1);
  EXPECT_EQ(u.device, kNone);
  EXPECT_EQ(u.severity, Severity::critical);
  EXPECT_EQ(u.summary, "a end flapping");
  EXPECT_EQ(u.started_at, kT0 - seconds(30));  // the earliest first_seen
  EXPECT_EQ(u.detected_at, kT0 - seconds(5));  // the earliest conclusion
  ASSERT_EQ(u.findings.size(), 2u);
  EXPECT_EQ(u.findings[0].port, topo.link(up1).a);
  EXPECT_EQ(u.findings[1].port, topo.link(up1).b);

  EXPECT_EQ(t.open_count(), 0u);  // not open until the database has given it an id
  bind_id(t, u, 7);
  EXPECT_EQ(t.open_count(), 1u);
  EXPECT_EQ(t.open_for_link(up1), 7);
  EXPECT_EQ(t.open_for_link(up2), std::nullopt);
}

TEST_F(TriageTest, LaterFindingsOfAnotherKindAttachAndOnlyRaiseSeverity) {
  Triage t(topo);
  const std::vector<Finding> first = {on_link(FindingKind::corruption, Severity::warning, up1, b_end, kT0, "crc")};
  const TriageResult r0 = t.process(first, kT0);
  ASSERT_EQ(r0.updates.size(), 1u);
  bind_id(t, r0.updates[0], 11);

  // Another kind, same severity: attached, nothing rises.
  const std::vector<Finding> optics = {on_link(FindingKind::optics_rx_power, Severity::warning, up1, a_end, kT0 + seconds(10))};
  const TriageResult r1 = t.process(optics, kT0 + seconds(10));
  ASSERT_EQ(r1.updates.size(), 1u);
  EXPECT_EQ(r1.updates[0].incident_id, 11);
  EXPECT_EQ(r1.updates[0].cls, IncidentClass::corruption);  // the incident keeps its class
  EXPECT_EQ(r1.updates[0].link, up1);
  EXPECT_EQ(r1.updates[0].severity, Severity::warning);
  EXPECT_EQ(r1.updates[0].previous_severity, Severity::warning);
  EXPECT_FALSE(r1.updates[0].escalated());
  ASSERT_EQ(r1.updates[0].findings.size(), 1u);
  EXPECT_EQ(r1.updates[0].findings[0].kind, FindingKind::optics_rx_power);

  // A critical one: escalated, and its summary becomes the incident's.
  const std::vector<Finding> fec = {
      on_link(FindingKind::fec_uncorrectable, Severity::critical, up1, b_end, kT0 + seconds(20), "frames lost")};
  const TriageResult r2 = t.process(fec, kT0 + seconds(20));
  ASSERT_EQ(r2.updates.size(), 1u);
  const IncidentUpdate& u2 = r2.updates[0];
  EXPECT_EQ(u2.incident_id, 11);
  EXPECT_FALSE(u2.is_new());
  EXPECT_EQ(u2.cls, IncidentClass::corruption);
  EXPECT_EQ(u2.previous_severity, Severity::warning);
  EXPECT_EQ(u2.severity, Severity::critical);
  EXPECT_TRUE(u2.escalated());
  EXPECT_EQ(u2.summary, "frames lost");

  // A warning afterwards never lowers it, and the rise was remembered.
  const std::vector<Finding> later = {on_link(FindingKind::corruption, Severity::warning, up1, a_end, kT0 + seconds(30))};
  const TriageResult r3 = t.process(later, kT0 + seconds(30));
  ASSERT_EQ(r3.updates.size(), 1u);
  EXPECT_EQ(r3.updates[0].incident_id, 11);
  EXPECT_EQ(r3.updates[0].previous_severity, Severity::critical);
  EXPECT_EQ(r3.updates[0].severity, Severity::critical);
  EXPECT_FALSE(r3.updates[0].escalated());
  EXPECT_EQ(t.open_count(), 1u);
}

TEST_F(TriageTest, ANewIncidentTakesClassAndSummaryFromItsMostSevereFinding) {
  Triage t(topo);
  const std::vector<Finding> fs = {
      on_link(FindingKind::optics_rx_power, Severity::warning, up2, a_end, kT0, "low light"),
      on_link(FindingKind::link_flap, Severity::critical, up2, b_end, kT0, "keeps flapping"),
      on_link(FindingKind::corruption, Severity::warning, up2, a_end, kT0, "crc"),
      // the same kinds the other way round on another link
      on_link(FindingKind::link_flap, Severity::critical, up3, b_end, kT0, "keeps flapping 3"),
      on_link(FindingKind::optics_rx_power, Severity::warning, up3, a_end, kT0, "low light 3"),
      // equal severities: the first names it
      on_link(FindingKind::optics_tx_power, Severity::warning, up4, a_end, kT0, "weak laser"),
      on_link(FindingKind::corruption, Severity::warning, up4, b_end, kT0, "crc 4"),
  };
  const TriageResult r = t.process(fs, kT0);
  ASSERT_EQ(r.updates.size(), 3u);
  EXPECT_EQ(r.updates[0].link, up2);
  EXPECT_EQ(r.updates[0].cls, IncidentClass::link_flap);
  EXPECT_EQ(r.updates[0].summary, "keeps flapping");
  EXPECT_EQ(r.updates[0].severity, Severity::critical);
  EXPECT_EQ(r.updates[0].findings.size(), 3u);
  EXPECT_EQ(r.updates[1].link, up3);
  EXPECT_EQ(r.updates[1].cls, IncidentClass::link_flap);
  EXPECT_EQ(r.updates[1].summary, "keeps flapping 3");
  EXPECT_EQ(r.updates[2].link, up4);
  EXPECT_EQ(r.updates[2].cls, IncidentClass::optics);
  EXPECT_EQ(r.updates[2].summary, "weak laser");
  EXPECT_EQ(r.updates[2].severity, Severity::warning);
}

TEST_F(TriageTest, SuspectComesFromTheOpticsFinding) {
  Triage t(topo);
  Finding loss = on_link(FindingKind::optics_loss, Severity::warning, up1, a_end, kT0);
  loss.suspect_port = topo.link(up1).b;
  loss.suspect = "ctsw1:eth1 transmits 4.2 dB below what rtsw1:eth1 receives";
  const std::vector<Finding> fs = {on_link(FindingKind::corruption, Severity::critical, up1, a_end, kT0), loss};
  const TriageResult r = t.process(fs, kT0);
  ASSERT_EQ(r.updates.size(), 1u);
  EXPECT_EQ(r.updates[0].cls, IncidentClass::corruption);
  EXPECT_EQ(r.updates[0].suspect, loss.suspect);
  EXPECT_EQ(r.updates[0].suspect_port, topo.link(up1).b);
  bind_id(t, r.updates[0], 5);

  // Also on an update of an open incident.
  const std::vector<Finding> crc = {on_link(FindingKind::corruption, Severity::critical, up2, a_end, kT0)};
  const TriageResult r1 = t.process(crc, kT0);
  ASSERT_EQ(r1.updates.size(), 1u);
  EXPECT_TRUE(r1.updates[0].suspect.empty());
  EXPECT_EQ(r1.updates[0].suspect_port, kNone);
  bind_id(t, r1.updates[0], 6);
  Finding tx = on_link(FindingKind::optics_tx_power, Severity::warning, up2, a_end, kT0 + seconds(10));
  tx.suspect_port = topo.link(up2).a;
  tx.suspect = "rtsw1:eth2's laser is weak";
  const std::vector<Finding> more = {tx};
  const TriageResult r2 = t.process(more, kT0 + seconds(10));
  ASSERT_EQ(r2.updates.size(), 1u);
  EXPECT_EQ(r2.updates[0].incident_id, 6);
  EXPECT_EQ(r2.updates[0].suspect, "rtsw1:eth2's laser is weak");
  EXPECT_EQ(r2.updates[0].suspect_port, topo.link(up2).a);
}

// ---------------------------------------------------------------------------------------
// Info findings and maintenance

TEST_F(TriageTest, InfoFindingsAreNotedUnlessTheirLinkHasAnOpenIncident) {
  Triage t(topo);
  const std::vector<Finding> info = {on_link(FindingKind::link_flap, Severity::info, up3, a_end, kT0, "flap noted")};
  const TriageResult r = t.process(info, kT0);
  EXPECT_THAT(r.updates, IsEmpty());
  ASSERT_EQ(r.noted.size(), 1u);
  EXPECT_EQ(r.noted[0].note, "noted");
  EXPECT_EQ(r.noted[0].finding.summary, "flap noted");

  const std::vector<Finding> down = {on_link(FindingKind::link_down, Severity::warning, up3, b_end, kT0)};
  const TriageResult r1 = t.process(down, kT0);
  ASSERT_EQ(r1.updates.size(), 1u);
  bind_id(t, r1.updates[0], 9);

  const TriageResult r2 = t.process(info, kT0 + seconds(10));
  EXPECT_THAT(r2.noted, IsEmpty());
  ASSERT_EQ(r2.updates.size(), 1u);
  EXPECT_EQ(r2.updates[0].incident_id, 9);
  EXPECT_EQ(r2.updates[0].cls, IncidentClass::link_down);
  EXPECT_EQ(r2.updates[0].severity, Severity::warning);
  EXPECT_FALSE(r2.updates[0].escalated());
  ASSERT_EQ(r2.updates[0].findings.size(), 1u);
  EXPECT_EQ(r2.updates[0].findings[0].severity, Severity::info);
}

TEST_F(TriageTest, InfoFindingsOnManyLinksOpenNothing) {
  Triage t(topo);
  std::vector<Finding> fs;
  for (const auto l : {up1, up2, up3, up4, up5}) fs.push_back(on_link(FindingKind::link_flap, Severity::info, l, a_end, kT0));
  const TriageResult r = t.process(fs, kT0);
  EXPECT_THAT(r.updates, IsEmpty());
  EXPECT_EQ(r.noted.size(), 5u);
}

TEST_F(TriageTest, MaintenanceOnALinkNotesItsFindingsOnlyWithinTheWindow) {
  const Time start = kT0, end = kT0 + hours(1);
  const std::vector<Maintenance> mw = {Maintenance{3, up1, kNone, start, end, "optics swap"}};
  const std::vector<Finding> fs = {on_link(FindingKind::link_flap, Severity::critical, up1, a_end, kT0),
                                   on_link(FindingKind::link_flap, Severity::info, up1, b_end, kT0),
                                   on_link(FindingKind::link_down, Severity::warning, up2, a_end, kT0)};
  for (const Time now : {start, start + minutes(30), end - kOneUs}) {
    Triage t(topo);
    const TriageResult r = t.process(fs, now, mw);
    ASSERT_EQ(r.noted.size(), 2u);
    EXPECT_EQ(r.noted[0].note, "maintenance #3: optics swap");
    EXPECT_EQ(r.noted[1].note, "maintenance #3: optics swap");
    ASSERT_EQ(r.updates.size(), 1u);  // the other link is not covered
    EXPECT_EQ(r.updates[0].link, up2);
  }
  for (const Time now : {start - kOneUs, end}) {
    Triage t(topo);
    const TriageResult r = t.process(fs, now, mw);
    EXPECT_EQ(r.updates.size(), 2u);
    ASSERT_EQ(r.noted.size(), 1u);  // the info finding, noted as any other
    EXPECT_EQ(r.noted[0].note, "noted");
  }
}

TEST_F(TriageTest, MaintenanceOnADeviceCoversItsLinksAtEitherEnd) {
  const std::vector<Maintenance> mw = {Maintenance{4, kNone, dev("ctsw1"), kT0 - hours(1), kT0 + hours(1), ""},
                                       Maintenance{8, kNone, dev("host1"), kT0 - hours(1), kT0 + hours(1), "reimage"}};
  Triage t(topo);
  const std::vector<Finding> fs = {
      on_link(FindingKind::corruption, Severity::critical, up1, a_end, kT0),  // reported by rtsw1, link to ctsw1
      on_link(FindingKind::corruption, Severity::critical, up2, a_end, kT0),  // rtsw1 -- ctsw2: not covered
      on_device(FindingKind::telemetry_stale, dev("ctsw1"), kT0),
      on_link(FindingKind::link_down, Severity::warning, nic1, b_end, kT0),  // reported by rtsw2, link to host1
  };
  const TriageResult r = t.process(fs, kT0, mw);
  ASSERT_EQ(r.noted.size(), 3u);
  EXPECT_EQ(r.noted[0].finding.link, up1);
  EXPECT_EQ(r.noted[0].note, "maintenance #4");
  EXPECT_EQ(r.noted[1].finding.kind, FindingKind::telemetry_stale);
  EXPECT_EQ(r.noted[1].note, "maintenance #4");
  EXPECT_EQ(r.noted[2].finding.link, nic1);
  EXPECT_EQ(r.noted[2].note, "maintenance #8: reimage");
  ASSERT_EQ(r.updates.size(), 1u);
  EXPECT_EQ(r.updates[0].link, up2);
}

TEST_F(TriageTest, MaintenanceNotesFindingsEvenForAnOpenIncident) {
  Triage t(topo);
  const std::vector<Finding> fs = {on_link(FindingKind::corruption, Severity::warning, up1, a_end, kT0)};
  bind_id(t, t.process(fs, kT0).updates.at(0), 3);
  const std::vector<Maintenance> mw = {Maintenance{12, up1, kNone, kT0, kT0 + hours(2), "fiber clean"}};
  const std::vector<Finding> crit = {on_link(FindingKind::corruption, Severity::critical, up1, a_end, kT0 + minutes(1))};
  const TriageResult r = t.process(crit, kT0 + minutes(1), mw);
  EXPECT_THAT(r.updates, IsEmpty());
  ASSERT_EQ(r.noted.size(), 1u);
  EXPECT_EQ(r.noted[0].note, "maintenance #12: fiber clean");
}

// ---------------------------------------------------------------------------------------
// Device faults

TEST_F(TriageTest, FourFailingLinksOfOneSwitchAreOneSwitchFault) {
  Triage t(topo);
  const std::vector<Finding> fs = {
      on_link(FindingKind::link_flap, Severity::critical, up1, a_end, kT0),
      on_link(FindingKind::link_down, Severity::warning, up2, a_end, kT0),
      on_link(FindingKind::link_down, Severity::warning, up2, b_end, kT0),
      on_link(FindingKind::corruption, Severity::warning, up3, b_end, kT0),
      on_link(FindingKind::fec_ber, Severity::warning, up4, a_end, kT0),
  };
  const TriageResult r = t.process(fs, kT0);
  ASSERT_EQ(r.updates.size(), 1u);
  EXPECT_THAT(r.noted, IsEmpty());
  const IncidentUpdate& u = r.updates[0];
  EXPECT_TRUE(u.is_new());
  EXPECT_EQ(u.cls, IncidentClass::switch_fault);
  EXPECT_EQ(u.device, dev("rtsw1"));
  EXPECT_EQ(u.link, kNone);
  EXPECT_EQ(u.severity, Severity::critical);
  EXPECT_EQ(u.findings.size(), 5u);
  EXPECT_EQ(u.summary, "rtsw1: 4 links failing within 2m00s (rtsw1:eth1--ctsw1:eth1, ...)");
  bind_id(t, u, 40);
  EXPECT_EQ(t.open_count(), 1u);
  EXPECT_EQ(t.open_for_link(up1), std::nullopt);  // held by the device incident, not by a link
}

TEST_F(TriageTest, FecUncorrectableCountsTowardADeviceFault) {
  Triage t(topo);
  std::vector<Finding> fs;
  for (const auto l : {up3, up4, up5, up6}) fs.push_back(on_link(FindingKind::fec_uncorrectable, Severity::critical, l, b_end, kT0));
  const TriageResult r = t.process(fs, kT0);
  ASSERT_EQ(r.updates.size(), 1u);
  EXPECT_EQ(r.updates[0].cls, IncidentClass::switch_fault);
  EXPECT_EQ(r.updates[0].device, dev("rtsw1"));
}

TEST_F(TriageTest, ThreeFailingLinksArePerLinkIncidents) {
  Triage t(topo);
  const std::vector<Finding> fs = {on_link(FindingKind::link_down, Severity::warning, up1, a_end, kT0),
                                   on_link(FindingKind::link_flap, Severity::critical, up2, a_end, kT0),
                                   on_link(FindingKind::corruption, Severity::warning, up3, b_end, kT0)};
  const TriageResult r = t.process(fs, kT0);
  ASSERT_EQ(r.updates.size(), 3u);
  EXPECT_EQ(r.updates[0].cls, IncidentClass::link_down);
  EXPECT_EQ(r.updates[0].link, up1);
  EXPECT_EQ(r.updates[1].cls, IncidentClass::link_flap);
  EXPECT_EQ(r.updates[1].link, up2);
  EXPECT_EQ(r.updates[2].cls, IncidentClass::corruption);
  EXPECT_EQ(r.updates[2].link, up3);
  for (const auto& u : r.updates) EXPECT_EQ(u.device, kNone);
}

TEST_F(TriageTest, TheThresholdComesFromTheConfig) {
  TriageConfig c;
  c.device_fault_links = 2;
  Triage t(topo, c);
  const std::vector<Finding> fs = {on_link(FindingKind::link_down, Severity::warning, up5, a_end, kT0),
                                   on_link(FindingKind::link_down, Severity::warning, up6, a_end, kT0)};
  const TriageResult r = t.process(fs, kT0);
  ASSERT_EQ(r.updates.size(), 1u);
  EXPECT_EQ(r.updates[0].cls, IncidentClass::switch_fault);
  EXPECT_EQ(r.updates[0].summary, "rtsw1: 2 links failing within 2m00s (rtsw1:eth5--ctsw5:eth1, ...)");
}

TEST_F(TriageTest, LinksThatFailedRecentlyCountTowardTheThreshold) {
  for (const Time later : {kT0 + seconds(60), kT0 + seconds(120)}) {
    Triage t(topo);
    const TriageResult r = two_then_two(t, later);
    ASSERT_EQ(r.updates.size(), 1u) << format_iso8601(later);
    const IncidentUpdate& u = r.updates[0];
    EXPECT_EQ(u.cls, IncidentClass::switch_fault);
    EXPECT_EQ(u.device, dev("rtsw1"));
    ASSERT_EQ(u.findings.size(), 2u);  // the earlier links keep their own incidents
    EXPECT_EQ(u.findings[0].link, up3);
    EXPECT_EQ(u.findings[1].link, up4);
    EXPECT_EQ(u.summary, "rtsw1: 4 links failing within 2m00s (rtsw1:eth3--ctsw3:eth1, ...)");
    EXPECT_EQ(t.open_for_link(up1), 1);
    EXPECT_EQ(t.open_for_link(up2), 2);
  }
  // Past the window the earlier failures no longer count.
  Triage t(topo);
  const TriageResult r = two_then_two(t, kT0 + seconds(120) + kOneUs);
  ASSERT_EQ(r.updates.size(), 2u);
  EXPECT_EQ(r.updates[0].cls, IncidentClass::link_flap);
  EXPECT_EQ(r.updates[0].link, up3);
  EXPECT_EQ(r.updates[1].cls, IncidentClass::corruption);
  EXPECT_EQ(r.updates[1].link, up4);
}

TEST_F(TriageTest, OpticsFindingsDoNotCountTowardADeviceFault) {
  {
    Triage t(topo);
    std::vector<Finding> fs;
    for (const auto l : {up1, up2, up3, up4, up5}) {
      fs.push_back(on_link(FindingKind::optics_rx_power, Severity::warning, l, a_end, kT0));
    }
    const TriageResult r = t.process(fs, kT0);
    ASSERT_EQ(r.updates.size(), 5u);
    for (const auto& u : r.updates) EXPECT_EQ(u.cls, IncidentClass::optics);
    // Bound optics incidents are not recent failures either.
    bind_new(t, r);
    const std::vector<Finding> downs = {on_link(FindingKind::link_down, Severity::warning, up6, a_end, kT0 + seconds(10)),
                                        on_link(FindingKind::link_down, Severity::warning, nic0, b_end, kT0 + seconds(10))};
    const TriageResult r1 = t.process(downs, kT0 + seconds(10));
    ASSERT_EQ(r1.updates.size(), 2u);
    EXPECT_EQ(r1.updates[0].cls, IncidentClass::link_down);
    EXPECT_EQ(r1.updates[1].cls, IncidentClass::link_down);
  }
  {
    // Three hard failures and an optics warning: three links, not four.
    Triage t(topo);
    const std::vector<Finding> fs = {on_link(FindingKind::link_down, Severity::warning, up1, a_end, kT0),
                                     on_link(FindingKind::link_down, Severity::warning, up2, a_end, kT0),
                                     on_link(FindingKind::link_down, Severity::warning, up3, a_end, kT0),
                                     on_link(FindingKind::optics_temperature, Severity::warning, up4, a_end, kT0),
                                     on_link(FindingKind::discards, Severity::warning, up5, a_end, kT0),
                                     on_link(FindingKind::pfc_storm, Severity::warning, up6, a_end, kT0)};
    const TriageResult r = t.process(fs, kT0);
    ASSERT_EQ(r.updates.size(), 6u);
    for (const auto& u : r.updates) EXPECT_NE(u.cls, IncidentClass::switch_fault);
    EXPECT_EQ(r.updates[3].cls, IncidentClass::optics);
    EXPECT_EQ(r.updates[4].cls, IncidentClass::discards);
    EXPECT_EQ(r.updates[5].cls, IncidentClass::pfc_storm);
  }
}

TEST_F(TriageTest, LinksWithAnOpenIncidentDoNotCountTowardADeviceFault) {
  Triage t(topo);
  const std::vector<OpenIncident> open = {OpenIncident{21, IncidentClass::corruption, up1, kNone, Severity::warning},
                                          OpenIncident{22, IncidentClass::optics, up2, kNone, Severity::warning}};
  t.load_open(open);
  std::vector<Finding> fs;
  for (const auto l : {up1, up2, up3, up4}) fs.push_back(on_link(FindingKind::link_down, Severity::warning, l, a_end, kT0));
  const TriageResult r = t.process(fs, kT0);
  ASSERT_EQ(r.updates.size(), 4u);
  EXPECT_EQ(r.updates[0].incident_id, 21);
  EXPECT_EQ(r.updates[1].incident_id, 22);
  EXPECT_TRUE(r.updates[2].is_new());
  EXPECT_EQ(r.updates[2].cls, IncidentClass::link_down);
  EXPECT_TRUE(r.updates[3].is_new());
}

TEST_F(TriageTest, FourFailingNicLinksOfAHostAreOneHostFault) {
  Triage t(topo);
  std::vector<Finding> fs;
  for (const auto l : {nic0, nic1, nic2, nic3}) fs.push_back(on_link(FindingKind::link_down, Severity::warning, l, a_end, kT0));
  fs.push_back(on_link(FindingKind::link_down, Severity::warning, nic2, b_end, kT0));
  const TriageResult r = t.process(fs, kT0);
  ASSERT_EQ(r.updates.size(), 1u);
  const IncidentUpdate& u = r.updates[0];
  EXPECT_EQ(u.cls, IncidentClass::host_fault);
  EXPECT_EQ(u.device, dev("host1"));
  EXPECT_EQ(u.link, kNone);
  EXPECT_EQ(u.findings.size(), 5u);
  EXPECT_EQ(u.summary, "host1: 4 links failing within 2m00s (host1:nic0--rtsw1:eth7, ...)");
}

// A switch already under a switch_fault incident takes its further hard-failing links: one
// incident (and no drain per link) for a failing switch, however its links fail.
TEST_F(TriageTest, ASwitchUnderASwitchFaultTakesItsNewFailingLinks) {
  for (const FindingKind kind : {FindingKind::link_flap, FindingKind::link_down, FindingKind::corruption,
                                 FindingKind::fec_ber, FindingKind::fec_uncorrectable}) {
    SCOPED_TRACE(std::string(detectors::to_string(kind)));
    Triage t(topo);
    std::vector<Finding> fs;
    for (const auto l : {up1, up2, up3, up4}) fs.push_back(on_link(FindingKind::link_down, Severity::warning, l, a_end, kT0));
    const TriageResult r0 = t.process(fs, kT0);
    ASSERT_EQ(r0.updates.size(), 1u);
    ASSERT_EQ(r0.updates[0].cls, IncidentClass::switch_fault);
    bind_id(t, r0.updates[0], 40);

    // One more uplink and rtsw1's host link fail, each alone: well below the threshold.
    const Time later = kT0 + minutes(10);  // past the grouping window: only the open incident explains it
    const std::vector<Finding> more = {on_link(kind, Severity::critical, up5, b_end, later),
                                       on_link(kind, Severity::critical, nic0, a_end, later)};
    const TriageResult r = t.process(more, later);
    ASSERT_EQ(r.updates.size(), 1u);
    const IncidentUpdate& u = r.updates[0];
    EXPECT_EQ(u.incident_id, 40);
    EXPECT_FALSE(u.is_new());
    EXPECT_FALSE(u.reopened);
    EXPECT_EQ(u.cls, IncidentClass::switch_fault);
    EXPECT_EQ(u.device, dev("rtsw1"));
    EXPECT_EQ(u.link, kNone);
    EXPECT_EQ(u.previous_severity, Severity::warning);
    EXPECT_EQ(u.severity, Severity::critical);
    EXPECT_TRUE(u.escalated());
    ASSERT_EQ(u.findings.size(), 2u);
    EXPECT_EQ(u.findings[0].link, up5);
    EXPECT_EQ(u.findings[1].link, nic0);
    EXPECT_EQ(t.open_for_link(up5), std::nullopt);
    EXPECT_EQ(t.open_for_link(nic0), std::nullopt);
    EXPECT_EQ(t.open_count(), 1u);
  }
}

TEST_F(TriageTest, ASwitchFaultLoadedFromTheDatabaseTakesNewFailingLinks) {
  Triage t(topo);
  const std::vector<OpenIncident> open = {OpenIncident{77, IncidentClass::switch_fault, kNone, dev("rtsw1"), Severity::critical}};
  t.load_open(open);
  const std::vector<Finding> fs = {on_link(FindingKind::link_flap, Severity::critical, up6, a_end, kT0)};
  const TriageResult r = t.process(fs, kT0);
  ASSERT_EQ(r.updates.size(), 1u);
  EXPECT_EQ(r.updates[0].incident_id, 77);
  EXPECT_EQ(r.updates[0].cls, IncidentClass::switch_fault);
  EXPECT_FALSE(r.updates[0].escalated());
  // Another switch's links are not its business.
  const std::vector<Finding> other = {on_link(FindingKind::link_flap, Severity::critical, nic1, a_end, kT0)};
  const TriageResult r1 = t.process(other, kT0);
  ASSERT_EQ(r1.updates.size(), 1u);
  EXPECT_TRUE(r1.updates[0].is_new());
  EXPECT_EQ(r1.updates[0].cls, IncidentClass::link_flap);
  EXPECT_EQ(r1.updates[0].link, nic1);
}

TEST_F(TriageTest, OpticsFindingsOnTheLinksOfASwitchUnderASwitchFaultGetLinkIncidents) {
  Triage t(topo);
  std::vector<Finding> fs;
  for (const auto l : {up1, up2, up3, up4}) fs.push_back(on_link(FindingKind::link_flap, Severity::critical, l, a_end, kT0));
  bind_id(t, t.process(fs, kT0).updates.at(0), 40);

  // A weak transmitter on a link the switch_fault holds, and one on a healthy link: per-port
  // matters, each its own optics incident with its suspect.
  Finding tx1 = on_link(FindingKind::optics_tx_power, Severity::critical, up1, a_end, kT0 + seconds(5));
  tx1.suspect_port = topo.link(up1).a;
  tx1.suspect = "the transceiver in rtsw1:eth1";
  const std::vector<Finding> optics = {tx1, on_link(FindingKind::optics_rx_power, Severity::warning, up6, b_end, kT0 + seconds(5))};
  const TriageResult r = t.process(optics, kT0 + seconds(5));
  ASSERT_EQ(r.updates.size(), 2u);
  EXPECT_TRUE(r.updates[0].is_new());
  EXPECT_EQ(r.updates[0].cls, IncidentClass::optics);
  EXPECT_EQ(r.updates[0].link, up1);
  EXPECT_EQ(r.updates[0].device, kNone);
  EXPECT_EQ(r.updates[0].suspect, "the transceiver in rtsw1:eth1");
  EXPECT_EQ(r.updates[0].suspect_port, topo.link(up1).a);
  EXPECT_TRUE(r.updates[1].is_new());
  EXPECT_EQ(r.updates[1].cls, IncidentClass::optics);
  EXPECT_EQ(r.updates[1].link, up6);
  bind_new(t, r);
  EXPECT_EQ(t.open_count(), 3u);
}

// A host whose four NICs all go to one ToR that has more links (its uplinks): four failing
// links for both, but all of the host's links and only half of the ToR's. The host is the
// likelier culprit.
TEST(TriageTieBreak, AHostWhoseLinksAllGoToOneTorIsTheHostFault) {
  const fabric::Topology topo = fabric::parse_topology(R"({
    "switches": [
      {"name": "tor", "role": "rtsw", "telemetry": "http://sim/tor", "driver": {"kind": "dryrun"}},
      {"name": "spine1", "role": "ctsw", "telemetry": "http://sim/spine1", "driver": {"kind": "dryrun"}},
      {"name": "spine2", "role": "ctsw", "telemetry": "http://sim/spine2", "driver": {"kind": "dryrun"}}
    ],
    "hosts": [{"name": "gpu1", "nics": ["nic0", "nic1", "nic2", "nic3"]}],
    "links": [
      {"a": "gpu1:nic0", "b": "tor:eth1", "speed_gbps": 400},
      {"a": "gpu1:nic1", "b": "tor:eth2", "speed_gbps": 400},
      {"a": "gpu1:nic2", "b": "tor:eth3", "speed_gbps": 400},
      {"a": "gpu1:nic3", "b": "tor:eth4", "speed_gbps": 400},
      {"a": "tor:eth5", "b": "spine1:eth1", "speed_gbps": 400},
      {"a": "tor:eth6", "b": "spine2:eth1", "speed_gbps": 400},
      {"a": "tor:eth7", "b": "spine1:eth2", "speed_gbps": 400},
      {"a": "tor:eth8", "b": "spine2:eth2", "speed_gbps": 400}
    ]
  })",
                                                       "tiebreak.json");
  const fabric::DeviceId host = *topo.find_device("gpu1");
  const fabric::DeviceId tor = *topo.find_device("tor");
  ASSERT_EQ(topo.ports_of(host).size(), 4u);
  ASSERT_EQ(topo.ports_of(tor).size(), 8u);
  // Both orders of the findings, and either end reporting: the answer does not depend on them.
  for (const bool tor_reports : {false, true}) {
    for (const bool reversed : {false, true}) {
      std::vector<Finding> fs;
      for (const char* nic : {"gpu1:nic0", "gpu1:nic1", "gpu1:nic2", "gpu1:nic3"}) {
        const fabric::LinkId l = *topo.find_link(nic);
        Finding f;
        f.kind = FindingKind::link_down;
        f.severity = Severity::warning;
        f.link = l;
        f.port = tor_reports ? topo.link(l).b : topo.link(l).a;
        f.device = topo.port(f.port).device;
        f.first_seen = kT0 - seconds(30);
        f.observed_at = kT0;
        f.summary = topo.endpoint_name(f.port) + " down";
        fs.push_back(f);
      }
      if (reversed) std::reverse(fs.begin(), fs.end());
      Triage t(topo);
      const TriageResult r = t.process(fs, kT0);
      ASSERT_EQ(r.updates.size(), 1u) << tor_reports << reversed;
      const IncidentUpdate& u = r.updates[0];
      EXPECT_TRUE(u.is_new());
      EXPECT_EQ(u.cls, IncidentClass::host_fault) << tor_reports << reversed;
      EXPECT_EQ(u.device, host);
      EXPECT_NE(u.device, tor);
      EXPECT_EQ(u.findings.size(), 4u);
      EXPECT_EQ(u.summary, "gpu1: 4 links failing within 2m00s (gpu1:nic0--tor:eth1, ...)");
    }
  }
}

// ---------------------------------------------------------------------------------------
// Reopening

TEST_F(TriageTest, AClosedIncidentWhoseFaultReturnsWithinTheWindowIsReopened) {
  Triage t(topo);
  const std::vector<Finding> crc = {on_link(FindingKind::corruption, Severity::warning, up1, a_end, kT0)};
  bind_id(t, t.process(crc, kT0).updates.at(0), 7);
  const Time closed_at = kT0 + hours(1);
  close_id(t, 7, closed_at);
  EXPECT_EQ(t.open_count(), 0u);
  EXPECT_EQ(t.open_for_link(up1), std::nullopt);

  const Time back = closed_at + hours(2);
  const std::vector<Finding> flap = {on_link(FindingKind::link_flap, Severity::critical, up1, b_end, back, "flapping again")};
  const TriageResult r = t.process(flap, back);
  ASSERT_EQ(r.updates.size(), 1u);
  const IncidentUpdate& u = r.updates[0];
  EXPECT_EQ(u.incident_id, 7);
  EXPECT_TRUE(u.reopened);
  EXPECT_FALSE(u.is_new());
  EXPECT_FALSE(u.escalated());
  EXPECT_EQ(u.cls, IncidentClass::corruption);  // the same fault coming back
  EXPECT_EQ(u.link, up1);
  EXPECT_EQ(u.severity, Severity::critical);
  EXPECT_EQ(u.summary, "flapping again");
  EXPECT_EQ(u.started_at, back - seconds(10));
  EXPECT_EQ(u.detected_at, back);

  bind_id(t, u, 7);
  EXPECT_EQ(t.open_for_link(up1), 7);
  const TriageResult r1 = t.process(flap, back + seconds(10));
  ASSERT_EQ(r1.updates.size(), 1u);
  EXPECT_EQ(r1.updates[0].incident_id, 7);
  EXPECT_FALSE(r1.updates[0].reopened);
}

TEST_F(TriageTest, ReopenWindowBoundary) {
  const Time closed_at = kT0;
  for (const auto& [delay, reopened] : std::vector<std::pair<Duration, bool>>{
           {hours(24), true}, {hours(24) + kOneUs, false}, {Duration{0}, true}}) {
    Triage t(topo);
    const std::vector<Finding> down = {on_link(FindingKind::link_down, Severity::warning, up2, a_end, kT0 - hours(1))};
    bind_id(t, t.process(down, kT0 - hours(1)).updates.at(0), 8);
    close_id(t, 8, closed_at);
    const std::vector<Finding> again = {on_link(FindingKind::corruption, Severity::warning, up2, a_end, closed_at + delay)};
    const TriageResult r = t.process(again, closed_at + delay);
    ASSERT_EQ(r.updates.size(), 1u);
    EXPECT_EQ(r.updates[0].reopened, reopened) << format_duration(delay);
    EXPECT_EQ(r.updates[0].incident_id, reopened ? 8 : 0);
    EXPECT_EQ(r.updates[0].cls, reopened ? IncidentClass::link_down : IncidentClass::corruption);
  }
}

TEST_F(TriageTest, ClosingAnUnknownIdChangesNothing) {
  Triage t(topo);
  const std::vector<Finding> down = {on_link(FindingKind::link_down, Severity::warning, up2, a_end, kT0)};
  bind_id(t, t.process(down, kT0).updates.at(0), 8);
  close_id(t, 999, kT0);
  EXPECT_EQ(t.open_count(), 1u);
  EXPECT_EQ(t.open_for_link(up2), 8);
}

// ---------------------------------------------------------------------------------------
// Device-scoped classes

TEST_F(TriageTest, StaleTelemetryAndSlowReceiversAreKeyedByDevice) {
  Triage t(topo);
  Finding slow0 = on_link(FindingKind::slow_receiver, Severity::warning, nic0, b_end, kT0);
  slow0.device = dev("host1");  // the host at fault, though its ToR reported it
  Finding slow1 = on_link(FindingKind::slow_receiver, Severity::warning, nic1, a_end, kT0);
  const std::vector<Finding> fs = {on_device(FindingKind::telemetry_stale, dev("ctsw1"), kT0),
                                   on_device(FindingKind::telemetry_stale, dev("ctsw2"), kT0),
                                   on_device(FindingKind::telemetry_stale, dev("ctsw1"), kT0), slow0, slow1};
  const TriageResult r = t.process(fs, kT0);
  ASSERT_EQ(r.updates.size(), 3u);
  EXPECT_EQ(r.updates[0].cls, IncidentClass::telemetry_stale);
  EXPECT_EQ(r.updates[0].device, dev("ctsw1"));
  EXPECT_EQ(r.updates[0].link, kNone);
  EXPECT_EQ(r.updates[0].findings.size(), 2u);
  EXPECT_EQ(r.updates[1].cls, IncidentClass::telemetry_stale);
  EXPECT_EQ(r.updates[1].device, dev("ctsw2"));
  EXPECT_EQ(r.updates[2].cls, IncidentClass::slow_receiver);
  EXPECT_EQ(r.updates[2].device, dev("host1"));
  EXPECT_EQ(r.updates[2].link, kNone);
  EXPECT_EQ(r.updates[2].findings.size(), 2u);
  const std::vector<int64_t> ids = bind_new(t, r);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(t.open_count(), 3u);
  EXPECT_EQ(t.open_for_link(nic0), std::nullopt);

  // Later findings of the same class and device attach; another device opens its own.
  Finding slow3 = on_link(FindingKind::slow_receiver, Severity::warning, nic3, a_end, kT0 + seconds(30));
  const std::vector<Finding> later = {on_device(FindingKind::telemetry_stale, dev("ctsw1"), kT0 + seconds(30)), slow3,
                                      on_device(FindingKind::telemetry_stale, dev("ctsw3"), kT0 + seconds(30))};
  const TriageResult r1 = t.process(later, kT0 + seconds(30));
  ASSERT_EQ(r1.updates.size(), 3u);
  EXPECT_EQ(r1.updates[0].incident_id, ids[0]);
  EXPECT_EQ(r1.updates[1].incident_id, ids[2]);
  EXPECT_EQ(r1.updates[1].cls, IncidentClass::slow_receiver);
  EXPECT_TRUE(r1.updates[2].is_new());
  EXPECT_EQ(r1.updates[2].device, dev("ctsw3"));
}

TEST_F(TriageTest, SlowReceiversOnEveryNicAreNotAHostFault) {
  Triage t(topo);
  std::vector<Finding> fs;
  for (const auto l : {nic0, nic1, nic2, nic3}) fs.push_back(on_link(FindingKind::slow_receiver, Severity::warning, l, a_end, kT0));
  const TriageResult r = t.process(fs, kT0);
  ASSERT_EQ(r.updates.size(), 1u);
  EXPECT_EQ(r.updates[0].cls, IncidentClass::slow_receiver);
  EXPECT_EQ(r.updates[0].findings.size(), 4u);
}

TEST_F(TriageTest, ADeviceIncidentReopensWithinTheWindow) {
  Triage t(topo);
  const std::vector<Finding> stale = {on_device(FindingKind::telemetry_stale, dev("ctsw4"), kT0)};
  bind_id(t, t.process(stale, kT0).updates.at(0), 30);
  close_id(t, 30, kT0 + minutes(5));
  const std::vector<Finding> again = {on_device(FindingKind::telemetry_stale, dev("ctsw4"), kT0 + hours(1))};
  const TriageResult r = t.process(again, kT0 + hours(1));
  ASSERT_EQ(r.updates.size(), 1u);
  EXPECT_EQ(r.updates[0].incident_id, 30);
  EXPECT_TRUE(r.updates[0].reopened);
  EXPECT_EQ(r.updates[0].cls, IncidentClass::telemetry_stale);
  EXPECT_EQ(r.updates[0].device, dev("ctsw4"));
}

// ---------------------------------------------------------------------------------------
// Active probes: gray failures and corroboration

class ProbeTriageTest : public TriageTest {
 protected:
  // A finding of medicd's prober: it names a link, no port or device.
  static Finding probe(FindingKind kind, Severity sev, fabric::LinkId l, Time t) {
    Finding f;
    f.kind = kind;
    f.severity = sev;
    f.link = l;
    f.first_seen = t;
    f.observed_at = t;
    f.summary = std::string(detectors::to_string(kind)) + " seen by probes";
    return f;
  }
  // Opens an incident on `l` with one finding and binds it to `id`.
  void open_with(Triage& t, const Finding& f, int64_t id) {
    const std::vector<Finding> fs = {f};
    const TriageResult r = t.process(fs, f.observed_at);
    ASSERT_EQ(r.updates.size(), 1u);
    ASSERT_TRUE(r.updates[0].is_new());
    bind_id(t, r.updates[0], id);
  }
};

TEST_F(ProbeTriageTest, ProbeLossAloneIsAGrayFailure) {
  Triage t(topo);
  for (const Severity sev : {Severity::warning, Severity::critical}) {
    const fabric::LinkId l = sev == Severity::warning ? up1 : up2;
    const std::vector<Finding> fs = {probe(FindingKind::probe_loss, sev, l, kT0)};
    const TriageResult r = t.process(fs, kT0);
    ASSERT_EQ(r.updates.size(), 1u);
    const IncidentUpdate& u = r.updates[0];
    EXPECT_TRUE(u.is_new());
    EXPECT_EQ(u.cls, IncidentClass::gray_failure);
    EXPECT_EQ(u.link, l);
    EXPECT_EQ(u.device, kNone);
    EXPECT_EQ(u.severity, sev);
    EXPECT_FALSE(u.corroborated);  // one signal only
    EXPECT_EQ(u.summary, "probe_loss seen by probes");
    EXPECT_EQ(u.started_at, kT0);
    EXPECT_EQ(u.detected_at, kT0);
    EXPECT_THAT(r.noted, IsEmpty());
  }
  // Slow round trips alone: a gray failure too.
  const std::vector<Finding> slow = {probe(FindingKind::probe_latency, Severity::warning, up3, kT0)};
  const TriageResult r = t.process(slow, kT0);
  ASSERT_EQ(r.updates.size(), 1u);
  EXPECT_EQ(r.updates[0].cls, IncidentClass::gray_failure);
  EXPECT_FALSE(r.updates[0].corroborated);
}

TEST_F(ProbeTriageTest, AProbeFindingJoiningACounterIncidentCorroboratesIt) {
  for (const FindingKind counter : {FindingKind::corruption, FindingKind::fec_ber, FindingKind::optics_rx_power,
                                    FindingKind::link_flap}) {
    SCOPED_TRACE(std::string(detectors::to_string(counter)));
    Triage t(topo);
    open_with(t, on_link(counter, Severity::warning, up1, b_end, kT0, "counters"), 11);
    const Time later = kT0 + seconds(20);
    const std::vector<Finding> fs = {probe(FindingKind::probe_loss, Severity::warning, up1, later)};
    const TriageResult r = t.process(fs, later);
    ASSERT_EQ(r.updates.size(), 1u);
    const IncidentUpdate& u = r.updates[0];
    EXPECT_EQ(u.incident_id, 11);
    EXPECT_FALSE(u.is_new());
    EXPECT_FALSE(u.reopened);
    EXPECT_TRUE(u.corroborated);
    EXPECT_EQ(u.cls, class_of(counter));  // the class it was opened with
    EXPECT_EQ(u.link, up1);
    EXPECT_EQ(u.previous_severity, Severity::warning);
    EXPECT_EQ(u.severity, Severity::critical);  // two independent signals: certain
    EXPECT_TRUE(u.escalated());
    // The rise is stored with a summary: the finding that confirmed it.
    EXPECT_EQ(u.summary, "probe_loss seen by probes");
    ASSERT_EQ(u.findings.size(), 1u);
    EXPECT_EQ(u.findings[0].kind, FindingKind::probe_loss);

    // The rise is remembered: a later counter warning neither lowers it nor corroborates anew.
    const std::vector<Finding> more = {on_link(counter, Severity::warning, up1, a_end, later + seconds(10))};
    const TriageResult r1 = t.process(more, later + seconds(10));
    ASSERT_EQ(r1.updates.size(), 1u);
    EXPECT_EQ(r1.updates[0].previous_severity, Severity::critical);
    EXPECT_EQ(r1.updates[0].severity, Severity::critical);
    EXPECT_FALSE(r1.updates[0].corroborated);
    EXPECT_FALSE(r1.updates[0].escalated());
  }
}

TEST_F(ProbeTriageTest, ACounterFindingJoiningAGrayFailureCorroboratesIt) {
  Triage t(topo);
  open_with(t, probe(FindingKind::probe_loss, Severity::warning, up2, kT0), 12);
  const Time later = kT0 + seconds(5);
  const std::vector<Finding> fs = {on_link(FindingKind::corruption, Severity::warning, up2, a_end, later, "crc")};
  const TriageResult r = t.process(fs, later);
  ASSERT_EQ(r.updates.size(), 1u);
  const IncidentUpdate& u = r.updates[0];
  EXPECT_EQ(u.incident_id, 12);
  EXPECT_TRUE(u.corroborated);
  EXPECT_EQ(u.cls, IncidentClass::gray_failure);  // class unchanged
  EXPECT_EQ(u.severity, Severity::critical);
  EXPECT_EQ(u.previous_severity, Severity::warning);
  EXPECT_TRUE(u.escalated());
  EXPECT_EQ(u.summary, "crc");  // the news that made it critical names it
  EXPECT_EQ(t.open_for_link(up2), 12);
  EXPECT_EQ(t.open_count(), 1u);
}

TEST_F(ProbeTriageTest, AnIncidentAlreadyCriticalIsCorroboratedWithoutEscalating) {
  Triage t(topo);
  open_with(t, on_link(FindingKind::corruption, Severity::critical, up3, a_end, kT0), 13);
  const std::vector<Finding> fs = {probe(FindingKind::probe_loss, Severity::critical, up3, kT0 + seconds(3))};
  const TriageResult r = t.process(fs, kT0 + seconds(3));
  ASSERT_EQ(r.updates.size(), 1u);
  EXPECT_TRUE(r.updates[0].corroborated);
  EXPECT_EQ(r.updates[0].severity, Severity::critical);
  EXPECT_FALSE(r.updates[0].escalated());
  EXPECT_EQ(r.updates[0].cls, IncidentClass::corruption);
}

TEST_F(ProbeTriageTest, TheSameSignalAgainDoesNotCorroborate) {
  Triage t(topo);
  open_with(t, probe(FindingKind::probe_loss, Severity::warning, up1, kT0), 21);
  open_with(t, on_link(FindingKind::corruption, Severity::warning, up2, a_end, kT0), 22);
  const Time later = kT0 + seconds(30);
  const std::vector<Finding> fs = {probe(FindingKind::probe_latency, Severity::warning, up1, later),
                                   probe(FindingKind::probe_loss, Severity::critical, up1, later),
                                   on_link(FindingKind::fec_ber, Severity::warning, up2, b_end, later)};
  const TriageResult r = t.process(fs, later);
  ASSERT_EQ(r.updates.size(), 2u);
  EXPECT_EQ(r.updates[0].incident_id, 21);
  EXPECT_FALSE(r.updates[0].corroborated);
  EXPECT_EQ(r.updates[0].severity, Severity::critical);  // its own critical finding
  EXPECT_EQ(r.updates[0].cls, IncidentClass::gray_failure);
  EXPECT_EQ(r.updates[1].incident_id, 22);
  EXPECT_FALSE(r.updates[1].corroborated);
  EXPECT_EQ(r.updates[1].severity, Severity::warning);
}

TEST_F(ProbeTriageTest, AnInfoFindingJoiningAGrayFailureDoesNotCorroborate) {
  Triage t(topo);
  open_with(t, probe(FindingKind::probe_loss, Severity::warning, up4, kT0), 31);
  // A single flap is context, not a second signal.
  const std::vector<Finding> fs = {on_link(FindingKind::link_flap, Severity::info, up4, a_end, kT0 + seconds(5))};
  const TriageResult r = t.process(fs, kT0 + seconds(5));
  ASSERT_EQ(r.updates.size(), 1u);
  EXPECT_EQ(r.updates[0].incident_id, 31);
  EXPECT_FALSE(r.updates[0].corroborated);
  EXPECT_EQ(r.updates[0].severity, Severity::warning);
  EXPECT_FALSE(r.updates[0].escalated());
}

TEST_F(ProbeTriageTest, AProbeFindingJoiningASwitchFaultDoesNotCorroborate) {
  Triage t(topo);
  const std::vector<OpenIncident> open = {OpenIncident{77, IncidentClass::switch_fault, kNone, dev("rtsw1"), Severity::warning}};
  t.load_open(open);
  // Corrupted frames on one more of rtsw1's links (the switch fault takes the link), and the
  // probes losing on that link in the same poll: both join the device incident, which is
  // not a link fault that probes could confirm.
  const std::vector<Finding> fs = {on_link(FindingKind::corruption, Severity::warning, up6, a_end, kT0),
                                   probe(FindingKind::probe_loss, Severity::warning, up6, kT0)};
  const TriageResult r = t.process(fs, kT0);
  ASSERT_EQ(r.updates.size(), 1u);
  const IncidentUpdate& u = r.updates[0];
  EXPECT_EQ(u.incident_id, 77);
  EXPECT_EQ(u.cls, IncidentClass::switch_fault);
  EXPECT_EQ(u.device, dev("rtsw1"));
  ASSERT_EQ(u.findings.size(), 2u);
  EXPECT_EQ(u.findings[1].kind, FindingKind::probe_loss);
  EXPECT_FALSE(u.corroborated);
  EXPECT_EQ(u.severity, Severity::warning);
  EXPECT_FALSE(u.escalated());
}

TEST_F(ProbeTriageTest, AProbeFindingOnALinkUnderMaintenanceIsOnlyNoted) {
  Triage t(topo);
  Maintenance m;
  m.id = 3;
  m.device = dev("ctsw5");
  m.starts_at = kT0 - hours(1);
  m.ends_at = kT0 + hours(1);
  m.reason = "optics swap";
  const std::vector<Maintenance> windows = {m};
  const std::vector<Finding> fs = {probe(FindingKind::probe_loss, Severity::critical, up5, kT0)};
  const TriageResult r = t.process(fs, kT0, windows);
  EXPECT_THAT(r.updates, IsEmpty());
  ASSERT_EQ(r.noted.size(), 1u);
  EXPECT_EQ(r.noted[0].note, "maintenance #3: optics swap");
}

TEST_F(ProbeTriageTest, UpdatesOfOpenIncidentsAreDatedByTheirFindings) {
  Triage t(topo);
  open_with(t, on_link(FindingKind::corruption, Severity::warning, up1, a_end, kT0), 41);
  open_with(t, probe(FindingKind::probe_loss, Severity::warning, up2, kT0), 42);
  const std::vector<OpenIncident> open = {OpenIncident{43, IncidentClass::switch_fault, kNone, dev("rtsw2"), Severity::warning}};
  t.load_open(open);

  const Time now = kT0 + minutes(5);
  Finding p1 = probe(FindingKind::probe_loss, Severity::warning, up1, now - seconds(20));
  p1.first_seen = now - seconds(40);
  Finding p1b = probe(FindingKind::probe_latency, Severity::warning, up1, now - seconds(30));
  p1b.first_seen = now - seconds(35);
  Finding c2 = on_link(FindingKind::fec_ber, Severity::warning, up2, b_end, now - seconds(2));
  Finding d3 = on_link(FindingKind::link_flap, Severity::critical, nic1, a_end, now - seconds(1));
  const std::vector<Finding> fs = {p1, p1b, c2, d3};
  const TriageResult r = t.process(fs, now);
  ASSERT_EQ(r.updates.size(), 3u);
  for (const auto& u : r.updates) {
    SCOPED_TRACE(u.incident_id);
    EXPECT_FALSE(u.is_new());
    EXPECT_NE(u.started_at, Time{});
    EXPECT_NE(u.detected_at, Time{});
    EXPECT_LE(u.started_at, u.detected_at);
  }
  EXPECT_EQ(r.updates[0].incident_id, 41);
  EXPECT_EQ(r.updates[0].started_at, now - seconds(40));   // the earliest first_seen of the two
  EXPECT_EQ(r.updates[0].detected_at, now - seconds(30));  // the earliest conclusion
  EXPECT_TRUE(r.updates[0].corroborated);
  EXPECT_EQ(r.updates[1].incident_id, 42);
  EXPECT_EQ(r.updates[1].started_at, now - seconds(12));
  EXPECT_EQ(r.updates[1].detected_at, now - seconds(2));
  EXPECT_TRUE(r.updates[1].corroborated);
  EXPECT_EQ(r.updates[2].incident_id, 43);  // host1:nic1 is on rtsw2, under its switch fault
  EXPECT_EQ(r.updates[2].started_at, now - seconds(11));
  EXPECT_EQ(r.updates[2].detected_at, now - seconds(1));
  EXPECT_FALSE(r.updates[2].corroborated);
}

// ---------------------------------------------------------------------------------------
// State from the database

TEST_F(TriageTest, LoadOpenIncidents) {
  Triage t(topo);
  const std::vector<OpenIncident> open = {OpenIncident{100, IncidentClass::optics, up4, kNone, Severity::warning},
                                          OpenIncident{101, IncidentClass::telemetry_stale, kNone, dev("ctsw2"), Severity::warning}};
  t.load_open(open);
  EXPECT_EQ(t.open_count(), 2u);
  EXPECT_EQ(t.open_for_link(up4), 100);
  const std::vector<Finding> fs = {on_link(FindingKind::corruption, Severity::critical, up4, b_end, kT0),
                                   on_device(FindingKind::telemetry_stale, dev("ctsw2"), kT0)};
  const TriageResult r = t.process(fs, kT0);
  ASSERT_EQ(r.updates.size(), 2u);
  EXPECT_EQ(r.updates[0].incident_id, 100);
  EXPECT_EQ(r.updates[0].cls, IncidentClass::optics);
  EXPECT_EQ(r.updates[0].previous_severity, Severity::warning);
  EXPECT_TRUE(r.updates[0].escalated());
  EXPECT_EQ(r.updates[1].incident_id, 101);
  EXPECT_FALSE(r.updates[1].escalated());
  close_id(t, 100, kT0 + minutes(1));
  EXPECT_EQ(t.open_count(), 1u);
}

TEST_F(TriageTest, LoadClosedIncidentsTheLatestPerScopeWins) {
  Triage t(topo);
  const std::vector<ClosedIncident> closed = {
      ClosedIncident{201, IncidentClass::corruption, up5, kNone, kT0 - hours(1)},
      ClosedIncident{200, IncidentClass::fec, up5, kNone, kT0 - hours(2)},
      ClosedIncident{202, IncidentClass::telemetry_stale, kNone, dev("ctsw3"), kT0 - minutes(10)},
      ClosedIncident{203, IncidentClass::link_down, up6, kNone, kT0 - hours(25)},
  };
  t.load_closed(closed);
  EXPECT_EQ(t.open_count(), 0u);
  const std::vector<Finding> fs = {on_link(FindingKind::link_flap, Severity::critical, up5, a_end, kT0),
                                   on_device(FindingKind::telemetry_stale, dev("ctsw3"), kT0),
                                   on_link(FindingKind::link_down, Severity::warning, up6, a_end, kT0)};
  const TriageResult r = t.process(fs, kT0);
  ASSERT_EQ(r.updates.size(), 3u);
  EXPECT_EQ(r.updates[0].incident_id, 201);
  EXPECT_TRUE(r.updates[0].reopened);
  EXPECT_EQ(r.updates[0].cls, IncidentClass::corruption);
  EXPECT_EQ(r.updates[1].incident_id, 202);
  EXPECT_TRUE(r.updates[1].reopened);
  EXPECT_TRUE(r.updates[2].is_new());  // closed 25 h ago: outside the window
}

// ---------------------------------------------------------------------------------------
// Configuration

TEST(TriageConfig, RejectsBadValues) {
  const fabric::Topology topo = topology();
  auto error_of = [&](TriageConfig c) -> std::string {
    try {
      Triage t(topo, c);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  TriageConfig c;
  EXPECT_EQ(error_of(c), "");
  c.device_fault_links = 1;
  EXPECT_EQ(error_of(c), "triage device_fault_links must be at least 2");
  c = TriageConfig{};
  c.device_fault_window = Duration{0};
  EXPECT_EQ(error_of(c), "triage device_fault_window must be positive");
  c = TriageConfig{};
  c.reopen_window = -kOneUs;
  EXPECT_EQ(error_of(c), "triage reopen_window must not be negative");
}

TEST(IncidentClass, NamesRoundTripAndDeviceClasses) {
  for (size_t i = 0; i < kIncidentClassCount; ++i) {
    const auto c = static_cast<IncidentClass>(i);
    EXPECT_EQ(parse_incident_class(to_string(c)), c);
  }
  EXPECT_EQ(parse_incident_class("switchfault"), std::nullopt);
  EXPECT_TRUE(is_device_class(IncidentClass::switch_fault));
  EXPECT_TRUE(is_device_class(IncidentClass::host_fault));
  EXPECT_TRUE(is_device_class(IncidentClass::telemetry_stale));
  EXPECT_TRUE(is_device_class(IncidentClass::slow_receiver));
  EXPECT_FALSE(is_device_class(IncidentClass::link_flap));
  EXPECT_FALSE(is_device_class(IncidentClass::pfc_storm));
  EXPECT_EQ(class_of(FindingKind::optics_loss), IncidentClass::optics);
  EXPECT_EQ(class_of(FindingKind::fec_ber), IncidentClass::fec);
  EXPECT_EQ(class_of(FindingKind::probe_loss), IncidentClass::gray_failure);
}

// ---------------------------------------------------------------------------------------
// Measurement incidents: never a link's, closed by the finding that says they are over.

TEST_F(TriageTest, AProberFindingOpensOneIncidentForMedicdItself) {
  Triage t(topo);
  Finding a = on_device(FindingKind::prober_loss, kNone, kT0);
  a.summary = "prober local: ...";
  Finding b = on_device(FindingKind::telemetry_outage, kNone, kT0);
  const TriageResult r = t.process(std::vector<Finding>{a, b}, kT0);
  ASSERT_EQ(r.updates.size(), 2u);
  EXPECT_EQ(r.updates[0].cls, IncidentClass::prober_fault);
  EXPECT_EQ(r.updates[0].link, kNone);
  EXPECT_EQ(r.updates[0].device, kNone);
  EXPECT_EQ(r.updates[1].cls, IncidentClass::telemetry_outage);
  const auto ids = bind_new(t, r);
  // The same again attaches to it.
  const TriageResult again = t.process(std::vector<Finding>{a}, kT0 + seconds(10));
  ASSERT_EQ(again.updates.size(), 1u);
  EXPECT_EQ(again.updates[0].incident_id, ids[0]);
}

TEST_F(TriageTest, AReflectorFindingIsTheDevicesAndNeverGroupsIntoASwitchFault) {
  Triage t(topo);
  std::vector<Finding> many;
  for (const char* d : {"ctsw1", "ctsw2", "ctsw3", "ctsw4", "ctsw5"}) many.push_back(on_device(FindingKind::reflector_loss, dev(d), kT0));
  const TriageResult r = t.process(many, kT0);
  ASSERT_EQ(r.updates.size(), 5u);
  for (const auto& u : r.updates) {
    EXPECT_EQ(u.cls, IncidentClass::reflector_fault);
    EXPECT_EQ(u.link, kNone);
    EXPECT_NE(u.device, kNone);
  }
}

TEST_F(TriageTest, AClearingFindingResolvesTheOpenMeasurementIncident) {
  Triage t(topo);
  const TriageResult r = t.process(std::vector<Finding>{on_device(FindingKind::reflector_loss, dev("ctsw2"), kT0)}, kT0);
  const auto ids = bind_new(t, r);
  ASSERT_EQ(ids.size(), 1u);
  Finding clear = on_device(FindingKind::reflector_loss, dev("ctsw2"), kT0 + seconds(60));
  clear.severity = Severity::info;
  clear.clears = true;
  const TriageResult done = t.process(std::vector<Finding>{clear}, kT0 + seconds(60));
  ASSERT_EQ(done.updates.size(), 1u);
  EXPECT_TRUE(done.updates[0].resolved);
  EXPECT_EQ(done.updates[0].incident_id, ids[0]);
  EXPECT_EQ(done.updates[0].cls, IncidentClass::reflector_fault);
  EXPECT_TRUE(done.noted.empty());
  EXPECT_EQ(t.open_count(), 0u);
  // A clearing finding with nothing open known here goes out without an id (its incident
  // may still wait to be recorded, found while the database was down); when recorded,
  // its identity resolves to nothing open, so it closes nothing and opens nothing.
  const TriageResult none = t.process(std::vector<Finding>{clear}, kT0 + seconds(70));
  ASSERT_EQ(none.updates.size(), 1u);
  EXPECT_TRUE(none.updates[0].resolved);
  EXPECT_EQ(none.updates[0].incident_id, 0);
  EXPECT_TRUE(none.noted.empty());
  const auto late = t.resolve({none.updates[0]}, kT0 + seconds(70));
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].incident_id, 0);
  EXPECT_EQ(late[0].follows, -1);
  EXPECT_EQ(t.open_count(), 0u);
  // The fault coming back soon after reopens the same incident.
  const TriageResult back =
      t.process(std::vector<Finding>{on_device(FindingKind::reflector_loss, dev("ctsw2"), kT0 + seconds(90))},
                kT0 + seconds(90));
  ASSERT_EQ(back.updates.size(), 1u);
  EXPECT_TRUE(back.updates[0].reopened);
  EXPECT_EQ(back.updates[0].incident_id, ids[0]);
}

// Found and cleared while the database was down: the clearing update, recorded after the
// incident it ends, closes that incident.
TEST_F(TriageTest, AClearingFindingKeptWhileUnrecordedClosesTheIncidentRecordedBeforeIt) {
  Triage t(topo);
  const TriageResult opened = t.process(std::vector<Finding>{on_device(FindingKind::reflector_loss, dev("ctsw2"), kT0)}, kT0);
  ASSERT_EQ(opened.updates.size(), 1u);
  ASSERT_TRUE(opened.updates[0].is_new());
  Finding clear = on_device(FindingKind::reflector_loss, dev("ctsw2"), kT0 + seconds(30));
  clear.severity = Severity::info;
  clear.clears = true;
  const TriageResult cleared = t.process(std::vector<Finding>{clear}, kT0 + seconds(30));
  ASSERT_EQ(cleared.updates.size(), 1u);
  ASSERT_TRUE(cleared.updates[0].resolved);
  EXPECT_EQ(cleared.updates[0].incident_id, 0);
  // The database answers again: the kept updates are resolved as one batch, in order; the
  // clearing one follows the one that opens its incident (the recorder gives it that id).
  const auto batch = t.resolve({opened.updates[0], cleared.updates[0]}, kT0 + seconds(60));
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_TRUE(batch[0].is_new());
  EXPECT_EQ(batch[0].follows, -1);
  EXPECT_TRUE(batch[1].resolved);
  EXPECT_EQ(batch[1].follows, 0);
  // Had the first been recorded before (id 42 handed back), the clearing one closes it.
  Triage u(topo);
  u.process(std::vector<Finding>{on_device(FindingKind::reflector_loss, dev("ctsw2"), kT0)}, kT0);
  Recorded rec;
  rec.add_opened(opened.updates[0], 42);
  const auto later = u.resolve({cleared.updates[0]}, kT0 + seconds(60), rec);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].incident_id, 42);
  EXPECT_EQ(later[0].follows, -1);
}

TEST_F(TriageTest, AClearingFindingLosesToTheSamePollsReport) {
  Triage t(topo);
  bind_new(t, t.process(std::vector<Finding>{on_device(FindingKind::reflector_loss, dev("ctsw2"), kT0)}, kT0));
  Finding clear = on_device(FindingKind::reflector_loss, dev("ctsw2"), kT0 + seconds(5));
  clear.severity = Severity::info;
  clear.clears = true;
  const Finding still = on_device(FindingKind::reflector_loss, dev("ctsw2"), kT0 + seconds(5));
  const TriageResult r = t.process(std::vector<Finding>{clear, still}, kT0 + seconds(5));
  ASSERT_EQ(r.updates.size(), 1u);
  EXPECT_FALSE(r.updates[0].resolved);
  EXPECT_EQ(t.open_count(), 1u);
}

TEST_F(TriageTest, IdentityIsDecidedAgainForUpdatesKeptWhileUnrecorded) {
  // Two polls' findings on one link while the database was down: both came out "new".
  Triage t(topo);
  const TriageResult a = t.process(std::vector<Finding>{on_link(FindingKind::link_flap, Severity::warning, up1, a_end, kT0)}, kT0);
  const TriageResult b = t.process(std::vector<Finding>{on_link(FindingKind::link_flap, Severity::critical, up1, a_end, kT0 + seconds(5))},
                                   kT0 + seconds(5));
  ASSERT_TRUE(a.updates[0].is_new());
  ASSERT_TRUE(b.updates[0].is_new());
  // Resolved as one batch: the first opens the incident, the second follows it (and, once
  // the recorder gives it the first one's id, escalates it).
  auto batch = t.resolve({a.updates[0], b.updates[0]}, kT0 + seconds(30));
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_TRUE(batch[0].is_new());
  EXPECT_EQ(batch[1].follows, 0);
  EXPECT_FALSE(batch[1].reopened);
  EXPECT_EQ(batch[1].previous_severity, Severity::warning);
  batch[1].incident_id = 1;  // what the recorder does with `follows`
  EXPECT_TRUE(batch[1].escalated());
  // Had the first been recorded already (its id handed back), the second joins it directly.
  Triage u(topo);
  Recorded rec;
  rec.add_opened(a.updates[0], 1);
  const auto joined = u.resolve({b.updates[0]}, kT0 + seconds(30), rec);
  EXPECT_EQ(joined[0].incident_id, 1);
  EXPECT_EQ(joined[0].follows, -1);
  EXPECT_TRUE(joined[0].escalated());
  // After a reload that shows it closed meanwhile, it reopens instead.
  t.reset();
  t.load_closed(std::vector<ClosedIncident>{{1, IncidentClass::link_flap, up1, kNone, kT0 + seconds(20)}});
  const auto third = t.resolve({b.updates[0]}, kT0 + seconds(30));
  EXPECT_EQ(third[0].incident_id, 1);
  EXPECT_TRUE(third[0].reopened);
}

}  // namespace
}  // namespace medic::triage
