// `medic snmp walk` against a real net-snmp agent on loopback: what an operator sees before
// adding a switch, as text and JSON, checked against a topology; wrong keys, no credentials
// and bad targets get exact errors and exit statuses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "tests/cli/cli_fixture.h"
#include "tests/support/testing.h"
#include "tests/telemetry/snmpd_fixture.h"

namespace medic::cli {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using telemetry::LoopbackSnmpd;
using testing::TempDir;
using testing::write_file;

class CliSnmpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { agent_ = new LoopbackSnmpd(); }
  static void TearDownTestSuite() {
    delete agent_;
    agent_ = nullptr;
  }
  void SetUp() override {
    v2_ = dir_.file("v2.json");
    write_file(v2_, std::string(R"({"version": "2c", "community": ")") + telemetry::kCommunity + "\"}");
    v3_ = dir_.file("v3.json");
    write_file(v3_, std::string(R"({"version": "3", "user": ")") + telemetry::kV3User + R"(", "auth_password": ")" +
                        telemetry::kAuthPass + R"(", "priv_password": ")" + telemetry::kPrivPass + "\"}");
  }
  // Switch sw polled at the agent, its peer at a port nothing answers on; sw:lo--peer:eth1.
  std::string topology(const std::string& name, const std::string& more_links = "") {
    const std::string path = dir_.file(name);
    write_file(path, R"({"version": 1,
    "switches": [{"name": "sw", "role": "rtsw", "zone": 1, "telemetry": ")" + agent_->url() + R"(",
                  "driver": {"kind": "dryrun"}},
                 {"name": "peer", "role": "ctsw", "zone": 1, "telemetry": "snmp://127.0.0.1:9",
                  "driver": {"kind": "dryrun"}}],
    "links": [{"a": "sw:lo", "b": "peer:eth1", "speed_gbps": 400})" + more_links + "]}");
    return path;
  }
  static LoopbackSnmpd* agent_;
  TempDir dir_;
  std::string v2_, v3_;
  ScopedUnset c_{"MEDIC_SNMP_COMMUNITY"}, u_{"MEDIC_SNMP_USER"};
};
LoopbackSnmpd* CliSnmpTest::agent_ = nullptr;

TEST_F(CliSnmpTest, WalkPrintsEachInterfaceWithItsCanonicalCounters) {
  const Ran r = medic({"snmp", "walk", agent_->address(), "--credentials", v2_});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto l = lines_of(r.out);
  ASSERT_GE(l.size(), 3u);
  EXPECT_THAT(l[0], HasSubstr(agent_->url() + " (SNMPv2c (community set)): "));
  EXPECT_THAT(r.out, HasSubstr("\nlo (ifIndex 1), 10 Mb/s\n"));
  EXPECT_THAT(r.out, HasSubstr(" oper_up=1 carrier_changes=0 "));
  EXPECT_THAT(r.out, HasSubstr(" rx_bytes="));
}

TEST_F(CliSnmpTest, WalkOverV3AsJson) {
  const Ran r = medic({"snmp", "walk", agent_->url(), "--credentials", v3_, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["target"], agent_->url());
  EXPECT_EQ(j["credentials"], std::string("SNMPv3 user \"") + telemetry::kV3User + "\", authPriv SHA/AES");
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr(telemetry::kAuthPass)));
  bool lo = false;
  for (const auto& i : j["interfaces"]) {
    if (i["ifName"] != "lo") continue;
    lo = true;
    EXPECT_EQ(i["ifIndex"], 1);
    EXPECT_EQ(i["counters"]["oper_up"], 1.0);
    EXPECT_TRUE(i["counters"].contains("rx_packets"));
    EXPECT_TRUE(i["counters"].contains("rx_bytes"));
  }
  EXPECT_TRUE(lo) << r.out;
  EXPECT_GE(j["requests"].get<int>(), 1);
}

TEST_F(CliSnmpTest, WalkChecksTheAgentAgainstASwitchOfTheTopology) {
  const std::string topo = topology("t.json", R"(, {"a": "sw:Ethernet9", "b": "peer:eth2", "speed_gbps": 400})");
  const Ran r = medic({"snmp", "walk", agent_->address(), "--credentials", v2_, "--topology", topo, "--device", "sw"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\nlo (ifIndex 1), 10 Mb/s\n  oper_up=1"));
  EXPECT_THAT(r.out, HasSubstr(": not a port of sw in the topology\n"));
  EXPECT_THAT(r.out, HasSubstr("1 port(s) of sw the agent does not name: Ethernet9\n"));
  const Ran j = medic({"snmp", "walk", agent_->address(), "--credentials", v2_, "--topology", topo, "--device", "sw", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(json::parse(j.out)["missing_ports"], json::array({"Ethernet9"}));

  const Ran none = medic({"snmp", "walk", agent_->address(), "--credentials", v2_, "--topology", topo, "--device", "nope"});
  EXPECT_EQ(none.code, 2);
  EXPECT_EQ(none.err, "medic: " + topo + ": no device \"nope\"\n");
  const Ran half = medic({"snmp", "walk", agent_->address(), "--credentials", v2_, "--device", "sw"});
  EXPECT_EQ(half.code, 2);
  EXPECT_EQ(half.err, "medic: --topology and --device go together (the switch this agent is)\n");
}

TEST_F(CliSnmpTest, AWrongPasswordIsRefusedInItsOwnProcess) {
  const std::string bad = dir_.file("bad.json");
  write_file(bad, std::string(R"({"version": "3", "user": ")") + telemetry::kV3User +
                      R"(", "auth_password": "not-the-password", "priv_password": ")" + telemetry::kPrivPass + "\"}");
  const auto [code, out] =
      testing::run_command(MEDIC_CLI_BIN, {"snmp", "walk", agent_->address(), "--credentials", bad, "--timeout", "2"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_EQ(out, "medic: " + agent_->url() +
                     ": the agent refused the request (SNMPv3 report: wrong user, key or security level)\n");
}

TEST_F(CliSnmpTest, BadTargetsCredentialsAndSilenceGetExactErrors) {
  const Ran no_creds = medic({"snmp", "walk", agent_->address()});
  EXPECT_EQ(no_creds.code, 2);
  EXPECT_EQ(no_creds.err,
            "medic: no SNMP credentials in the environment (MEDIC_SNMP_COMMUNITY or MEDIC_SNMP_USER) (or --credentials "
            "FILE)\n");
  const Ran bad_target = medic({"snmp", "walk", "snmp://h:0", "--credentials", v2_});
  EXPECT_EQ(bad_target.code, 2);
  EXPECT_EQ(bad_target.err, "medic: SNMP address \"snmp://h:0\": port \"0\" is not a number from 1 to 65535\n");
  const std::string broken = dir_.file("broken.json");
  write_file(broken, R"({"version": "2c"})");
  const Ran bad_file = medic({"snmp", "walk", agent_->address(), "--credentials", broken});
  EXPECT_EQ(bad_file.code, 2);
  EXPECT_EQ(bad_file.err, "medic: " + broken + ": $.community: SNMPv2c needs a community\n");
  const std::string silent = "127.0.0.1:" + std::to_string(telemetry::free_udp_port());
  const Ran quiet = medic({"snmp", "walk", silent, "--credentials", v2_, "--timeout", "1"});
  EXPECT_EQ(quiet.code, 1);
  EXPECT_EQ(quiet.err, "medic: snmp://" + silent + ": no answer after 2 tries of 333 ms (0 values read)\n");
  const Ran env = [&] {
    ::setenv("MEDIC_SNMP_COMMUNITY", telemetry::kCommunity, 1);
    Ran x = medic({"snmp", "walk", agent_->address()});
    ::unsetenv("MEDIC_SNMP_COMMUNITY");
    return x;
  }();
  EXPECT_EQ(env.code, 0) << env.err;
  const Ran usage = medic({"snmp", "walk"});
  EXPECT_EQ(usage.code, 2);
}

// `medic record` walks the switches at snmp:// as medicd does and writes DEVICE.snmp files
// that `medic replay` reads with the counter map's snmp rules; without credentials it says so.
TEST_F(CliSnmpTest, RecordWalksSnmpSwitchesAndReplayReadsThem) {
  const std::string topo = topology("rec.json");
  const std::string out = dir_.file("scrapes");
  const Ran r = medic({"record", "--topology", topo, "--out", out, "--polls", "2", "--interval", "0.2", "--timeout", "1",
                       "--snmp-credentials", v2_});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "recorded 2 polls of 2 devices into " + out + " (2 answers, 2 failures)\n");
  size_t files = 0;
  for (const auto& poll : std::filesystem::directory_iterator(out)) {
    for (const auto& f : std::filesystem::directory_iterator(poll.path())) {
      ++files;
      EXPECT_EQ(f.path().filename(), "sw.snmp");
      EXPECT_THAT(testing::read_file(f.path().string()), HasSubstr("ifOperStatus{ifName=\"lo\",ifIndex=\"1\"} 1\n"));
    }
  }
  EXPECT_EQ(files, 2u);
  const Ran rep = medic({"replay", "--topology", topo, "--scrapes", out});
  EXPECT_EQ(rep.code, 0) << rep.err;
  EXPECT_THAT(rep.err, HasSubstr("replayed 2 polls of 1 devices: 2 port samples, 0 findings"));  // sw:lo, mapped

  const Ran none = medic({"record", "--topology", topo, "--out", dir_.file("none"), "--polls", "1"});
  EXPECT_EQ(none.code, 2);
  EXPECT_EQ(none.err,
            "medic: 2 switch(es) are polled over SNMP: no SNMP credentials in the environment (MEDIC_SNMP_COMMUNITY or "
            "MEDIC_SNMP_USER) (or --snmp-credentials FILE)\n");
}

}  // namespace
}  // namespace medic::cli
