// The notification receiver against the real net-snmp tools: snmptrap and snmpinform send
// v2c and v3 notifications to it on 127.0.0.1, and a real snmpd is polled first where
// SNMPv3 needs the agent's engine learnt.
#include "telemetry/snmp_traps.h"

#include <gtest/gtest.h>
#include <gmock/gmock.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <sstream>

#include "telemetry/snmp_collector.h"
#include "tests/telemetry/snmpd_fixture.h"

namespace medic::telemetry {
namespace {

using ::testing::HasSubstr;

constexpr fabric::DeviceId kSwitch = 3;
constexpr const char* kLinkDown = "1.3.6.1.6.3.1.1.5.3";
constexpr const char* kLinkUp = "1.3.6.1.6.3.1.1.5.4";

class SnmpTrapsTest : public ::testing::Test {
 protected:
  std::unique_ptr<SnmpTrapReceiver> open(const SnmpCredentials& c, const std::string& agent = "127.0.0.1") {
    auto r = SnmpTrapReceiver::open("127.0.0.1:0", c, {{agent, kSwitch}});
    EXPECT_TRUE(r.ok()) << r.error();
    return r.ok() ? std::move(*r) : nullptr;
  }
  std::string target(const SnmpTrapReceiver& r) const { return "127.0.0.1:" + std::to_string(r.port()); }
  // Arguments after the target: uptime (the tool's own), the notification and ifIndex N's
  // variables as snmpd sends them.
  static std::vector<std::string> link_vars(const char* which, int index) {
    const std::string i = "." + std::to_string(index);
    return {"", which, "1.3.6.1.2.1.2.2.1.1" + i, "i", std::to_string(index), "1.3.6.1.2.1.2.2.1.7" + i, "i", "1",
            "1.3.6.1.2.1.2.2.1.8" + i, "i", "2"};
  }
  void send(const std::string& tool, std::vector<std::string> args) {
    const auto [code, out] = medic::testing::run_command("/usr/bin/" + tool, args, std::chrono::seconds(10),
                                                         snmp_tool_env(dir_.file("persist")));
    ASSERT_EQ(code, 0) << tool << ": " << out;
  }
  // Reads until something was counted (bounded), as the poll loop would on readable.
  std::vector<SnmpLinkNotification> receive(SnmpTrapReceiver& r) {
    std::vector<SnmpLinkNotification> got;
    const auto total = [&] {
      const auto& c = r.counters();
      return c.link_down + c.link_up + c.other + c.unknown_agent + c.bad_credentials + c.malformed;
    };
    const size_t before = total();
    medic::testing::eventually(
        [&] {
          for (auto& n : r.read(clock_)) got.push_back(std::move(n));
          return total() > before;
        },
        std::chrono::seconds(5));
    return got;
  }
  SystemClock clock_;
  medic::testing::TempDir dir_;
};

TEST_F(SnmpTrapsTest, AV2cLinkDownAndLinkUpFromAKnownAgentAreHandedOver) {
  auto r = open(v2c());
  ASSERT_TRUE(r);
  auto args = std::vector<std::string>{"-v2c", "-c", kCommunity, target(*r)};
  auto down = args;
  for (auto& a : link_vars(kLinkDown, 17)) down.push_back(a);
  send("snmptrap", down);
  auto got = receive(*r);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].device, kSwitch);
  EXPECT_FALSE(got[0].up);
  EXPECT_EQ(got[0].if_index, 17u);
  EXPECT_NE(got[0].time, Time{});
  auto up = args;
  for (auto& a : link_vars(kLinkUp, 17)) up.push_back(a);
  send("snmptrap", up);
  got = receive(*r);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].up);
  EXPECT_EQ(r->counters().link_down, 1u);
  EXPECT_EQ(r->counters().link_up, 1u);
  // Another notification (coldStart) is counted and not handed over.
  send("snmptrap", {"-v2c", "-c", kCommunity, target(*r), "", "1.3.6.1.6.3.1.1.5.1"});
  EXPECT_TRUE(receive(*r).empty());
  EXPECT_EQ(r->counters().other, 1u);
}

TEST_F(SnmpTrapsTest, AWrongCommunityAnUnknownAgentAndGarbageAreCountedAndDropped) {
  auto r = open(v2c());
  ASSERT_TRUE(r);
  auto wrong = std::vector<std::string>{"-v2c", "-c", "not-medics", target(*r)};
  for (auto& a : link_vars(kLinkDown, 1)) wrong.push_back(a);
  send("snmptrap", wrong);
  EXPECT_TRUE(receive(*r).empty());
  EXPECT_EQ(r->counters().bad_credentials, 1u);

  auto elsewhere = open(v2c(), "127.0.0.2");  // the only switch polled at another address
  ASSERT_TRUE(elsewhere);
  auto args = std::vector<std::string>{"-v2c", "-c", kCommunity, target(*elsewhere)};
  for (auto& a : link_vars(kLinkDown, 1)) args.push_back(a);
  send("snmptrap", args);
  EXPECT_TRUE(receive(*elsewhere).empty());
  EXPECT_EQ(elsewhere->counters().unknown_agent, 1u);

  // Bytes that are no SNMP message, and a linkDown naming no interface.
  const int s = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(r->port());
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const char junk[] = "\x30\x82\xff\xff not BER at all";
  ASSERT_GT(::sendto(s, junk, sizeof junk, 0, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  ::close(s);
  EXPECT_TRUE(receive(*r).empty());
  EXPECT_EQ(r->counters().malformed, 1u);
  send("snmptrap", {"-v2c", "-c", kCommunity, target(*r), "", kLinkDown});
  EXPECT_TRUE(receive(*r).empty());
  EXPECT_EQ(r->counters().malformed, 2u);
  EXPECT_EQ(r->counters().link_down, 0u);
}

TEST_F(SnmpTrapsTest, AV2cInformIsAnswered) {
  auto r = open(v2c());
  ASSERT_TRUE(r);
  auto args = std::vector<std::string>{"-v2c", "-c", kCommunity, "-t", "3", "-r", "0", target(*r)};
  for (auto& a : link_vars(kLinkDown, 4)) args.push_back(a);
  // snmpinform waits for the answer: it runs while this thread reads.
  auto sent = std::async(std::launch::async, [&] {
    return medic::testing::run_command("/usr/bin/snmpinform", args, std::chrono::seconds(10),
                                       snmp_tool_env(dir_.file("persist")));
  });
  const auto got = receive(*r);
  const auto [code, out] = sent.get();
  EXPECT_EQ(code, 0) << out;
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].if_index, 4u);
  EXPECT_EQ(r->counters().informs_answered, 1u);
}

// SNMPv3 traps are authenticated with the keys localized for the sending agent's engine,
// which polling it taught medicd; the wrong keys or no privacy are refused.
TEST_F(SnmpTrapsTest, AV3TrapFromAPolledAgentIsAcceptedAndWrongKeysAreNot) {
  LoopbackSnmpd agent;
  SnmpCollector collector(v3());
  const ScrapeTarget t{kSwitch, agent.url()};
  const auto polled = collector.scrape({&t, 1}, clock_);
  ASSERT_TRUE(polled[0].ok) << polled[0].error;
  // The agent's engine ID, as snmptrap must send it (the agent is authoritative for traps).
  const auto [code, out] = medic::testing::run_command(
      "/usr/bin/snmpget", {"-v2c", "-c", kCommunity, "-On", agent.address(), "1.3.6.1.6.3.10.2.1.1.0"},
      std::chrono::seconds(10), snmp_tool_env(agent.persist()));
  ASSERT_EQ(code, 0) << out;
  const size_t hex = out.find("Hex-STRING: ");
  ASSERT_NE(hex, std::string::npos) << out;
  std::string engine = "0x";
  for (char c : out.substr(hex + 12)) {
    if (std::isxdigit(static_cast<unsigned char>(c))) engine.push_back(c);
  }
  auto r = open(v3());
  ASSERT_TRUE(r);
  auto v3args = [&](const std::string& auth, const std::string& level) {
    std::vector<std::string> a{"-v3", "-e", engine, "-u", kV3User, "-l", level, "-a", "SHA", "-A", auth};
    if (level == "authPriv") {
      for (const char* x : {"-x", "AES", "-X", kPrivPass}) a.emplace_back(x);
    }
    a.push_back(target(*r));
    for (auto& v : link_vars(kLinkDown, 2)) a.push_back(v);
    return a;
  };
  send("snmptrap", v3args(kAuthPass, "authPriv"));
  auto got = receive(*r);
  ASSERT_EQ(got.size(), 1u) << "bad credentials " << r->counters().bad_credentials << ", malformed " << r->counters().malformed;
  EXPECT_EQ(got[0].device, kSwitch);
  EXPECT_EQ(got[0].if_index, 2u);
  EXPECT_EQ(collector.interface_name(kSwitch, 1), "lo");  // what the daemon names an ifIndex with

  send("snmptrap", v3args("wrong-auth-pass", "authPriv"));
  EXPECT_TRUE(receive(*r).empty());
  EXPECT_EQ(r->counters().bad_credentials, 1u) << "malformed " << r->counters().malformed;
  send("snmptrap", v3args(kAuthPass, "authNoPriv"));
  EXPECT_TRUE(receive(*r).empty());
  EXPECT_EQ(r->counters().bad_credentials, 2u);
  EXPECT_EQ(r->counters().link_down, 1u);
}

// Two switches polled at one address: whose a notification is cannot be told, so it is
// not taken (counted as from an unknown agent).
TEST_F(SnmpTrapsTest, AnAddressTwoSwitchesShareIsNobodys) {
  auto r = SnmpTrapReceiver::open("127.0.0.1:0", v2c(), {{"127.0.0.1", kSwitch}, {"127.0.0.1", kSwitch + 1}});
  ASSERT_TRUE(r.ok()) << r.error();
  auto args = std::vector<std::string>{"-v2c", "-c", kCommunity, target(**r)};
  for (auto& a : link_vars(kLinkDown, 1)) args.push_back(a);
  send("snmptrap", args);
  EXPECT_TRUE(receive(**r).empty());
  EXPECT_EQ((*r)->counters().unknown_agent, 1u);
}

TEST(SnmpTrapReceiver, BadListenAddressesAndAgentsSayWhat) {
  SnmpCredentials c;
  c.community = "x";
  EXPECT_EQ(SnmpTrapReceiver::open("127.0.0.1", c, {}).error(), "--snmp-trap-listen \"127.0.0.1\": expected ADDR:PORT");
  EXPECT_EQ(SnmpTrapReceiver::open("127.0.0.1:99999", c, {}).error(),
            "--snmp-trap-listen \"127.0.0.1:99999\": port \"99999\" is not 0..65535");
  EXPECT_EQ(SnmpTrapReceiver::open("switch-mgmt:162", c, {}).error(),
            "--snmp-trap-listen \"switch-mgmt:162\": \"switch-mgmt\" is not an IP address");
  EXPECT_EQ(SnmpTrapReceiver::open("127.0.0.1:0", c, {{"rtsw1.example", 1}}).error(),
            "SNMP notifications: agent address \"rtsw1.example\" is not an IP address");
  // A link-local agent address with its scope, as getnameinfo gives it, is an address.
  EXPECT_TRUE(SnmpTrapReceiver::open("127.0.0.1:0", c, {{"fe80::1%lo", 1}}).ok());
  // A port already taken.
  auto first = SnmpTrapReceiver::open("127.0.0.1:0", c, {});
  ASSERT_TRUE(first.ok()) << first.error();
  const std::string taken = "127.0.0.1:" + std::to_string((*first)->port());
  const auto second = SnmpTrapReceiver::open(taken, c, {});
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.error(), HasSubstr("cannot listen there"));
}

}  // namespace
}  // namespace medic::telemetry
