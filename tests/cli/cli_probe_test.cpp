// `medic probe` in process against an in-process reflector (text, JSON, loss, bad input),
// and the medic-reflector binary (bad command lines, a port in use, signals, counters).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "probes/packet.h"
#include "probes/udp.h"
#include "tests/probes/reflector_fixture.h"
#include "tests/cli/cli_fixture.h"
#include "tests/support/testing.h"

namespace medic::cli {
namespace {

using nlohmann::json;
using probes::LoopbackReflector;

std::string default_ttl() {
  std::ifstream in("/proc/sys/net/ipv4/ip_default_ttl");
  int ttl = 64;
  in >> ttl;
  return std::to_string(ttl);
}

probes::ReflectorOptions unlimited() {
  probes::ReflectorOptions o;
  o.rate_limit_pps = 0;
  return o;
}

const std::string kShortTime = R"(-?\d+(us|\.\d\dms|\.\d\d\ds))";  // format_short_seconds

// ---- medic probe, in process ----

TEST(CliProbe, TextReport) {
  LoopbackReflector reflector;
  const Ran r = medic({"probe", reflector.address(), "--count", "20", "--interval-ms", "1"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  const auto l = lines_of(r.out);
  ASSERT_EQ(l.size(), 4u) << r.out;
  // 0 of 20 lost: the Wilson upper bound is 1.96^2 / (20 + 1.96^2) = 16.11%.
  EXPECT_EQ(l[0], "STAMP " + reflector.address() +
                      ": 20 sent, 20 received, 0 lost 0.00% (95% CI 0.00%-16.11%), 0 duplicates, 0 reordered");
  EXPECT_TRUE(std::regex_match(l[1], std::regex("RTT min " + kShortTime + ", median " + kShortTime + ", p99 " +
                                                kShortTime + ", max " + kShortTime + "; jitter " + kShortTime)))
      << l[1];
  EXPECT_EQ(l[2], "one-way delays: not shown (both clocks must say they are synchronized)");
  EXPECT_EQ(l[3], "the reflector saw TTL " + default_ttl());
  EXPECT_EQ(reflector.reflected_eventually(20u), 20u);
}

TEST(CliProbe, OneWayDelaysWhenBothClocksAreSynchronized) {
  probes::ReflectorOptions o;
  o.error = probes::ErrorEstimate::from_seconds(1e-6, true);
  LoopbackReflector reflector(o);
  const Ran r = medic({"probe", reflector.address(), "--count", "5", "--interval-ms", "1", "--synchronized"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("\none-way: forward " + kShortTime + ", backward " + kShortTime +
                        " \\(median; both clocks synchronized\\)\n")))
      << r.out;
  EXPECT_FALSE(contains(r.out, "not shown")) << r.out;
  // Only one side synchronized: not shown.
  LoopbackReflector plain;
  const Ran p = medic({"probe", plain.address(), "--count", "5", "--interval-ms", "1", "--synchronized"});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_TRUE(contains(p.out, "one-way delays: not shown")) << p.out;
}

TEST(CliProbe, JsonReport) {
  LoopbackReflector reflector;
  const Ran r = medic({"probe", reflector.address(), "--count", "20", "--interval-ms", "1", "--json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json j = json::parse(r.out);
  std::set<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"target", "sent", "received", "lost", "loss", "loss_ci95", "duplicates",
                                         "reordered", "malformed_replies", "rtt_min_s", "rtt_median_s", "rtt_p99_s",
                                         "rtt_max_s", "jitter_s", "one_way", "forward_median_s", "backward_median_s",
                                         "reflector_ttl", "duration_s", "cpu_s"}));
  EXPECT_EQ(j["target"], reflector.address());
  EXPECT_EQ(j["sent"], 20);
  EXPECT_EQ(j["received"], 20);
  EXPECT_EQ(j["lost"], 0);
  EXPECT_EQ(j["loss"], 0.0);
  ASSERT_EQ(j["loss_ci95"].size(), 2u);
  EXPECT_EQ(j["loss_ci95"][0], 0.0);
  EXPECT_NEAR(j["loss_ci95"][1].get<double>(), 0.16113, 1e-5);
  EXPECT_EQ(j["duplicates"], 0);
  EXPECT_EQ(j["reordered"], 0);
  EXPECT_EQ(j["malformed_replies"], 0);
  for (const char* k : {"rtt_min_s", "rtt_median_s", "rtt_p99_s", "rtt_max_s", "jitter_s", "duration_s", "cpu_s"}) {
    EXPECT_TRUE(j[k].is_number()) << k;
  }
  EXPECT_EQ(j["one_way"], false);
  EXPECT_TRUE(j["forward_median_s"].is_null());
  EXPECT_TRUE(j["backward_median_s"].is_null());
  EXPECT_EQ(j["reflector_ttl"], std::stoi(default_ttl()));
}

TEST(CliProbe, NoReflectorIsExitOneWithEverythingLost) {
  const std::string target = "127.0.0.1:" + std::to_string(testing::closed_port());
  const Ran r = medic({"probe", target, "--count", "5", "--interval-ms", "1", "--wait", "0.2"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const auto l = lines_of(r.out);
  ASSERT_GE(l.size(), 1u) << r.out;
  // 5 of 5 lost: the lower bound is 5 / (5 + 1.96^2) = 56.55%.
  EXPECT_EQ(l[0], "STAMP " + target +
                      ": 5 sent, 0 received, 5 lost 100.00% (95% CI 56.55%-100.00%), 0 duplicates, 0 reordered");
  EXPECT_FALSE(contains(r.out, "RTT")) << r.out;
  const Ran j = medic({"probe", target, "--count", "5", "--interval-ms", "1", "--wait", "0.2", "--json"});
  EXPECT_EQ(j.code, 1);
  const json doc = json::parse(j.out);
  EXPECT_EQ(doc["lost"], 5);
  EXPECT_EQ(doc["loss"], 1.0);
  EXPECT_TRUE(doc["rtt_min_s"].is_null());
  EXPECT_TRUE(doc["reflector_ttl"].is_null());
}

TEST(CliProbe, RepliesThatDoNotDecodeAreReported) {
  // An unauthenticated reflector cannot sign: an authenticated probe gets replies that fail.
  LoopbackReflector reflector(unlimited());
  const Ran r = medic(
      {"probe", reflector.address(), "--count", "5", "--interval-ms", "1", "--wait", "0.2", "--auth-key", "a long key"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "\n5 replies did not decode (wrong mode or key?)\n")) << r.out;
}

TEST(CliProbe, AuthenticatedSession) {
  probes::ReflectorOptions o = unlimited();
  o.mode = probes::Mode::authenticated;
  o.key = *probes::HmacKey::parse("hex:0102030405060708");
  LoopbackReflector reflector(o);
  const Ran r = medic({"probe", reflector.address(), "--count", "5", "--interval-ms", "1", "--auth-key",
                          "hex:0102030405060708", "--size", "300"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, ": 5 sent, 5 received, 0 lost")) << r.out;
}

TEST(CliProbe, BindWithoutAPortTakesAnyPort) {
  LoopbackReflector reflector;
  const Ran r = medic({"probe", reflector.address(), "--count", "3", "--interval-ms", "1", "--bind", "127.0.0.1"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, ": 3 sent, 3 received, 0 lost")) << r.out;
}

TEST(CliProbe, BadInputIsExitTwoWithAnExactMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"probe", "nonsense"}, "medic: target \"nonsense\": expected ADDRESS:PORT\n"},
      {{"probe", "300.1.2.3:862"}, "medic: target \"300.1.2.3\": not an IPv4 or IPv6 address\n"},
      {{"probe", "127.0.0.1:70000"}, "medic: target \"127.0.0.1:70000\": expected ADDRESS:PORT\n"},
      {{"probe", "127.0.0.1:862", "--bind", "bogus"}, "medic: --bind \"bogus\": not an IPv4 or IPv6 address\n"},
      {{"probe", "127.0.0.1:862", "--bind", "127.0.0.1:x"}, "medic: --bind \"127.0.0.1:x\": expected ADDRESS:PORT\n"},
      {{"probe", "127.0.0.1:862", "--size", "43"},
       "medic: --size 43 is below the 44 octets of an unauthenticated STAMP packet\n"},
      {{"probe", "127.0.0.1:862", "--size", "100", "--auth-key", "a long key"},
       "medic: --size 100 is below the 112 octets of an authenticated STAMP packet\n"},
      {{"probe", "127.0.0.1:862", "--auth-key", "short"},
       "medic: --auth-key: an HMAC key must be at least 8 characters (or hex:...)\n"},
      {{"probe", "127.0.0.1:862", "--auth-key", "hex:abc"},
       "medic: --auth-key: an HMAC key written hex: needs an even number of hex digits\n"},
      {{"probe", "127.0.0.1:862", "--auth-key", "hex:zz"}, "medic: --auth-key: not a hex digit in the HMAC key: 'z'\n"},
  };
  for (const auto& c : cases) {
    const Ran r = medic(c.args);
    EXPECT_EQ(r.code, 2) << c.args.back();
    EXPECT_EQ(r.err, c.err) << c.args.back();
    EXPECT_EQ(r.out, "") << c.args.back();
  }
  // Ranges CLI11 checks: still exit 2.
  for (const auto& args : std::vector<std::vector<std::string>>{{"probe", "127.0.0.1:862", "--size", "9001"},
                                                               {"probe", "127.0.0.1:862", "--count", "0"},
                                                               {"probe", "127.0.0.1:862", "--ssid", "65536"},
                                                               {"probe"}}) {
    const Ran r = medic(args);
    EXPECT_EQ(r.code, 2) << args.back() << ": " << r.err;
    EXPECT_FALSE(r.err.empty());
  }
}

TEST(CliProbe, ABindErrorIsExitOne) {
  auto taken = probes::UdpSocket::open(*probes::Endpoint::parse("127.0.0.1:0"));
  ASSERT_TRUE(taken.ok());
  const std::string at = taken->local().str();
  const Ran r = medic({"probe", "127.0.0.1:862", "--bind", at});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "medic: cannot bind " + at + ": Address already in use\n");
}

// ---- The medic-reflector binary ----

// Starts medic-reflector and waits (bounded) for its banner; the port it listens on.
std::optional<uint16_t> wait_banner(testing::Process& p) {
  std::optional<uint16_t> port;
  testing::eventually(
      [&] {
        static const std::regex banner("medic-reflector on 127\\.0\\.0\\.1:(\\d+) ");
        std::smatch m;
        const std::string out = p.output();
        if (!std::regex_search(out, m, banner)) return false;
        port = static_cast<uint16_t>(std::stoi(m[1]));
        return true;
      },
      std::chrono::seconds(10));
  return port;
}

// Asks for the counters (SIGUSR1) until a line contains `want`; bounded.
bool counters_show(testing::Process& p, const std::string& want) {
  return testing::eventually(
      [&] {
        p.signal(SIGUSR1);
        return contains(p.output(), want);
      },
      std::chrono::seconds(10));
}

std::optional<std::vector<uint8_t>> exchange(probes::UdpSocket& s, const std::vector<uint8_t>& out,
                                             const probes::Endpoint& to) {
  if (!s.send_one(out, to)) return std::nullopt;
  probes::ReceiveBatch batch(4, probes::kMaxPacketSize + 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd pfd{s.fd(), POLLIN, 0};
    ::poll(&pfd, 1, 100);
    if (s.receive(batch) > 0) {
      const auto d = batch.datagrams()[0];
      return std::vector<uint8_t>(d.data.begin(), d.data.end());
    }
  }
  return std::nullopt;
}

TEST(ReflectorBinary, ListenMissingOrMalformedIsExitTwo) {
  auto [st, out] = testing::run_command(MEDIC_REFLECTOR_BIN, {}, std::chrono::seconds(10));
  EXPECT_EQ(st, 2) << out;
  EXPECT_TRUE(contains(out, "--listen is required")) << out;
  std::tie(st, out) = testing::run_command(MEDIC_REFLECTOR_BIN, {"--listen", "nonsense"}, std::chrono::seconds(10));
  EXPECT_EQ(st, 2) << out;
  EXPECT_EQ(out, "medic-reflector: --listen \"nonsense\": expected ADDRESS:PORT\n");
  std::tie(st, out) = testing::run_command(MEDIC_REFLECTOR_BIN, {"--listen", "999.0.0.1:862"}, std::chrono::seconds(10));
  EXPECT_EQ(st, 2) << out;
  EXPECT_EQ(out, "medic-reflector: --listen \"999.0.0.1\": not an IPv4 or IPv6 address\n");
  std::tie(st, out) = testing::run_command(MEDIC_REFLECTOR_BIN, {"--listen", "127.0.0.1:0", "--auth-key", "short"},
                                           std::chrono::seconds(10));
  EXPECT_EQ(st, 2) << out;
  EXPECT_EQ(out, "medic-reflector: --auth-key: an HMAC key must be at least 8 characters (or hex:...)\n");
  std::tie(st, out) = testing::run_command(MEDIC_REFLECTOR_BIN, {"--listen", "127.0.0.1:0", "--rate-limit", "-1"},
                                           std::chrono::seconds(10));
  EXPECT_EQ(st, 2) << out;
  // Each answer spends one token: a burst below one would refuse everything, silently.
  std::tie(st, out) = testing::run_command(MEDIC_REFLECTOR_BIN, {"--listen", "127.0.0.1:0", "--burst", "0.5"},
                                           std::chrono::seconds(10));
  EXPECT_EQ(st, 2) << out;
  EXPECT_EQ(out, "medic-reflector: --burst must be at least 1\n");
  std::tie(st, out) = testing::run_command(MEDIC_REFLECTOR_BIN, {"--listen", "127.0.0.1:0", "stray"},
                                           std::chrono::seconds(10));
  EXPECT_EQ(st, 2) << out;
  std::tie(st, out) = testing::run_command(MEDIC_REFLECTOR_BIN, {"--help"}, std::chrono::seconds(10));
  EXPECT_EQ(st, 0) << out;
  EXPECT_TRUE(contains(out, "--listen")) << out;
}

TEST(ReflectorBinary, APortInUseIsExitOneAndNamed) {
  auto taken = probes::UdpSocket::open(*probes::Endpoint::parse("127.0.0.1:0"));
  ASSERT_TRUE(taken.ok());
  const std::string at = taken->local().str();
  const auto [st, out] = testing::run_command(MEDIC_REFLECTOR_BIN, {"--listen", at}, std::chrono::seconds(10));
  EXPECT_EQ(st, 1) << out;
  EXPECT_EQ(out, "medic-reflector: cannot bind " + at + ": Address already in use\n");
}

TEST(ReflectorBinary, SigtermPrintsTheCountersAndExitsZero) {
  testing::Process p(MEDIC_REFLECTOR_BIN, {"--listen", "127.0.0.1:0"});
  ASSERT_TRUE(wait_banner(p).has_value()) << p.output();
  EXPECT_TRUE(contains(p.output(), "(unauthenticated, stateless)")) << p.output();
  ASSERT_TRUE(p.signal(SIGTERM));
  const auto st = p.wait(std::chrono::seconds(10));
  ASSERT_TRUE(st.has_value()) << "still running after SIGTERM:\n" << p.output();
  EXPECT_EQ(*st, 0) << p.output();
  EXPECT_TRUE(contains(p.output(),
                       "\nreceived 0, reflected 0, malformed 0, auth failed 0, rate limited 0, send failed 0\n"))
      << p.output();
}

TEST(ReflectorBinary, GarbageIsCountedMalformedAndProbesAnswered) {
  testing::Process p(MEDIC_REFLECTOR_BIN, {"--listen", "127.0.0.1:0"});
  const auto port = wait_banner(p);
  ASSERT_TRUE(port.has_value()) << p.output();
  const auto to = *probes::Endpoint::parse("127.0.0.1:" + std::to_string(*port));
  auto sock = probes::UdpSocket::open(*probes::Endpoint::parse("127.0.0.1:0"));
  ASSERT_TRUE(sock.ok());
  for (const size_t len : {size_t{0}, size_t{1}, size_t{43}}) {
    ASSERT_TRUE(sock->send_one(std::vector<uint8_t>(len, 0xEE), to));
  }
  // A real probe after the garbage: its reply means the garbage was seen before it.
  std::vector<uint8_t> probe(44);
  probes::SenderPacket sp;
  sp.seq = 12;
  probes::encode(sp, probes::Mode::unauthenticated, nullptr, probe, 44);
  const auto reply = exchange(*sock, probe, to);
  ASSERT_TRUE(reply.has_value()) << "no reply:\n" << p.output();
  auto rp = probes::decode_reflector(*reply, probes::Mode::unauthenticated, nullptr);
  ASSERT_TRUE(rp.ok()) << rp.error();
  EXPECT_EQ(rp->sender_seq, 12u);
  EXPECT_TRUE(counters_show(p, "received 4, reflected 1, malformed 3, auth failed 0, rate limited 0, send failed 0"))
      << p.output();
  EXPECT_TRUE(p.running()) << "SIGUSR1 must not stop it";
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(std::chrono::seconds(10)), 0) << p.output();
}

TEST(ReflectorBinary, AuthenticatedCountsHmacFailures) {
  testing::Process p(MEDIC_REFLECTOR_BIN, {"--listen", "127.0.0.1:0", "--auth-key", "hex:a1b2c3d4e5f6", "--stateful"});
  const auto port = wait_banner(p);
  ASSERT_TRUE(port.has_value()) << p.output();
  EXPECT_TRUE(contains(p.output(), "(authenticated, stateful)")) << p.output();
  const auto to = *probes::Endpoint::parse("127.0.0.1:" + std::to_string(*port));
  auto sock = probes::UdpSocket::open(*probes::Endpoint::parse("127.0.0.1:0"));
  ASSERT_TRUE(sock.ok());
  ASSERT_TRUE(sock->send_one(std::vector<uint8_t>(112, 0x5A), to));  // right size, no valid HMAC
  ASSERT_TRUE(sock->send_one(std::vector<uint8_t>(44, 0), to));      // too short for this mode
  const auto key = *probes::HmacKey::parse("hex:a1b2c3d4e5f6");
  std::vector<uint8_t> probe(112);
  probes::SenderPacket sp;
  sp.seq = 99;
  probes::encode(sp, probes::Mode::authenticated, &key, probe, 112);
  const auto reply = exchange(*sock, probe, to);
  ASSERT_TRUE(reply.has_value()) << "no reply:\n" << p.output();
  auto rp = probes::decode_reflector(*reply, probes::Mode::authenticated, &key);
  ASSERT_TRUE(rp.ok()) << rp.error();
  EXPECT_EQ(rp->sender_seq, 99u);
  EXPECT_EQ(rp->seq, 0u);  // stateful: the session's first answer
  EXPECT_TRUE(counters_show(p, "received 3, reflected 1, malformed 1, auth failed 1, rate limited 0, send failed 0"))
      << p.output();
}

}  // namespace
}  // namespace medic::cli
