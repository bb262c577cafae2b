// End to end with the real binaries: fabsim plays one fault of every family the passive
// detectors know, each on its own ToR or switch of the demo fabric, and medicd has to
// classify each one and act only where the policy says so:
//   corrupt 1e-4 into rtsw0001:eth5          -> critical corruption incident, drained
//   6 dB more loss into rtsw0002:eth6        -> optics incident, suspect the fiber or that receiver, drained
//   rtsw0003:eth7's laser 6 dB weaker        -> optics incident, suspect that end, drained
//   host0004:nic0 pausing 5000 frames/s      -> slow_receiver incident on host0004, never drained
//   rtsw0005 silent (HTTP 503)               -> telemetry_stale incident for rtsw0005
//   ctsw007 answering garbage                -> payloads rejected, telemetry_stale incident for ctsw007
//   rtsw0007 rebooting (counters from zero)  -> nothing
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "common/http_client.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/support/testing.h"

namespace medic {
namespace {

using ::testing::AnyOf;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kCorrupt = "rtsw0001:eth5--ctsw001:eth1";
constexpr const char* kLossy = "rtsw0002:eth6--ctsw002:eth2";
constexpr const char* kWeakTx = "rtsw0003:eth7--ctsw003:eth3";
constexpr const char* kRebootLine = "reboot on rtsw0007 starts";
// Late enough that medicd has polled rtsw0007's counters before they start again from zero.
constexpr double kRebootAt = 20;

std::string scenario() {
  return json{{"comment", "one fault of each family, each on its own device"},
              {"faults",
               {{{"kind", "corrupt"}, {"end", "rtsw0001:eth5"}, {"at_s", 4}, {"rate", 1e-4}},
                {{"kind", "optics_loss"}, {"end", "rtsw0002:eth6"}, {"at_s", 4}, {"extra_loss_db", 6}},
                {{"kind", "weak_tx"}, {"end", "rtsw0003:eth7"}, {"at_s", 4}, {"tx_drop_db", 6}},
                {{"kind", "pause"}, {"end", "host0004:nic0"}, {"at_s", 4}, {"frames_per_s", 5000}},
                {{"kind", "silent"}, {"device", "rtsw0005"}, {"at_s", 4}},
                {{"kind", "garbage"}, {"device", "ctsw007"}, {"at_s", 4}},
                {{"kind", "reboot"}, {"device", "rtsw0007"}, {"at_s", kRebootAt}}}}}
      .dump(1);
}

// The shipped thresholds with shorter waits: pause frames count after 2 s, silence after 3 s.
std::string detectors() {
  json d = json::parse(testing::read_file(testing::source_dir() + "/data/detectors.json"));
  d["pfc"]["sustain_s"] = 2;
  d["stale"]["after_s"] = 3;
  return d.dump(1);
}

// One row of the incidents table, as "class state severity link device".
std::string incident_where(const testing::TestDatabase& tdb, const std::string& where) {
  return try_scalar(tdb,
                    "SELECT class || ' ' || state || ' ' || severity || ' ' || coalesce(link, '-') || ' ' || "
                    "coalesce(device, '-') FROM incidents WHERE " + where);
}

TEST(E2EFaults, EachFaultFamilyEndsWhereThePolicySays) {
  curl_global_setup();
  testing::TempDir dir;
  testing::TestDatabase tdb;
  HttpClient http;

  ASSERT_NO_FATAL_FAILURE(write_demo_topology(dir));
  testing::write_file(dir.file("detectors.json"), detectors());

  DemoFabsim fabsim;
  ASSERT_NO_FATAL_FAILURE(fabsim.start(dir, scenario(), {"--seed", "1"}));
  const std::string& exported = fabsim.exported;
  testing::Process medicd(MEDIC_MEDICD_BIN, {"--topology", exported, "--db", tdb.url(), "--detectors",
                                             dir.file("detectors.json"), "--poll-interval", "0.2", "--http",
                                             "127.0.0.1:0", "--run-for", "240"});
  const json exported_doc = fabsim.exported_topology();
  const std::string& sim = fabsim.sim;
  ASSERT_THAT(sim, ::testing::StartsWith("http://127.0.0.1:"));
  // Hosts are scraped too: the slow receiver is seen from its own NIC.
  bool host_telemetry = false;
  for (const auto& h : exported_doc["hosts"]) host_telemetry |= h.value("telemetry", "").rfind(sim + "/h/", 0) == 0;
  ASSERT_TRUE(host_telemetry) << exported_doc["hosts"].dump();

  const std::string api = api_of(medicd);
  ASSERT_FALSE(api.empty()) << medicd.output();
  // The reboot only means something if medicd saw rtsw0007's counters before it.
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto c = metric(http, api, "medic_cycles_total");
        return c && *c >= 1;
      },
      60s))
      << medicd.output();
  ASSERT_EQ(fabsim.output().find(kRebootLine), std::string::npos)
      << "medicd started polling only after rtsw0007 rebooted (at " << kRebootAt << " s); fabsim:\n"
      << fabsim.output();

  // Until every incident has reached its outcome, the reboot has happened, and medicd has
  // polled for a few seconds after it.
  auto settled_incidents = [&] {
    return try_scalar(tdb, "SELECT string_agg(class || ':' || state, ',' ORDER BY class, state) FROM incidents") ==
           "corruption:repair_requested,optics:repair_requested,optics:repair_requested,slow_receiver:triaged,"
           "telemetry_stale:triaged,telemetry_stale:triaged";
  };
  ASSERT_TRUE(testing::eventually(settled_incidents, 120s))
      << try_scalar(tdb, "SELECT string_agg(class || ':' || state || ':' || coalesce(link, device), ',') FROM incidents")
      << "\nmedicd:\n"
      << medicd.output() << "\nfabsim:\n"
      << fabsim.output();
  ASSERT_TRUE(testing::eventually([&] { return fabsim.output().find(kRebootLine) != std::string::npos; }, 60s))
      << fabsim.output();
  const auto cycles_at_reboot = metric(http, api, "medic_cycles_total");
  ASSERT_TRUE(cycles_at_reboot);
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto c = metric(http, api, "medic_cycles_total");
        return c && *c >= *cycles_at_reboot + 20;
      },
      60s));

  // medicd's own account.
  EXPECT_EQ(metric(http, api, "medic_incidents_opened_total"), 6);
  EXPECT_EQ(metric(http, api, "medic_drains_succeeded_total"), 3);
  EXPECT_EQ(metric(http, api, "medic_drains_refused_total"), 0);
  EXPECT_EQ(metric(http, api, "medic_drains_failed_total"), 0);
  EXPECT_EQ(metric(http, api, "medic_db_errors_total"), 0);
  const auto rejected = metric(http, api, "medic_payloads_rejected_total");
  ASSERT_TRUE(rejected);
  EXPECT_GE(*rejected, 10) << "ctsw007 answers garbage on every poll";
  const auto failed = metric(http, api, "medic_scrapes_failed_total");
  ASSERT_TRUE(failed);
  EXPECT_GE(*failed, 1) << "rtsw0005 answers 503";
  const auto before_stop = metric(http, api, "medic_payloads_rejected_total");
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto r = metric(http, api, "medic_payloads_rejected_total");
        return r && *r > *before_stop;
      },
      30s))
      << "garbage is rejected on every poll, not only the first";

  ASSERT_TRUE(medicd.signal(SIGTERM));
  const auto status = medicd.wait(30s);
  ASSERT_TRUE(status) << medicd.output();
  EXPECT_EQ(*status, 0) << medicd.output();
  EXPECT_THAT(medicd.output(), HasSubstr("6 incidents opened, 3 drained, 0 refused, 0 failed"));

  // Corruption: critical, drained, the drain journalled.
  const std::string corrupt_where = std::string("link = '") + kCorrupt + "'";
  EXPECT_EQ(incident_where(tdb, corrupt_where),
            std::string("corruption repair_requested critical ") + kCorrupt + " rtsw0001");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM findings WHERE kind = 'corruption' AND " + corrupt_where +
                       " AND device = 'rtsw0001' AND port = 'rtsw0001:eth5'"),
            tdb.scalar("SELECT count(*) FROM findings WHERE " + corrupt_where))
      << "every finding on the link is the receiving end's corruption";
  EXPECT_EQ(tdb.scalar("SELECT kind || ' ' || state FROM actions WHERE " + corrupt_where), "drain succeeded");

  // Extra loss into rtsw0002:eth6: the far transmitter is fine and the reverse direction
  // is clean, so the suspect is that receiver or the fiber into it.
  const std::string lossy_where = std::string("link = '") + kLossy + "'";
  EXPECT_EQ(incident_where(tdb, lossy_where), std::string("optics repair_requested critical ") + kLossy + " rtsw0002");
  const std::string lossy_suspect = tdb.scalar("SELECT coalesce(suspect, '') FROM incidents WHERE " + lossy_where);
  EXPECT_THAT(lossy_suspect,
              MatchesRegex(".*(the fiber or a connector between ctsw002:eth2 and rtsw0002:eth6|"
                           "the transceiver in rtsw0002:eth6).*"));
  EXPECT_THAT(tdb.scalar("SELECT coalesce(suspect_port, '-') FROM incidents WHERE " + lossy_where),
              AnyOf(Eq("-"), Eq("rtsw0002:eth6")))
      << "the suspect port, if any, is the receiving end";
  EXPECT_NE(tdb.scalar("SELECT count(*) FROM findings WHERE kind = 'optics_loss' AND " + lossy_where), "0");
  EXPECT_EQ(tdb.scalar("SELECT kind || ' ' || state FROM actions WHERE " + lossy_where), "drain succeeded");

  // A weak laser at rtsw0003:eth7: that end is the suspect.
  const std::string weak_where = std::string("link = '") + kWeakTx + "'";
  EXPECT_EQ(incident_where(tdb, weak_where), std::string("optics repair_requested critical ") + kWeakTx + " rtsw0003");
  EXPECT_EQ(tdb.scalar("SELECT suspect_port FROM incidents WHERE " + weak_where), "rtsw0003:eth7");
  EXPECT_THAT(tdb.scalar("SELECT suspect FROM incidents WHERE " + weak_where), HasSubstr("rtsw0003:eth7"));
  EXPECT_NE(tdb.scalar("SELECT count(*) FROM findings WHERE kind = 'optics_tx_power' AND device = 'rtsw0003' AND "
                       "port = 'rtsw0003:eth7'"),
            "0");
  EXPECT_EQ(tdb.scalar("SELECT kind || ' ' || state FROM actions WHERE " + weak_where), "drain succeeded");

  // The slow receiver is the host's problem: one incident for host0004, no link, no action.
  EXPECT_EQ(incident_where(tdb, "class = 'slow_receiver'"), "slow_receiver triaged warning - host0004");
  const std::string slow_id = tdb.scalar("SELECT id FROM incidents WHERE class = 'slow_receiver'");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM actions WHERE incident_id = " + slow_id), "0");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM actions WHERE link LIKE 'host0004:%'"), "0");
  EXPECT_EQ(tdb.scalar("SELECT count(DISTINCT link) || ' ' || min(link) || ' ' || min(kind) || ' ' || max(kind) "
                       "FROM findings WHERE incident_id = " + slow_id),
            "1 host0004:nic0--rtsw0004:eth1 slow_receiver slow_receiver");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents WHERE class = 'pfc_storm'"), "0");

  // Silent and garbage-answering switches: stale telemetry, each saying why.
  EXPECT_EQ(incident_where(tdb, "device = 'rtsw0005'"), "telemetry_stale triaged warning - rtsw0005");
  EXPECT_THAT(tdb.scalar("SELECT summary FROM incidents WHERE device = 'rtsw0005'"), HasSubstr("HTTP 503"));
  EXPECT_EQ(incident_where(tdb, "device = 'ctsw007'"), "telemetry_stale triaged warning - ctsw007");
  EXPECT_THAT(tdb.scalar("SELECT summary FROM incidents WHERE device = 'ctsw007'"), HasSubstr("malformed answer"));

  // The reboot: nothing at all about rtsw0007, not even a noted finding.
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents WHERE device = 'rtsw0007' OR link LIKE '%rtsw0007:%'"), "0");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM findings WHERE device = 'rtsw0007' OR link LIKE '%rtsw0007:%'"), "0");

  // Nothing else: six incidents, three actions, three drained links.
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents"), "6");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM actions"), "3");
  EXPECT_EQ(tdb.column("SELECT name || ' ' || drain_state FROM links WHERE drain_state <> 'undrained' ORDER BY name"),
            (std::vector<std::string>{std::string(kCorrupt) + " drained", std::string(kLossy) + " drained",
                                      std::string(kWeakTx) + " drained"}));

  // fabsim agrees: exactly those three links are out of forwarding.
  auto r = http.get(sim + "/admin/links");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200u);
  std::vector<std::string> idle;
  for (const auto& l : json::parse(r->body)) {
    if (!l["carries_traffic"].get<bool>()) idle.push_back(l["name"]);
  }
  std::sort(idle.begin(), idle.end());
  EXPECT_EQ(idle, (std::vector<std::string>{kCorrupt, kLossy, kWeakTx}));
  // And rtsw0007's counters did start again from zero: its eth5 has sent less than the
  // far end (which did not reboot) has received over the same link.
  std::string far;
  for (const auto& l : exported_doc["links"]) {
    if (l["a"] == "rtsw0007:eth5") far = l["b"];
    if (l["b"] == "rtsw0007:eth5") far = l["a"];
  }
  ASSERT_THAT(far, ::testing::StartsWith("ctsw"));
  const std::string far_device = far.substr(0, far.find(':')), far_port = far.substr(far.find(':') + 1);
  auto counter = [&](const std::string& device, const std::string& family, const std::string& port) {
    auto res = http.get(sim + "/s/" + device + "/metrics");
    if (!res.ok() || res->status != 200) return -1.0;
    std::smatch pm;
    const std::regex re(family + "\\{device=\"" + port + "\"\\} ([0-9.e+]+)\n");
    return std::regex_search(res->body, pm, re) ? std::stod(pm[1]) : -1.0;
  };
  const double sent = counter("rtsw0007", "node_network_transmit_packets_total", "eth5");
  const double received = counter(far_device, "node_network_receive_packets_total", far_port);
  EXPECT_GT(sent, 0);
  EXPECT_LT(sent, received * 0.9) << far;
}

}  // namespace
}  // namespace medic
