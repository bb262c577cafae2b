// fabric-medic on a real fabric: network namespaces joined by veth links, the real
// prometheus-node-exporter in every switch and host, a real link flapped with `ip link set`.
// medicd runs inside the testbed's management namespace and must find the flap from
// node_exporter's carrier counters and open the incident, and nothing else.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "remediation/netns_driver.h"
#include "tests/support/testing.h"
#include "tests/testbed/testbed_fixture.h"

namespace medic {
namespace {

using namespace std::chrono_literals;

class Testbed : public TestbedFixture {
 protected:
  std::string mgmt_ns() { return ns("mgmt"); }
  // r1's next hops towards h2 (198.18.2.0/31), as "dev,dev".
  std::string r1_hops_to_h2() {
    const auto [code, out] = testing::run_command(
        ip_binary(), {"-n", ns("r1"), "-j", "-4", "route", "show", "table", "main", "exact", "198.18.2.0/31"}, 10s);
    if (code != 0) return "ip failed: " + out;
    const auto routes = remediation::netns::parse_routes(out, 4);
    if (!routes.ok() || routes->size() != 1) return "no single route: " + out;
    std::string devs;
    for (const auto& h : routes->front().nexthops) devs += (devs.empty() ? "" : ",") + h.dev;
    return devs;
  }
  // A dry-run medicd (no probing) in the management namespace on `topology`, with `more`
  // flags, once it leads and has polled a few times (the first poll of a port yields no
  // delta); nullptr, with the test failed, when it does not get there.
  std::unique_ptr<testing::Process> dry_run_medicd(const std::string& topology, const std::string& db,
                                                   const std::vector<std::string>& more, std::string& api) {
    std::vector<std::string> args = {"netns", "exec", mgmt_ns(), MEDIC_MEDICD_BIN, "--topology", topology,
                                     "--capacity", dir_.file("capacity.json"), "--db", db, "--poll-interval", "0.5",
                                     "--dry-run", "--no-probe", "--http", "127.0.0.1:0"};
    args.insert(args.end(), more.begin(), more.end());
    auto medicd = std::make_unique<testing::Process>(ip_binary(), args);
    const bool ready =
        testing::eventually([&] { return !(api = testing::http_base_from_log(medicd->output())).empty(); }, 60s) &&
        testing::eventually([&] { return leads_in_mgmt(api); }, 30s) && cycles_pass(api, 4, 30s);
    if (!ready) {
      ADD_FAILURE() << "medicd did not lead and poll:\n" << medicd->output();
      return nullptr;
    }
    return medicd;
  }
  // A copy of a shipped data file with some values changed.
  std::string data_file_with(const std::string& name, const std::function<void(nlohmann::json&)>& change) {
    auto doc = nlohmann::json::parse(testing::read_file(std::string(MEDIC_SOURCE_DIR) + "/data/" + name));
    change(doc);
    const std::string path = dir_.file("test-" + name);
    testing::write_file(path, doc.dump(1));
    return path;
  }
};

// The whole loop on real parts: medicd (no dry run) drains the flapping uplink through the
// netns driver (r1's ECMP route to h2 loses that next hop), an engineer marks it repaired,
// the validation soak passes and medicd puts the next hop back and closes the incident.
TEST_F(Testbed, MedicdDrainsAFlappingUplinkThroughTheNetnsDriverAndPutsItBackAfterRepair) {
  testing::TestDatabase tdb;
  const std::string db = tdb.socket_url();
  // Short damping and a short soak, so the test is not minutes long.
  const std::string detectors = data_file_with("detectors.json", [](auto& d) { d["flap"]["half_life_s"] = 4; });
  const std::string policy = data_file_with("remediation.json", [](auto& p) {
    p["validation"]["soak_s"] = 2;
    p["verify"]["window_s"] = 10;
  });
  ASSERT_EQ(r1_hops_to_h2(), "eth2,eth3");
  testing::Process medicd(ip_binary(), {"netns", "exec", mgmt_ns(), MEDIC_MEDICD_BIN, "--topology",
                                        dir_.file("topology.json"), "--capacity", dir_.file("capacity.json"),
                                        "--detectors", detectors, "--policy", policy, "--db", db, "--poll-interval",
                                        "0.5", "--no-probe", "--http", "127.0.0.1:0"});
  std::string api;
  ASSERT_TRUE(testing::eventually([&] { return !(api = testing::http_base_from_log(medicd.output())).empty(); }, 60s))
      << medicd.output();
  ASSERT_TRUE(testing::eventually([&] { return leads_in_mgmt(api); }, 30s)) << medicd.output();
  ASSERT_TRUE(cycles_pass(api, 4, 30s)) << medicd.output();  // baselines: the first poll of a port yields no delta
  const auto [code, out] =
      testing::run_command("/bin/bash", {MEDIC_TESTBED_SCRIPT, "flap", dir_.path(), "r1", "eth2", "4", "1.0", "0.3"}, 60s);
  ASSERT_EQ(code, 0) << out;

  const std::string where = "link = 'r1:eth2--c1:eth1'";
  ASSERT_TRUE(testing::eventually(
      [&] { return tdb.scalar("SELECT count(*) FROM incidents WHERE " + where + " AND state = 'repair_requested'") == "1"; },
      60s))
      << medicd.output();
  EXPECT_EQ(tdb.scalar("SELECT drain_state FROM links WHERE name = 'r1:eth2--c1:eth1'"), "drained");
  EXPECT_EQ(tdb.scalar("SELECT kind || ' ' || state FROM actions WHERE " + where), "drain succeeded");
  EXPECT_EQ(r1_hops_to_h2(), "eth3") << medicd.output();  // the kernel's route, not our record

  const std::string id = tdb.scalar("SELECT id FROM incidents WHERE " + where);
  const auto [rc, rout] = testing::run_command(MEDIC_CLI_BIN, {"incidents", "repaired", id, "--db", db, "--by", "test"}, 30s);
  ASSERT_EQ(rc, 0) << rout;
  ASSERT_TRUE(testing::eventually(
      [&] { return tdb.scalar("SELECT state FROM incidents WHERE " + where) == "closed"; }, 90s))
      << medicd.output();
  EXPECT_EQ(r1_hops_to_h2(), "eth2,eth3");
  EXPECT_EQ(tdb.scalar("SELECT string_agg(kind || ' ' || state, ', ' ORDER BY id) FROM actions WHERE " + where),
            "drain succeeded, undrain succeeded");
  EXPECT_EQ(tdb.scalar("SELECT drain_state FROM links WHERE name = 'r1:eth2--c1:eth1'"), "undrained");
  EXPECT_TRUE(medicd.signal(SIGTERM));
  EXPECT_TRUE(medicd.wait(20s).has_value());
}

TEST_F(Testbed, RealFlapFromNodeExporterOpensTheIncident) {
  testing::TestDatabase tdb;
  std::string api;
  const auto medicd_p = dry_run_medicd(dir_.file("topology.json"), tdb.socket_url(), {}, api);
  ASSERT_TRUE(medicd_p);
  testing::Process& medicd = *medicd_p;
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM links"), "6");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents"), "0") << medicd.output();

  // Four real flaps of r1's uplink to c1.
  const auto [code, out] =
      testing::run_command("/bin/bash", {MEDIC_TESTBED_SCRIPT, "flap", dir_.path(), "r1", "eth2", "4", "1.0", "0.3"}, 60s);
  ASSERT_EQ(code, 0) << out;

  ASSERT_TRUE(testing::eventually(
      [&] {
        return tdb.scalar("SELECT count(*) FROM incidents WHERE class = 'link_flap' AND link = 'r1:eth2--c1:eth1'") ==
               "1";
      },
      30s))
      << medicd.output();
  EXPECT_EQ(tdb.scalar("SELECT severity FROM incidents WHERE link = 'r1:eth2--c1:eth1'"), "critical");
  // The finding came from the real carrier counter of at least one end.
  EXPECT_GE(std::stoi(tdb.scalar("SELECT count(*) FROM findings f JOIN incidents i ON f.incident_id = i.id "
                                 "WHERE i.link = 'r1:eth2--c1:eth1' AND f.kind = 'link_flap'")),
            1);
  // Capacity allows it (r1 keeps its other uplink, floor 50%): drained (dry run here).
  // The drain is verified a poll or more after the incident opens.
  EXPECT_TRUE(testing::eventually(
      [&] { return tdb.scalar("SELECT state FROM incidents WHERE link = 'r1:eth2--c1:eth1'") == "repair_requested"; }, 30s))
      << tdb.scalar("SELECT state FROM incidents WHERE link = 'r1:eth2--c1:eth1'") << "\n" << medicd.output();
  // Nothing else in the fabric was wrong, and every exporter answered.
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents"), "1") << medicd.output();
  EXPECT_TRUE(medicd.signal(SIGTERM));
  EXPECT_TRUE(medicd.wait(20s).has_value());
}

// The same flap with the switches polled over SNMPv3 (authPriv) from the real net-snmp agent
// in each switch namespace instead of node_exporter: the flap is counted from ifOperStatus
// and ifLastChange between polls, the incident opens on that link alone, and it is drained
// (dry run) as with node_exporter's carrier counters.
TEST_F(Testbed, RealFlapReadOverSnmpOpensTheIncident) {
  testing::TestDatabase tdb;
  std::string api;
  const auto medicd_p = dry_run_medicd(dir_.file("topology-snmp.json"), tdb.socket_url(),
                                       {"--snmp-credentials", dir_.file("snmp-credentials.json")}, api);
  ASSERT_TRUE(medicd_p);
  testing::Process& medicd = *medicd_p;
  EXPECT_NE(medicd.output().find("SNMP: switches at snmp:// are polled with SNMPv3 user \"medic\", authPriv SHA/AES"),
            std::string::npos)
      << medicd.output();
  EXPECT_EQ(medicd.output().find("testbed-auth-pass"), std::string::npos);  // a secret is never logged
  // Every switch answered over SNMP (and the hosts over HTTP): nothing failed, nothing opened.
  EXPECT_EQ(metric_in_mgmt(api, "medic_scrapes_failed_total").value_or(-1), 0) << medicd.output();
  EXPECT_GE(metric_in_mgmt(api, "medic_snmp_requests_total").value_or(0), 4 * 4);  // 4 switches, 4 polls at least
  EXPECT_EQ(metric_in_mgmt(api, "medic_snmp_agent_restarts_total").value_or(-1), 0);
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents"), "0") << medicd.output();

  // Real flaps of r1's uplink to c1, each state lasting 3 s (the testbed sets the agents'
  // ifTable cache to 0 s; a flap shorter than a poll is seen through ifLastChange).
  const auto [code, out] =
      testing::run_command("/bin/bash", {MEDIC_TESTBED_SCRIPT, "flap", dir_.path(), "r1", "eth2", "6", "6.0", "3.0"}, 90s);
  ASSERT_EQ(code, 0) << out;
  ASSERT_TRUE(testing::eventually(
      [&] {
        return tdb.scalar("SELECT count(*) FROM incidents WHERE class = 'link_flap' AND link = 'r1:eth2--c1:eth1'") ==
               "1";
      },
      40s))
      << medicd.output();
  EXPECT_TRUE(testing::eventually(
      [&] { return tdb.scalar("SELECT state FROM incidents WHERE link = 'r1:eth2--c1:eth1'") == "repair_requested"; }, 30s))
      << tdb.scalar("SELECT state FROM incidents WHERE link = 'r1:eth2--c1:eth1'") << "\n" << medicd.output();
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents"), "1") << medicd.output();
  EXPECT_TRUE(medicd.signal(SIGTERM));
  EXPECT_TRUE(medicd.wait(20s).has_value());
}

// The agents' own notifications: each switch's snmpd checks ifOperStatus every second and
// sends linkDown/linkUp (SNMPv3 traps) to medicd. A real flap is seen from them before any
// poll could (the poll interval is 15 s and no poll runs while it happens): the incident
// opens as a warning on unconfirmed link events, the next poll confirms the flaps, and only
// then is the link drained, through the netns driver.
TEST_F(Testbed, FlapSeenFromSnmpTrapsIsConfirmedByThePollThenDrained) {
  testing::TestDatabase tdb;
  const std::string db = tdb.socket_url();
  testing::Process medicd(ip_binary(),
                          {"netns", "exec", mgmt_ns(), MEDIC_MEDICD_BIN, "--topology", dir_.file("topology-snmp.json"),
                           "--capacity", dir_.file("capacity.json"), "--db", db, "--poll-interval", "15", "--no-probe",
                           "--http", "127.0.0.1:0", "--snmp-credentials", dir_.file("snmp-credentials.json"),
                           "--snmp-trap-listen", "198.19.0.254:1162"});
  std::string api;
  ASSERT_TRUE(testing::eventually([&] { return !(api = testing::http_base_from_log(medicd.output())).empty(); }, 60s))
      << medicd.output();
  EXPECT_NE(medicd.output().find("SNMP notifications on udp 198.19.0.254:1162"), std::string::npos) << medicd.output();
  ASSERT_TRUE(testing::eventually([&] { return leads_in_mgmt(api); }, 30s)) << medicd.output();
  // Right after a poll (the one that gives the counters their baseline), so the next is 15 s off.
  ASSERT_TRUE(cycles_pass(api, 1, 40s)) << medicd.output();
  const double cycles = metric_in_mgmt(api, "medic_cycles_total").value_or(-1);
  ASSERT_EQ(r1_hops_to_h2(), "eth2,eth3");

  const auto flap_began = std::chrono::system_clock::now();
  const auto [code, out] =
      testing::run_command("/bin/bash", {MEDIC_TESTBED_SCRIPT, "flap", dir_.path(), "r1", "eth2", "3", "2.5", "1.2"}, 60s);
  ASSERT_EQ(code, 0) << out;
  const std::string where = "link = 'r1:eth2--c1:eth1' AND class = 'link_flap'";
  ASSERT_TRUE(testing::eventually([&] { return tdb.scalar("SELECT count(*) FROM incidents WHERE " + where) == "1"; }, 10s))
      << medicd.output();
  // Detected from the notifications alone: no poll has run since the flaps began.
  EXPECT_EQ(metric_in_mgmt(api, "medic_cycles_total").value_or(-1), cycles) << medicd.output();
  EXPECT_EQ(tdb.scalar("SELECT severity FROM incidents WHERE " + where), "warning");
  EXPECT_EQ(tdb.scalar("SELECT drain_state FROM links WHERE name = 'r1:eth2--c1:eth1'"), "undrained");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM actions"), "0");
  // (from each end: both agents sent their linkDowns)
  EXPECT_NE(tdb.scalar("SELECT count(*) FROM findings f JOIN incidents i ON f.incident_id = i.id WHERE i." + where +
                       " AND f.severity = 'warning' AND f.evidence ? 'unconfirmed_link_events'"),
            "0");
  EXPECT_GE(metric_in_mgmt(api, "medic_snmp_notifications_total{result=\"link_down\"}").value_or(0), 3);
  EXPECT_EQ(metric_in_mgmt(api, "medic_snmp_notifications_total{result=\"bad_credentials\"}").value_or(-1), 0);
  const double detected_after =
      std::stod(tdb.scalar("SELECT extract(epoch FROM detected_at) FROM incidents WHERE " + where)) -
      std::chrono::duration<double>(flap_began.time_since_epoch()).count();
  std::printf("flap began -> incident detected from SNMP notifications: %.2f s (3rd flap at 5.0 s)\n", detected_after);

  // The next poll confirms them: critical, drained through the netns driver.
  ASSERT_TRUE(testing::eventually(
      [&] { return tdb.scalar("SELECT state FROM incidents WHERE " + where) == "repair_requested"; }, 40s))
      << tdb.scalar("SELECT state FROM incidents WHERE " + where) << "\n" << medicd.output();
  EXPECT_GT(metric_in_mgmt(api, "medic_cycles_total").value_or(-1), cycles);
  EXPECT_EQ(tdb.scalar("SELECT severity FROM incidents WHERE " + where), "critical");
  EXPECT_NE(tdb.scalar("SELECT count(*) FROM findings f JOIN incidents i ON f.incident_id = i.id WHERE i." + where +
                       " AND f.severity = 'critical' AND f.evidence ? 'confirmed_link_events'"),
            "0");
  EXPECT_EQ(tdb.scalar("SELECT drain_state FROM links WHERE name = 'r1:eth2--c1:eth1'"), "drained");
  EXPECT_EQ(r1_hops_to_h2(), "eth3") << medicd.output();
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents"), "1") << medicd.output();
  EXPECT_TRUE(medicd.signal(SIGTERM));
  EXPECT_TRUE(medicd.wait(20s).has_value());
}

// Notifications that lie: linkDowns with r1's own SNMPv3 keys, sent from r1's address while
// its uplink is healthy (a mistaken agent, or someone holding its keys), plus a trap from
// an address no switch is polled at and a v2c trap where medicd speaks v3. The lying ones
// count at once, no poll confirms them, they are taken back after flap.trap_confirm_s, and
// no drain is ever planned (medicd runs with --dry-run: an action would still be recorded);
// the others are counted and dropped.
TEST_F(Testbed, LyingSnmpTrapsNeverDrainAHealthyLink) {
  testing::TestDatabase tdb;
  const std::string detectors = data_file_with("detectors.json", [](auto& d) { d["flap"]["trap_confirm_s"] = 4; });
  std::string api;
  const auto medicd_p =
      dry_run_medicd(dir_.file("topology-snmp.json"), tdb.socket_url(),
                     {"--snmp-credentials", dir_.file("snmp-credentials.json"), "--snmp-trap-listen", "198.19.0.254:1162",
                      "--detectors", detectors},
                     api);
  ASSERT_TRUE(medicd_p);
  testing::Process& medicd = *medicd_p;
  const std::vector<std::string> tool_env = {"MIBS=", "MIBDIRS=/nonexistent", "SNMP_PERSISTENT_DIR=" + dir_.file("snmptrap")};
  // r1's engine ID (the agent is authoritative for its traps) and eth2's ifIndex.
  const auto [ecode, eout] = testing::run_command(
      ip_binary(), {"netns", "exec", mgmt_ns(), "snmpget", "-v2c", "-c", "medic-testbed", "-On", "198.19.0.11:161",
                    "1.3.6.1.6.3.10.2.1.1.0"},
      10s, tool_env);
  ASSERT_EQ(ecode, 0) << eout;
  std::string engine = "0x";
  for (const char c : eout.substr(eout.find("Hex-STRING: ") + 12)) {
    if (std::isxdigit(static_cast<unsigned char>(c))) engine.push_back(c);
  }
  const auto [icode, iout] = testing::run_command(ip_binary(), {"-n", ns("r1"), "-j", "link", "show", "eth2"}, 10s);
  ASSERT_EQ(icode, 0) << iout;
  const std::string index = std::to_string(nlohmann::json::parse(iout).at(0).at("ifindex").get<int>());
  auto trap = [&](const std::string& from, const std::vector<std::string>& security, const char* which) {
    std::vector<std::string> args = {"netns", "exec", from, "snmptrap"};
    args.insert(args.end(), security.begin(), security.end());
    for (const std::string& a : {std::string("198.19.0.254:1162"), std::string(""), std::string(which),
                                "1.3.6.1.2.1.2.2.1.1." + index, std::string("i"), index}) {
      args.push_back(a);
    }
    const auto [code, out] = testing::run_command(ip_binary(), args, 10s, tool_env);
    EXPECT_EQ(code, 0) << out;
  };
  const std::vector<std::string> v3 = {"-v3", "-e", engine, "-u", "medic", "-l", "authPriv", "-a", "SHA", "-A",
                                       "testbed-auth-pass", "-x", "AES", "-X", "testbed-priv-pass"};
  for (int i = 0; i < 4; ++i) {
    trap(ns("r1"), v3, "1.3.6.1.6.3.1.1.5.3");
    trap(ns("r1"), v3, "1.3.6.1.6.3.1.1.5.4");
  }
  trap(mgmt_ns(), {"-v2c", "-c", "medic-testbed"}, "1.3.6.1.6.3.1.1.5.3");  // from no switch's address
  trap(ns("r1"), {"-v2c", "-c", "medic-testbed"}, "1.3.6.1.6.3.1.1.5.3");   // v2c, medicd speaks v3
  ASSERT_TRUE(testing::eventually(
      [&] { return metric_in_mgmt(api, "medic_snmp_notifications_total{result=\"link_down\"}").value_or(0) >= 4; }, 10s))
      << medicd.output();
  EXPECT_TRUE(testing::eventually(
      [&] {
        return metric_in_mgmt(api, "medic_snmp_notifications_total{result=\"unknown_agent\"}").value_or(0) == 1 &&
               metric_in_mgmt(api, "medic_snmp_notifications_total{result=\"bad_credentials\"}").value_or(0) == 1;
      },
      10s))
      << medicd.output();
  // They counted: the incident may open, as a warning, and nothing is drained.
  EXPECT_NE(tdb.scalar("SELECT count(*) FROM findings WHERE link = 'r1:eth2--c1:eth1' AND evidence ? "
                       "'unconfirmed_link_events'"),
            "0");
  // Well past trap_confirm_s, polls that saw no flap: taken back, never critical.
  ASSERT_TRUE(cycles_pass(api, 20, 40s)) << medicd.output();
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents WHERE severity = 'critical'"), "0") << medicd.output();
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM actions"), "0") << medicd.output();
  EXPECT_EQ(tdb.scalar("SELECT drain_state FROM links WHERE name = 'r1:eth2--c1:eth1'"), "undrained");
  EXPECT_TRUE(medicd.signal(SIGTERM));
  EXPECT_TRUE(medicd.wait(20s).has_value());
}

// What `medic snmp walk` reads from a switch's agent is what the kernel counts: the
// interface counters of r1's uplinks over SNMPv3 equal `ip -s -j link`'s within one of the
// agent's cache periods (asked again until they do, for at most 20 s).
TEST_F(Testbed, CountersReadOverSnmpMatchTheKernels) {
  auto kernel = [&](const std::string& ifname) {
    const auto [code, out] = testing::run_command(ip_binary(), {"-n", ns("r1"), "-s", "-j", "link", "show", ifname}, 10s);
    EXPECT_EQ(code, 0) << out;
    const auto j = nlohmann::json::parse(out);
    const auto& st = j.at(0).at("stats64");
    return std::array<double, 4>{st.at("rx").at("bytes").get<double>(), st.at("tx").at("bytes").get<double>(),
                                 st.at("rx").at("packets").get<double>(), st.at("tx").at("packets").get<double>()};
  };
  std::string last;
  const bool match = testing::eventually(
      [&] {
        const auto [code, out] = testing::run_command(
            ip_binary(), {"netns", "exec", mgmt_ns(), MEDIC_CLI_BIN, "snmp", "walk", "snmp://198.19.0.11:161",
                          "--credentials", dir_.file("snmp-credentials.json"), "--topology", dir_.file("topology-snmp.json"),
                          "--device", "r1", "--json"},
            20s);
        last = out;
        if (code != 0) return false;
        const auto j = nlohmann::json::parse(out);
        if (!j.at("missing_ports").empty()) return false;
        for (const std::string ifname : {"eth2", "eth3"}) {
          const auto k = kernel(ifname);
          bool found = false;
          for (const auto& i : j.at("interfaces")) {
            if (i.at("ifName") != ifname) continue;
            found = true;
            const auto& c = i.at("counters");
            if (c.at("rx_bytes") != k[0] || c.at("tx_bytes") != k[1] || c.at("rx_packets") != k[2] ||
                c.at("tx_packets") != k[3]) {
              last += "\nkernel " + ifname + ": " + std::to_string(k[0]) + " " + std::to_string(k[1]) + " " +
                      std::to_string(k[2]) + " " + std::to_string(k[3]);
              return false;
            }
          }
          if (!found) return false;
        }
        return true;
      },
      20s);
  EXPECT_TRUE(match) << last;
}

// A gray failure: an nftables rule in c1 drops a fifth of what arrives on c1:eth1 (from r1).
// No interface counter shows it; the STAMP probes medicd sends from inside the namespaces
// (to the medic-reflector in every node) lose packets, localization names r1:eth2--c1:eth1,
// and a gray_failure incident opens for exactly that link.
TEST_F(Testbed, RealLossFromNftablesIsLocalizedToItsLink) {
  testing::TestDatabase tdb;
  const std::string db = tdb.socket_url();
  testing::Process medicd(ip_binary(), {"netns", "exec", mgmt_ns(), MEDIC_MEDICD_BIN, "--topology",
                                        dir_.file("topology.json"), "--capacity", dir_.file("capacity.json"), "--db",
                                        db, "--poll-interval", "0.5", "--dry-run", "--probe-round", "1", "--probe-per-round", "30", "--probe-timeout", "1",
                                        "--probe-paths-unknown", "--http", "127.0.0.1:0"});
  std::string api;
  ASSERT_TRUE(testing::eventually([&] { return !(api = testing::http_base_from_log(medicd.output())).empty(); }, 60s))
      << medicd.output();
  ASSERT_TRUE(testing::eventually([&] { return leads_in_mgmt(api); }, 60s)) << medicd.output();
  EXPECT_NE(medicd.output().find("6 link-pinned"), std::string::npos) << medicd.output();
  // A few clean rounds first: probing a healthy fabric opens nothing.
  const auto rounds = metric_in_mgmt(api, "medic_probe_rounds_total");
  ASSERT_TRUE(rounds) << medicd.output();
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto r = metric_in_mgmt(api, "medic_probe_rounds_total");
        return r && *r >= *rounds + 6;
      },
      60s))
      << medicd.output();
  // (As below: on a machine busy with other tests a late reflector may be named, a
  // measurement incident that is never about a link.)
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents WHERE class NOT IN ('reflector_fault', 'prober_fault') "
                       "OR link IS NOT NULL"),
            "0")
      << medicd.output();

  const auto [code, out] = testing::run_command("/bin/bash", {MEDIC_TESTBED_SCRIPT, "lossy", dir_.path(), "c1", "eth1", "20"}, 30s);
  ASSERT_EQ(code, 0) << out;
  ASSERT_TRUE(testing::eventually(
      [&] { return tdb.scalar("SELECT count(*) FROM incidents WHERE link = 'r1:eth2--c1:eth1'") == "1"; }, 60s))
      << medicd.output();
  EXPECT_EQ(tdb.scalar("SELECT class FROM incidents WHERE link = 'r1:eth2--c1:eth1'"), "gray_failure");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM findings f JOIN incidents i ON f.incident_id = i.id "
                       "WHERE i.link = 'r1:eth2--c1:eth1' AND f.kind = 'probe_loss' AND "
                       "(f.evidence->>'link_pinned')::float = 1"),
            "1");
  // The counters of that link stayed clean and no other link (or device) was blamed. On a
  // machine busy with other tests a reflector's own process may answer late, and
  // localization may name that reflector: a measurement finding, never about a link and
  // never drained, allowed here.
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM findings WHERE kind NOT IN ('probe_loss', 'probe_latency', "
                       "'reflector_loss', 'prober_loss')"),
            "0")
      << testing::join_lines(tdb.column("SELECT kind || ': ' || summary FROM findings"));
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM findings WHERE kind IN ('reflector_loss', 'prober_loss') AND link IS NOT NULL"),
            "0");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM findings WHERE kind = 'probe_loss' AND link <> 'r1:eth2--c1:eth1'"), "0")
      << testing::join_lines(tdb.column("SELECT kind || ': ' || summary FROM findings"));
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents WHERE class NOT IN ('reflector_fault', 'prober_fault')"), "1")
      << medicd.output();
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM actions WHERE state <> 'refused' AND link <> 'r1:eth2--c1:eth1'"), "0");
  testing::run_command("/bin/bash", {MEDIC_TESTBED_SCRIPT, "clean", dir_.path(), "c1"}, 30s);
  EXPECT_TRUE(medicd.signal(SIGTERM));
  EXPECT_TRUE(medicd.wait(20s).has_value());
}

}  // namespace
}  // namespace medic
