// One UDP datagram as the STAMP reflector receives it (probes/reflector.cpp): the first
// input byte picks how the reflector is configured, the rest is the datagram, handed to
// ReflectorCore::handle exactly as Reflector::drain does (decode_sender, admission, the
// reply's encoding). Modes: 0 unauthenticated (stateless), 1 unauthenticated stateful,
// 2 authenticated with the bytes as they are (the HMAC must match), 3 authenticated with
// the harness signing the first 96 octets so the decoding behind the HMAC check is reached.
//
// Invariants: a datagram of the configured mode's size decodes; an answered one gets a reply
// of the received length that decodes (with the reflector's key) to the sender's fields;
// encoding a decoded sender packet gives its bytes back, but for the MBZ octets and padding.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "probes/packet.h"
#include "probes/reflector.h"
#include "tests/fuzz/fuzz_common.h"

using namespace medic;
using namespace medic::probes;

namespace {

const HmacKey& key() {
  static const HmacKey k = *HmacKey::parse("hex:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
  return k;
}

ReflectorCore& core(int which) {
  auto make = [](Mode mode, bool stateful) {
    ReflectorOptions o;
    o.mode = mode;
    o.key = key();
    o.stateful = stateful;
    o.rate_limit_pps = 1000;
    o.burst = 100;
    o.max_tracked = 64;
    o.error = ErrorEstimate::from_seconds(1e-6, true);
    return ReflectorCore(o);
  };
  static ReflectorCore cores[4] = {make(Mode::unauthenticated, false), make(Mode::unauthenticated, true),
                                   make(Mode::authenticated, false), make(Mode::authenticated, true)};
  return cores[which];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int which = data[0] & 3;
  std::vector<uint8_t> bytes(data + 1, data + size);
  const Mode mode = which >= 2 ? Mode::authenticated : Mode::unauthenticated;
  if (which == 3 && bytes.size() >= kAuthenticatedSize) {
    const auto mac = key().mac({bytes.data(), 96});
    std::memcpy(bytes.data() + 96, mac.data(), mac.size());
  }

  static const Endpoint peer = *Endpoint::parse("192.0.2.7:49152");
  static int64_t tick = 0;  // the clock moves on a little with every datagram
  tick += 1000;
  Datagram d;
  d.data = bytes;
  d.peer = peer;
  d.ttl = (data[0] >> 2) == 63 ? -1 : data[0] >> 2;
  d.received = from_unix_seconds(1.8e9) + Duration(tick);
  static std::vector<uint8_t> out(kMaxPacketSize);
  static ReflectorCounters counters;
  const uint64_t malformed = counters.malformed, auth_failed = counters.auth_failed;

  const auto sp = decode_sender(bytes, mode, &key());
  const Reflection r = core(which).handle(d, d.received + Duration(5), out, counters);

  if (bytes.size() > kMaxPacketSize) {
    fuzz::check(!r.answer && counters.malformed == malformed + 1, "an oversized datagram was not refused");
    return 0;
  }
  // The reflector and decode_sender agree: a refused datagram is counted once, as malformed
  // or as failing its HMAC; one that decodes is neither.
  const uint64_t refused = (counters.malformed - malformed) + (counters.auth_failed - auth_failed);
  fuzz::check(refused == (sp.ok() ? 0u : 1u), "the reflector's counters disagree with decode_sender");
  if (which != 2) fuzz::check(sp.ok() == (bytes.size() >= base_size(mode)), "decode_sender refused a full-size datagram");
  if (!sp.ok()) {
    fuzz::check(!r.answer, "answered a datagram that does not decode");
    return 0;
  }

  // Re-encoding gives the same fields back (MBZ octets and padding are zero).
  std::vector<uint8_t> again(bytes.size());
  fuzz::check(encode(*sp, mode, &key(), again, bytes.size()) == bytes.size(), "re-encoding changed the size");
  const auto sp2 = decode_sender(again, mode, &key());
  fuzz::check(sp2.ok(), "a re-encoded sender packet does not decode");
  fuzz::check(sp2->seq == sp->seq && sp2->timestamp == sp->timestamp && sp2->ssid == sp->ssid,
              "sender packet fields changed through encode/decode");
  // Sequence number and timestamp octets come back as they were (the Error Estimate may not:
  // a zero multiplier, which RFC 4656 forbids, is sent back as 1).
  const size_t ts_at = mode == Mode::authenticated ? 16 : 4;
  fuzz::check(std::memcmp(again.data(), bytes.data(), 4) == 0 &&
                  std::memcmp(again.data() + ts_at, bytes.data() + ts_at, 8) == 0,
              "sequence or timestamp octets differ");

  if (!r.answer) return 0;  // rate limited
  fuzz::check(r.size == bytes.size(), "the reply's size is not the datagram's");
  const auto rp = decode_reflector({out.data(), r.size}, mode, &key());
  fuzz::check(rp.ok(), "the reflector's own reply does not decode");
  fuzz::check(rp->sender_seq == sp->seq && rp->sender_timestamp == sp->timestamp && rp->ssid == sp->ssid,
              "the reply does not carry the sender's fields");
  fuzz::check(rp->sender_ttl == (d.ttl >= 0 ? d.ttl : 0), "the reply's TTL is not the datagram's");
  fuzz::check(from_ntp(rp->receive_timestamp) == d.received, "the reply's receive timestamp is not when it came");
  return 0;
}
