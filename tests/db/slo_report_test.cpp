// The SLO report read from the real PostgreSQL: versioned targets (apply, in force at a
// time, a past report unchanged by a later change), stage decisions in a window, where a
// breach's time went from the incident's history, capacity cost, the lowest headroom,
// repeat offenders, and what a dismissed or ended incident no longer decides.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "slo/render.h"
#include "slo/targets_file.h"
#include "tests/db/demo_db.h"
#include "tests/support/epoch.h"

namespace medic::db {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using triage::IncidentState;

int64_t flap(DemoDb& d, const std::string& ref, double started, double detected) {
  triage::IncidentUpdate u;
  u.cls = triage::IncidentClass::link_flap;
  u.link = d.link(ref);
  u.severity = detectors::Severity::critical;
  u.started_at = at(started);
  u.detected_at = at(detected);
  u.summary = "flaps";
  const auto id = d.db.open_incident(u, d.topo, at(detected));
  EXPECT_TRUE(id.ok()) << id.error();
  return *id;
}

void state(DemoDb& d, int64_t id, IncidentState s, double t, const std::string& note = "") {
  const auto st = d.db.set_incident_state(id, s, at(t), note);
  ASSERT_TRUE(st.ok()) << st.error();
}

const slo::SloLine* line(const slo::Report& r, const std::string& cls, slo::Stage st) {
  for (const auto& l : r.slos) {
    if (l.incident_class == cls && l.stage == st) return &l;
  }
  return nullptr;
}

class SloReportDb : public ::testing::Test {
 protected:
  void SetUp() override {
    // A: detected in 30 s (met), drained 270 s after (mitigate 120 s: missed), 10 s in
    // triage then 260 s waiting for approval; repaired, undrained, closed.
    a = flap(d, "rtsw0001:eth5", 100, 130);
    state(d, a, IncidentState::pending_approval, 140, "link_flap needs approval");
    state(d, a, IncidentState::mitigated, 400);
    state(d, a, IncidentState::repaired, 1000);
    state(d, a, IncidentState::undrained, 2000);
    state(d, a, IncidentState::closed, 2001);
    // B: the same link again; drained on time, repaired, never undrained (restore 1 h: missed
    // at 23600, unfinished).
    b = flap(d, "rtsw0001:eth5", 10000, 10020);
    state(d, b, IncidentState::mitigated, 10050);
    state(d, b, IncidentState::repaired, 20000);
    // C: dismissed 10 s after detection: its mitigate stage decides nothing.
    c = flap(d, "rtsw0002:eth5", 50000, 50010);
    state(d, c, IncidentState::dismissed, 50020, "not a fault");
    // D: over before the window: not even read.
    dd = flap(d, "rtsw0003:eth5", -100000, -99990);
    state(d, dd, IncidentState::dismissed, -90000, "old");
  }

  slo::Report report(double from, double to, const std::string& by = "") {
    slo::ReportQuery q;
    q.window = {at(from), at(to)};
    q.by = by;
    q.label = "test";
    auto r = d.db.report(q, at(to));
    EXPECT_TRUE(r.ok()) << r.error();
    return r.ok() ? std::move(*r) : slo::Report{};
  }

  DemoDb d;
  int64_t a = 0, b = 0, c = 0, dd = 0;
  const double week = 7 * 86400;
};

TEST_F(SloReportDb, StagesAreDecidedInTheWindowAndBreachesSayWhereTheTimeWent) {
  const slo::Report r = report(0, week);
  EXPECT_EQ(r.incidents_read, 3u) << "D ended before the window";
  const auto* detect = line(r, "link_flap", slo::Stage::detect);
  ASSERT_NE(detect, nullptr);
  EXPECT_EQ(detect->met, 3);
  EXPECT_EQ(detect->missed, 0);
  EXPECT_EQ(detect->seconds.max(), 30.0);
  const auto* mitigate = line(r, "link_flap", slo::Stage::mitigate);
  ASSERT_NE(mitigate, nullptr);
  EXPECT_EQ(mitigate->met, 1);
  EXPECT_EQ(mitigate->missed, 1);
  EXPECT_EQ(mitigate->pending, 0) << "C was dismissed before its deadline";
  EXPECT_THAT(mitigate->breaches, ElementsAre(a));
  EXPECT_NEAR(mitigate->allowed_misses, 0.02, 1e-9);
  EXPECT_NEAR(*slo::budget_remaining(*mitigate), 1 - 50.0, 1e-9);
  const auto* restore = line(r, "link_flap", slo::Stage::restore);
  ASSERT_NE(restore, nullptr);
  EXPECT_EQ(restore->met, 1);
  EXPECT_EQ(restore->missed, 1);
  // Every class with a target has its line, incidents or not.
  ASSERT_NE(line(r, "optics", slo::Stage::detect), nullptr);
  EXPECT_EQ(line(r, "optics", slo::Stage::detect)->met + line(r, "optics", slo::Stage::detect)->missed, 0);

  ASSERT_EQ(r.breaches.size(), 2u);
  // Latest first: B's restore is late until the window's end.
  const slo::Breach& rb = r.breaches[0];
  EXPECT_EQ(rb.incident_id, b);
  EXPECT_EQ(rb.stage, slo::Stage::restore);
  EXPECT_FALSE(rb.finished);
  EXPECT_EQ(rb.late, at(week) - at(23600));
  ASSERT_EQ(rb.time_went.size(), 1u);
  EXPECT_EQ(rb.time_went[0].what, "validation");
  const slo::Breach& ma = r.breaches[1];
  EXPECT_EQ(ma.incident_id, a);
  EXPECT_EQ(ma.stage, slo::Stage::mitigate);
  EXPECT_EQ(ma.where, d.link_name("rtsw0001:eth5"));
  EXPECT_EQ(ma.late, from_seconds(150));
  EXPECT_EQ(ma.elapsed, from_seconds(270));
  ASSERT_EQ(ma.time_went.size(), 2u);
  EXPECT_EQ(ma.time_went[0].what, "approval");
  EXPECT_EQ(ma.time_went[0].time, from_seconds(260));
  EXPECT_EQ(ma.time_went[1].what, "triage");
  EXPECT_EQ(ma.time_went[1].time, from_seconds(10));

  // Capacity: A out for 1600 s, B from its drain to the window's end.
  const double speed = std::stod(d.tdb.scalar("SELECT speed_gbps FROM links WHERE name = '" + d.link_name("rtsw0001:eth5") + "'"));
  const double hours = (1600 + (week - 10050)) / 3600.0;
  EXPECT_EQ(r.capacity.drains, 2);
  EXPECT_NEAR(r.capacity.link_hours, hours, 1e-6);
  EXPECT_NEAR(r.capacity.tbps_hours, hours * speed / 1000, 1e-6);
  ASSERT_FALSE(r.capacity.by_zone.empty());
  EXPECT_FALSE(r.capacity.lowest) << "no snapshot in the window";

  // Repeat offenders: the link of A and B.
  bool found = false;
  for (const auto& o : r.offenders) {
    if (o.kind == "link") {
      EXPECT_EQ(o.name, d.link_name("rtsw0001:eth5"));
      EXPECT_THAT(o.incidents, ElementsAre(a, b));
      found = true;
    }
  }
  EXPECT_TRUE(found);
  // The trend: one ISO week per week the window touches, clipped to it.
  ASSERT_FALSE(r.trend.empty());
  EXPECT_EQ(r.trend.front().from, at(0));
  EXPECT_EQ(r.trend.back().to, at(week));
  int decided = 0;
  for (const auto& w : r.trend) decided += w.met + w.missed;
  int lines = 0;
  for (const auto& l : r.slos) lines += l.met + l.missed;
  EXPECT_EQ(decided, lines);

  // The JSON carries the keys the formats document names.
  const nlohmann::json j = slo::report_json(r);
  for (const char* k : {"window", "slos", "breaches", "capacity", "repeat_offenders", "trend"}) EXPECT_TRUE(j.contains(k)) << k;
  const auto& js = j["slos"][0];
  for (const char* k : {"class", "stage", "target_seconds", "objective", "decided", "met", "missed", "pending",
                        "compliance", "error_budget", "burn_rate", "seconds", "breaches"}) {
    EXPECT_TRUE(js.contains(k)) << k;
  }
  for (const char* k : {"1h", "6h", "3d"}) EXPECT_TRUE(js["burn_rate"].contains(k)) << k;
  for (const char* k : {"p50", "p90", "p99", "max"}) EXPECT_TRUE(js["seconds"].contains(k)) << k;
  for (const char* k : {"allowed_misses", "consumed", "remaining"}) EXPECT_TRUE(js["error_budget"].contains(k)) << k;
}

TEST_F(SloReportDb, AWindowBeforeTheMissHoldsItPendingAndTheLowestHeadroomComesFromSnapshots) {
  // [0, 200): A's mitigate is due at 250: pending at the window's end.
  d.tdb.exec("INSERT INTO snapshots (incident_id, reason, taken_at, data) VALUES (" + std::to_string(a) +
             ", 'before drain', '" + format_iso8601(at(150)) +
             "', '{\"groups\": [{\"name\": \"g-low\", \"capacity_gbps\": 800, \"available_gbps\": 400, \"floor\": 0.25}, "
             "{\"name\": \"g-full\", \"capacity_gbps\": 800, \"available_gbps\": 800, \"floor\": 0.5}]}')");
  // A snapshot whose group floor is not a number is left out, never an SQL error.
  d.tdb.exec("INSERT INTO snapshots (incident_id, reason, taken_at, data) VALUES (" + std::to_string(a) +
             ", 'odd', '" + format_iso8601(at(160)) +
             "', '{\"groups\": [{\"name\": \"g-odd\", \"capacity_gbps\": 800, \"available_gbps\": 0, \"floor\": true}]}')");
  const slo::Report r = report(0, 200);
  const auto* mitigate = line(r, "link_flap", slo::Stage::mitigate);
  ASSERT_NE(mitigate, nullptr);
  EXPECT_EQ(mitigate->pending, 1);
  EXPECT_EQ(mitigate->missed, 0);
  ASSERT_TRUE(r.capacity.lowest);
  EXPECT_EQ(r.capacity.lowest->group, "g-low");
  EXPECT_DOUBLE_EQ(r.capacity.lowest->headroom, 0.25);
  EXPECT_EQ(r.capacity.lowest->incident_id, a);
  EXPECT_EQ(r.capacity.drains, 0);
}

TEST_F(SloReportDb, ByZoneSplitsEachSloAndTheClassFilterKeepsOneClass) {
  const slo::Report r = report(0, week, "zone");
  ASSERT_FALSE(r.slos.empty());
  for (const auto& l : r.slos) EXPECT_FALSE(l.group.empty()) << l.incident_class;
  slo::ReportQuery q;
  q.window = {at(0), at(week)};
  q.incident_class = "optics";
  const auto only = d.db.report(q, at(week));
  ASSERT_TRUE(only.ok()) << only.error();
  EXPECT_EQ(only->incidents_read, 0u);
  for (const auto& l : only->slos) EXPECT_EQ(l.incident_class, "optics");
  EXPECT_TRUE(only->breaches.empty());
}

TEST_F(SloReportDb, ATargetChangedLaterLeavesAPastReportAsItWas) {
  const nlohmann::json before = slo::report_json(report(0, week))["slos"];
  // From day 8 on, mitigate must take 10 s: B's 30 s would miss now, but it was decided before.
  slo::TargetVersion v{"link_flap", slo::Stage::mitigate, "", "", from_seconds(10), 0.99, {}};
  const auto applied = d.db.apply_targets({v}, at(8 * 86400), person("ana", "admin"), at(8 * 86400));
  ASSERT_TRUE(applied.ok()) << applied.error();
  EXPECT_EQ(applied->written.size(), 1u);
  EXPECT_FALSE(applied->not_in_file.empty()) << "every other target is kept, and said so";
  EXPECT_EQ(slo::report_json(report(0, week))["slos"], before);
  // In force: the old target before day 8, the new one after.
  const auto old_t = d.db.targets_at(at(86400));
  const auto new_t = d.db.targets_at(at(9 * 86400));
  ASSERT_TRUE(old_t.ok() && new_t.ok());
  auto mitigate_of = [](const std::vector<slo::TargetVersion>& vs) {
    for (const auto& x : vs) {
      if (x.incident_class == "link_flap" && x.stage == slo::Stage::mitigate && x.scope_kind.empty()) return seconds(x.target);
    }
    return -1.0;
  };
  EXPECT_EQ(mitigate_of(*old_t), 120);
  EXPECT_EQ(mitigate_of(*new_t), 10);
  // The same again is no change; a second version at the same time is refused.
  const auto again = d.db.apply_targets({v}, at(8 * 86400), person("ana", "admin"), at(8 * 86400));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->written.empty());
  EXPECT_EQ(again->unchanged.size(), 1u);
  v.target = from_seconds(20);
  const auto clash = d.db.apply_targets({v}, at(8 * 86400), person("ana", "admin"), at(8 * 86400));
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.kind(), ErrorKind::conflict);
  EXPECT_THAT(clash.error(), HasSubstr("already exists"));
  // Each version written has its audit row.
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM audit WHERE what = 'slo_target' AND who = 'ana'"), "1");
}

TEST_F(SloReportDb, TheDefaultFileAppliedOverTheSeedChangesNothing) {
  std::vector<std::string> classes;
  for (size_t k = 0; k < triage::kIncidentClassCount; ++k) classes.emplace_back(triage::to_string(static_cast<triage::IncidentClass>(k)));
  const auto text = read_data_file(std::string(MEDIC_SOURCE_DIR) + "/data/slo.json");
  ASSERT_TRUE(text.ok());
  const auto file = slo::parse_targets(*text, "data/slo.json", classes);
  ASSERT_TRUE(file.ok()) << file.error();
  const auto applied = d.db.apply_targets(*file, SystemClock().now(), person("ana", "admin"), SystemClock().now());
  ASSERT_TRUE(applied.ok()) << applied.error();
  EXPECT_TRUE(applied->written.empty());
  EXPECT_EQ(applied->unchanged.size(), file->size());
  EXPECT_TRUE(applied->not_in_file.empty());
}

}  // namespace
}  // namespace medic::db
