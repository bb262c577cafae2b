// The real Reflector and run_session over 127.0.0.1: whole sessions (paced, flood,
// authenticated, padded), loss against a closed port, argument errors, and a scripted
// reflector on a raw socket that answers twice and out of order.
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "probes/packet.h"
#include "probes/reflector.h"
#include "probes/sender.h"
#include "probes/udp.h"
#include "tests/probes/reflector_fixture.h"
#include "tests/support/testing.h"

namespace medic::probes {
namespace {

using Bytes = std::vector<uint8_t>;

SenderOptions session_to(const Endpoint& target) {
  SenderOptions o;
  o.target = target;
  o.bind = ep("127.0.0.1:0");
  o.count = 50;
  o.interval_s = 0.001;
  o.wait_s = 2.0;
  return o;
}

// The TTL this host puts on its own packets (what the reflector should see on loopback).
int default_ttl() {
  std::ifstream in("/proc/sys/net/ipv4/ip_default_ttl");
  int ttl = 64;
  in >> ttl;
  return ttl;
}

// Sends one datagram from `s` and waits (bounded) for one back.
std::optional<Bytes> exchange(UdpSocket& s, const Bytes& out, const Endpoint& to) {
  if (!s.send_one(out, to)) return std::nullopt;
  ReceiveBatch batch(4, kMaxPacketSize + 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd pfd{s.fd(), POLLIN, 0};
    ::poll(&pfd, 1, 100);
    if (s.receive(batch) > 0) {
      const auto d = batch.datagrams()[0];
      return Bytes(d.data.begin(), d.data.end());
    }
  }
  return std::nullopt;
}

// ---- Sessions against the real reflector ----

TEST(Loopback, TwoHundredProbesAtOneMillisecond) {
  LoopbackReflector reflector;
  SenderOptions o = session_to(reflector.endpoint());
  o.count = 200;
  auto rep = run_session(o);
  ASSERT_TRUE(rep.ok()) << rep.error();
  EXPECT_EQ(rep->target, reflector.address());
  EXPECT_EQ(rep->sent, 200u);
  EXPECT_EQ(rep->received, 200u);
  EXPECT_EQ(rep->lost, 0u);
  EXPECT_EQ(rep->reordered, 0u);
  EXPECT_EQ(rep->duplicates, 0u);
  EXPECT_EQ(rep->malformed, 0u);
  EXPECT_DOUBLE_EQ(rep->loss.lower, 0.0);
  EXPECT_GT(rep->loss.upper, 0.0);  // 0 of 200 lost is not proof of no loss
  ASSERT_TRUE(rep->rtt_min_s && rep->rtt_median_s && rep->rtt_p99_s && rep->rtt_max_s);
  EXPECT_GE(*rep->rtt_min_s, 0.0);
  EXPECT_LE(*rep->rtt_min_s, *rep->rtt_median_s * 1.02);  // the sketch's quantiles are within 1%
  EXPECT_LE(*rep->rtt_median_s, *rep->rtt_p99_s * 1.02);
  EXPECT_LE(*rep->rtt_p99_s, *rep->rtt_max_s * 1.02);
  EXPECT_FALSE(rep->one_way);  // neither clock says it is synchronized
  ASSERT_TRUE(rep->reflector_ttl.has_value());
  EXPECT_EQ(*rep->reflector_ttl, default_ttl());
  EXPECT_EQ(reflector.reflected_eventually(200u), 200u);
  EXPECT_EQ(reflector.counters().received, 200u);
}

TEST(Loopback, FloodModeAnswersEveryProbe) {
  // The reflector's own rate limit (20000/s per source by default) would rightly drop a
  // flood from one address, so it is off here.
  LoopbackReflector reflector(unlimited());
  SenderOptions o = session_to(reflector.endpoint());
  o.count = 20000;
  o.interval_s = 0;
  o.wait_s = 5;
  auto rep = run_session(o);
  ASSERT_TRUE(rep.ok()) << rep.error();
  EXPECT_EQ(rep->sent, 20000u);
  EXPECT_EQ(rep->received, 20000u);
  EXPECT_EQ(rep->lost, 0u);
  EXPECT_EQ(rep->duplicates, 0u);
  EXPECT_EQ(rep->malformed, 0u);
  EXPECT_EQ(reflector.reflected_eventually(20000u), 20000u);
  EXPECT_EQ(reflector.counters().rate_limited, 0u);
}

TEST(Loopback, FloodModeWithLossStillEnds) {
  // Every tenth probe dropped (fabsim's policy hook): the lost ones hold the flood window
  // only until they are given up on, so the session ends with exactly that loss.
  auto drop_tenth = [](const Datagram&, const SenderPacket& p) {
    Reflection r;
    r.answer = p.seq % 10 != 0;
    return r;
  };
  LoopbackReflector reflector(unlimited(), drop_tenth);
  SenderOptions o = session_to(reflector.endpoint());
  o.count = 2000;
  o.interval_s = 0;
  o.wait_s = 0.3;
  o.window = 64;
  auto rep = run_session(o);
  ASSERT_TRUE(rep.ok()) << rep.error();
  EXPECT_EQ(rep->sent, 2000u);
  EXPECT_EQ(rep->received, 1800u);
  EXPECT_EQ(rep->lost, 200u);
  EXPECT_EQ(reflector.counters().dropped_by_policy, 200u);
}

// fabsim's emulated delay: every probe answered, each reply held `hold_us(seq)` microseconds.
// The session's report, and the replies the reflector dropped, once it has counted
// `reflected` replies sent.
struct HeldSession {
  SessionReport report;
  uint64_t dropped = 0;
};
HeldSession held_session(ReflectorOptions ro, std::function<int64_t(uint32_t)> hold_us, SenderOptions o,
                         uint64_t reflected) {
  auto hold = [hold_us](const Datagram&, const SenderPacket& p) {
    Reflection r;
    r.answer = true;
    r.delay = Duration(hold_us(p.seq));
    return r;
  };
  LoopbackReflector reflector(std::move(ro), hold);
  o.target = reflector.endpoint();
  auto rep = run_session(o);
  EXPECT_TRUE(rep.ok()) << rep.error();
  EXPECT_EQ(reflector.reflected_eventually(reflected), reflected);
  EXPECT_EQ(reflector.counters().send_failed, 0u);
  return {rep.ok() ? *rep : SessionReport{}, reflector.counters().dropped_by_policy};
}

TEST(Loopback, DelayedRepliesAreSentFromATimer) {
  // The reply leaves later, and is still counted as reflected.
  SenderOptions o = session_to(ep("127.0.0.1:1"));
  o.count = 10;
  EXPECT_EQ(held_session(unlimited(), [](uint32_t) { return 20000; }, o, 10).report.received, 10u);
}

TEST(Loopback, AHeldReplyLeavesWhenItIsDueNotInTheOrderItCame) {
  // The first probe held half a second, the others a microsecond: they are all answered,
  // and the first answer comes back after the rest (the sender counts it reordered).
  SenderOptions o = session_to(ep("127.0.0.1:1"));
  o.count = 20;
  o.wait_s = 3;
  const HeldSession s = held_session(unlimited(), [](uint32_t seq) { return seq == 0 ? 500000 : 1; }, o, 20);
  EXPECT_EQ(s.report.received, 20u);
  EXPECT_EQ(s.report.reordered, 1u);
}

TEST(Loopback, ALongHoldNeverKeepsAShortOneWaiting) {
  // The first probe held 20 s, past the session's end; the others a microsecond each. The
  // short ones must be sent when due, not when the timer set for the long one fires: 19
  // answered, the first lost (still held when the session ends).
  SenderOptions o = session_to(ep("127.0.0.1:1"));
  o.count = 20;
  o.wait_s = 1;
  const HeldSession s = held_session(unlimited(), [](uint32_t seq) { return seq == 0 ? 20'000'000 : 1; }, o, 19);
  EXPECT_EQ(s.report.received, 19u);
  EXPECT_EQ(s.report.lost, 1u);
}

TEST(Loopback, HeldRepliesAreBounded) {
  // Held a long time, far more probes than may be held: the ones past the bound are dropped
  // and counted as the policy's, the held ones still answered.
  ReflectorOptions ro = unlimited();
  ro.max_held = 3;
  SenderOptions o = session_to(ep("127.0.0.1:1"));
  o.count = 10;
  o.interval_s = 0;
  const HeldSession s = held_session(ro, [](uint32_t) { return 300000; }, o, 3);
  EXPECT_EQ(s.report.received, 3u);
  EXPECT_EQ(s.report.lost, 7u);
  EXPECT_EQ(s.dropped, 7u);
}

TEST(Loopback, AuthenticatedWithTheRightKey) {
  ReflectorOptions ro = unlimited();
  ro.mode = Mode::authenticated;
  ro.key = *HmacKey::parse("hex:00112233445566778899aabbccddeeff");
  LoopbackReflector reflector(ro);
  SenderOptions o = session_to(reflector.endpoint());
  o.mode = Mode::authenticated;
  o.key = *HmacKey::parse("hex:00112233445566778899AABBCCDDEEFF");
  auto rep = run_session(o);
  ASSERT_TRUE(rep.ok()) << rep.error();
  EXPECT_EQ(rep->received, 50u);
  EXPECT_EQ(rep->lost, 0u);
  EXPECT_EQ(rep->malformed, 0u);
  EXPECT_EQ(reflector.counters().auth_failed, 0u);
}

TEST(Loopback, AuthenticatedWithTheWrongKeyGetsNoAnswers) {
  // The reflector checks the HMAC first: a wrong key is an auth failure there, and no reply
  // ever comes back for the sender to count.
  ReflectorOptions ro = unlimited();
  ro.mode = Mode::authenticated;
  ro.key = *HmacKey::parse("the reflector's key");
  LoopbackReflector reflector(ro);
  SenderOptions o = session_to(reflector.endpoint());
  o.count = 20;
  o.wait_s = 0.3;
  o.mode = Mode::authenticated;
  o.key = *HmacKey::parse("another key entirely");
  auto rep = run_session(o);
  ASSERT_TRUE(rep.ok()) << rep.error();
  EXPECT_EQ(rep->sent, 20u);
  EXPECT_EQ(rep->received, 0u);
  EXPECT_EQ(rep->lost, 20u);
  EXPECT_FALSE(rep->rtt_min_s.has_value());
  EXPECT_TRUE(testing::eventually([&] { return reflector.counters().auth_failed == 20; }, std::chrono::seconds(5)));
  EXPECT_EQ(reflector.counters().reflected, 0u);
}

TEST(Loopback, RepliesThatFailTheSendersHmacAreCountedMalformed) {
  // An unauthenticated reflector answers a 112-octet authenticated probe with 112 octets
  // (symmetric size) but no valid HMAC: the sender counts each reply as malformed.
  LoopbackReflector reflector(unlimited());
  SenderOptions o = session_to(reflector.endpoint());
  o.count = 20;
  o.wait_s = 0.3;
  o.mode = Mode::authenticated;
  o.key = *HmacKey::parse("a sender's key");
  auto rep = run_session(o);
  ASSERT_TRUE(rep.ok()) << rep.error();
  EXPECT_EQ(rep->received, 0u);
  EXPECT_EQ(rep->lost, 20u);
  EXPECT_EQ(rep->malformed, 20u);
  EXPECT_EQ(reflector.reflected_eventually(20u), 20u);
}

TEST(Loopback, UnauthenticatedProbesToAnAuthenticatedReflectorAreMalformedThere) {
  ReflectorOptions ro = unlimited();
  ro.mode = Mode::authenticated;
  ro.key = *HmacKey::parse("the reflector's key");
  LoopbackReflector reflector(ro);
  SenderOptions o = session_to(reflector.endpoint());
  o.count = 10;
  o.wait_s = 0.3;
  auto rep = run_session(o);
  ASSERT_TRUE(rep.ok()) << rep.error();
  EXPECT_EQ(rep->received, 0u);
  EXPECT_TRUE(testing::eventually([&] { return reflector.counters().malformed == 10; }, std::chrono::seconds(5)));
  EXPECT_EQ(reflector.counters().auth_failed, 0u);
}

TEST(Loopback, SizeTwoHundredMakesTwoHundredOctetReplies) {
  std::atomic<size_t> smallest{SIZE_MAX}, largest{0};
  auto record = [&](const Datagram& d, const SenderPacket&) {
    smallest = std::min(smallest.load(), d.data.size());
    largest = std::max(largest.load(), d.data.size());
    Reflection r;
    r.answer = true;
    return r;
  };
  LoopbackReflector reflector(unlimited(), record);
  SenderOptions o = session_to(reflector.endpoint());
  o.size = 200;
  auto rep = run_session(o);
  ASSERT_TRUE(rep.ok()) << rep.error();
  EXPECT_EQ(rep->received, 50u);
  EXPECT_EQ(smallest, 200u);
  EXPECT_EQ(largest, 200u);
  // And the replies themselves, seen on a raw socket: 200 octets, zero padded.
  auto sock = UdpSocket::open(ep("127.0.0.1:0"));
  ASSERT_TRUE(sock.ok()) << sock.error();
  Bytes probe(200);
  SenderPacket p;
  p.seq = 77;
  encode(p, Mode::unauthenticated, nullptr, probe, 200);
  auto reply = exchange(*sock, probe, reflector.endpoint());
  ASSERT_TRUE(reply.has_value()) << "no reply within 5 s";
  ASSERT_EQ(reply->size(), 200u);
  for (size_t i = 44; i < 200; ++i) ASSERT_EQ((*reply)[i], 0) << i;
  auto back = decode_reflector(*reply, Mode::unauthenticated, nullptr);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->sender_seq, 77u);
}

TEST(Loopback, AClosedPortIsAllLossInBoundedTime) {
  SenderOptions o = session_to(ep("127.0.0.1:" + std::to_string(testing::closed_port())));
  o.count = 20;
  o.wait_s = 0.5;
  auto done = std::async(std::launch::async, [&] { return run_session(o); });
  ASSERT_EQ(done.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "the session did not end";
  auto rep = done.get();
  ASSERT_TRUE(rep.ok()) << rep.error();
  EXPECT_EQ(rep->sent, 20u);
  EXPECT_EQ(rep->received, 0u);
  EXPECT_EQ(rep->lost, 20u);
  EXPECT_NEAR(rep->loss.upper, 1.0, 1e-12);
  EXPECT_NEAR(rep->loss.lower, 20 / (20 + 1.96 * 1.96), 1e-6);
  EXPECT_FALSE(rep->rtt_min_s.has_value());
  EXPECT_FALSE(rep->reflector_ttl.has_value());
}

// ---- Argument errors ----

TEST(RunSession, ArgumentErrors) {
  SenderOptions o = session_to(ep("127.0.0.1:9"));
  o.count = 0;
  EXPECT_EQ(run_session(o).error(), "count must be at least 1");
  o = session_to(ep("127.0.0.1:9"));
  o.size = 9001;
  EXPECT_EQ(run_session(o).error(), "size 9001 is larger than 9000 octets");
  o = session_to(ep("127.0.0.1:9"));
  o.mode = Mode::authenticated;
  EXPECT_EQ(run_session(o).error(), "authenticated mode needs a key");
  o = session_to(ep("[::1]:9"));  // an IPv6 target from an IPv4 source
  EXPECT_EQ(run_session(o).error(), "the source and target address families differ");
  o = session_to(ep("127.0.0.1:9"));
  o.bind = Endpoint{};
  EXPECT_EQ(run_session(o).error(), "the source and target address families differ");
}

TEST(RunSession, ABindErrorNamesTheAddress) {
  auto taken = UdpSocket::open(ep("127.0.0.1:0"));
  ASSERT_TRUE(taken.ok());
  SenderOptions o = session_to(ep("127.0.0.1:9"));
  o.bind = taken->local();
  auto r = run_session(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "cannot bind " + taken->local().str() + ": Address already in use");
}

// ---- Duplicates, reordering and stray replies, from a scripted reflector ----

// Collects `expect` probes on a raw socket, then answers in the scripted order: an index may
// come twice (a duplicate) or out of order; `ssid_delta` and `seq_delta` make replies that
// are not the session's.
struct ScriptedReply {
  size_t probe = 0;
  int ssid_delta = 0;
  uint32_t seq_delta = 0;
};

class ScriptedReflector {
 public:
  ScriptedReflector(size_t expect, std::vector<ScriptedReply> script)
      : sock_(UdpSocket::open(ep("127.0.0.1:0")).value()), expect_(expect), script_(std::move(script)) {
    thread_ = std::thread([this] { run(); });
  }
  ~ScriptedReflector() { thread_.join(); }
  Endpoint endpoint() const { return sock_.local(); }
  size_t collected() const { return collected_; }

 private:
  void run() {
    std::vector<std::pair<Endpoint, SenderPacket>> probes;
    ReceiveBatch batch(16, kMaxPacketSize + 1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (probes.size() < expect_ && std::chrono::steady_clock::now() < deadline) {
      pollfd pfd{sock_.fd(), POLLIN, 0};
      ::poll(&pfd, 1, 50);
      const size_t n = sock_.receive(batch);
      for (const auto& d : batch.datagrams().first(n)) {
        auto p = decode_sender(d.data, Mode::unauthenticated, nullptr);
        if (p.ok()) probes.emplace_back(d.peer, *p);
      }
    }
    collected_ = probes.size();
    if (probes.size() < expect_) return;
    Bytes buf(44);
    for (const ScriptedReply& s : script_) {
      const auto& [peer, p] = probes[s.probe];
      ReflectorPacket r;
      r.seq = p.seq;
      r.timestamp = to_ntp(SystemClock().now());
      r.ssid = static_cast<uint16_t>(p.ssid + s.ssid_delta);
      r.receive_timestamp = r.timestamp;
      r.sender_seq = p.seq + s.seq_delta;
      r.sender_timestamp = p.timestamp;
      r.sender_error = p.error;
      r.sender_ttl = 64;
      encode(r, Mode::unauthenticated, nullptr, buf, 44);
      sock_.send_one(buf, peer);
    }
  }
  UdpSocket sock_;
  size_t expect_;
  std::vector<ScriptedReply> script_;
  std::atomic<size_t> collected_{0};
  std::thread thread_;
};

// Sends `out` from `from` and returns what `to` received: one datagram, within 2 s.
std::optional<Datagram> one_datagram(UdpSocket& from, std::span<const Outgoing> out, UdpSocket& to, ReceiveBatch& batch) {
  if (from.send(out) != out.size()) return std::nullopt;
  pollfd p{to.fd(), POLLIN, 0};
  if (poll(&p, 1, 2000) != 1 || to.receive(batch) != 1) return std::nullopt;
  return batch.datagrams()[0];
}

// The prober's sockets: Don't Fragment on every datagram (IPv4), and datagrams still go.
TEST(UdpSocket, DontFragmentIsSetAndDatagramsStillGo) {
  auto a = UdpSocket::open(*Endpoint::parse("127.0.0.1:0"));
  auto b = UdpSocket::open(*Endpoint::parse("127.0.0.1:0"));
  ASSERT_TRUE(a.ok() && b.ok());
  int mode = -1;
  socklen_t len = sizeof mode;
  ASSERT_EQ(getsockopt(a->fd(), IPPROTO_IP, IP_MTU_DISCOVER, &mode, &len), 0);
  EXPECT_NE(mode, IP_PMTUDISC_DO);
  ASSERT_TRUE(a->set_dont_fragment().ok());
  ASSERT_EQ(getsockopt(a->fd(), IPPROTO_IP, IP_MTU_DISCOVER, &mode, &len), 0);
  EXPECT_EQ(mode, IP_PMTUDISC_DO);
  const std::vector<uint8_t> data(44, 7);
  const Endpoint to = b->local();
  const Outgoing o = Outgoing::to(data, &to);
  ReceiveBatch batch(4, 100);
  const auto got = one_datagram(*a, {&o, 1}, *b, batch);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->data.size(), 44u);
  // IPv6 has nothing to set.
  auto v6 = UdpSocket::open(*Endpoint::parse("[::1]:0"));
  if (v6.ok()) {
    EXPECT_TRUE(v6->set_dont_fragment().ok());
  }
}

TEST(UdpSocket, TimestampsOnlyLeavesOutTheTtlAndLocalAddressButKeepsTheKernelTimestamp) {
  auto a = UdpSocket::open(*Endpoint::parse("127.0.0.1:0"));
  auto b = UdpSocket::open(*Endpoint::parse("0.0.0.0:0"));
  ASSERT_TRUE(a.ok() && b.ok());
  const Endpoint to = *Endpoint::parse("127.0.0.1:" + std::to_string(b->local().port()));
  const std::vector<uint8_t> data(44, 7);
  const Outgoing o = Outgoing::to(data, &to);
  ReceiveBatch batch(4, 100);
  // By default: the TTL, the address it was sent to and the kernel's timestamp.
  const auto got_before = one_datagram(*a, {&o, 1}, *b, batch);
  ASSERT_TRUE(got_before.has_value());
  const Datagram before = *got_before;
  EXPECT_GT(before.ttl, 0);
  ASSERT_TRUE(before.local.has_value());
  EXPECT_EQ(before.local->host(), "127.0.0.1");
  EXPECT_TRUE(before.kernel_timestamp);
  ASSERT_TRUE(b->timestamps_only().ok());
  const auto got_after = one_datagram(*a, {&o, 1}, *b, batch);
  ASSERT_TRUE(got_after.has_value());
  const Datagram& after = *got_after;
  EXPECT_EQ(after.ttl, -1);
  EXPECT_FALSE(after.local.has_value());
  EXPECT_TRUE(after.kernel_timestamp);
  EXPECT_EQ(after.peer, a->local());
  EXPECT_EQ(after.data.size(), 44u);
  auto v6 = UdpSocket::open(*Endpoint::parse("[::1]:0"));
  if (v6.ok()) {
    EXPECT_TRUE(v6->timestamps_only().ok());
  }
}

TEST(UdpSocket, AnOutgoingBuiltFromEndpointsLeavesFromTheSourceAddressGiven) {
  auto a = UdpSocket::open(*Endpoint::parse("0.0.0.0:0"));
  auto b = UdpSocket::open(*Endpoint::parse("0.0.0.0:0"));
  ASSERT_TRUE(a.ok() && b.ok());
  const Endpoint to = *Endpoint::parse("127.0.0.1:" + std::to_string(b->local().port()));
  const Endpoint from = *Endpoint::parse("127.0.0.9:0");
  const std::vector<uint8_t> data(44, 7);
  const Outgoing o = Outgoing::to(data, &to, &from);
  ReceiveBatch batch(4, 100);
  const auto got = one_datagram(*a, {&o, 1}, *b, batch);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->peer.host(), "127.0.0.9");
  EXPECT_EQ(got->peer.port(), a->local().port());
}

TEST(Loopback, ADuplicatedReplyIsCountedOnce) {
  // Replies 1, 0, 0, 2, 3, 4: probe 0 answered twice, and after probe 1.
  ScriptedReflector fake(5, {{1}, {0}, {0}, {2}, {3}, {4}});
  SenderOptions o = session_to(fake.endpoint());
  o.count = 5;
  o.wait_s = 5;
  auto rep = run_session(o);
  ASSERT_TRUE(rep.ok()) << rep.error();
  EXPECT_EQ(fake.collected(), 5u);
  EXPECT_EQ(rep->sent, 5u);
  EXPECT_EQ(rep->received, 5u);  // five distinct probes answered, not six
  EXPECT_EQ(rep->duplicates, 1u);
  EXPECT_EQ(rep->reordered, 1u);  // 0 came after 1
  EXPECT_EQ(rep->lost, 0u);
  EXPECT_EQ(rep->malformed, 0u);
}

TEST(Loopback, RepliesOfAnotherSessionOrToUnsentProbesAreNotCounted) {
  // Probe 1's only reply carries another SSID; one reply names a probe never sent.
  ScriptedReflector fake(3, {{0}, {1, 1, 0}, {2, 0, 1000}, {2}});
  SenderOptions o = session_to(fake.endpoint());
  o.count = 3;
  o.wait_s = 1;
  auto rep = run_session(o);
  ASSERT_TRUE(rep.ok()) << rep.error();
  EXPECT_EQ(rep->received, 2u);
  EXPECT_EQ(rep->lost, 1u);
  EXPECT_EQ(rep->malformed, 2u);
  EXPECT_EQ(rep->duplicates, 0u);
}

}  // namespace
}  // namespace medic::probes
