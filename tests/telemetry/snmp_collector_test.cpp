// The SNMP collector against the real net-snmp agent on loopback: what it reads matches what
// snmpbulkwalk reads from the same agent; SNMPv3 authPriv; wrong credentials, a silent port,
// an agent answering garbage, an agent restarting, and many agents at once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "common/files.h"
#include "telemetry/mapping.h"
#include "telemetry/snmp_collector.h"
#include "tests/support/testing.h"
#include "tests/telemetry/snmpd_fixture.h"
#include "tests/telemetry/snmpwalk_text.h"

namespace medic::telemetry {
namespace {

using ::testing::HasSubstr;

SnmpOptions quick() {
  SnmpOptions o;
  o.timeout_s = 1.0;
  o.request_timeout_s = 0.3;
  o.retries = 1;
  return o;
}

// For an agent whose MIB is served by a `pass` program: snmpd starts the program once per
// request, about a hundred Python start-ups a walk, which take seconds on a loaded machine
// (a fresh clone's CI, compiling beside the tests, took more than quick()'s one second).
// What is tested there is what the walk reads, not how soon.
SnmpOptions patient() {
  SnmpOptions o = quick();
  o.timeout_s = 30;
  o.request_timeout_s = 5;
  return o;
}

// Rendered lines of a body by "OBJECT{ifName=\"N\"" prefix -> value.
std::map<std::string, double> values_of(const std::string& body) {
  std::map<std::string, double> out;
  size_t at = 0;
  while (at < body.size()) {
    const size_t nl = body.find('\n', at);
    const std::string line = body.substr(at, nl - at);
    at = nl == std::string::npos ? body.size() : nl + 1;
    const size_t comma = line.find(",ifIndex=");
    const size_t space = line.rfind(' ');
    if (comma == std::string::npos || space == std::string::npos) continue;
    out[line.substr(0, comma)] = std::stod(line.substr(space + 1));
  }
  return out;
}

class SnmpCollectorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { agent_ = new LoopbackSnmpd(); }
  static void TearDownTestSuite() {
    delete agent_;
    agent_ = nullptr;
  }
  static LoopbackSnmpd* agent_;
  SystemClock clock_;
};
LoopbackSnmpd* SnmpCollectorTest::agent_ = nullptr;

TEST_F(SnmpCollectorTest, ReadsWhatSnmpbulkwalkReadsFromTheSameAgent) {
  SnmpCollector collector(v2c(), quick());
  const ScrapeTarget t{0, agent_->url()};
  const auto r = collector.scrape({&t, 1}, clock_);
  ASSERT_EQ(r.size(), 1u);
  ASSERT_TRUE(r[0].ok) << r[0].error;
  EXPECT_EQ(r[0].content_type, kSnmpContentType);
  EXPECT_EQ(detect_format(r[0].content_type, r[0].body), PayloadFormat::snmp);
  // The same agent as snmpbulkwalk reads it, after: names and states equal, counters no lower.
  std::string text = agent_->bulkwalk("1.3.6.1.2.1.1.3");
  for (const char* table : {"1.3.6.1.2.1.2.2.1", "1.3.6.1.2.1.31.1.1.1", "1.3.6.1.2.1.10.7.2.1"}) text += agent_->bulkwalk(table);
  SnmpAgentState reference;
  const auto walked = reference.render(parse_snmpwalk(text));
  const auto ours = values_of(r[0].body), theirs = values_of(walked.body);
  ASSERT_GE(theirs.size(), 20u);
  // This machine's interfaces (the agent's) may come and go between the two walks while
  // other tests build namespaces: what both read is compared, and lo is always read.
  size_t compared = 0;
  for (const auto& [key, value] : theirs) {
    if (!ours.contains(key)) continue;
    ++compared;
    if (key.rfind("ifOperStatus", 0) == 0 || key.rfind("ifHighSpeed", 0) == 0) {
      EXPECT_EQ(ours.at(key), value) << key;
    } else {
      EXPECT_LE(ours.at(key), value) << key << ": the collector read first, counters only grow";
    }
  }
  EXPECT_GE(compared, 10u);
  EXPECT_TRUE(ours.contains("ifHCInOctets{ifName=\"lo\"")) << r[0].body;
  EXPECT_TRUE(theirs.contains("ifHCInOctets{ifName=\"lo\"")) << walked.body;
  // Every value in one or a few GETBULK requests, not one request per value.
  EXPECT_GE(collector.counters().requests, 1u);
  EXPECT_LT(collector.counters().requests, ours.size() / 4);
}

TEST_F(SnmpCollectorTest, V3AuthPrivReadsTheSameAndAnUnknownUserIsRefusedBySayingSo) {
  SnmpCollector ok(v3(), quick());
  const ScrapeTarget t{0, agent_->url()};
  const auto r = ok.scrape({&t, 1}, clock_);
  ASSERT_TRUE(r[0].ok) << r[0].error;
  EXPECT_TRUE(values_of(r[0].body).contains("ifOperStatus{ifName=\"lo\""));

  // net-snmp keeps one key set per user and engine in a process, as medicd has one set of
  // credentials: a wrong password for this user is the CLI test's (a process of its own).
  SnmpCollector wrong(v3(kAuthPass, "nosuchuser"), quick());
  const auto w = wrong.scrape({&t, 1}, clock_);
  ASSERT_FALSE(w[0].ok);
  EXPECT_EQ(w[0].error, "the agent refused the request (SNMPv3 report: wrong user, key or security level)");
  EXPECT_EQ(w[0].body, "");
}

// SNMPv3 learns each agent's engine inside its first request, on the polling thread: silent
// agents cost their timeouts one after the other, so once a poll has spent its walk time on
// them the others wait for the next poll instead of holding this one.
TEST_F(SnmpCollectorTest, SilentV3AgentsCannotHoldAPollForLongerThanItsWalkTime) {
  SnmpCollector collector(v3(), quick());  // 1 s a walk; 2 tries of 300 ms a request
  std::vector<ScrapeTarget> targets = {{0, agent_->url()}};
  for (fabric::DeviceId d = 1; d <= 4; ++d) targets.push_back({d, "snmp://127.0.0.1:" + std::to_string(free_udp_port())});
  const auto r = collector.scrape(targets, clock_);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_TRUE(r[0].ok) << r[0].error;
  // Their discovery went unanswered (said by net-snmp's send, or by the request it sent).
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_FALSE(r[i].ok);
    EXPECT_THAT(r[i].error, ::testing::AnyOf("SNMPv3 engine discovery failed: Timeout",
                                             "no answer after 2 tries of 300 ms (0 values read)"));
  }
  for (size_t i = 3; i < 5; ++i) {
    EXPECT_FALSE(r[i].ok);
    EXPECT_EQ(r[i].error, "SNMPv3 engine discovery deferred to the next poll (this poll spent 1000 ms discovering other "
                          "agents)");
  }
  // The agent already known needs no discovery again: it is walked whatever the others do.
  const auto again = collector.scrape(targets, clock_);
  EXPECT_TRUE(again[0].ok) << again[0].error;
}

// The agents a poll deferred go first in the next: an agent listed after silent ones is
// discovered and walked on the second poll, not deferred poll after poll.
TEST_F(SnmpCollectorTest, AnAgentDeferredOnceIsDiscoveredFirstNextPoll) {
  SnmpCollector collector(v3(), quick());  // 1 s of discovery a poll; a silent agent costs 0.6 s
  std::vector<ScrapeTarget> targets;
  for (fabric::DeviceId d = 0; d < 3; ++d) targets.push_back({d, "snmp://127.0.0.1:" + std::to_string(free_udp_port())});
  targets.push_back({3, agent_->url()});
  const auto first = collector.scrape(targets, clock_);
  EXPECT_FALSE(first[2].ok);
  EXPECT_THAT(first[3].error, ::testing::StartsWith("SNMPv3 engine discovery deferred to the next poll"));
  const auto second = collector.scrape(targets, clock_);
  EXPECT_TRUE(second[3].ok) << second[3].error;
  EXPECT_TRUE(values_of(second[3].body).contains("ifOperStatus{ifName=\"lo\""));
}

TEST_F(SnmpCollectorTest, AWrongCommunityIsSilenceAndEndsInATimeout) {
  SnmpCollector collector(v2c("not-the-community"), quick());
  const ScrapeTarget t{0, agent_->url()};
  const auto started = std::chrono::steady_clock::now();
  const auto r = collector.scrape({&t, 1}, clock_);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_FALSE(r[0].ok);
  EXPECT_EQ(r[0].error, "no answer after 2 tries of 300 ms (0 values read)");
  EXPECT_GE(took, 0.5);  // the retry was waited for (not a bound on speed)
}

// A walk whose deadline comes while its request is still out (an agent that keeps silent
// past the walk's time, the request's own timeout longer) ends there and says so: a
// timeout of the walk, not "no answer after N tries" from the session closed under it.
// The session is reopened for the next poll.
TEST_F(SnmpCollectorTest, AWalkPastItsDeadlineWithARequestOutSaysSo) {
  SnmpOptions o;
  o.timeout_s = 0.2;
  o.request_timeout_s = 5;
  o.retries = 0;
  SnmpCollector collector(v2c("not-the-community"), o);
  const ScrapeTarget t{0, agent_->url()};
  const auto r = collector.scrape({&t, 1}, clock_);
  ASSERT_FALSE(r[0].ok);
  EXPECT_EQ(r[0].error, "timeout after 200 ms (0 values read)");
  const auto again = collector.scrape({&t, 1}, clock_);
  EXPECT_EQ(again[0].error, "timeout after 200 ms (0 values read)");
  EXPECT_EQ(collector.counters().opened, 2u);
}

TEST_F(SnmpCollectorTest, ManyAgentsAtOnceEachGetTheirOwnAnswer) {
  SnmpOptions o = quick();
  o.timeout_s = 5;
  o.max_in_flight = 16;
  SnmpCollector collector(v2c(), o);
  std::vector<ScrapeTarget> targets;
  for (fabric::DeviceId d = 0; d < 50; ++d) targets.push_back({d, agent_->url()});
  targets.push_back({50, "snmp://127.0.0.1:" + std::to_string(free_udp_port())});  // nothing there
  const auto r = collector.scrape(targets, clock_);
  ASSERT_EQ(r.size(), targets.size());
  for (size_t i = 0; i < 50; ++i) {
    EXPECT_EQ(r[i].device, i);
    EXPECT_TRUE(r[i].ok) << i << ": " << r[i].error;
    EXPECT_TRUE(values_of(r[i].body).contains("ifOperStatus{ifName=\"lo\"")) << i;
  }
  EXPECT_FALSE(r[50].ok);
  EXPECT_EQ(r[50].error, "no answer after 2 tries of 300 ms (0 values read)");
  EXPECT_EQ(collector.counters().opened, 51u);
  // A second poll reuses every session.
  const auto again = collector.scrape(targets, clock_);
  EXPECT_TRUE(again[7].ok);
  EXPECT_FALSE(again[50].ok);
  EXPECT_EQ(collector.counters().opened, 51u);
}

TEST_F(SnmpCollectorTest, EachAnswerIsHandedOverTheMomentItIsComplete) {
  SnmpCollector collector(v2c(), quick());
  std::vector<ScrapeTarget> targets = {{3, agent_->url()}, {4, agent_->url()}};
  std::vector<fabric::DeviceId> seen;
  const auto r = collector.scrape(targets, clock_, [&](ScrapeResult& x) {
    seen.push_back(x.device);
    EXPECT_FALSE(x.body.empty());
    x.body.clear();  // taken
  });
  EXPECT_THAT(seen, ::testing::UnorderedElementsAre(3u, 4u));
  EXPECT_TRUE(r[0].ok && r[1].ok);
  EXPECT_EQ(r[0].body, "");
}

TEST(SnmpCollectorFaults, AnAgentAnsweringGarbageIsATimeoutNotACrash) {
  // A UDP "agent" that answers every request with bytes that are not SNMP, then with a
  // truncated BER sequence, for at most 200 datagrams or 10 seconds.
  const int s = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0};
  std::thread liar([&] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (int n = 0; n < 200 && !stop && std::chrono::steady_clock::now() < until; ++n) {
      pollfd p{s, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[2048];
      sockaddr_in from{};
      socklen_t fl = sizeof from;
      if (::recvfrom(s, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &fl) <= 0) continue;
      static const unsigned char garbage[] = {0xde, 0xad, 0xbe, 0xef, 0x00};
      static const unsigned char truncated[] = {0x30, 0x82, 0x05, 0x00, 0x02, 0x01, 0x01, 0x04, 0x06, 'p'};
      const bool odd = (n % 2) != 0;
      ::sendto(s, odd ? truncated : garbage, odd ? sizeof truncated : sizeof garbage, 0,
               reinterpret_cast<sockaddr*>(&from), fl);
      ++answered;
    }
  });
  SnmpCollector collector(v2c(), quick());
  const ScrapeTarget t{0, "snmp://127.0.0.1:" + std::to_string(ntohs(a.sin_port))};
  SystemClock clock;
  const auto r = collector.scrape({&t, 1}, clock);
  stop = true;
  liar.join();
  ::close(s);
  EXPECT_GE(answered.load(), 1);
  ASSERT_FALSE(r[0].ok);
  EXPECT_EQ(r[0].error, "no answer after 2 tries of 300 ms (0 values read)");
}

TEST(SnmpCollectorFaults, ARestartedAgentIsSeenAndItsFlapCountsDoNotJump) {
  LoopbackSnmpd agent;
  std::this_thread::sleep_for(std::chrono::seconds(3));  // sysUpTime well past the new agent's
  SnmpCollector collector(v2c(), quick());
  const ScrapeTarget t{0, agent.url()};
  SystemClock clock;
  const auto before = collector.scrape({&t, 1}, clock);
  ASSERT_TRUE(before[0].ok) << before[0].error;
  agent.restart();
  const auto after = collector.scrape({&t, 1}, clock);
  ASSERT_TRUE(after[0].ok) << after[0].error;
  EXPECT_EQ(collector.counters().restarts, 1u);
  EXPECT_EQ(values_of(after[0].body).at("ifOperStatusChanges{ifName=\"lo\""), 0);
}

TEST(SnmpCollectorFaults, AnAddressThatIsNotSnmpFailsThatTargetOnly) {
  SnmpCollector collector(v2c(), quick());
  SystemClock clock;
  const std::vector<ScrapeTarget> targets = {{0, "snmp://bad host"}, {1, "snmp://127.0.0.1:" + std::to_string(free_udp_port())}};
  const auto r = collector.scrape(targets, clock);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_FALSE(r[0].ok);
  EXPECT_THAT(r[0].error, HasSubstr("is not a host name or address"));
  EXPECT_FALSE(r[1].ok);
  EXPECT_EQ(r[1].error, "no answer after 2 tries of 300 ms (0 values read)");
}

// A real agent offering ENTITY-SENSOR-MIB (snmpd serving a transceiver's entities and
// sensors for its interface ifIndex 1 through a `pass` program): the first poll reads the
// entities and the readings, mapped onto the port's optics counters.
TEST(SnmpCollectorSensors, OpticsReadingsOfARealAgentReachThePort) {
  const std::string pass = std::string(MEDIC_SOURCE_DIR) + "/tests/fixtures/snmp/entity_sensors_pass.py";
  LoopbackSnmpd agent(0, "pass .1.3.6.1.2.1.47 /usr/bin/python3 " + pass + "\npass .1.3.6.1.2.1.99 /usr/bin/python3 " + pass +
                             "\n");
  SnmpCollector collector(v2c(), patient());
  SystemClock clock;
  const ScrapeTarget t{0, agent.url()};
  const auto r = collector.scrape({&t, 1}, clock);
  ASSERT_TRUE(r[0].ok) << r[0].error;
  const auto v = values_of(r[0].body);
  ASSERT_TRUE(v.count("entSensorRxPowerMilliwatts{ifName=\"lo\"")) << r[0].body;
  EXPECT_NEAR(v.at("entSensorRxPowerMilliwatts{ifName=\"lo\""), 0.5012, 1e-9);
  EXPECT_NEAR(v.at("entSensorTxPowerMilliwatts{ifName=\"lo\""), 1.0, 1e-9);
  EXPECT_NEAR(v.at("entSensorLaserBiasMilliamps{ifName=\"lo\""), 6.5, 1e-9);
  EXPECT_NEAR(v.at("entSensorTemperatureCelsius{ifName=\"lo\""), 41.2, 1e-9);
  // The next poll does not ask for them (every kSensorEveryPolls polls), and still answers.
  const auto again = collector.scrape({&t, 1}, clock);
  ASSERT_TRUE(again[0].ok) << again[0].error;
  EXPECT_EQ(again[0].body.find("entSensor"), std::string::npos);
}

}  // namespace
}  // namespace medic::telemetry
