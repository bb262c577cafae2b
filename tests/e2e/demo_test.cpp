// End to end with the real binaries: fabsim plays a scenario on the demo fabric, medicd
// finds the two flapping links, drains the one on a healthy ToR and refuses the one whose
// ToR has already lost an uplink; the database, fabsim's view of the fabric, medicd's
// metrics and the `medic` command line all have to agree.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "common/http_client.h"
#include "common/time.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/support/testing.h"

namespace medic {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kDrained = "rtsw0001:eth5--ctsw001:eth1";  // flaps on a healthy ToR
constexpr const char* kDown = "rtsw0003:eth6--ctsw002:eth3";     // rtsw0003 lost this uplink
constexpr const char* kRefused = "rtsw0003:eth7--ctsw003:eth3";  // then this one flaps
constexpr const char* kReason = "rtsw0003 uplinks would fall to 50.0% < floor 75.0%";
constexpr int kFlaps = 8;

// Each flap is two carrier transitions; eight flaps give sixteen against a threshold of
// six, so a medicd that takes a moment to start (a busy machine) still sees enough.
std::string scenario() {
  return json{{"comment", "shortened demo"},
              {"faults",
               {{{"kind", "down"}, {"link", "rtsw0003:eth6"}, {"at_s", 0}},
                {{"kind", "flap"}, {"link", "rtsw0001:eth5"}, {"at_s", 3}, {"count", kFlaps}, {"period_s", 0.5},
                 {"down_s", 0.15}},
                {{"kind", "flap"}, {"link", "rtsw0003:eth7"}, {"at_s", 4}, {"count", kFlaps}, {"period_s", 0.5},
                 {"down_s", 0.15}}}}}
      .dump(1);
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

// A 127.0.0.1 port nobody listens on: bound, read, then released.
using medic::testing::closed_port;

std::optional<json> get_json(HttpClient& http, const std::string& url) {
  auto r = http.get(url);
  if (!r.ok() || r->status != 200) return std::nullopt;
  json j = json::parse(r->body, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

TEST(E2E, DemoDrainsHealthyTorAndRefusesDegradedOne) {
  curl_global_setup();
  testing::TempDir dir;
  testing::TestDatabase tdb;
  HttpClient http;

  ASSERT_NO_FATAL_FAILURE(write_demo_topology(dir));
  DemoFabsim fabsim;
  const double before_start = to_unix_seconds(SystemClock().now());
  ASSERT_NO_FATAL_FAILURE(fabsim.start(dir, scenario()));
  const double after_export = to_unix_seconds(SystemClock().now());
  // When the scenario's time 0 was, said before the export (the benches time faults by it).
  const std::string t0_line = "fabsim scenario time 0 is Unix time ";
  const auto t0_at = fabsim.output().find(t0_line);
  ASSERT_NE(t0_at, std::string::npos) << fabsim.output();
  const double t0 = std::stod(fabsim.output().substr(t0_at + t0_line.size()));
  EXPECT_GE(t0, before_start);
  EXPECT_LE(t0, after_export);
  const std::string& exported = fabsim.exported;
  testing::Process medicd(MEDIC_MEDICD_BIN, {"--topology", exported, "--db", tdb.url(), "--poll-interval", "0.2",
                                             "--http",
                                             "127.0.0.1:0", "--run-for", "240"});
  const std::string& sim = fabsim.sim;
  ASSERT_THAT(sim, ::testing::StartsWith("http://127.0.0.1:"));

  // Until both incidents have reached their outcome and fabsim has played every flap.
  const std::string last_up = std::string("link ") + kRefused + " up";
  const bool settled = testing::eventually(
      [&] {
        return try_scalar(tdb, "SELECT string_agg(state, ',' ORDER BY state) FROM incidents") ==
                   "blocked,repair_requested" &&
               count_of(fabsim.output(), last_up) == kFlaps;
      },
      90s);
  ASSERT_TRUE(settled) << "medicd:\n" << medicd.output() << "\nfabsim:\n" << fabsim.output();

  // A few more polls after the last flap, so a late duplicate would have shown up.
  std::smatch m;
  const std::string medicd_log = medicd.output();
  ASSERT_TRUE(std::regex_search(medicd_log, m, std::regex("medicd http on ([0-9.]+:[0-9]+)"))) << medicd_log;
  const std::string api = "http://" + m[1].str();
  const auto cycles = metric(http, api, "medic_cycles_total");
  ASSERT_TRUE(cycles);
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto c = metric(http, api, "medic_cycles_total");
        return c && *c >= *cycles + 3;
      },
      30s));
  EXPECT_EQ(metric(http, api, "medic_incidents_opened_total"), 2);
  EXPECT_EQ(metric(http, api, "medic_drains_succeeded_total"), 1);
  EXPECT_EQ(metric(http, api, "medic_drains_refused_total"), 1);
  EXPECT_EQ(metric(http, api, "medic_drains_failed_total"), 0);
  EXPECT_EQ(metric(http, api, "medic_db_errors_total"), 0);
  // Every cycle says where its time went: each stage once a cycle (one cycle may be under way).
  {
    auto r = http.get(api + "/metrics");
    ASSERT_TRUE(r.ok() && r->status == 200);
    const auto whole = testing::metric_value(r->body, "medic_poll_cycle_seconds_count");
    ASSERT_TRUE(whole) << r->body;
    EXPECT_GE(*whole, *cycles + 2);
    for (const char* stage : {"scrape", "judge", "record"}) {
      const auto n = testing::metric_value(r->body, std::string("medic_poll_stage_seconds_count{stage=\"") + stage + "\"}");
      ASSERT_TRUE(n) << stage << "\n" << r->body;
      EXPECT_GE(*n, *whole - 1) << stage;
      EXPECT_LE(*n, *whole + 1) << stage;
      // And the last finished cycle's own (every stage takes some time).
      const auto last =
          testing::metric_value(r->body, std::string("medic_last_cycle_stage_seconds{stage=\"") + stage + "\"}");
      ASSERT_TRUE(last) << stage << "\n" << r->body;
      EXPECT_GT(*last, 0) << stage;
    }
  }
  // Snapshots are stored off the poll loop, in order: once none waits, every one counted is
  // in the database, and the drained link's "before drain" came before its "after drain".
  ASSERT_TRUE(testing::eventually([&] { return metric(http, api, "medic_snapshots_queued") == 0; }, 30s));
  EXPECT_EQ(metric(http, api, "medic_snapshots_unstored_total"), 0);
  EXPECT_EQ(metric(http, api, "medic_snapshots_total"), std::stoi(tdb.scalar("SELECT count(*) FROM snapshots")));
  EXPECT_EQ(tdb.scalar("SELECT string_agg(s.reason, ',' ORDER BY s.id) FROM snapshots s JOIN incidents i "
                       "ON i.id = s.incident_id WHERE i.state = 'repair_requested' AND s.scope = 'action'"),
            "before drain,after drain (succeeded)");

  ASSERT_TRUE(medicd.signal(SIGTERM));
  const auto status = medicd.wait(30s);
  ASSERT_TRUE(status) << medicd.output();
  EXPECT_EQ(*status, 0) << medicd.output();
  EXPECT_THAT(medicd.output(), HasSubstr("2 incidents opened, 1 drained, 1 refused, 0 failed"));

  // The database.
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents"), "2");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents WHERE class = 'link_flap'"), "2");
  const std::string drained_where = std::string("link = '") + kDrained + "'";
  const std::string refused_where = std::string("link = '") + kRefused + "'";
  EXPECT_EQ(tdb.scalar("SELECT state FROM incidents WHERE " + drained_where), "repair_requested");
  EXPECT_EQ(tdb.scalar("SELECT mitigated_at >= detected_at AND detected_at >= started_at AND "
                       "repair_requested_at >= mitigated_at FROM incidents WHERE " + drained_where),
            "t");
  EXPECT_EQ(tdb.scalar("SELECT coalesce(blocked_reason, '') FROM incidents WHERE " + drained_where), "");
  EXPECT_EQ(tdb.scalar("SELECT state FROM incidents WHERE " + refused_where), "blocked");
  EXPECT_EQ(tdb.scalar("SELECT blocked_reason FROM incidents WHERE " + refused_where), kReason);
  EXPECT_EQ(tdb.scalar("SELECT mitigated_at IS NULL AND detected_at >= started_at FROM incidents WHERE " +
                       refused_where),
            "t");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM findings f JOIN incidents i ON i.id = f.incident_id "
                       "WHERE f.link <> i.link OR f.kind <> 'link_flap'"),
            "0");
  EXPECT_NE(tdb.scalar("SELECT count(*) FROM findings WHERE " + drained_where), "0");

  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM actions"), "2");
  EXPECT_EQ(tdb.scalar("SELECT a.kind || ' ' || a.state || ' ' || (a.intent_at <= a.result_at) || ' ' || "
                       "(a.incident_id = i.id) FROM actions a JOIN incidents i ON i.link = a.link WHERE a." +
                       drained_where),
            "drain succeeded true true");
  // Both ends drained, both read back, then the traffic check.
  EXPECT_EQ(tdb.scalar("SELECT jsonb_array_length(steps) FROM actions WHERE " + drained_where), "5");
  EXPECT_THAT(tdb.scalar("SELECT steps->>4 FROM actions WHERE " + drained_where),
              ::testing::StartsWith("verify traffic: "));
  EXPECT_EQ(tdb.scalar("SELECT kind || ' ' || state || ' ' || reason FROM actions WHERE " + refused_where),
            std::string("drain refused ") + kReason);
  EXPECT_EQ(tdb.scalar(std::string("SELECT drain_state FROM links WHERE name = '") + kDrained + "'"), "drained");
  EXPECT_EQ(tdb.scalar(std::string("SELECT drain_state FROM links WHERE name = '") + kRefused + "'"), "undrained");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM links WHERE drain_state <> 'undrained'"), "1");

  // fabsim: the drained link is out of forwarding at both ends, the refused one carries traffic.
  const auto links = get_json(http, sim + "/admin/links");
  ASSERT_TRUE(links);
  std::map<std::string, json> by_name;
  for (const auto& l : *links) by_name[l["name"]] = l;
  ASSERT_EQ(by_name.size(), 80u);
  EXPECT_EQ(by_name[kDrained]["carries_traffic"], false);
  EXPECT_EQ(by_name[kDrained]["a_drained"], true);
  EXPECT_EQ(by_name[kDrained]["b_drained"], true);
  EXPECT_EQ(by_name[kRefused]["carries_traffic"], true);
  EXPECT_EQ(by_name[kRefused]["a_drained"], false);
  EXPECT_EQ(by_name[kRefused]["b_drained"], false);
  EXPECT_EQ(by_name[kDown]["up"], false);
  size_t drained_anywhere = 0;
  for (const auto& [name, l] : by_name) drained_anywhere += l["a_drained"].get<bool>() || l["b_drained"].get<bool>();
  EXPECT_EQ(drained_anywhere, 1u);

  // The command line over the same database.
  const auto [inc_status, incidents] = testing::run_command(MEDIC_CLI_BIN, {"incidents", "--db", tdb.url()});
  EXPECT_EQ(inc_status, 0) << incidents;
  EXPECT_THAT(incidents, HasSubstr(kDrained));
  EXPECT_THAT(incidents, HasSubstr(kRefused));
  EXPECT_THAT(incidents, HasSubstr("repair_requested"));
  EXPECT_THAT(incidents, HasSubstr(std::string("drain refused: ") + kReason));
  const auto [slo_status, report] = testing::run_command(MEDIC_CLI_BIN, {"slo", "report", "--window", "1h", "--db", tdb.url()});
  EXPECT_EQ(slo_status, 0) << report;
  EXPECT_THAT(report, HasSubstr(", 2 incidents read"));
  const auto [json_status, report_json] =
      testing::run_command(MEDIC_CLI_BIN, {"slo", "report", "--window", "1h", "--format", "json", "--db", tdb.url()});
  ASSERT_EQ(json_status, 0) << report_json;
  std::map<std::string, json> flap;
  const json rep = json::parse(report_json);
  for (const auto& l : rep["slos"]) {
    if (l["class"].get<std::string>() == "link_flap") flap[l["stage"].get<std::string>()] = l;
  }
  ASSERT_EQ(flap.size(), 4u) << report_json;
  // Both detected within seconds of the first transition (target 60s); one mitigated at
  // once, the other blocked and still inside its 120s budget.
  EXPECT_EQ(flap["detect"]["met"], 2);
  EXPECT_EQ(flap["mitigate"]["met"], 1);
  EXPECT_EQ(flap["mitigate"]["pending"], 1);
  const auto [show_status, show] = testing::run_command(
      MEDIC_CLI_BIN,
      {"incidents", "show", tdb.scalar("SELECT id FROM incidents WHERE " + refused_where), "--db", tdb.url()});
  EXPECT_EQ(show_status, 0) << show;
  EXPECT_THAT(show, HasSubstr(std::string(": refused (") + kReason + ")"));

  // A restart picks up the drained link and both open incidents from the database and
  // opens nothing new for them.
  const auto [restart_status, restart] = testing::run_command(
      MEDIC_MEDICD_BIN, {"--topology", exported, "--db", tdb.url(), "--poll-interval", "0.2",
                         "--run-for", "1.5"},
      60s);
  EXPECT_EQ(restart_status, 0) << restart;
  EXPECT_THAT(restart, HasSubstr("1 drained, 2 open incidents"));
  EXPECT_THAT(restart, HasSubstr("0 incidents opened, 0 drained, 0 refused, 0 failed"));
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents"), "2");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM actions"), "2");
}

TEST(E2E, BadInputsFailWithExactMessages) {
  testing::TempDir dir;
  testing::TestDatabase tdb;
  const auto [gen_status, topology] = testing::run_command(MEDIC_CLI_BIN, {"fabric", "gen", "demo"});
  ASSERT_EQ(gen_status, 0) << topology;
  const std::string good = dir.file("demo.json");
  testing::write_file(good, topology);

  // A topology with a wrong value: medicd names the file and the JSON path, exits 2 and
  // touches no database.
  json bad = json::parse(topology);
  bad["links"][5]["speed_gbps"] = -400;
  const std::string bad_path = dir.file("bad.json");
  testing::write_file(bad_path, bad.dump(1));
  const auto [bad_status, bad_out] =
      testing::run_command(MEDIC_MEDICD_BIN, {"--topology", bad_path, "--db", tdb.url()}, 60s);
  EXPECT_EQ(bad_status, 2) << bad_out;
  EXPECT_THAT(bad_out, HasSubstr(bad_path + ": $.links[5].speed_gbps: speed must be a positive number"));
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM pg_tables WHERE tablename = 'incidents'"), "0");

  // Not JSON at all.
  const std::string cut = dir.file("cut.json");
  testing::write_file(cut, topology.substr(0, 300));
  const auto [cut_status, cut_out] = testing::run_command(MEDIC_MEDICD_BIN, {"--topology", cut, "--db", tdb.url()}, 60s);
  EXPECT_EQ(cut_status, 2) << cut_out;
  EXPECT_THAT(cut_out, HasSubstr(cut + ": line "));
  EXPECT_THAT(cut_out, HasSubstr("invalid JSON"));

  // A scenario naming a link the fabric does not have.
  const std::string scen = dir.file("scenario.json");
  testing::write_file(scen, R"({"faults": [{"kind": "down", "link": "rtsw0003:eth6", "at_s": 0},
                                           {"kind": "flap", "link": "rtsw0001:eth99", "at_s": 1, "count": 2}]})");
  const auto [sc_status, sc_out] = testing::run_command(
      MEDIC_FABSIM_BIN, {"--topology", good, "--scenario", scen, "--listen", "127.0.0.1:0"}, 60s);
  EXPECT_EQ(sc_status, 2) << sc_out;
  EXPECT_THAT(sc_out, HasSubstr(scen + ": $.faults[1].link: unknown link \"rtsw0001:eth99\""));
  EXPECT_THAT(sc_out, Not(HasSubstr("fabsim listening")));

  // A database nobody answers: medicd fails at start-up, says so, and keeps the password out.
  const std::string port = std::to_string(closed_port());
  const auto [db_status, db_out] = testing::run_command(
      MEDIC_MEDICD_BIN, {"--topology", good, "--db", "postgresql://medic:s3cret-pw@127.0.0.1:" + port + "/medic"}, 60s);
  EXPECT_NE(db_status, 0) << db_out;
  EXPECT_NE(db_status, -1000) << "medicd hung instead of failing";
  EXPECT_THAT(db_out, HasSubstr("cannot connect to PostgreSQL at postgresql://medic:***@127.0.0.1:" + port + "/medic"));
  EXPECT_THAT(db_out, Not(HasSubstr("s3cret-pw")));
}

}  // namespace
}  // namespace medic
