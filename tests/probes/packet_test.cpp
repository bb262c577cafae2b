// STAMP packets (RFC 8762 with the SSID of RFC 8972): NTP timestamps, the Error Estimate of
// RFC 4656 4.1.2, the four packet layouts octet by octet, padding, strict decoding and the
// HMAC of authenticated mode.
#include "probes/packet.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace medic::probes {
namespace {

using Bytes = std::vector<uint8_t>;

Time unix_s(int64_t s, int64_t us = 0) { return Time(Duration(s * 1000000 + us)); }

// "01 02 0a ..." -> octets (the expected layouts below are written by hand).
Bytes hex(const std::string& text) {
  Bytes out;
  int nibble = -1;
  for (const char c : text) {
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    else continue;
    if (nibble < 0) {
      nibble = v;
    } else {
      out.push_back(static_cast<uint8_t>(nibble << 4 | v));
      nibble = -1;
    }
  }
  EXPECT_LT(nibble, 0) << "odd number of hex digits in a test vector";
  return out;
}

// HMAC-SHA-256 by OpenSSL directly (not through HmacKey), first 16 octets.
Bytes reference_mac(const Bytes& key, const uint8_t* data, size_t len) {
  unsigned char full[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), data, len, full, &n);
  EXPECT_EQ(n, 32u);
  return Bytes(full, full + 16);
}

std::string dump(const Bytes& b) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < b.size(); ++i) {
    if (i) s += (i % 16 == 0) ? '\n' : ' ';
    s += digits[b[i] >> 4];
    s += digits[b[i] & 15];
  }
  return s;
}

// Compares octet by octet and names the first offset that differs.
void expect_octets(const Bytes& got, const Bytes& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i], want[i]) << "first difference at offset " << i << "\ngot:\n" << dump(got) << "\nwant:\n" << dump(want);
  }
}

// ---- NTP timestamps ----

TEST(Ntp, UnixEpochIs2208988800Seconds) {
  EXPECT_EQ(to_ntp(unix_s(0)), (NtpTimestamp{2208988800u, 0}));
  EXPECT_EQ(from_ntp(NtpTimestamp{2208988800u, 0}), unix_s(0));
  // 2000-01-01T00:00:00Z is Unix 946684800.
  EXPECT_EQ(to_ntp(unix_s(946684800)), (NtpTimestamp{3155673600u, 0}));
}

TEST(Ntp, FractionsAreBinary) {
  EXPECT_EQ(to_ntp(unix_s(0, 500000)).fraction, 0x80000000u);
  EXPECT_EQ(to_ntp(unix_s(0, 250000)).fraction, 0x40000000u);
  EXPECT_EQ(to_ntp(unix_s(0, 750000)).fraction, 0xC0000000u);
  // 1 us = 4294.967296 units of 2^-32 s, truncated.
  EXPECT_EQ(to_ntp(unix_s(0, 1)).fraction, 4294u);
  EXPECT_EQ(to_ntp(unix_s(0, 999999)).fraction, 0xFFFFEF39u);  // floor(999999 * 2^32 / 1e6)
  EXPECT_EQ(from_ntp(NtpTimestamp{2208988800u, 0x80000000u}), unix_s(0, 500000));
  EXPECT_EQ(from_ntp(NtpTimestamp{2208988800u, 0x40000000u}), unix_s(0, 250000));
  EXPECT_EQ(from_ntp(NtpTimestamp{2208988800u, 4295u}), unix_s(0, 1));  // rounded to the nearest us
}

TEST(Ntp, BeforeTheUnixEpochSecondsRoundDown) {
  // -0.5 s: one second earlier plus half a second.
  EXPECT_EQ(to_ntp(unix_s(0, -500000)), (NtpTimestamp{2208988799u, 0x80000000u}));
  EXPECT_EQ(from_ntp(NtpTimestamp{2208988799u, 0x80000000u}), unix_s(0, -500000));
}

TEST(Ntp, RoundTripWithinOneMicrosecond) {
  std::mt19937_64 rng(4656);
  // Unix 0 .. 2100-01-01, at microsecond resolution.
  std::uniform_int_distribution<int64_t> us(0, int64_t{4102444800} * 1000000);
  for (int i = 0; i < 100000; ++i) {
    const Time t(Duration(us(rng)));
    const Time back = from_ntp(to_ntp(t));
    ASSERT_LE(std::llabs((back - t).count()), 1) << t.time_since_epoch().count();
  }
  // NTP -> Time -> NTP: the fraction comes back within one microsecond's worth of units.
  std::uniform_int_distribution<uint32_t> u32;
  for (int i = 0; i < 100000; ++i) {
    const NtpTimestamp n{u32(rng), u32(rng)};
    const NtpTimestamp back = to_ntp(from_ntp(n));
    const int64_t a = (int64_t{n.seconds} << 32) + n.fraction;
    const int64_t b = (int64_t{back.seconds} << 32) + back.fraction;
    // Modulo 2^64 (the seconds may wrap from 0xffffffff to 0 when the fraction rounds up).
    const int64_t diff = static_cast<int64_t>(static_cast<uint64_t>(b) - static_cast<uint64_t>(a));
    ASSERT_LE(std::llabs(diff), 4295) << n.seconds << "." << n.fraction;
  }
}

TEST(Ntp, EraOneStartsOn2036February7) {
  // 2036-02-07T06:28:16Z (Unix 2085978496) is 2^32 s after 1900-01-01: NTP seconds wrap to 0.
  constexpr int64_t kEra1 = 2085978496;
  EXPECT_EQ(to_ntp(unix_s(kEra1 - 1)), (NtpTimestamp{0xFFFFFFFFu, 0}));
  EXPECT_EQ(to_ntp(unix_s(kEra1)), (NtpTimestamp{0, 0}));
  EXPECT_EQ(to_ntp(unix_s(kEra1 + 1, 500000)), (NtpTimestamp{1, 0x80000000u}));
  EXPECT_EQ(from_ntp(NtpTimestamp{0, 0}), unix_s(kEra1));
  EXPECT_EQ(from_ntp(NtpTimestamp{0xFFFFFFFFu, 0}), unix_s(kEra1 - 1));
  // 2040-01-01T00:00:00Z (Unix 2208988800) round trips through era 1.
  EXPECT_EQ(to_ntp(unix_s(2208988800)).seconds, 123010304u);  // 2 * 2208988800 - 2^32
  EXPECT_EQ(from_ntp(to_ntp(unix_s(2208988800, 123456))), unix_s(2208988800, 123456));
}

// ---- Error Estimate (RFC 4656 4.1.2) ----

TEST(ErrorEstimate, EncodesEachField) {
  ErrorEstimate e;
  e.synchronized = true;
  e.ptp = false;
  e.scale = 0;
  e.multiplier = 1;
  EXPECT_EQ(e.encode(), 0x8001);  // S is the top bit
  e.synchronized = false;
  e.ptp = true;
  EXPECT_EQ(e.encode(), 0x4001);  // Z the next
  e.ptp = false;
  e.scale = 0x3f;
  EXPECT_EQ(e.encode(), 0x3f01);  // Scale: six bits
  e.scale = 0x15;
  e.multiplier = 0xab;
  EXPECT_EQ(e.encode(), 0x15ab);  // Multiplier: the low octet
  e.synchronized = e.ptp = true;
  e.scale = 0x3f;
  e.multiplier = 0xff;
  EXPECT_EQ(e.encode(), 0xffff);
  e.scale = 0x41;  // only six bits of the scale are sent
  e.synchronized = e.ptp = false;
  e.multiplier = 2;
  EXPECT_EQ(e.encode(), 0x0102);
}

TEST(ErrorEstimate, DecodesEachField) {
  const ErrorEstimate a = ErrorEstimate::decode(0x8f84);
  EXPECT_TRUE(a.synchronized);
  EXPECT_FALSE(a.ptp);
  EXPECT_EQ(a.scale, 0x0f);
  EXPECT_EQ(a.multiplier, 0x84);
  const ErrorEstimate b = ErrorEstimate::decode(0x7f01);
  EXPECT_FALSE(b.synchronized);
  EXPECT_TRUE(b.ptp);
  EXPECT_EQ(b.scale, 0x3f);
  EXPECT_EQ(b.multiplier, 1);
  for (uint32_t v = 0; v <= 0xffff; ++v) {
    const ErrorEstimate e = ErrorEstimate::decode(static_cast<uint16_t>(v));
    if ((v & 0xff) != 0) {
      ASSERT_EQ(e.encode(), v);  // every field survives a round trip
    }
  }
}

TEST(ErrorEstimate, MultiplierIsNeverSentAsZero) {
  ErrorEstimate e;
  e.multiplier = 0;
  e.scale = 5;
  EXPECT_EQ(e.encode() & 0xff, 1);
  EXPECT_EQ(e.encode(), 0x0501);
  // Received as it is: a peer's zero is reported, not invented away.
  EXPECT_EQ(ErrorEstimate::decode(0x0500).multiplier, 0);
  EXPECT_EQ(ErrorEstimate{}.multiplier, 1);
}

TEST(ErrorEstimate, SecondsIsMultiplierTimesTwoToScaleMinus32) {
  ErrorEstimate e;
  e.scale = 32;
  e.multiplier = 3;
  EXPECT_DOUBLE_EQ(e.seconds(), 3.0);
  e.scale = 0;
  e.multiplier = 1;
  EXPECT_DOUBLE_EQ(e.seconds(), std::ldexp(1.0, -32));
  e.scale = 15;
  e.multiplier = 132;
  EXPECT_DOUBLE_EQ(e.seconds(), 132.0 / 131072.0);
}

TEST(ErrorEstimate, FromSecondsKnownValues) {
  // 1 ms: scale 14 would need 263 (> 255); scale 15 needs ceil(131.072) = 132.
  const ErrorEstimate ms = ErrorEstimate::from_seconds(1e-3, false);
  EXPECT_EQ(ms.scale, 15);
  EXPECT_EQ(ms.multiplier, 132);
  EXPECT_FALSE(ms.synchronized);
  EXPECT_FALSE(ms.ptp);
  EXPECT_TRUE(ErrorEstimate::from_seconds(1e-3, true).synchronized);
  // Exactly representable: 1 s = 1 * 2^(32-32), but the smallest scale that holds it wins:
  // 128 * 2^-7 at scale 25.
  const ErrorEstimate one = ErrorEstimate::from_seconds(1.0, false);
  EXPECT_DOUBLE_EQ(one.seconds(), 1.0);
  EXPECT_EQ(one.scale, 25);
  EXPECT_EQ(one.multiplier, 128);
  // Nothing, or less than nothing: the finest estimate there is (multiplier 1, never 0).
  EXPECT_EQ(ErrorEstimate::from_seconds(0, false), (ErrorEstimate{false, false, 0, 1}));
  EXPECT_EQ(ErrorEstimate::from_seconds(-1, false), (ErrorEstimate{false, false, 0, 1}));
  // More than the field can say: the largest estimate.
  EXPECT_EQ(ErrorEstimate::from_seconds(1e30, false), (ErrorEstimate{false, false, 63, 255}));
  EXPECT_EQ(ErrorEstimate::from_seconds(INFINITY, false), (ErrorEstimate{false, false, 63, 255}));
  EXPECT_EQ(ErrorEstimate::from_seconds(NAN, false), (ErrorEstimate{false, false, 63, 255}));  // unknown: the worst
}

TEST(ErrorEstimate, FromSecondsPicksTheSmallestEstimateAtLeastTheError) {
  std::mt19937_64 rng(8762);
  std::uniform_real_distribution<double> exponent(-40, 30);
  for (int i = 0; i < 2000; ++i) {
    const double err = std::pow(2.0, exponent(rng));
    const ErrorEstimate e = ErrorEstimate::from_seconds(err, false);
    ASSERT_NE(e.multiplier, 0);
    ASSERT_GE(e.seconds(), err) << err;
    // No (scale, multiplier) pair the field can carry lies in [err, e.seconds()).
    for (int s = 0; s < 64; ++s) {
      for (int m = 1; m < 256; ++m) {
        const double v = m * std::ldexp(1.0, s - 32);
        ASSERT_FALSE(v >= err && v < e.seconds()) << "error " << err << ": " << m << " at scale " << s
                                                  << " is smaller than " << int(e.multiplier) << " at scale "
                                                  << int(e.scale);
      }
    }
  }
}

// ---- Packet layouts, octet by octet ----

// The sample packets of the four layout tests.
SenderPacket sample_sender() {
  SenderPacket p;
  p.seq = 0x01020304;
  p.timestamp = {0x11223344, 0x55667788};
  p.error = {true, false, 2, 3};  // 0x8203
  p.ssid = 0xBEEF;
  return p;
}

ReflectorPacket sample_reflector() {
  ReflectorPacket p;
  p.seq = 0x0A0B0C0D;
  p.timestamp = {0xA1A2A3A4, 0xA5A6A7A8};
  p.error = {false, false, 0x0f, 0x84};  // 0x0f84
  p.ssid = 0x0007;
  p.receive_timestamp = {0xB1B2B3B4, 0xB5B6B7B8};
  p.sender_seq = 0x00000005;
  p.sender_timestamp = {0xC1C2C3C4, 0xC5C6C7C8};
  p.sender_error = {true, false, 2, 3};  // 0x8203
  p.sender_ttl = 64;
  return p;
}

const Bytes kKey = {'s', 't', 'a', 'm', 'p', '-', 'k', 'e', 'y', '-', '8', '7', '6', '2'};

TEST(PacketLayout, UnauthenticatedSender) {
  // RFC 8762 4.2.1 with RFC 8972's SSID after the Error Estimate.
  const Bytes want = hex(
      "01 02 03 04"                          // 0  Sequence Number
      "11 22 33 44 55 66 77 88"              // 4  Timestamp
      "82 03"                                // 12 Error Estimate: S=1, Z=0, Scale 2, Multiplier 3
      "be ef"                                // 14 SSID
      "00 00 00 00 00 00 00 00 00 00 00 00"  // 16 MBZ (28 octets)
      "00 00 00 00 00 00 00 00 00 00 00 00"
      "00 00 00 00");
  ASSERT_EQ(want.size(), 44u);
  Bytes got(44, 0xAA);
  ASSERT_EQ(encode(sample_sender(), Mode::unauthenticated, nullptr, got, 0), 44u);
  expect_octets(got, want);
  auto back = decode_sender(got, Mode::unauthenticated, nullptr);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->seq, 0x01020304u);
  EXPECT_EQ(back->timestamp, (NtpTimestamp{0x11223344, 0x55667788}));
  EXPECT_EQ(back->error, (ErrorEstimate{true, false, 2, 3}));
  EXPECT_EQ(back->ssid, 0xBEEF);
}

TEST(PacketLayout, UnauthenticatedReflector) {
  // RFC 8762 4.3.1 with RFC 8972's SSID.
  const Bytes want = hex(
      "0a 0b 0c 0d"              // 0  Sequence Number
      "a1 a2 a3 a4 a5 a6 a7 a8"  // 4  Timestamp
      "0f 84"                    // 12 Error Estimate: S=0, Z=0, Scale 15, Multiplier 132
      "00 07"                    // 14 SSID
      "b1 b2 b3 b4 b5 b6 b7 b8"  // 16 Receive Timestamp
      "00 00 00 05"              // 24 Session-Sender Sequence Number
      "c1 c2 c3 c4 c5 c6 c7 c8"  // 28 Session-Sender Timestamp
      "82 03"                    // 36 Session-Sender Error Estimate
      "00 00"                    // 38 MBZ
      "40"                       // 40 Ses-Sender TTL
      "00 00 00");               // 41 MBZ
  ASSERT_EQ(want.size(), 44u);
  Bytes got(44, 0xAA);
  ASSERT_EQ(encode(sample_reflector(), Mode::unauthenticated, nullptr, got, 44), 44u);
  expect_octets(got, want);
  auto back = decode_reflector(got, Mode::unauthenticated, nullptr);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->seq, 0x0A0B0C0Du);
  EXPECT_EQ(back->timestamp, (NtpTimestamp{0xA1A2A3A4, 0xA5A6A7A8}));
  EXPECT_EQ(back->error, (ErrorEstimate{false, false, 0x0f, 0x84}));
  EXPECT_EQ(back->ssid, 7);
  EXPECT_EQ(back->receive_timestamp, (NtpTimestamp{0xB1B2B3B4, 0xB5B6B7B8}));
  EXPECT_EQ(back->sender_seq, 5u);
  EXPECT_EQ(back->sender_timestamp, (NtpTimestamp{0xC1C2C3C4, 0xC5C6C7C8}));
  EXPECT_EQ(back->sender_error, (ErrorEstimate{true, false, 2, 3}));
  EXPECT_EQ(back->sender_ttl, 64);
}

TEST(PacketLayout, AuthenticatedSender) {
  // RFC 8762 4.2.2: Sequence Number, 12 MBZ, Timestamp, Error Estimate, SSID (RFC 8972),
  // MBZ up to octet 96, then the HMAC over octets 0..95.
  Bytes want = hex(
      "01 02 03 04"                          // 0  Sequence Number
      "00 00 00 00 00 00 00 00 00 00 00 00"  // 4  MBZ (12 octets)
      "11 22 33 44 55 66 77 88"              // 16 Timestamp
      "82 03"                                // 24 Error Estimate
      "be ef");                              // 26 SSID
  want.resize(96, 0);                        // 28 MBZ (68 octets)
  const Bytes mac = reference_mac(kKey, want.data(), 96);
  want.insert(want.end(), mac.begin(), mac.end());  // 96 HMAC (16 octets)
  ASSERT_EQ(want.size(), 112u);
  const HmacKey key(kKey);
  Bytes got(112, 0xAA);
  ASSERT_EQ(encode(sample_sender(), Mode::authenticated, &key, got, 0), 112u);
  expect_octets(got, want);
  auto back = decode_sender(got, Mode::authenticated, &key);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->seq, 0x01020304u);
  EXPECT_EQ(back->timestamp, (NtpTimestamp{0x11223344, 0x55667788}));
  EXPECT_EQ(back->error, (ErrorEstimate{true, false, 2, 3}));
  EXPECT_EQ(back->ssid, 0xBEEF);
}

TEST(PacketLayout, AuthenticatedReflector) {
  // RFC 8762 4.3.2.
  Bytes want = hex(
      "0a 0b 0c 0d"                          // 0  Sequence Number
      "00 00 00 00 00 00 00 00 00 00 00 00"  // 4  MBZ (12 octets)
      "a1 a2 a3 a4 a5 a6 a7 a8"              // 16 Timestamp
      "0f 84"                                // 24 Error Estimate
      "00 07"                                // 26 SSID (RFC 8972)
      "00 00 00 00"                          // 28 MBZ (4 octets)
      "b1 b2 b3 b4 b5 b6 b7 b8"              // 32 Receive Timestamp
      "00 00 00 00 00 00 00 00"              // 40 MBZ (8 octets)
      "00 00 00 05"                          // 48 Session-Sender Sequence Number
      "00 00 00 00 00 00 00 00 00 00 00 00"  // 52 MBZ (12 octets)
      "c1 c2 c3 c4 c5 c6 c7 c8"              // 64 Session-Sender Timestamp
      "82 03"                                // 72 Session-Sender Error Estimate
      "00 00 00 00 00 00"                    // 74 MBZ (6 octets)
      "40"                                   // 80 Ses-Sender TTL
      "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00");  // 81 MBZ (15 octets)
  ASSERT_EQ(want.size(), 96u);
  const Bytes mac = reference_mac(kKey, want.data(), 96);
  want.insert(want.end(), mac.begin(), mac.end());  // 96 HMAC
  const HmacKey key(kKey);
  Bytes got(112, 0xAA);
  ASSERT_EQ(encode(sample_reflector(), Mode::authenticated, &key, got, 112), 112u);
  expect_octets(got, want);
  auto back = decode_reflector(got, Mode::authenticated, &key);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->seq, 0x0A0B0C0Du);
  EXPECT_EQ(back->timestamp, (NtpTimestamp{0xA1A2A3A4, 0xA5A6A7A8}));
  EXPECT_EQ(back->error, (ErrorEstimate{false, false, 0x0f, 0x84}));
  EXPECT_EQ(back->ssid, 7);
  EXPECT_EQ(back->receive_timestamp, (NtpTimestamp{0xB1B2B3B4, 0xB5B6B7B8}));
  EXPECT_EQ(back->sender_seq, 5u);
  EXPECT_EQ(back->sender_timestamp, (NtpTimestamp{0xC1C2C3C4, 0xC5C6C7C8}));
  EXPECT_EQ(back->sender_error, (ErrorEstimate{true, false, 2, 3}));
  EXPECT_EQ(back->sender_ttl, 64);
}

// ---- Round trips, padding, sizes ----

TEST(PacketRoundTrip, RandomPacketsInBothModes) {
  std::mt19937_64 rng(8972);
  std::uniform_int_distribution<uint32_t> u32;
  auto ee = [&] { return ErrorEstimate::decode(static_cast<uint16_t>(u32(rng) | 1)); };
  const HmacKey key(kKey);
  for (const Mode mode : {Mode::unauthenticated, Mode::authenticated}) {
    for (int i = 0; i < 1000; ++i) {
      const size_t size = base_size(mode) + u32(rng) % 300;
      SenderPacket s{u32(rng), {u32(rng), u32(rng)}, ee(), static_cast<uint16_t>(u32(rng))};
      Bytes buf(kMaxPacketSize);
      ASSERT_EQ(encode(s, mode, &key, buf, size), size);
      auto sb = decode_sender(std::span(buf).first(size), mode, &key);
      ASSERT_TRUE(sb.ok()) << sb.error();
      EXPECT_EQ(sb->seq, s.seq);
      EXPECT_EQ(sb->timestamp, s.timestamp);
      EXPECT_EQ(sb->error, s.error);
      EXPECT_EQ(sb->ssid, s.ssid);

      ReflectorPacket r{u32(rng),          {u32(rng), u32(rng)}, ee(), static_cast<uint16_t>(u32(rng)),
                        {u32(rng), u32(rng)}, u32(rng),           {u32(rng), u32(rng)},
                        ee(),              static_cast<uint8_t>(u32(rng))};
      ASSERT_EQ(encode(r, mode, &key, buf, size), size);
      auto rb = decode_reflector(std::span(buf).first(size), mode, &key);
      ASSERT_TRUE(rb.ok()) << rb.error();
      EXPECT_EQ(rb->seq, r.seq);
      EXPECT_EQ(rb->timestamp, r.timestamp);
      EXPECT_EQ(rb->error, r.error);
      EXPECT_EQ(rb->ssid, r.ssid);
      EXPECT_EQ(rb->receive_timestamp, r.receive_timestamp);
      EXPECT_EQ(rb->sender_seq, r.sender_seq);
      EXPECT_EQ(rb->sender_timestamp, r.sender_timestamp);
      EXPECT_EQ(rb->sender_error, r.sender_error);
      EXPECT_EQ(rb->sender_ttl, r.sender_ttl);
    }
  }
}

TEST(PacketSize, PaddedWithZerosToTheAskedSize) {
  const HmacKey key(kKey);
  for (const Mode mode : {Mode::unauthenticated, Mode::authenticated}) {
    for (const size_t size : {size_t{200}, size_t{1500}, kMaxPacketSize}) {
      Bytes buf(kMaxPacketSize + 16, 0xAA);
      ASSERT_EQ(encode(sample_reflector(), mode, &key, buf, size), size);
      for (size_t i = base_size(mode); i < size; ++i) ASSERT_EQ(buf[i], 0) << "offset " << i;
      for (size_t i = size; i < buf.size(); ++i) ASSERT_EQ(buf[i], 0xAA) << "written past the size at " << i;
      // The padding changes nothing in the packet itself.
      Bytes base(base_size(mode));
      encode(sample_reflector(), mode, &key, base, 0);
      EXPECT_TRUE(std::equal(base.begin(), base.end(), buf.begin())) << "size " << size;
      auto back = decode_reflector(std::span(buf).first(size), mode, &key);
      ASSERT_TRUE(back.ok()) << back.error();
      EXPECT_EQ(back->sender_seq, 5u);
    }
  }
}

TEST(PacketSize, NeverBelowTheBaseSizeAndNeverPastTheBuffer) {
  Bytes buf(200, 0xAA);
  EXPECT_EQ(encode(sample_sender(), Mode::unauthenticated, nullptr, buf, 10), 44u);
  const HmacKey key(kKey);
  EXPECT_EQ(encode(sample_sender(), Mode::authenticated, &key, buf, 44), 112u);
  // A buffer too small for the packet: nothing written, 0 returned.
  Bytes small(43, 0xAA);
  EXPECT_EQ(encode(sample_sender(), Mode::unauthenticated, nullptr, small, 0), 0u);
  EXPECT_EQ(small, Bytes(43, 0xAA));
  Bytes mid(150, 0xAA);
  EXPECT_EQ(encode(sample_reflector(), Mode::unauthenticated, nullptr, mid, 151), 0u);
  EXPECT_EQ(mid, Bytes(150, 0xAA));
}

TEST(PacketSize, SymmetricSizeTheSameFieldsInALongerPacket) {
  // A reflector answers with the received length: a 1000-octet reply decodes like a 44.
  Bytes shortp(44), longp(1000);
  encode(sample_reflector(), Mode::unauthenticated, nullptr, shortp, 44);
  encode(sample_reflector(), Mode::unauthenticated, nullptr, longp, 1000);
  EXPECT_TRUE(std::equal(shortp.begin(), shortp.end(), longp.begin()));
  auto a = decode_reflector(shortp, Mode::unauthenticated, nullptr);
  auto b = decode_reflector(longp, Mode::unauthenticated, nullptr);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->sender_seq, b->sender_seq);
  EXPECT_EQ(a->receive_timestamp, b->receive_timestamp);
}

// ---- Decoding errors ----

TEST(PacketDecode, ShortPacketsSayHowShort) {
  const Bytes b36(36), b0, b43(43), b111(111), b44(44);
  auto s = decode_sender(b36, Mode::unauthenticated, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), "36 octets, shorter than the 44 of an unauthenticated STAMP packet");
  auto z = decode_reflector(b0, Mode::unauthenticated, nullptr);
  ASSERT_FALSE(z.ok());
  EXPECT_EQ(z.error(), "0 octets, shorter than the 44 of an unauthenticated STAMP packet");
  EXPECT_EQ(decode_reflector(b43, Mode::unauthenticated, nullptr).error(),
            "43 octets, shorter than the 44 of an unauthenticated STAMP packet");
  const HmacKey key(kKey);
  EXPECT_EQ(decode_sender(b111, Mode::authenticated, &key).error(),
            "111 octets, shorter than the 112 of an authenticated STAMP packet");
  EXPECT_EQ(decode_reflector(b44, Mode::authenticated, &key).error(),
            "44 octets, shorter than the 112 of an authenticated STAMP packet");
  EXPECT_TRUE(decode_sender(b44, Mode::unauthenticated, nullptr).ok());
}

TEST(PacketDecode, HmacMismatch) {
  const HmacKey key(kKey), other(Bytes{'a', 'n', 'o', 't', 'h', 'e', 'r', '-', 'k', 'e', 'y'});
  Bytes buf(112);
  encode(sample_sender(), Mode::authenticated, &key, buf, 0);
  ASSERT_TRUE(decode_sender(buf, Mode::authenticated, &key).ok());
  EXPECT_EQ(decode_sender(buf, Mode::authenticated, &other).error(), "HMAC does not match");
  // Any octet under the HMAC, and the HMAC itself, matters.
  for (const size_t at : {size_t{0}, size_t{20}, size_t{27}, size_t{50}, size_t{95}, size_t{96}, size_t{111}}) {
    Bytes bad = buf;
    bad[at] ^= 0x01;
    auto r = decode_sender(bad, Mode::authenticated, &key);
    ASSERT_FALSE(r.ok()) << "flipped offset " << at;
    EXPECT_EQ(r.error(), "HMAC does not match");
  }
  Bytes rbuf(112);
  encode(sample_reflector(), Mode::authenticated, &key, rbuf, 0);
  EXPECT_EQ(decode_reflector(rbuf, Mode::authenticated, &other).error(), "HMAC does not match");
  // Signed without a key: the HMAC field stays zero, which no key matches.
  Bytes unsigned_buf(112);
  encode(sample_sender(), Mode::authenticated, nullptr, unsigned_buf, 0);
  EXPECT_EQ(decode_sender(unsigned_buf, Mode::authenticated, &key).error(), "HMAC does not match");
}

TEST(PacketDecode, PaddingIsNotCoveredByTheHmac) {
  // RFC 8762 4.4: the HMAC covers the first six 16-octet blocks only.
  const HmacKey key(kKey);
  Bytes buf(300);
  encode(sample_sender(), Mode::authenticated, &key, buf, 300);
  buf[200] = 0x55;
  EXPECT_TRUE(decode_sender(buf, Mode::authenticated, &key).ok());
}

TEST(PacketDecode, AuthenticatedModeWithoutAKey) {
  const HmacKey key(kKey), empty;
  Bytes buf(112);
  encode(sample_sender(), Mode::authenticated, &key, buf, 0);
  EXPECT_EQ(decode_sender(buf, Mode::authenticated, nullptr).error(), "authenticated mode without a key");
  EXPECT_EQ(decode_sender(buf, Mode::authenticated, &empty).error(), "authenticated mode without a key");
  EXPECT_EQ(decode_reflector(buf, Mode::authenticated, nullptr).error(), "authenticated mode without a key");
  // Unauthenticated mode needs none, and ignores one given.
  Bytes u(44);
  encode(sample_sender(), Mode::unauthenticated, nullptr, u, 0);
  EXPECT_TRUE(decode_sender(u, Mode::unauthenticated, nullptr).ok());
  EXPECT_TRUE(decode_sender(u, Mode::unauthenticated, &key).ok());
}

TEST(PacketDecode, MbzFieldsAreIgnoredOnReceipt) {
  // Unauthenticated reflector packet: MBZ at 38-39 and 41-43.
  Bytes r(44);
  encode(sample_reflector(), Mode::unauthenticated, nullptr, r, 0);
  for (const size_t at : {38, 39, 41, 42, 43}) r[at] = 0xFF;
  auto rb = decode_reflector(r, Mode::unauthenticated, nullptr);
  ASSERT_TRUE(rb.ok()) << rb.error();
  EXPECT_EQ(rb->sender_ttl, 64);
  EXPECT_EQ(rb->sender_error, (ErrorEstimate{true, false, 2, 3}));
  // Unauthenticated sender packet: MBZ from 16 to 43.
  Bytes s(44);
  encode(sample_sender(), Mode::unauthenticated, nullptr, s, 0);
  for (size_t at = 16; at < 44; ++at) s[at] = 0xFF;
  auto sb = decode_sender(s, Mode::unauthenticated, nullptr);
  ASSERT_TRUE(sb.ok()) << sb.error();
  EXPECT_EQ(sb->seq, 0x01020304u);
  EXPECT_EQ(sb->ssid, 0xBEEF);
  // Authenticated: MBZ filled before signing still decodes to the same fields.
  const HmacKey key(kKey);
  Bytes a(112);
  encode(sample_reflector(), Mode::authenticated, &key, a, 0);
  for (const size_t at : {4, 15, 28, 31, 40, 47, 52, 63, 74, 79, 81, 95}) a[at] = 0xFF;
  const auto mac = key.mac(std::span<const uint8_t>(a).first(96));
  std::copy(mac.begin(), mac.end(), a.begin() + 96);
  auto ab = decode_reflector(a, Mode::authenticated, &key);
  ASSERT_TRUE(ab.ok()) << ab.error();
  EXPECT_EQ(ab->seq, 0x0A0B0C0Du);
  EXPECT_EQ(ab->ssid, 7);
  EXPECT_EQ(ab->receive_timestamp, (NtpTimestamp{0xB1B2B3B4, 0xB5B6B7B8}));
  EXPECT_EQ(ab->sender_seq, 5u);
  EXPECT_EQ(ab->sender_ttl, 64);
}

// ---- Keys and the HMAC ----

TEST(HmacKey, ParsesHex) {
  auto k = HmacKey::parse("hex:4a656665");
  ASSERT_TRUE(k.ok()) << k.error();
  EXPECT_FALSE(k->empty());
  // Upper and lower case digits are the same key.
  auto upper = HmacKey::parse("hex:4A656665");
  ASSERT_TRUE(upper.ok());
  const Bytes data = {1, 2, 3};
  EXPECT_EQ(k->mac(data), upper->mac(data));
  // "hex:4a656665" is the octets of "Jefe".
  EXPECT_EQ(k->mac(data), HmacKey(Bytes{'J', 'e', 'f', 'e'}).mac(data));
}

TEST(HmacKey, HexErrors) {
  auto odd = HmacKey::parse("hex:abc");
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.error(), "an HMAC key written hex: needs an even number of hex digits");
  EXPECT_EQ(HmacKey::parse("hex:").error(), "an HMAC key written hex: needs an even number of hex digits");
  auto bad = HmacKey::parse("hex:00zz");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "not a hex digit in the HMAC key: 'z'");
  EXPECT_EQ(HmacKey::parse("hex:0g").error(), "not a hex digit in the HMAC key: 'g'");
}

TEST(HmacKey, Passphrases) {
  auto k = HmacKey::parse("correct horse");
  ASSERT_TRUE(k.ok()) << k.error();
  const Bytes data = {9, 9, 9};
  const std::string phrase = "correct horse";
  EXPECT_EQ(k->mac(data), HmacKey(Bytes(phrase.begin(), phrase.end())).mac(data));
  EXPECT_TRUE(HmacKey::parse("12345678").ok());
  auto short_one = HmacKey::parse("1234567");
  ASSERT_FALSE(short_one.ok());
  EXPECT_EQ(short_one.error(), "an HMAC key must be at least 8 characters (or hex:...)");
  EXPECT_EQ(HmacKey::parse("").error(), "an HMAC key must be at least 8 characters (or hex:...)");
  EXPECT_TRUE(HmacKey().empty());
}

TEST(HmacKey, Rfc4231TestCase2) {
  // Key "Jefe", data "what do ya want for nothing?": HMAC-SHA-256 begins 5bdcc146bf60754e6a042426089575c7.
  const std::string data = "what do ya want for nothing?";
  const std::array<uint8_t, 16> want = {0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e,
                                        0x6a, 0x04, 0x24, 0x26, 0x08, 0x95, 0x75, 0xc7};
  const Bytes bytes(data.begin(), data.end());
  EXPECT_EQ(HmacKey(Bytes{'J', 'e', 'f', 'e'}).mac(bytes), want);
  auto parsed = HmacKey::parse("hex:4a656665");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->mac(bytes), want);
}

}  // namespace
}  // namespace medic::probes
