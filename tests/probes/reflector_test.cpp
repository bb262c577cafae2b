// ReflectorCore, the reflector's per-packet decision, driven with hand-made datagrams and
// time passed in: what the reply carries, what is dropped and counted, the rate limit per
// source, the memory bound and the fabsim policy hook; and random input that must never
// crash and must be counted exactly once.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "probes/packet.h"
#include "probes/reflector.h"
#include "tests/probes/reflector_fixture.h"

namespace medic::probes {
namespace {

using Bytes = std::vector<uint8_t>;

const Time kT0 = Time(Duration(int64_t{1700000000} * 1000000));
const Bytes kKeyBytes = {'r', 'e', 'f', 'l', 'e', 'c', 't', 'o', 'r', '-', 'k', 'e', 'y'};

struct ProbeSpec {
  uint32_t seq = 0;
  uint16_t ssid = 1;
  size_t size = 0;
  Mode mode = Mode::unauthenticated;
  const HmacKey* key = nullptr;
  NtpTimestamp timestamp{0xE0000001, 0x12345678};
  ErrorEstimate error{true, false, 12, 34};
};

Bytes probe(const ProbeSpec& s) {
  Bytes b(std::max(s.size, base_size(s.mode)));
  SenderPacket p;
  p.seq = s.seq;
  p.ssid = s.ssid;
  p.timestamp = s.timestamp;
  p.error = s.error;
  EXPECT_EQ(encode(p, s.mode, s.key, b, b.size()), b.size());
  return b;
}

// One ReflectorCore with its counters and reply buffer.
class Core {
 public:
  explicit Core(ReflectorOptions o = {}) : mode_(o.mode), key_(o.key), core_(std::move(o)) {}

  // Hands one datagram to the core: `at` is when it was received, `sent_at` the time the
  // reply would carry.
  Reflection handle(Bytes& bytes, const Endpoint& peer, Time at, Time sent_at, int ttl = 64) {
    Datagram d;
    d.data = bytes;
    d.peer = peer;
    d.ttl = ttl;
    d.received = at;
    const Reflection r = core_.handle(d, sent_at, out_, counters);
    if (r.answer) ++answered;
    last_size_ = r.answer ? r.size : 0;
    return r;
  }
  Reflection handle(Bytes&& bytes, const Endpoint& peer, Time at) { return handle(bytes, peer, at, at); }
  Reflection handle(Bytes& bytes, const Endpoint& peer, Time at) { return handle(bytes, peer, at, at); }

  // The last reply, decoded.
  ReflectorPacket reply() {
    EXPECT_GT(last_size_, 0u) << "no reply";
    auto r = decode_reflector(std::span(out_).first(last_size_), mode_, &key_);
    EXPECT_TRUE(r.ok()) << r.error();
    return r.ok() ? *r : ReflectorPacket{};
  }
  std::span<const uint8_t> reply_octets() const { return std::span(out_).first(last_size_); }

  // Answered the sender's seq with a reflector seq of...
  uint32_t reflected_seq(uint32_t seq, uint16_t ssid, const Endpoint& peer, Time at) {
    const Reflection r = handle(probe({.seq = seq, .ssid = ssid}), peer, at);
    EXPECT_TRUE(r.answer);
    return reply().seq;
  }

  ReflectorCore& core() { return core_; }
  ReflectorCounters counters;
  uint64_t answered = 0;

 private:
  Mode mode_;
  HmacKey key_;
  ReflectorCore core_;
  Bytes out_ = Bytes(kMaxPacketSize);
  size_t last_size_ = 0;
};

// ---- What a reply carries ----

TEST(ReflectorCore, StatelessCopiesTheSendersSequenceNumber) {
  Core c(unlimited());
  const Endpoint peer = ep("198.18.0.1:40000");
  for (const uint32_t seq : {0u, 7u, 42u, 0xFFFFFFFFu, 3u}) {
    const Reflection r = c.handle(probe({.seq = seq}), peer, kT0);
    ASSERT_TRUE(r.answer);
    const ReflectorPacket p = c.reply();
    EXPECT_EQ(p.seq, seq);
    EXPECT_EQ(p.sender_seq, seq);
  }
  EXPECT_EQ(c.counters.received, 5u);
  EXPECT_EQ(c.answered, 5u);
}

TEST(ReflectorCore, StatefulNumbersEachSessionOnItsOwn) {
  ReflectorOptions o = unlimited();
  o.stateful = true;
  Core c(o);
  const Endpoint a = ep("198.18.0.1:40000"), a_other_port = ep("198.18.0.1:40001"), b = ep("198.18.0.2:40000");
  // A session is (address, port, SSID); the sender's own numbers do not matter.
  EXPECT_EQ(c.reflected_seq(100, 1, a, kT0), 0u);
  EXPECT_EQ(c.reflected_seq(101, 1, a, kT0), 1u);
  EXPECT_EQ(c.reflected_seq(500, 1, a_other_port, kT0), 0u);
  EXPECT_EQ(c.reflected_seq(102, 1, a, kT0), 2u);
  EXPECT_EQ(c.reflected_seq(7, 2, a, kT0), 0u);  // same address and port, another SSID
  EXPECT_EQ(c.reflected_seq(8, 2, a, kT0), 1u);
  EXPECT_EQ(c.reflected_seq(100, 1, b, kT0), 0u);  // another address
  EXPECT_EQ(c.reflected_seq(105, 1, a, kT0), 3u);  // a gap in the sender's numbers: still the next
  EXPECT_EQ(c.reply().sender_seq, 105u);
  EXPECT_EQ(c.reflected_seq(501, 1, a_other_port, kT0), 1u);
}

TEST(ReflectorCore, StatefulDoesNotCountWhatItDidNotAnswer) {
  // Reflector numbers count the packets answered in the session, so a sender can tell
  // loss on the way there (a gap in both) from loss on the way back (a gap in ours only).
  ReflectorOptions o = unlimited();
  o.stateful = true;
  o.mode = Mode::authenticated;
  o.key = HmacKey(kKeyBytes);
  Core c(o);
  const Endpoint a = ep("198.18.0.1:40000");
  const HmacKey wrong(Bytes{'w', 'r', 'o', 'n', 'g', 'k', 'e', 'y'});
  ASSERT_TRUE(c.handle(probe({.seq = 0, .mode = Mode::authenticated, .key = &o.key}), a, kT0).answer);
  EXPECT_EQ(c.reply().seq, 0u);
  EXPECT_FALSE(c.handle(probe({.seq = 1, .mode = Mode::authenticated, .key = &wrong}), a, kT0).answer);
  ASSERT_TRUE(c.handle(probe({.seq = 2, .mode = Mode::authenticated, .key = &o.key}), a, kT0).answer);
  EXPECT_EQ(c.reply().seq, 1u);
}

TEST(ReflectorCore, TimestampsTtlSsidAndErrorEstimates) {
  ReflectorOptions o = unlimited();
  o.error = ErrorEstimate{true, false, 15, 132};
  Core c(o);
  const Time rx = kT0 + Duration(123456);
  const Time tx = rx + Duration(37);
  Bytes b = probe({.seq = 9, .ssid = 0xABCD, .timestamp = {0xE0000002, 0x80000000}, .error = {false, false, 3, 200}});
  ASSERT_TRUE(c.handle(b, ep("198.18.0.1:40000"), rx, tx, 61).answer);
  const ReflectorPacket p = c.reply();
  EXPECT_EQ(p.receive_timestamp, to_ntp(rx));  // when the datagram came
  EXPECT_EQ(p.timestamp, to_ntp(tx));          // when the reply goes
  EXPECT_EQ(p.sender_timestamp, (NtpTimestamp{0xE0000002, 0x80000000}));
  EXPECT_EQ(p.sender_error, (ErrorEstimate{false, false, 3, 200}));
  EXPECT_EQ(p.error, (ErrorEstimate{true, false, 15, 132}));
  EXPECT_EQ(p.ssid, 0xABCD);
  EXPECT_EQ(p.sender_ttl, 61);
  // A TTL the kernel did not give: 0.
  ASSERT_TRUE(c.handle(b, ep("198.18.0.1:40000"), rx, tx, -1).answer);
  EXPECT_EQ(c.reply().sender_ttl, 0);
  ASSERT_TRUE(c.handle(b, ep("198.18.0.1:40000"), rx, tx, 255).answer);
  EXPECT_EQ(c.reply().sender_ttl, 255);
}

TEST(ReflectorCore, ReplySizeIsTheReceivedSize) {
  Core c(unlimited());
  for (const size_t size : {size_t{44}, size_t{45}, size_t{200}, size_t{1500}, kMaxPacketSize}) {
    Bytes b = probe({.seq = 1, .size = size});
    const Reflection r = c.handle(b, ep("198.18.0.1:40000"), kT0);
    ASSERT_TRUE(r.answer) << size;
    EXPECT_EQ(r.size, size);
    EXPECT_EQ(c.reply_octets().size(), size);
    for (size_t i = 44; i < size; ++i) ASSERT_EQ(c.reply_octets()[i], 0) << "padding at " << i;
  }
  ReflectorOptions o = unlimited();
  o.mode = Mode::authenticated;
  o.key = HmacKey(kKeyBytes);
  Core a(o);
  for (const size_t size : {size_t{112}, size_t{113}, size_t{500}}) {
    Bytes b = probe({.seq = 1, .size = size, .mode = Mode::authenticated, .key = &o.key});
    const Reflection r = a.handle(b, ep("198.18.0.1:40000"), kT0);
    ASSERT_TRUE(r.answer) << size;
    EXPECT_EQ(r.size, size);
    EXPECT_EQ(a.reply().sender_seq, 1u);  // signed with the shared key
  }
}

// ---- Dropped and counted ----

TEST(ReflectorCore, MalformedIsCountedAndNotAnswered) {
  Core c(unlimited());
  const Endpoint peer = ep("198.18.0.1:40000");
  Bytes empty, one = {0x42}, short43(43, 0xEE), huge(kMaxPacketSize + 1, 0);
  EXPECT_FALSE(c.handle(empty, peer, kT0).answer);
  EXPECT_FALSE(c.handle(one, peer, kT0).answer);
  EXPECT_FALSE(c.handle(short43, peer, kT0).answer);
  EXPECT_FALSE(c.handle(huge, peer, kT0).answer);  // longer than any STAMP packet
  EXPECT_EQ(c.counters.received, 4u);
  EXPECT_EQ(c.counters.malformed, 4u);
  EXPECT_EQ(c.answered, 0u);
  // Unauthenticated mode has nothing to check beyond the size: 44 octets of anything are
  // a packet (its MBZ fields are ignored).
  Bytes garbage(44, 0xEE);
  EXPECT_TRUE(c.handle(garbage, peer, kT0).answer);
  EXPECT_EQ(c.reply().sender_seq, 0xEEEEEEEEu);
}

TEST(ReflectorCore, AuthenticationFailuresAreCountedApart) {
  ReflectorOptions o = unlimited();
  o.mode = Mode::authenticated;
  o.key = HmacKey(kKeyBytes);
  Core c(o);
  const Endpoint peer = ep("198.18.0.1:40000");
  const HmacKey wrong(Bytes{'w', 'r', 'o', 'n', 'g', 'k', 'e', 'y'});
  EXPECT_FALSE(c.handle(probe({.mode = Mode::authenticated, .key = &wrong}), peer, kT0).answer);
  Bytes garbage(112, 0x5A);
  EXPECT_FALSE(c.handle(garbage, peer, kT0).answer);
  EXPECT_EQ(c.counters.auth_failed, 2u);
  // An unauthenticated packet is too short for this mode: malformed, not an auth failure.
  EXPECT_FALSE(c.handle(probe({}), peer, kT0).answer);
  EXPECT_EQ(c.counters.malformed, 1u);
  EXPECT_EQ(c.counters.auth_failed, 2u);
  EXPECT_TRUE(c.handle(probe({.mode = Mode::authenticated, .key = &o.key}), peer, kT0).answer);
  EXPECT_EQ(c.counters.received, 4u);
  EXPECT_EQ(c.answered, 1u);
}

TEST(ReflectorCore, AuthenticatedWithoutAKeyAnswersNothing) {
  ReflectorOptions o = unlimited();
  o.mode = Mode::authenticated;  // and no key
  Core c(o);
  const HmacKey key(kKeyBytes);
  EXPECT_FALSE(c.handle(probe({.mode = Mode::authenticated, .key = &key}), ep("198.18.0.1:1"), kT0).answer);
  EXPECT_EQ(c.counters.malformed, 1u);
}

// ---- Rate limit per source address ----

TEST(ReflectorCore, RateLimitBurstThenRefillByElapsedTime) {
  ReflectorOptions o;
  o.rate_limit_pps = 10;
  o.burst = 5;
  Core c(o);
  const Endpoint a = ep("198.18.0.1:40000"), a2 = ep("198.18.0.1:40001"), b = ep("198.18.0.2:40000");
  Bytes p = probe({});
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(c.handle(p, a, kT0).answer) << i;
  EXPECT_FALSE(c.handle(p, a, kT0).answer);
  EXPECT_FALSE(c.handle(p, a2, kT0).answer);  // per address: another port is the same source
  EXPECT_EQ(c.counters.rate_limited, 2u);
  // Another source is not affected.
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(c.handle(p, b, kT0).answer) << i;
  // 100 ms at 10/s: one more answer, then limited again.
  EXPECT_TRUE(c.handle(p, a, kT0 + Duration(100000)).answer);
  EXPECT_FALSE(c.handle(p, a, kT0 + Duration(100000)).answer);
  // 50 ms: half a token is not enough...
  EXPECT_FALSE(c.handle(p, a, kT0 + Duration(150000)).answer);
  // ...but it is kept: 50 ms more makes one.
  EXPECT_TRUE(c.handle(p, a, kT0 + Duration(200000)).answer);
  // A long pause refills up to the burst, not beyond.
  const Time later = kT0 + Duration(60 * 1000000);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(c.handle(p, a, later).answer) << i;
  EXPECT_FALSE(c.handle(p, a, later).answer);
  EXPECT_EQ(c.counters.rate_limited, 5u);
  EXPECT_EQ(c.counters.received, c.answered + c.counters.rate_limited);
}

TEST(ReflectorCore, RateLimitSurvivesTheClockSteppingBack) {
  // Datagram times are the kernel's wall clock, which NTP may step backwards. A step back
  // must not drain a source's bucket (and silence it for as long as the step): time that
  // went backwards adds no tokens and takes none away.
  ReflectorOptions o;
  o.rate_limit_pps = 10;
  o.burst = 5;
  Core c(o);
  const Endpoint a = ep("198.18.0.1:40000");
  Bytes p = probe({});
  EXPECT_TRUE(c.handle(p, a, kT0).answer);
  const Time stepped = kT0 - Duration(3600LL * 1000000);  // an hour back
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(c.handle(p, a, stepped).answer) << i;
  EXPECT_FALSE(c.handle(p, a, stepped).answer);  // the burst is spent, as without the step
  // And refilling goes on from the new time.
  EXPECT_TRUE(c.handle(p, a, stepped + Duration(100000)).answer);
  EXPECT_EQ(c.counters.rate_limited, 1u);
}

TEST(ReflectorCore, RateLimitZeroMeansNone) {
  Core c(unlimited());
  Bytes p = probe({});
  for (int i = 0; i < 100000; ++i) ASSERT_TRUE(c.handle(p, ep("198.18.0.1:40000"), kT0).answer) << i;
  EXPECT_EQ(c.counters.rate_limited, 0u);
}

TEST(ReflectorCore, InvalidPacketsDoNotSpendTokens) {
  ReflectorOptions o;
  o.rate_limit_pps = 1;
  o.burst = 1;
  Core c(o);
  Bytes bad(10, 0);
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(c.handle(bad, ep("198.18.0.1:1"), kT0).answer);
  EXPECT_TRUE(c.handle(probe({}), ep("198.18.0.1:1"), kT0).answer);
  EXPECT_EQ(c.counters.malformed, 10u);
  EXPECT_EQ(c.counters.rate_limited, 0u);
}

// ---- Memory bound ----

TEST(ReflectorCore, MaxTrackedForgetsTheOldestSessionFirst) {
  // ReflectorOptions::max_tracked: "sources and sessions remembered (the oldest forgotten
  // first)". With room for two sessions, a third forgets the one not seen the longest.
  ReflectorOptions o = unlimited();
  o.stateful = true;
  o.max_tracked = 2;
  Core c(o);
  const Endpoint a = ep("198.18.0.1:1"), b = ep("198.18.0.2:1"), d = ep("198.18.0.3:1");
  EXPECT_EQ(c.reflected_seq(0, 1, a, kT0), 0u);
  EXPECT_EQ(c.reflected_seq(0, 1, b, kT0), 0u);
  EXPECT_EQ(c.reflected_seq(1, 1, a, kT0), 1u);  // a is now the most recently seen
  EXPECT_EQ(c.reflected_seq(0, 1, d, kT0), 0u);  // a third: b is forgotten
  EXPECT_EQ(c.reflected_seq(2, 1, a, kT0), 2u);  // a goes on
  EXPECT_EQ(c.reflected_seq(1, 1, b, kT0), 0u);  // b starts over (and d, now the oldest, goes)
  EXPECT_EQ(c.reflected_seq(3, 1, a, kT0), 3u);
  EXPECT_EQ(c.reflected_seq(1, 1, d, kT0), 0u);
}

TEST(ReflectorCore, MaxTrackedBoundsRateLimitBuckets) {
  ReflectorOptions o;
  o.rate_limit_pps = 1;
  o.burst = 1;
  o.max_tracked = 2;
  Core c(o);
  Bytes p = probe({});
  const Endpoint a = ep("198.18.0.1:1"), b = ep("198.18.0.2:1"), d = ep("198.18.0.3:1");
  EXPECT_TRUE(c.handle(p, a, kT0).answer);
  EXPECT_FALSE(c.handle(p, a, kT0).answer);  // a's bucket is empty
  EXPECT_TRUE(c.handle(p, b, kT0).answer);
  EXPECT_FALSE(c.handle(p, a, kT0).answer);  // a seen last: b is now the oldest
  EXPECT_TRUE(c.handle(p, d, kT0).answer);   // a third source: b's bucket is forgotten, not a's
  EXPECT_FALSE(c.handle(p, a, kT0).answer);  // a is still limited
  EXPECT_TRUE(c.handle(p, b, kT0).answer);   // b starts with a full bucket again
  // Many sources at once never take a's empty bucket away when a keeps sending.
  for (int i = 0; i < 1000; ++i) {
    EXPECT_FALSE(c.handle(p, a, kT0).answer) << i;
    Bytes q = probe({});
    c.handle(q, ep("10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250) + ":1"), kT0);
  }
}

// ---- The fabsim policy hook ----

TEST(ReflectorCore, PolicyCanDropOrDelay) {
  Core c(unlimited());
  std::vector<uint32_t> seen;
  c.core().set_policy([&](const Datagram& d, const SenderPacket& p) {
    seen.push_back(p.seq);
    EXPECT_EQ(d.peer.port(), 40000);
    Reflection r;
    r.answer = p.seq % 3 != 0;                        // every third is lost
    r.delay = Duration(p.seq % 3 == 2 ? 5000 : 0);  // and some held 5 ms
    return r;
  });
  const Endpoint peer = ep("198.18.0.1:40000");
  for (uint32_t seq = 0; seq < 6; ++seq) {
    const Reflection r = c.handle(probe({.seq = seq}), peer, kT0);
    EXPECT_EQ(r.answer, seq % 3 != 0) << seq;
    if (r.answer) {
      EXPECT_EQ(r.delay, Duration(seq % 3 == 2 ? 5000 : 0)) << seq;
      EXPECT_EQ(c.reply().sender_seq, seq);
    }
  }
  Bytes bad(3, 0);
  c.handle(bad, peer, kT0);  // the policy sees valid packets only
  EXPECT_EQ(seen, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(c.counters.dropped_by_policy, 2u);
  EXPECT_EQ(c.counters.malformed, 1u);
  EXPECT_EQ(c.answered, 4u);
}

// ---- Random input ----

TEST(ReflectorCore, RandomInputNeverCrashesAndIsCountedOnce) {
  std::mt19937_64 rng(20240862);
  const HmacKey key(kKeyBytes);
  for (const Mode mode : {Mode::unauthenticated, Mode::authenticated}) {
    ReflectorOptions o;
    o.mode = mode;
    o.key = key;
    o.stateful = mode == Mode::authenticated;
    o.rate_limit_pps = 100;
    o.burst = 5;
    o.max_tracked = 64;
    Core c(o);
    c.core().set_policy([&](const Datagram&, const SenderPacket& p) {
      Reflection r;
      r.answer = p.seq % 7 != 0;
      return r;
    });
    std::uniform_int_distribution<size_t> length(0, 2000);
    std::uniform_int_distribution<int> octet(0, 255), pct(0, 99), ttl(-1, 255);
    Time now = kT0;
    uint64_t replies_checked = 0;
    for (int i = 0; i < 100000; ++i) {
      const size_t len = length(rng);
      Bytes b(len);
      if (pct(rng) < 30 && len >= base_size(mode)) {
        // A well-formed probe (signed when authenticated), so the valid paths run too.
        b = probe({.seq = static_cast<uint32_t>(rng()), .ssid = static_cast<uint16_t>(rng()), .size = len,
                   .mode = mode, .key = &key});
      } else {
        for (auto& x : b) x = static_cast<uint8_t>(octet(rng));
      }
      // Half from four busy sources (rate limited), half from many (more than max_tracked).
      const Endpoint peer =
          pct(rng) < 50 ? ep("10.9.9." + std::to_string(octet(rng) % 4) + ":" + std::to_string(1000 + octet(rng) % 4))
                        : ep("10." + std::to_string(octet(rng)) + "." + std::to_string(octet(rng)) + ".1:1000");
      now += Duration(rng() % 2000);
      const Reflection r = c.handle(b, peer, now, now, ttl(rng));
      if (r.answer) {
        ASSERT_EQ(r.size, len);
        auto back = decode_reflector(c.reply_octets(), mode, &key);
        ASSERT_TRUE(back.ok()) << back.error();
        ++replies_checked;
      }
    }
    const ReflectorCounters& k = c.counters;
    EXPECT_EQ(k.received, 100000u);
    EXPECT_EQ(k.received, c.answered + k.malformed + k.auth_failed + k.rate_limited + k.dropped_by_policy);
    // Every path was taken.
    EXPECT_GT(c.answered, 0u);
    EXPECT_EQ(replies_checked, c.answered);
    EXPECT_GT(k.malformed, 0u);
    EXPECT_GT(k.rate_limited, 0u);
    EXPECT_GT(k.dropped_by_policy, 0u);
    if (mode == Mode::authenticated) {
      EXPECT_GT(k.auth_failed, 0u);
    }
  }
}

}  // namespace
}  // namespace medic::probes
