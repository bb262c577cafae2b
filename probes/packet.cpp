#include "probes/packet.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cmath>
#include <cstring>

namespace medic::probes {

namespace {

// Seconds from 1900-01-01 (NTP era 0) to 1970-01-01.
constexpr uint64_t kNtpUnixOffset = 2208988800ull;

void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void put32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t get32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 | static_cast<uint32_t>(p[2]) << 8 | p[3];
}
void put_ts(uint8_t* p, NtpTimestamp t) {
  put32(p, t.seconds);
  put32(p + 4, t.fraction);
}
NtpTimestamp get_ts(const uint8_t* p) { return {get32(p), get32(p + 4)}; }

// Field offsets: unauthenticated / authenticated (RFC 8762 4.2.1, 4.2.2, 4.3.1, 4.3.2;
// the SSID of RFC 8972 takes the first two octets after the Error Estimate).
struct SenderLayout {
  size_t seq, ts, err, ssid;
};
constexpr SenderLayout kSender[2] = {{0, 4, 12, 14}, {0, 16, 24, 26}};
struct ReflectorLayout {
  size_t seq, ts, err, ssid, rx_ts, s_seq, s_ts, s_err, s_ttl;
};
constexpr ReflectorLayout kReflector[2] = {{0, 4, 12, 14, 16, 24, 28, 36, 40}, {0, 16, 24, 26, 32, 48, 64, 72, 80}};
constexpr size_t kHmacOffset = 96;

std::string size_error(size_t got, Mode mode) {
  return std::to_string(got) + " octets, shorter than the " + std::to_string(base_size(mode)) + " of " +
         (mode == Mode::authenticated ? "an authenticated" : "an unauthenticated") + " STAMP packet";
}

}  // namespace

NtpTimestamp to_ntp(Time t) {
  const int64_t us = t.time_since_epoch().count();
  const int64_t secs = us >= 0 ? us / 1000000 : (us - 999999) / 1000000;
  const int64_t frac_us = us - secs * 1000000;
  NtpTimestamp n;
  n.seconds = static_cast<uint32_t>(static_cast<uint64_t>(secs) + kNtpUnixOffset);
  n.fraction = static_cast<uint32_t>((static_cast<uint64_t>(frac_us) << 32) / 1000000);
  return n;
}

Time from_ntp(NtpTimestamp n) {
  // Era 0 (until 2036) mapped to Unix time; later seconds wrap into era 1.
  int64_t secs = static_cast<int64_t>(n.seconds) - static_cast<int64_t>(kNtpUnixOffset);
  if (n.seconds < (1u << 31)) secs += int64_t{1} << 32;  // era 1: from 2036-02-07
  const int64_t us = static_cast<int64_t>((static_cast<uint64_t>(n.fraction) * 1000000 + (uint64_t{1} << 31)) >> 32);
  return Time(Duration(secs * 1000000 + us));
}

uint16_t ErrorEstimate::encode() const {
  return static_cast<uint16_t>((synchronized ? 0x8000 : 0) | (ptp ? 0x4000 : 0) | ((scale & 0x3f) << 8) |
                               (multiplier == 0 ? 1 : multiplier));
}

ErrorEstimate ErrorEstimate::decode(uint16_t v) {
  ErrorEstimate e;
  e.synchronized = (v & 0x8000) != 0;
  e.ptp = (v & 0x4000) != 0;
  e.scale = static_cast<uint8_t>((v >> 8) & 0x3f);
  e.multiplier = static_cast<uint8_t>(v & 0xff);
  return e;
}

double ErrorEstimate::seconds() const { return multiplier * std::ldexp(1.0, scale - 32); }

ErrorEstimate ErrorEstimate::from_seconds(double error_s, bool synchronized) {
  ErrorEstimate e;
  e.synchronized = synchronized;
  for (int scale = 0; scale < 64; ++scale) {
    const double unit = std::ldexp(1.0, scale - 32);
    const double m = std::ceil(error_s / unit);
    if (m <= 255) {
      e.scale = static_cast<uint8_t>(scale);
      e.multiplier = static_cast<uint8_t>(std::max(1.0, m));
      return e;
    }
  }
  e.scale = 63;
  e.multiplier = 255;
  return e;
}

Result<HmacKey> HmacKey::parse(const std::string& text) {
  if (text.rfind("hex:", 0) == 0) {
    const std::string hex = text.substr(4);
    if (hex.empty() || hex.size() % 2 != 0) return Error{"an HMAC key written hex: needs an even number of hex digits"};
    std::vector<uint8_t> key;
    for (size_t i = 0; i < hex.size(); i += 2) {
      unsigned v = 0;
      for (int k = 0; k < 2; ++k) {
        const char c = hex[i + k];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
        else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
        else return Error{"not a hex digit in the HMAC key: '" + std::string(1, c) + "'"};
      }
      key.push_back(static_cast<uint8_t>(v));
    }
    return HmacKey(std::move(key));
  }
  if (text.size() < 8) return Error{"an HMAC key must be at least 8 characters (or hex:...)"};
  return HmacKey(std::vector<uint8_t>(text.begin(), text.end()));
}

std::array<uint8_t, 16> HmacKey::mac(std::span<const uint8_t> data) const {
  unsigned char full[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()), data.data(), data.size(), full, &len);
  std::array<uint8_t, 16> out{};
  std::memcpy(out.data(), full, 16);
  return out;
}

size_t encode(const SenderPacket& p, Mode mode, const HmacKey* key, std::span<uint8_t> out, size_t size) {
  size = std::max(size, base_size(mode));
  if (out.size() < size) return 0;
  std::memset(out.data(), 0, size);
  const SenderLayout& l = kSender[mode == Mode::authenticated];
  uint8_t* b = out.data();
  put32(b + l.seq, p.seq);
  put_ts(b + l.ts, p.timestamp);
  put16(b + l.err, p.error.encode());
  put16(b + l.ssid, p.ssid);
  if (mode == Mode::authenticated && key != nullptr) {
    const auto mac = key->mac({b, kHmacOffset});
    std::memcpy(b + kHmacOffset, mac.data(), mac.size());
  }
  return size;
}

size_t encode(const ReflectorPacket& p, Mode mode, const HmacKey* key, std::span<uint8_t> out, size_t size) {
  size = std::max(size, base_size(mode));
  if (out.size() < size) return 0;
  std::memset(out.data(), 0, size);
  const ReflectorLayout& l = kReflector[mode == Mode::authenticated];
  uint8_t* b = out.data();
  put32(b + l.seq, p.seq);
  put_ts(b + l.ts, p.timestamp);
  put16(b + l.err, p.error.encode());
  put16(b + l.ssid, p.ssid);
  put_ts(b + l.rx_ts, p.receive_timestamp);
  put32(b + l.s_seq, p.sender_seq);
  put_ts(b + l.s_ts, p.sender_timestamp);
  put16(b + l.s_err, p.sender_error.encode());
  b[l.s_ttl] = p.sender_ttl;
  if (mode == Mode::authenticated && key != nullptr) {
    const auto mac = key->mac({b, kHmacOffset});
    std::memcpy(b + kHmacOffset, mac.data(), mac.size());
  }
  return size;
}

namespace {
Status check(std::span<const uint8_t> in, Mode mode, const HmacKey* key) {
  if (in.size() < base_size(mode)) return Error{size_error(in.size(), mode)};
  if (mode == Mode::authenticated) {
    if (key == nullptr || key->empty()) return Error{"authenticated mode without a key"};
    const auto mac = key->mac(in.first(kHmacOffset));
    // Constant-time comparison: the HMAC is a secret check.
    uint8_t diff = 0;
    for (size_t i = 0; i < mac.size(); ++i) diff |= static_cast<uint8_t>(mac[i] ^ in[kHmacOffset + i]);
    if (diff != 0) return Error{"HMAC does not match"};
  }
  return Ok{};
}
}  // namespace

Result<SenderPacket> decode_sender(std::span<const uint8_t> in, Mode mode, const HmacKey* key) {
  if (auto st = check(in, mode, key); !st.ok()) return st.failure();
  const SenderLayout& l = kSender[mode == Mode::authenticated];
  const uint8_t* b = in.data();
  SenderPacket p;
  p.seq = get32(b + l.seq);
  p.timestamp = get_ts(b + l.ts);
  p.error = ErrorEstimate::decode(get16(b + l.err));
  p.ssid = get16(b + l.ssid);
  return p;
}

Result<ReflectorPacket> decode_reflector(std::span<const uint8_t> in, Mode mode, const HmacKey* key) {
  if (auto st = check(in, mode, key); !st.ok()) return st.failure();
  const ReflectorLayout& l = kReflector[mode == Mode::authenticated];
  const uint8_t* b = in.data();
  ReflectorPacket p;
  p.seq = get32(b + l.seq);
  p.timestamp = get_ts(b + l.ts);
  p.error = ErrorEstimate::decode(get16(b + l.err));
  p.ssid = get16(b + l.ssid);
  p.receive_timestamp = get_ts(b + l.rx_ts);
  p.sender_seq = get32(b + l.s_seq);
  p.sender_timestamp = get_ts(b + l.s_ts);
  p.sender_error = ErrorEstimate::decode(get16(b + l.s_err));
  p.sender_ttl = b[l.s_ttl];
  return p;
}

}  // namespace medic::probes
