// End to end with active probing: the real fabsim answers STAMP for every link address of
// the demo fabric on loopback, the real medicd probes it (1 s rounds, 20 probes per session)
// and polls its counters every 0.5 s. Two faults on two ToRs:
//   probe_loss 10% into rtsw0002:eth6  -> probes lose, counters stay clean: a gray_failure
//                                         incident, critical, drained;
//   3% corrupt frames into rtsw0006:eth7 -> counters see the FCS errors and probes the loss:
//                                         a corruption incident the probes corroborate.
// Nothing else may be named: probing a healthy fabric must not make incidents.
// Also: --no-probe opens no probe sockets and makes no probe incidents, and a bad
// --probe-rate stops medicd at start-up with the reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "common/http_client.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/support/testing.h"

namespace medic {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kGrayEnd = "rtsw0002:eth6";
constexpr const char* kGray = "rtsw0002:eth6--ctsw002:eth2";
constexpr const char* kCorruptEnd = "rtsw0006:eth7";
// 3%: the counters find it at their first delta and drain it within a second, before a
// probe round has closed, so the probes corroborate it afterwards, from the link-pinned
// session's 20 probes a round over the drained link. At 1% that is 1.2 lost probes expected
// in localization's 6-round window, at the edge of what it resolves: corroboration then
// took from 2 s to past the test's 150 s (CI at a562867 and 1 of 15 runs here with the
// two cores busy). At 3%, 3.6 are expected.
constexpr double kCorruptRate = 3e-2;

std::string scenario(bool with_corruption) {
  json faults = json::array();
  faults.push_back({{"kind", "probe_loss"}, {"end", kGrayEnd}, {"at_s", 0}, {"rate", 0.1}});
  if (with_corruption) faults.push_back({{"kind", "corrupt"}, {"end", kCorruptEnd}, {"at_s", 0}, {"rate", kCorruptRate}});
  return json{{"comment", "a gray failure and a corrupting link"}, {"faults", faults}}.dump(1);
}

// UDP sockets the process holds: its socket descriptors matched against its network
// namespace's UDP tables by inode.
size_t udp_sockets(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::set<std::string> inodes;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(proc + "/fd", ec)) {
    const std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    if (!ec && target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  size_t n = 0;
  for (const char* table : {"/net/udp", "/net/udp6"}) {
    std::ifstream in(proc + table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string f;
      for (int i = 0; i < 10 && fields >> f; ++i) {
      }
      n += inodes.count(f);
    }
  }
  return n;
}

// What the prober counted, for a failure's message.
std::string probe_metrics(HttpClient& http, const std::string& api) {
  std::string out;
  for (const char* name : {"medic_probe_rounds_total", "medic_probes_sent_total", "medic_probes_received_total",
                           "medic_probes_late_total", "medic_probe_outage_rounds_total", "medic_probe_verdicts_total",
                           "medic_probe_measurement_verdicts_total"}) {
    const auto v = metric(http, api, name);
    out += std::string(" ") + name + "=" + (v ? std::to_string(*v) : "?");
  }
  return out;
}

class E2EProbe : public ::testing::Test {
 protected:
  void SetUp() override {
    curl_global_setup();
    ASSERT_NO_FATAL_FAILURE(write_demo_topology(dir));
  }

  testing::TempDir dir;
  testing::TestDatabase tdb;
  HttpClient http;
  const std::string exported = dir.file("exported.json");
};

TEST_F(E2EProbe, AGrayFailureIsDrainedAndCorruptionIsCorroborated) {
  // fabsim with the scenario, exporting the topology (with its STAMP port) to `exported`.
  DemoFabsim fabsim;
  ASSERT_NO_FATAL_FAILURE(fabsim.start(dir, scenario(true)));
  ASSERT_TRUE(std::filesystem::exists(exported));
  // Every device's reflector is fabsim's STAMP port.
  const json doc = json::parse(testing::read_file(exported));
  std::smatch sm;
  const std::string sim_log = fabsim.output();
  ASSERT_TRUE(std::regex_search(sim_log, sm, std::regex("STAMP reflectors on udp port ([0-9]+)"))) << sim_log;
  const int stamp_port = std::stoi(sm[1]);
  EXPECT_GT(stamp_port, 0);
  for (const auto& s : doc["switches"]) EXPECT_EQ(s["probe"]["reflector_port"], stamp_port) << s["name"];
  for (const auto& h : doc["hosts"]) EXPECT_EQ(h["probe"]["reflector_port"], stamp_port) << h["name"];

  testing::Process medicd(MEDIC_MEDICD_BIN,
                          {"--topology", exported, "--db", tdb.url(), "--poll-interval", "0.5", "--probe-round", "1",
                           "--probe-per-round", "20", "--http", "127.0.0.1:0", "--run-for", "240"});
  const std::string api = api_of(medicd);
  ASSERT_FALSE(api.empty()) << medicd.output();
  const std::string gray_where = std::string("link = '") + kGray + "'";
  const std::string corrupt_where = std::string("link LIKE '") + kCorruptEnd + "--%'";

  // Until the gray failure is drained and the corruption incident has been corroborated.
  auto row = [&](const std::string& where) {
    return try_scalar(tdb, "SELECT class || ' ' || severity || ' ' || state FROM incidents WHERE " + where);
  };
  auto corroborated = [&] {
    return try_scalar(tdb,
                      "SELECT count(*) FROM incident_events e JOIN incidents i ON i.id = e.incident_id WHERE "
                      "e.state = 'corroborated' AND i." +
                          corrupt_where);
  };
  const bool settled = testing::eventually(
      [&] { return row(gray_where) == "gray_failure critical repair_requested" && corroborated() == "1"; }, 150s);
  ASSERT_TRUE(settled) << "gray: " << row(gray_where) << "\ncorrupt: " << row(corrupt_where)
                       << " corroborated: " << corroborated() << "\nincidents: "
                       << try_scalar(tdb, "SELECT string_agg(class || ':' || severity || ':' || state || ':' || "
                                          "coalesce(link, device), ', ') FROM incidents")
                       << "\nfindings: "
                       << try_scalar(tdb, "SELECT string_agg(kind || ':' || link || ':' || summary, E'\\n') FROM findings")
                       << "\nmetrics: " << probe_metrics(http, api) << "\nmedicd:\n"
                       << medicd.output() << "\nfabsim:\n"
                       << fabsim.output();

  // A while longer: more rounds over the whole window, so a false positive would show.
  const auto rounds = metric(http, api, "medic_probe_rounds_total");
  const auto sent = metric(http, api, "medic_probes_sent_total");
  ASSERT_TRUE(rounds && sent) << medicd.output();
  EXPECT_GT(*rounds, 0);
  EXPECT_GT(*sent, 0);
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto r = metric(http, api, "medic_probe_rounds_total");
        return r && *r >= *rounds + 8;
      },
      60s))
      << medicd.output();
  EXPECT_GT(*metric(http, api, "medic_probes_sent_total"), *sent);
  const auto received = metric(http, api, "medic_probes_received_total");
  ASSERT_TRUE(received);
  EXPECT_GT(*received, 0);
  EXPECT_LT(*received, *metric(http, api, "medic_probes_sent_total"));  // the gray failure loses some
  EXPECT_GT(*metric(http, api, "medic_probe_verdicts_total"), 0);
  EXPECT_EQ(metric(http, api, "medic_db_errors_total"), 0);
  // The prober holds its UDP sockets (the --no-probe test counts none the same way).
  EXPECT_GT(udp_sockets(medicd.pid()), 0u);

  // Two incidents, no more.
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents"), "2")
      << testing::join_lines(tdb.column("SELECT i.class || ':' || i.severity || ':' || coalesce(i.link, i.device) || ': ' || "
                                        "f.summary FROM incidents i JOIN findings f ON f.incident_id = i.id ORDER BY f.id"));
  EXPECT_EQ(metric(http, api, "medic_incidents_opened_total"), 2);

  // The gray failure: probes only, critical, drained, with its action.
  EXPECT_EQ(row(gray_where), "gray_failure critical repair_requested");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM findings WHERE " + gray_where + " AND kind NOT LIKE 'probe_%'"), "0");
  EXPECT_NE(tdb.scalar("SELECT count(*) FROM findings WHERE " + gray_where + " AND kind = 'probe_loss'"), "0");
  EXPECT_EQ(tdb.scalar("SELECT kind || ' ' || state FROM actions WHERE " + gray_where), "drain succeeded");
  EXPECT_EQ(tdb.scalar("SELECT a.incident_id = i.id FROM actions a JOIN incidents i ON i.link = a.link WHERE a." +
                       gray_where),
            "t");
  EXPECT_EQ(tdb.scalar(std::string("SELECT drain_state FROM links WHERE name = '") + kGray + "'"), "drained");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incident_events e JOIN incidents i ON i.id = e.incident_id WHERE "
                       "e.state = 'corroborated' AND i." + gray_where),
            "0");
  EXPECT_EQ(tdb.scalar("SELECT detected_at >= started_at FROM incidents WHERE " + gray_where), "t");

  // The corrupting link: a corruption incident, both signals among its findings, corroborated once.
  EXPECT_THAT(row(corrupt_where), ::testing::StartsWith("corruption critical "));
  EXPECT_NE(tdb.scalar("SELECT count(*) FROM findings WHERE " + corrupt_where + " AND kind = 'corruption'"), "0");
  EXPECT_NE(tdb.scalar("SELECT count(*) FROM findings WHERE " + corrupt_where + " AND kind = 'probe_loss'"), "0");
  EXPECT_EQ(corroborated(), "1");
  EXPECT_EQ(tdb.scalar("SELECT e.note FROM incident_events e JOIN incidents i ON i.id = e.incident_id WHERE "
                       "e.state = 'corroborated' AND i." + corrupt_where),
            "counters and active probes agree");
  EXPECT_EQ(tdb.scalar("SELECT e.at >= i.started_at FROM incident_events e JOIN incidents i ON i.id = e.incident_id "
                       "WHERE e.state = 'corroborated' AND i." + corrupt_where),
            "t");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents WHERE summary = ''"), "0");
  // Every finding belongs to one of the two links.
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM findings f JOIN incidents i ON i.id = f.incident_id WHERE f.link <> i.link"),
            "0");

  ASSERT_TRUE(medicd.signal(SIGTERM));
  const auto status = medicd.wait(30s);
  ASSERT_TRUE(status) << medicd.output();
  EXPECT_EQ(*status, 0) << medicd.output();
  EXPECT_THAT(medicd.output(), HasSubstr("prober: 80 link-pinned and "));
}

TEST_F(E2EProbe, NoProbeOpensNoProbeSocketsAndMakesNoProbeIncidents) {
  // fabsim with the scenario, exporting the topology (with its STAMP port) to `exported`.
  DemoFabsim fabsim;
  ASSERT_NO_FATAL_FAILURE(fabsim.start(dir, scenario(false)));
  ASSERT_TRUE(std::filesystem::exists(exported));
  testing::Process medicd(MEDIC_MEDICD_BIN, {"--topology", exported, "--db", tdb.url(), "--poll-interval", "0.2",
                                             "--probe-round", "1", "--probe-per-round", "20", "--no-probe", "--http",
                                             "127.0.0.1:0", "--run-for", "240"});
  const std::string api = api_of(medicd);
  ASSERT_FALSE(api.empty()) << medicd.output();
  // Long enough for several probe rounds and a probe incident, had it been probing.
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto c = metric(http, api, "medic_cycles_total");
        return c && *c >= 40;
      },
      90s))
      << medicd.output();
  EXPECT_EQ(udp_sockets(medicd.pid()), 0u);
  EXPECT_EQ(metric(http, api, "medic_probe_rounds_total"), 0);
  EXPECT_EQ(metric(http, api, "medic_probes_sent_total"), 0);
  EXPECT_EQ(metric(http, api, "medic_probe_verdicts_total"), 0);
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents"), "0");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM findings WHERE kind LIKE 'probe_%'"), "0");
  ASSERT_TRUE(medicd.signal(SIGTERM));
  const auto status = medicd.wait(30s);
  ASSERT_TRUE(status) << medicd.output();
  EXPECT_EQ(*status, 0) << medicd.output();
  EXPECT_THAT(medicd.output(), Not(HasSubstr("prober:")));
}

TEST_F(E2EProbe, RepliesPastTheTimeoutAreCountedLate) {
  // One end holds what it receives 300 ms; medicd gives a probe up after 100 ms.
  DemoFabsim fabsim;
  const json doc = {{"comment", "a slow end"},
                    {"faults", json::array({{{"kind", "probe_delay"}, {"end", kGrayEnd}, {"at_s", 0}, {"ms", 300}}})}};
  ASSERT_NO_FATAL_FAILURE(fabsim.start(dir, doc.dump()));
  testing::Process medicd(MEDIC_MEDICD_BIN, {"--topology", exported, "--db", tdb.url(), "--poll-interval", "0.5",
                                             "--probe-round", "1", "--probe-per-round", "20", "--probe-timeout", "0.1",
                                             "--http", "127.0.0.1:0", "--run-for", "240"});
  const std::string api = api_of(medicd);
  ASSERT_FALSE(api.empty()) << medicd.output();
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto late = metric(http, api, "medic_probes_late_total");
        return late && *late >= 20;
      },
      60s))
      << probe_metrics(http, api) << "\n" << medicd.output();
  // Late replies are replies to probes sent (never more), and those probes were lost.
  const auto late = metric(http, api, "medic_probes_late_total");
  const auto packets = metric(http, api, "medic_probe_packets_sent_total");
  ASSERT_TRUE(late && packets);
  EXPECT_LT(*late, *packets);
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto sent = metric(http, api, "medic_probes_sent_total");
        const auto received = metric(http, api, "medic_probes_received_total");
        return sent && received && *received < *sent;
      },
      30s))
      << probe_metrics(http, api);
  ASSERT_TRUE(medicd.signal(SIGTERM));
  const auto status = medicd.wait(30s);
  ASSERT_TRUE(status) << medicd.output();
  EXPECT_EQ(*status, 0) << medicd.output();
}

TEST_F(E2EProbe, BadProbeSettingsStopMedicdAtStartUp) {
  const std::string topo = dir.file("demo.json");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--probe-rate", "0"}, "medicd: --probe-rate must be within (0, 10000000] probes per second"},
      {{"--probe-rate", "-5"}, "medicd: --probe-rate must be within (0, 10000000] probes per second"},
      {{"--probe-rate", "2e7"}, "medicd: --probe-rate must be within (0, 10000000] probes per second"},
      {{"--probe-round", "0.01"}, "medicd: --probe-round must be within [0.1, 3600] seconds"},
      {{"--probe-per-round", "0"}, "medicd: --probe-per-round must be within [1, 10000]"},
      {{"--probe-timeout", "61"}, "medicd: --probe-timeout must be within [0.01, 60] seconds"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> argv = {"--topology", topo, "--db", tdb.url()};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto [status, out] = testing::run_command(MEDIC_MEDICD_BIN, argv, 60s);
    EXPECT_EQ(status, 2) << args[0] << " " << args[1] << ": " << out;
    EXPECT_THAT(out, HasSubstr(message)) << args[0] << " " << args[1];
  }
  // Refused before anything was written.
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM pg_tables WHERE tablename = 'incidents'"), "0");
}

}  // namespace
}  // namespace medic
