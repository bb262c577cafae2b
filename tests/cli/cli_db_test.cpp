// `medic` commands that read and write the database, run in-process against a fresh
// PostgreSQL database per test.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <map>
#include <sstream>

#include "cli/commands.h"
#include "tests/db/all_stores.h"
#include "db/migrations.h"
#include "fabric/generator.h"
#include "tests/cli/cli_fixture.h"
#include "tests/support/testing.h"

namespace medic::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;
using triage::IncidentState;

// The words of the one table row whose first cells are `first` and `second`.
std::vector<std::string> row(const std::string& table, const std::string& first, const std::string& second) {
  std::vector<std::vector<std::string>> found;
  for (const auto& l : lines_of(table)) {
    auto w = words(l);
    if (w.size() >= 2 && w[0] == first && w[1] == second) found.push_back(w);
  }
  if (found.size() != 1) return {"<" + std::to_string(found.size()) + " rows for " + first + " " + second + ">"};
  return found.front();
}

using medic::testing::closed_port;

triage::IncidentUpdate flap(const fabric::Topology& t, const std::string& link_ref, Time started, Time detected) {
  triage::IncidentUpdate u;
  u.link = *t.find_link(link_ref);
  u.severity = detectors::Severity::critical;
  u.started_at = started;
  u.detected_at = detected;
  u.summary = "8 carrier transitions in 30.0s on " + link_ref;
  detectors::Finding f;
  f.link = u.link;
  f.severity = detectors::Severity::critical;
  f.port = t.link(u.link).a;
  f.device = t.port(f.port).device;
  f.first_seen = started;
  f.observed_at = detected;
  f.summary = u.summary;
  f.evidence = {{"transitions", 8}, {"window_s", 30}, {"threshold", 6}};
  u.findings.push_back(f);
  return u;
}

// A migrated database with the demo inventory.
class CliDb : public CliDbTest {
 protected:
  int64_t open(const std::string& ref, Time started, Time detected) {
    auto id = db_->open_incident(flap(topo_, ref, started, detected), topo_, detected);
    if (!id.ok()) throw std::runtime_error(id.error());
    return *id;
  }
  void state(int64_t id, IncidentState s, Time at, const std::string& reason = "") {
    auto st = db_->set_incident_state(id, s, at, reason);
    if (!st.ok()) throw std::runtime_error(st.error());
  }

  // The demo's story at a fixed time: a drained link (1), a refused drain (2), a closed one (3).
  struct Story {
    int64_t drained = 0, blocked = 0, closed = 0;
  };
  Story story() {
    const Time t0 = from_unix_seconds(1'800'000'000);  // 2027-01-15T08:00:00Z
    auto s = [&](double x) { return t0 + from_seconds(x); };
    Story st;
    st.drained = open("rtsw0001:eth5", s(0), s(3.5));
    const remediation::ActionIntent in{st.drained, *topo_.find_link("rtsw0001:eth5"), remediation::ActionKind::drain, s(3.6)};
    const auto aid = db_->begin_action(in, link_name("rtsw0001:eth5"), -1, "", 0);
    if (!aid.ok()) throw std::runtime_error(aid.error());
    const auto w = db_->finish_action(*aid, in, "succeeded", true, "", std::vector<std::string>{"drain rtsw0001:eth5 -> drained", "verify rtsw0001:eth5 -> drained"}, s(4), link_name("rtsw0001:eth5"));
    if (!w.ok()) throw std::runtime_error(w.error());
    state(st.drained, IncidentState::mitigated, s(4));
    state(st.drained, IncidentState::repair_requested, s(4));

    st.blocked = open("rtsw0003:eth7", s(1), s(6));
    const remediation::ActionIntent ref{st.blocked, *topo_.find_link("rtsw0003:eth7"), remediation::ActionKind::drain, s(6)};
    const auto r = db_->write_refusal(ref, link_name("rtsw0003:eth7"), kRefusal);
    if (!r.ok()) throw std::runtime_error(r.error());
    state(st.blocked, IncidentState::blocked, s(6), kRefusal);

    st.closed = open("rtsw0002:eth6", s(-100), s(-90));
    state(st.closed, IncidentState::closed, s(-10));
    return st;
  }

  static constexpr const char* kRefusal = "rtsw0003 uplinks would fall to 50.0% < floor 75.0%";
};

TEST(CliDbMigrate, AppliesThenNothingToDo) {
  testing::TestDatabase tdb;
  const auto first = medic({"db", "migrate", "--db", tdb.url()});
  EXPECT_EQ(first.code, 0) << first.err;
  const size_t n = db::embedded_migrations().size();
  for (const auto& m : db::embedded_migrations()) EXPECT_THAT(first.out, HasSubstr("applied " + std::string(m.name) + "\n"));
  EXPECT_THAT(first.out, HasSubstr("schema at version " + std::to_string(db::embedded_migrations().back().version) +
                                   " (" + std::to_string(n) + " applied)"));
  const auto second = medic({"db", "migrate", "--db", tdb.url()});
  EXPECT_EQ(second.code, 0) << second.err;
  EXPECT_THAT(second.out, Not(HasSubstr("applied 001_initial")));
  EXPECT_THAT(second.out, HasSubstr("nothing to do"));
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM schema_migrations"), std::to_string(n));
}

TEST(CliDbMigrate, EditedMigrationExitsOne) {
  testing::TestDatabase tdb;
  ASSERT_EQ(medic({"db", "migrate", "--db", tdb.url()}).code, 0);
  tdb.exec("UPDATE schema_migrations SET checksum = 'x'");
  const auto r = medic({"db", "migrate", "--db", tdb.url()});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("migration 001_initial was changed after it was applied"));
}

TEST(CliDbMigrate, IncidentsBeforeMigrateIsAnError) {
  testing::TestDatabase tdb;
  const auto r = medic({"incidents", "--db", tdb.url()});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("incidents"));
  EXPECT_THAT(r.err, HasSubstr("does not exist"));
}

TEST_F(CliDb, NoIncidents) {
  const auto r = medic({"incidents", "--db", url()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "no incidents\n");
  const auto j = medic({"incidents", "--json", "--db", url()});
  EXPECT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(json::parse(j.out), json::array());
}

TEST_F(CliDb, IncidentsTable) {
  const Story s = story();
  const auto r = medic({"incidents", "--db", url()});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto ls = lines_of(r.out);
  ASSERT_EQ(ls.size(), 4u) << r.out;
  // The severity, and the link (or, for a device incident, the device) it is about.
  EXPECT_THAT(words(ls[0]), ElementsAre("ID", "CLASS", "SEVERITY", "LINK", "OR", "DEVICE", "STATE", "DETECT",
                                        "MITIGATE", "DETECTED", "AT", "DETAIL"));
  const auto drained = row(r.out, std::to_string(s.drained), "link_flap");
  ASSERT_GE(drained.size(), 8u) << r.out;
  EXPECT_EQ(drained[2], "critical");
  EXPECT_EQ(drained[3], "rtsw0001:eth5--ctsw001:eth1");
  EXPECT_EQ(drained[4], "repair_requested");
  EXPECT_EQ(drained[5], "3.5s");
  EXPECT_EQ(drained[6], "500ms");
  EXPECT_EQ(drained[7], "2027-01-15T08:00:03Z");
  const auto blocked = row(r.out, std::to_string(s.blocked), "link_flap");
  ASSERT_GE(blocked.size(), 7u) << r.out;
  EXPECT_EQ(blocked[3], "rtsw0003:eth7--ctsw003:eth3");
  EXPECT_EQ(blocked[4], "blocked");
  EXPECT_EQ(blocked[5], "5.0s");
  EXPECT_EQ(blocked[6], "-");
  EXPECT_THAT(r.out, HasSubstr(std::string("drain refused: ") + kRefusal));
  const auto closed = row(r.out, std::to_string(s.closed), "link_flap");
  ASSERT_GE(closed.size(), 5u) << r.out;
  EXPECT_EQ(closed[4], "closed");
}

TEST_F(CliDb, IncidentsJson) {
  const Story s = story();
  const auto r = medic({"incidents", "--json", "--db", url()});
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["id"], s.drained);
  EXPECT_EQ(j[0]["class"], "link_flap");
  EXPECT_EQ(j[0]["state"], "repair_requested");
  EXPECT_EQ(j[0]["severity"], "critical");
  EXPECT_EQ(j[0]["link"], "rtsw0001:eth5--ctsw001:eth1");
  EXPECT_EQ(j[0]["device"], "rtsw0001");
  EXPECT_TRUE(j[0]["blocked_reason"].is_null());
  EXPECT_EQ(j[0]["started_at"], "2027-01-15T08:00:00.000000Z");
  EXPECT_EQ(j[0]["detected_at"], "2027-01-15T08:00:03.500000Z");
  EXPECT_EQ(j[0]["mitigated_at"], "2027-01-15T08:00:04.000000Z");
  EXPECT_EQ(j[0]["repair_requested_at"], "2027-01-15T08:00:04.000000Z");
  EXPECT_TRUE(j[0]["closed_at"].is_null());
  EXPECT_EQ(j[1]["id"], s.blocked);
  EXPECT_EQ(j[1]["state"], "blocked");
  EXPECT_EQ(j[1]["blocked_reason"], kRefusal);
  EXPECT_TRUE(j[1]["mitigated_at"].is_null());
  EXPECT_EQ(j[2]["id"], s.closed);
  EXPECT_EQ(j[2]["closed_at"], "2027-01-15T07:59:50.000000Z");
}

TEST_F(CliDb, IncidentsFilters) {
  const Story s = story();
  auto ids = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"incidents", "--json", "--db", url()});
    const auto r = medic(args);
    std::vector<int64_t> out;
    if (r.code != 0) return std::vector<int64_t>{-r.code};
    for (const auto& i : json::parse(r.out)) out.push_back(i["id"].get<int64_t>());
    return out;
  };
  EXPECT_THAT(ids({"--open"}), ElementsAre(s.drained, s.blocked));
  EXPECT_THAT(ids({"--limit", "1"}), ElementsAre(s.drained));
  EXPECT_THAT(ids({"--class", "link_flap"}), ElementsAre(s.drained, s.blocked, s.closed));
  EXPECT_TRUE(ids({"--class", "optics"}).empty());
  const auto text = medic({"incidents", "--open", "--db", url()});
  EXPECT_EQ(text.code, 0);
  EXPECT_THAT(text.out, Not(HasSubstr("rtsw0002:eth6")));
  EXPECT_THAT(text.out, HasSubstr("rtsw0001:eth5"));
  const auto bad = medic({"incidents", "--limit", "0", "--db", url()});
  EXPECT_NE(bad.code, 0) << "a limit below 1 is rejected";
  EXPECT_THAT(bad.err, HasSubstr("--limit"));
}

TEST_F(CliDb, IncidentShow) {
  const Story s = story();
  const auto r = medic({"incidents", "show", std::to_string(s.drained), "--db", url()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("incident " + std::to_string(s.drained) + ": link_flap on rtsw0001:eth5--ctsw001:eth1\n"));
  EXPECT_THAT(r.out, HasSubstr("state:     repair_requested\n"));
  EXPECT_THAT(r.out, HasSubstr("severity:  critical\n"));
  EXPECT_THAT(r.out, HasSubstr("  detected          2027-01-15T08:00:03.500000Z\n"));
  EXPECT_THAT(r.out, HasSubstr("  mitigated         2027-01-15T08:00:04.000000Z\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("  closed")));
  EXPECT_THAT(r.out, HasSubstr("findings (1):\n  2027-01-15T08:00:03.500000Z  link_flap  8 carrier transitions in 30.0s on rtsw0001:eth5\n"));
  EXPECT_THAT(r.out, HasSubstr("actions (1):\n"));
  EXPECT_THAT(r.out, HasSubstr(" drain rtsw0001:eth5--ctsw001:eth1: succeeded\n"));
  EXPECT_THAT(r.out, HasSubstr("      drain rtsw0001:eth5 -> drained\n      verify rtsw0001:eth5 -> drained\n"));

  // --db may also come before the subcommand.
  const auto b = medic({"incidents", "--db", url(), "show", std::to_string(s.blocked)});
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_THAT(b.out, HasSubstr(std::string("state:     blocked (") + kRefusal + ")\n"));
  EXPECT_THAT(b.out, HasSubstr(std::string(" drain rtsw0003:eth7--ctsw003:eth3: refused (") + kRefusal + ")\n"));
}

TEST_F(CliDb, IncidentShowJson) {
  const Story s = story();
  const auto r = medic({"incidents", "show", std::to_string(s.drained), "--json", "--db", url()});
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["id"], s.drained);
  EXPECT_EQ(j["state"], "repair_requested");
  ASSERT_EQ(j["findings"].size(), 1u);
  EXPECT_EQ(j["findings"][0]["port"], "rtsw0001:eth5");
  EXPECT_EQ(j["findings"][0]["evidence"]["transitions"], 8);
  ASSERT_EQ(j["actions"].size(), 1u);
  EXPECT_EQ(j["actions"][0]["state"], "succeeded");
  EXPECT_EQ(j["actions"][0]["steps"], json({"drain rtsw0001:eth5 -> drained", "verify rtsw0001:eth5 -> drained"}));
  EXPECT_EQ(j["actions"][0]["intent_at"], "2027-01-15T08:00:03.600000Z");
  EXPECT_EQ(j["actions"][0]["result_at"], "2027-01-15T08:00:04.000000Z");
}

TEST_F(CliDb, IncidentShowUnknownId) {
  story();
  const auto r = medic({"incidents", "show", "999", "--db", url()});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("no incident with id 999"));
}

// Incidents placed relative to the wall clock (`slo report` windows end now by default).
// Every verdict below is far from its threshold.
TEST_F(CliDb, SloReportJudgesTheWindowsStages) {
  const Time now = SystemClock().now();
  auto ago = [&](double s) { return now - from_seconds(s); };
  // 1: detect 10s (met), mitigate 20s (met), closed.
  const int64_t i1 = open("rtsw0001:eth5", ago(3000), ago(2990));
  state(i1, IncidentState::mitigated, ago(2970));
  state(i1, IncidentState::closed, ago(2000));
  // 2: detect 90s (missed), mitigate 300s (missed), still open: repair pending.
  const int64_t i2 = open("rtsw0002:eth5", ago(7200), ago(7110));
  state(i2, IncidentState::mitigated, ago(6810));
  // 3: detect 10s (met), mitigation not done after 20s of 120s: pending.
  open("rtsw0003:eth5", ago(30), ago(20));
  // 4: detect 5s (met), mitigation not done after 600s: missed though not finished.
  const int64_t i4 = open("rtsw0004:eth5", ago(605), ago(600));

  const auto j = medic({"slo", "report", "--window", "1d", "--format", "json", "--db", url()});
  ASSERT_EQ(j.code, 0) << j.err;
  const json doc = json::parse(j.out);
  std::map<std::string, json> by_stage;
  for (const auto& r : doc["slos"]) {
    if (r["class"] == "link_flap") by_stage[r["stage"]] = r;
  }
  ASSERT_EQ(by_stage.size(), 4u);
  auto counts = [&](const char* st) {
    const json& r = by_stage[st];
    return std::vector<int>{r["met"].get<int>(), r["missed"].get<int>(), r["pending"].get<int>()};
  };
  EXPECT_THAT(counts("detect"), ElementsAre(3, 1, 0));
  EXPECT_EQ(by_stage["detect"]["breaches"], json({i2}));
  EXPECT_DOUBLE_EQ(by_stage["detect"]["compliance"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(by_stage["detect"]["target_seconds"].get<double>(), 60);
  EXPECT_DOUBLE_EQ(by_stage["detect"]["seconds"]["max"].get<double>(), 90);
  EXPECT_THAT(counts("mitigate"), ElementsAre(1, 2, 1));
  EXPECT_EQ(by_stage["mitigate"]["breaches"], json({i2, i4}));
  EXPECT_DOUBLE_EQ(by_stage["mitigate"]["seconds"]["p50"].get<double>(), 20);
  EXPECT_DOUBLE_EQ(by_stage["mitigate"]["seconds"]["max"].get<double>(), 300);
  EXPECT_THAT(counts("repair"), ElementsAre(0, 0, 1));
  EXPECT_TRUE(by_stage["repair"]["compliance"].is_null());
  EXPECT_THAT(counts("restore"), ElementsAre(0, 0, 0));
  EXPECT_EQ(doc["breaches"].size(), 3u);
  EXPECT_EQ(doc["window"]["label"].get<std::string>().substr(0, 9), "1d ending");

  // The table: one row per SLO, every class with a target listed.
  const auto t = medic({"slo", "report", "--window", "1d", "--db", url()});
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_THAT(t.out, HasSubstr("4 incidents read"));
  const auto detect = row(t.out, "link_flap", "detect");
  ASSERT_GE(detect.size(), 9u) << t.out;
  EXPECT_THAT(std::vector<std::string>(detect.begin(), detect.begin() + 9),
              ElementsAre("link_flap", "detect", "1m00s", "99.0%", "4", "3", "1", "0", "75.0%!"));
  EXPECT_THAT(row(t.out, "optics", "detect"), ::testing::Contains("0"));
  EXPECT_THAT(t.out, HasSubstr("breaches: 3\n"));
  EXPECT_THAT(t.out, HasSubstr("  #" + std::to_string(i2) + " link_flap "));

  // The last hour only: incident 2's stages were decided before it.
  const json h = json::parse(medic({"slo", "report", "--window", "1h", "--format", "json", "--db", url()}).out);
  for (const auto& r : h["slos"]) {
    if (r["class"] == "link_flap" && r["stage"] == "detect") {
      EXPECT_EQ(r["met"], 3);
      EXPECT_EQ(r["missed"], 0);
    }
  }
  // One class only, and the other formats.
  const json oc = json::parse(medic({"slo", "report", "--class", "optics", "--format", "json", "--db", url()}).out);
  for (const auto& r : oc["slos"]) EXPECT_EQ(r["class"], "optics");
  const auto csv = medic({"slo", "report", "--format", "csv", "--db", url()});
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("class,stage,group,target_seconds,objective,decided,met,missed,pending,compliance,", 0), 0u);
  EXPECT_EQ(static_cast<size_t>(std::count(csv.out.begin(), csv.out.end(), '\n')), 1 + json::parse(j.out)["slos"].size());
  const auto md = medic({"slo", "report", "--format", "md", "--db", url()});
  EXPECT_THAT(md.out, HasSubstr("# SLO compliance: 7d ending "));
  EXPECT_THAT(md.out, HasSubstr("## Breaches (3)"));
  testing::TempDir dir;
  const std::string out_file = dir.file("report.html");
  const auto html = medic({"slo", "report", "--format", "html", "--out", out_file, "--db", url()});
  ASSERT_EQ(html.code, 0) << html.err;
  EXPECT_THAT(html.out, HasSubstr("wrote " + out_file));
  EXPECT_EQ(testing::read_file(out_file).rfind("<!DOCTYPE html>", 0), 0u);
}

TEST_F(CliDb, SloReportRejectsBadArgumentsExactly) {
  auto refused = [&](std::vector<std::string> args, const std::string& why) {
    args.insert(args.begin(), {"slo", "report"});
    args.insert(args.end(), {"--db", url()});
    const auto r = medic(args);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_THAT(r.err, HasSubstr(why));
    EXPECT_EQ(r.out, "");
  };
  refused({"--window", "7w"}, "--window: not a window: \"7w\"");
  refused({"--month", "2026-13"}, "--month: not a month: \"2026-13\"");
  refused({"--from", "2026-11-01"}, "--from and --to go together");
  refused({"--from", "2026-11-08", "--to", "2026-11-01"}, "--from must be before --to");
  refused({"--window", "7d", "--month", "2026-10"}, "not several");
  refused({"--by", "rack"}, "--by: \"rack\" is not one of zone, plane, role");
  refused({"--class", "nosuch"}, "--class: unknown incident class \"nosuch\"");
  refused({"--format", "pdf"}, "--format");
  const auto out = medic({"slo", "report", "--out", "/nonexistent-dir/r.html", "--format", "html", "--db", url()});
  EXPECT_EQ(out.code, 1);
  EXPECT_THAT(out.err, HasSubstr("/nonexistent-dir/r.html: cannot write: No such file or directory"));
}

TEST_F(CliDb, SloTargetsAreTheSeededOnes) {
  const auto r = medic({"slo", "targets", "--db", url()});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto ls = lines_of(r.out);
  ASSERT_EQ(ls.size(), 2u + std::stoul(tdb_.scalar("SELECT count(*) FROM slo_targets"))) << r.out;
  EXPECT_THAT(ls[0], HasSubstr("SLO targets in force at "));
  EXPECT_THAT(words(ls[1]), ElementsAre("CLASS", "STAGE", "SCOPE", "TARGET", "OBJECTIVE", "FROM"));
  auto four = [](std::vector<std::string> w) { return std::vector<std::string>(w.begin(), w.begin() + std::min<size_t>(5, w.size())); };
  EXPECT_THAT(four(row(r.out, "link_flap", "detect")), ElementsAre("link_flap", "detect", "-", "1m00s", "99.0%"));
  EXPECT_THAT(four(row(r.out, "link_flap", "mitigate")), ElementsAre("link_flap", "mitigate", "-", "2m00s", "99.0%"));
  EXPECT_THAT(four(row(r.out, "link_flap", "repair")), ElementsAre("link_flap", "repair", "-", "2d00h", "95.0%"));
  EXPECT_THAT(four(row(r.out, "link_flap", "restore")), ElementsAre("link_flap", "restore", "-", "1h00m", "99.0%"));
}

TEST_F(CliDb, SloApplyKeepsEveryVersionAndTargetsAtATimeShowsTheOneInForce) {
  testing::TempDir dir;
  const std::string file = dir.file("slo.json");
  testing::write_file(file, R"({"targets": [
    {"class": "link_flap", "stage": "detect", "target_s": 30, "objective": 0.99},
    {"class": "link_flap", "stage": "mitigate", "target_s": 120, "objective": 0.99},
    {"class": "link_flap", "stage": "mitigate", "target_s": 60, "objective": 0.999, "scope": {"zone": "zone1"}}]})");
  const auto a = medic({"slo", "apply", file, "--from", "2030-01-01", "--by", "ana", "--db", url()});
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_THAT(a.out, HasSubstr(file + ": 3 targets; 2 changed from "));
  EXPECT_THAT(a.out, HasSubstr("1 unchanged"));
  EXPECT_THAT(a.out, HasSubstr("  changed: link_flap detect: 30.0s, 99.0%\n"));
  EXPECT_THAT(a.out, HasSubstr("  changed: link_flap mitigate (zone=zone1): 1m00s, 99.9%\n"));
  EXPECT_THAT(a.out, HasSubstr("kept (not in the file; targets are changed, never removed): optics detect"));
  // Before the new version holds, the old one is in force; after, the new one.
  EXPECT_THAT(row(medic({"slo", "targets", "--db", url()}).out, "link_flap", "detect"), ::testing::Contains("1m00s"));
  EXPECT_THAT(row(medic({"slo", "targets", "--at", "2030-01-02", "--db", url()}).out, "link_flap", "detect"),
              ::testing::Contains("30.0s"));
  // The scoped target, first of its kind, holds for the history before it too.
  const auto past = medic({"slo", "targets", "--at", "2020-01-01", "--json", "--db", url()});
  ASSERT_EQ(past.code, 0) << past.err;
  bool scoped = false;
  for (const auto& t : json::parse(past.out)) scoped = scoped || t.contains("scope");
  EXPECT_TRUE(scoped);
  const auto hist = medic({"slo", "targets", "--history", "--db", url()});
  EXPECT_EQ(static_cast<size_t>(std::count(hist.out.begin(), hist.out.end(), '\n')),
            1 + std::stoul(tdb_.scalar("SELECT count(*) FROM slo_target_versions")));
  EXPECT_EQ(tdb_.scalar("SELECT count(*) FROM audit WHERE what = 'slo_target' AND who = 'ana'"), "2");
  // The same file again changes nothing; another target from the same time is refused.
  const auto again = medic({"slo", "apply", file, "--from", "2030-01-01", "--db", url()});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("0 changed"));
  testing::write_file(file, R"({"targets": [{"class": "link_flap", "stage": "detect", "target_s": 45, "objective": 0.99}]})");
  const auto clash = medic({"slo", "apply", file, "--from", "2030-01-01", "--db", url()});
  EXPECT_EQ(clash.code, 2) << clash.out;
  EXPECT_THAT(clash.err, HasSubstr("already exists"));
}

TEST_F(CliDb, SloApplyRefusesABadFileNamingWhereAndChangesNothing) {
  testing::TempDir dir;
  const std::string file = dir.file("slo.json");
  testing::write_file(file, R"({"targets": [{"class": "link_flap", "stage": "detect", "target_s": -5, "objective": 0.99}]})");
  const std::string before = tdb_.scalar("SELECT count(*) FROM slo_target_versions");
  const auto r = medic({"slo", "apply", file, "--db", url()});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(file + ": $.targets[0].target_s"));
  const auto missing = medic({"slo", "apply", dir.file("nope.json"), "--db", url()});
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr("nope.json: cannot open"));
  const auto when = medic({"slo", "apply", file, "--from", "soon", "--db", url()});
  EXPECT_EQ(when.code, 2);
  EXPECT_THAT(when.err, HasSubstr("--from: not a time: \"soon\""));
  EXPECT_EQ(tdb_.scalar("SELECT count(*) FROM slo_target_versions"), before);
}

TEST_F(CliDb, SloSet) {
  const auto r = medic({"slo", "set", "link_flap", "detect", "30", "--db", url()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "link_flap detect: target 30.0s, objective 99.0% from now on\n");
  EXPECT_THAT(row(medic({"slo", "targets", "--db", url()}).out, "link_flap", "detect"), ::testing::Contains("30.0s"));
  const auto o = medic({"slo", "set", "link_flap", "mitigate", "90", "--objective", "0.9", "--db", url()});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_THAT(row(medic({"slo", "targets", "--db", url()}).out, "link_flap", "mitigate"), ::testing::Contains("1m30s"));
  EXPECT_EQ(tdb_.scalar("SELECT count(*) FROM slo_targets WHERE incident_class = 'link_flap'"), "4");
  EXPECT_EQ(tdb_.scalar("SELECT count(*) FROM slo_target_versions WHERE incident_class = 'link_flap'"), "6");
}

TEST_F(CliDb, SloSetRejectsBadInput) {
  const auto stage = medic({"slo", "set", "link_flap", "detection", "30", "--db", url()});
  EXPECT_EQ(stage.code, 2);
  EXPECT_THAT(stage.err, HasSubstr("unknown stage \"detection\""));
  const auto cls = medic({"slo", "set", "link_flop", "detect", "30", "--db", url()});
  EXPECT_EQ(cls.code, 2);
  EXPECT_THAT(cls.err, HasSubstr("unknown incident class \"link_flop\""));
  const auto zero = medic({"slo", "set", "link_flap", "detect", "0", "--db", url()});
  EXPECT_EQ(zero.code, 2);
  EXPECT_THAT(zero.err, HasSubstr("target must be a positive number of seconds"));
  const auto obj = medic({"slo", "set", "link_flap", "detect", "30", "--objective", "1.5", "--db", url()});
  EXPECT_EQ(obj.code, 2);
  EXPECT_THAT(obj.err, HasSubstr("--objective"));
  // Nothing changed.
  EXPECT_EQ(tdb_.scalar("SELECT count(*) FROM slo_target_versions WHERE valid_from > now() - interval '1 minute' AND applied_by <> 'schema'"), "0");
}

// ---------------------------------------------------------------------------------------
// Maintenance windows

TEST_F(CliDb, MaintenanceAddResolvesEitherEndToTheLinksName) {
  const Time before = SystemClock().now();
  const auto a = medic({"maintenance", "add", "--link", "rtsw0001:eth5", "--until", "+2h", "--reason", "optics swap",
                        "--db", url()});
  const Time after = SystemClock().now();
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.err, "");
  EXPECT_THAT(a.out, ::testing::MatchesRegex("maintenance #[0-9]+: rtsw0001:eth5--ctsw001:eth1 from "
                                             "[0-9T:.-]+Z until [0-9T:.-]+Z \\(optics swap\\)\n"));
  // The far end and the full name name the same link.
  const auto b = medic({"maintenance", "add", "--link", "ctsw001:eth1", "--until", "+1h", "--db", url()});
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_THAT(b.out, ::testing::MatchesRegex("maintenance #[0-9]+: rtsw0001:eth5--ctsw001:eth1 from [0-9T:.-]+Z until "
                                             "[0-9T:.-]+Z\n"));
  const auto c = medic({"maintenance", "add", "--link", "rtsw0001:eth5--ctsw001:eth1", "--until", "+1h", "--db", url()});
  ASSERT_EQ(c.code, 0) << c.err;

  EXPECT_THAT(tdb_.column("SELECT link FROM maintenance ORDER BY id"),
              ElementsAre("rtsw0001:eth5--ctsw001:eth1", "rtsw0001:eth5--ctsw001:eth1", "rtsw0001:eth5--ctsw001:eth1"));
  EXPECT_THAT(tdb_.column("SELECT coalesce(device, '-') FROM maintenance ORDER BY id"), ElementsAre("-", "-", "-"));
  const auto ids = tdb_.column("SELECT id FROM maintenance ORDER BY id");
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_THAT(a.out, ::testing::StartsWith("maintenance #" + ids[0] + ": "));
  EXPECT_THAT(b.out, ::testing::StartsWith("maintenance #" + ids[1] + ": "));
  EXPECT_EQ(tdb_.scalar("SELECT reason FROM maintenance WHERE id = " + ids[0]), "optics swap");
  // From now until two hours later, as printed.
  const auto windows = db_->maintenance(std::nullopt);
  ASSERT_TRUE(windows.ok()) << windows.error();
  ASSERT_EQ(windows->size(), 3u);
  const auto& w = windows->front();
  EXPECT_GE(w.starts_at, before - std::chrono::seconds(1));
  EXPECT_LE(w.starts_at, after);
  EXPECT_EQ(w.ends_at - w.starts_at, std::chrono::hours(2));
  EXPECT_THAT(a.out, HasSubstr(" from " + format_iso8601(w.starts_at) + " until " + format_iso8601(w.ends_at) + " "));
}

TEST_F(CliDb, MaintenanceAddOnADevice) {
  const auto sw = medic({"maintenance", "add", "--device", "ctsw004", "--from", "+30m", "--until", "+3h", "--reason",
                         "OS upgrade", "--db", url()});
  ASSERT_EQ(sw.code, 0) << sw.err;
  EXPECT_THAT(sw.out, ::testing::MatchesRegex("maintenance #[0-9]+: ctsw004 from [0-9T:.-]+Z until [0-9T:.-]+Z "
                                              "\\(OS upgrade\\)\n"));
  // A host is known by its links.
  const auto host = medic({"maintenance", "add", "--device", "host0001", "--until", "+1h", "--db", url()});
  ASSERT_EQ(host.code, 0) << host.err;
  EXPECT_THAT(tdb_.column("SELECT coalesce(link, '-') || ' ' || device FROM maintenance ORDER BY id"),
              ElementsAre("- ctsw004", "- host0001"));
  const auto windows = db_->maintenance(std::nullopt);
  ASSERT_TRUE(windows.ok()) << windows.error();
  ASSERT_EQ(windows->size(), 2u);
  const auto& w = windows->at(1);  // ordered by start: host0001 (now) then ctsw004 (+30m)
  EXPECT_EQ(w.device, "ctsw004");
  EXPECT_EQ(w.ends_at - w.starts_at, std::chrono::minutes(150));
}

TEST_F(CliDb, MaintenanceAddRejectsUnknownTargets) {
  const auto link = medic({"maintenance", "add", "--link", "rtsw0001:eth99", "--until", "+2h", "--db", url()});
  EXPECT_EQ(link.code, 2);
  EXPECT_EQ(link.out, "");
  EXPECT_EQ(link.err, "medic: --link \"rtsw0001:eth99\": no such link in the inventory (run medicd or check the name)\n");
  const auto dev = medic({"maintenance", "add", "--device", "ctsw999", "--until", "+2h", "--db", url()});
  EXPECT_EQ(dev.code, 2);
  EXPECT_EQ(dev.out, "");
  EXPECT_EQ(dev.err, "medic: --device \"ctsw999\": no such switch or host in the inventory (run medicd or check the name)\n");
  // A port name is not a device.
  const auto port = medic({"maintenance", "add", "--device", "rtsw0001:eth5", "--until", "+2h", "--db", url()});
  EXPECT_EQ(port.code, 2);
  EXPECT_THAT(port.err, HasSubstr("no such switch or host"));
  EXPECT_EQ(tdb_.scalar("SELECT count(*) FROM maintenance"), "0");
}

TEST_F(CliDb, MaintenanceAddNeedsExactlyOneTarget) {
  const auto both = medic({"maintenance", "add", "--link", "rtsw0001:eth5", "--device", "rtsw0001", "--until", "+2h",
                           "--db", url()});
  EXPECT_EQ(both.code, 2);
  EXPECT_EQ(both.err, "medic: give exactly one of --link or --device\n");
  const auto neither = medic({"maintenance", "add", "--until", "+2h", "--db", url()});
  EXPECT_EQ(neither.code, 2);
  EXPECT_EQ(neither.err, "medic: give exactly one of --link or --device\n");
  EXPECT_EQ(tdb_.scalar("SELECT count(*) FROM maintenance"), "0");
}

TEST_F(CliDb, MaintenanceAddRejectsBadTimes) {
  auto add = [&](const std::string& from, const std::string& until) {
    return medic({"maintenance", "add", "--link", "rtsw0001:eth5", "--from", from, "--until", until, "--db", url()});
  };
  for (const std::string from : {"+2x", "+h", "+2", "soon", "-5m", "+-1h", "0", "", "+nanh", "+infh", "inf"}) {
    const auto r = add(from, "+3h");
    EXPECT_EQ(r.code, 2) << from;
    EXPECT_EQ(r.err, "medic: --from \"" + from + "\": expected now, +N[smhd] or Unix seconds\n") << from;
  }
  for (const std::string until : {"+2x", "tomorrow", "+2", "12:00", "+1e999h", "1e999", "+infd", "+1e300h", "1e300"}) {
    const auto r = add("now", until);
    EXPECT_EQ(r.code, 2) << until;
    EXPECT_EQ(r.err, "medic: --until \"" + until + "\": expected +N[smhd] or Unix seconds\n") << until;
  }
  for (const auto& [from, until] : std::vector<std::pair<std::string, std::string>>{
           {"+2h", "+1h"}, {"now", "now"}, {"+1h", "+60m"}, {"now", "1500000000"}}) {
    const auto r = add(from, until);
    EXPECT_EQ(r.code, 2) << from << " " << until;
    EXPECT_EQ(r.err, "medic: --until must be after --from\n") << from << " " << until;
  }
  const auto missing = medic({"maintenance", "add", "--link", "rtsw0001:eth5", "--db", url()});
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err, "--until is required\nRun with --help for more information.\n");
  EXPECT_EQ(tdb_.scalar("SELECT count(*) FROM maintenance"), "0");
  // Unix seconds work on both sides.
  const auto unix_times = add("1900000000", "1900003600.5");
  EXPECT_EQ(unix_times.code, 0) << unix_times.err;
  EXPECT_THAT(unix_times.out, HasSubstr(" from " + format_iso8601(from_unix_seconds(1900000000)) + " until " +
                                        format_iso8601(from_unix_seconds(1900003600.5))));
}

TEST_F(CliDb, MaintenanceListShowsActiveAheadAndOver) {
  const auto empty = medic({"maintenance", "list", "--db", url()});
  ASSERT_EQ(empty.code, 0) << empty.err;
  EXPECT_EQ(empty.out, "no maintenance windows now or ahead\n");
  const auto empty_all = medic({"maintenance", "list", "--all", "--db", url()});
  ASSERT_EQ(empty_all.code, 0) << empty_all.err;
  EXPECT_EQ(empty_all.out, "no maintenance windows\n");

  const double now_s = std::floor(to_unix_seconds(SystemClock().now()));
  auto add = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"maintenance", "add"});
    args.insert(args.end(), {"--db", url()});
    const auto r = medic(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return tdb_.scalar("SELECT max(id) FROM maintenance");
  };
  const std::string active = add({"--link", "rtsw0001:eth5", "--until", "+2h", "--reason", "optics swap"});
  const std::string ahead = add({"--device", "ctsw004", "--from", "+1h", "--until", "+3h", "--reason", "upgrade"});
  const std::string over = add({"--link", "rtsw0002:eth6", "--from", std::to_string(now_s - 7200), "--until",
                                std::to_string(now_s - 3600), "--reason", "done"});

  const auto list = medic({"maintenance", "list", "--db", url()});
  ASSERT_EQ(list.code, 0) << list.err;
  const auto ls = lines_of(list.out);
  ASSERT_EQ(ls.size(), 3u) << list.out;
  EXPECT_THAT(words(ls[0]), ElementsAre("ID", "LINK", "OR", "DEVICE", "FROM", "UNTIL", "STATUS", "REASON"));
  const auto a = row(list.out, active, "rtsw0001:eth5--ctsw001:eth1");
  ASSERT_EQ(a.size(), 7u) << list.out;
  EXPECT_EQ(a[4], "active");
  EXPECT_EQ(a[5], "optics");
  EXPECT_EQ(a[6], "swap");
  EXPECT_THAT(a[2], ::testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"));
  EXPECT_THAT(row(list.out, ahead, "ctsw004"), ElementsAre(ahead, "ctsw004", ::testing::_, ::testing::_, "ahead", "upgrade"));
  EXPECT_THAT(list.out, Not(HasSubstr("rtsw0002:eth6")));

  const auto all = medic({"maintenance", "list", "--all", "--db", url()});
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_EQ(lines_of(all.out).size(), 4u) << all.out;
  EXPECT_THAT(row(all.out, over, "rtsw0002:eth6--ctsw002:eth2"),
              ElementsAre(over, "rtsw0002:eth6--ctsw002:eth2", format_iso8601(from_unix_seconds(now_s - 7200)).substr(0, 19) + "Z",
                          format_iso8601(from_unix_seconds(now_s - 3600)).substr(0, 19) + "Z", "over", "done"));
  EXPECT_EQ(row(all.out, active, "rtsw0001:eth5--ctsw001:eth1")[4], "active");
  EXPECT_EQ(row(all.out, ahead, "ctsw004")[4], "ahead");
  // Ordered by start: over, active, ahead.
  const auto als = lines_of(all.out);
  EXPECT_EQ(words(als[1])[0], over);
  EXPECT_EQ(words(als[2])[0], active);
  EXPECT_EQ(words(als[3])[0], ahead);
}

TEST_F(CliDb, MaintenanceEnd) {
  auto add = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"maintenance", "add"});
    args.insert(args.end(), {"--db", url()});
    const auto r = medic(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return tdb_.scalar("SELECT max(id) FROM maintenance");
  };
  const std::string active = add({"--link", "rtsw0001:eth5", "--until", "+2h"});
  const std::string ahead = add({"--device", "ctsw004", "--from", "+1h", "--until", "+3h"});

  const Time before = SystemClock().now();
  const auto e = medic({"maintenance", "end", active, "--db", url()});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(e.out, "maintenance #" + active + " ended\n");
  // A window not yet begun is cancelled: over at once, not left waiting to begin.
  const auto e2 = medic({"maintenance", "end", ahead, "--db", url()});
  ASSERT_EQ(e2.code, 0) << e2.err;
  EXPECT_EQ(e2.out, "maintenance #" + ahead + " ended\n");
  const Time after = SystemClock().now();

  const auto list = medic({"maintenance", "list", "--db", url()});
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_EQ(list.out, "no maintenance windows now or ahead\n");
  const auto all = medic({"maintenance", "list", "--all", "--db", url()});
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_EQ(row(all.out, active, "rtsw0001:eth5--ctsw001:eth1")[4], "over") << all.out;
  EXPECT_EQ(row(all.out, ahead, "ctsw004")[4], "over") << all.out;
  const auto windows = db_->maintenance(std::nullopt);
  ASSERT_TRUE(windows.ok()) << windows.error();
  ASSERT_EQ(windows->size(), 2u);
  for (const auto& w : *windows) {
    EXPECT_GE(w.ends_at, before) << w.id;
    EXPECT_LE(w.ends_at, after + std::chrono::microseconds(1)) << w.id;
    EXPECT_LT(w.starts_at, w.ends_at) << w.id;
  }
  EXPECT_GE(windows->back().starts_at, before);  // the cancelled one starts when it was ended

  // Ending it again, or a window that never was, is an error.
  const auto again = medic({"maintenance", "end", active, "--db", url()});
  EXPECT_EQ(again.code, 1);
  EXPECT_EQ(again.out, "");
  EXPECT_EQ(again.err, "medic: maintenance window #" + active + " is over already\n");
  const auto unknown = medic({"maintenance", "end", "999", "--db", url()});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_EQ(unknown.err, "medic: no maintenance window #999\n");
  const auto zero = medic({"maintenance", "end", "0", "--db", url()});
  EXPECT_EQ(zero.code, 2);
  EXPECT_THAT(zero.err, HasSubstr("id"));
}

// ---------------------------------------------------------------------------------------
// incidents show: the suspect, reopening and the history

TEST_F(CliDb, IncidentShowSuspectReopenedAndHistory) {
  const Time t0 = from_unix_seconds(1'800'000'000);  // 2027-01-15T08:00:00Z
  auto s = [&](double x) { return t0 + from_seconds(x); };
  triage::IncidentUpdate u = flap(topo_, "rtsw0002:eth6", s(0), s(5));
  u.summary = "rx power low on ctsw002:eth2";
  u.suspect_port = topo_.link(u.link).a;
  u.suspect = "the transceiver in rtsw0002:eth6 (weak transmitter: -6.00 dBm)";
  u.cls = triage::IncidentClass::optics;
  const auto id = db_->open_incident(u, topo_, s(6));
  ASSERT_TRUE(id.ok()) << id.error();
  state(*id, IncidentState::closed, s(100), "repaired by hand");
  triage::IncidentUpdate again = flap(topo_, "rtsw0002:eth6", s(190), s(200));
  again.incident_id = *id;
  again.reopened = true;
  again.summary = "rx power low again on ctsw002:eth2";
  ASSERT_TRUE(db_->reopen_incident(again, topo_, s(201)).ok());

  const auto r = medic({"incidents", "show", std::to_string(*id), "--db", url()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("incident " + std::to_string(*id) + ": optics on rtsw0002:eth6--ctsw002:eth2\n"));
  EXPECT_THAT(r.out, HasSubstr("state:     triaged\n"));
  EXPECT_THAT(r.out, HasSubstr("summary:   rx power low again on ctsw002:eth2\n"));
  EXPECT_THAT(r.out,
              HasSubstr("suspect:   the transceiver in rtsw0002:eth6 (weak transmitter: -6.00 dBm) [rtsw0002:eth6]\n"));
  EXPECT_THAT(r.out, HasSubstr("reopened:  1 time, last 2027-01-15T08:03:21.000000Z\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("\n  closed ")));  // the later stages were cleared
  EXPECT_THAT(r.out, HasSubstr("history (4):\n"
                               "  2027-01-15T08:00:05.000000Z  detected  rx power low on ctsw002:eth2\n"
                               "  2027-01-15T08:00:06.000000Z  triaged\n"
                               "  2027-01-15T08:01:40.000000Z  closed  repaired by hand\n"
                               "  2027-01-15T08:03:21.000000Z  reopened  rx power low again on ctsw002:eth2\n"));
  EXPECT_THAT(r.out, HasSubstr("findings (2):\n"));

  // Reopened twice: plural.
  state(*id, IncidentState::closed, s(300));
  again.detected_at = s(400);
  ASSERT_TRUE(db_->reopen_incident(again, topo_, s(401)).ok());
  const auto r2 = medic({"incidents", "show", std::to_string(*id), "--db", url()});
  ASSERT_EQ(r2.code, 0) << r2.err;
  EXPECT_THAT(r2.out, HasSubstr("reopened:  2 times, last 2027-01-15T08:06:41.000000Z\n"));
  EXPECT_THAT(r2.out, HasSubstr("history (6):\n"));

  const auto j = medic({"incidents", "show", std::to_string(*id), "--json", "--db", url()});
  ASSERT_EQ(j.code, 0) << j.err;
  const json doc = json::parse(j.out);
  EXPECT_EQ(doc["suspect"], "the transceiver in rtsw0002:eth6 (weak transmitter: -6.00 dBm)");
  EXPECT_EQ(doc["suspect_port"], "rtsw0002:eth6");
  EXPECT_EQ(doc["reopen_count"], 2);
  ASSERT_EQ(doc["history"].size(), 6u);
  EXPECT_EQ(doc["history"][2]["state"], "closed");
  EXPECT_EQ(doc["history"][2]["note"], "repaired by hand");
  EXPECT_EQ(doc["history"][5]["state"], "reopened");
}

TEST_F(CliDb, IncidentShowWithoutSuspectOrReopening) {
  const Story st = story();
  const auto r = medic({"incidents", "show", std::to_string(st.drained), "--db", url()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("suspect:")));
  EXPECT_THAT(r.out, Not(HasSubstr("reopened:")));
  EXPECT_THAT(r.out, HasSubstr("history (4):\n"));
  EXPECT_THAT(r.out, HasSubstr("  2027-01-15T08:00:04.000000Z  mitigated\n"));
  EXPECT_THAT(r.out, HasSubstr("  2027-01-15T08:00:04.000000Z  repair_requested\n"));
}


TEST(CliDbConnect, UnreachableDatabaseExitsOne) {
  const std::string url = "postgresql://medic:s3cret-pw@127.0.0.1:" + std::to_string(closed_port()) + "/medic";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"db", "migrate"}, {"incidents"}, {"incidents", "show", "1"}, {"slo", "report"},
        {"slo", "targets"}, {"slo", "set", "link_flap", "detect", "30"}}) {
    auto a = args;
    a.push_back("--db");
    a.push_back(url);
    const auto r = medic(a);
    EXPECT_EQ(r.code, 1) << args.front();
    EXPECT_THAT(r.err, HasSubstr("cannot connect to PostgreSQL at postgresql://medic:***@127.0.0.1:"));
    EXPECT_THAT(r.err, Not(HasSubstr("s3cret-pw")));
  }
}

TEST(CliDbConnect, DatabaseFromEnvironment) {
  testing::TestDatabase tdb;  // made before the environment is changed
  const char* old = std::getenv("MEDIC_DB_URL");
  const std::string saved = old ? old : "";
  ::unsetenv("MEDIC_DB_URL");
  const auto none = medic({"incidents"});
  ::setenv("MEDIC_DB_URL", tdb.url().c_str(), 1);
  const auto migrated = medic({"db", "migrate"});
  const auto listed = medic({"incidents"});
  if (old) {
    ::setenv("MEDIC_DB_URL", saved.c_str(), 1);
  } else {
    ::unsetenv("MEDIC_DB_URL");
  }
  EXPECT_EQ(none.code, 2);
  EXPECT_THAT(none.err, HasSubstr("no database: pass --db URL or set MEDIC_DB_URL"));
  EXPECT_EQ(migrated.code, 0) << migrated.err;
  EXPECT_THAT(migrated.out, HasSubstr("applied 001_initial"));
  EXPECT_EQ(listed.code, 0) << listed.err;
  EXPECT_EQ(listed.out, "no incidents\n");
}

}  // namespace
}  // namespace medic::cli
