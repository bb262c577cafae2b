// STAMP test packets (RFC 8762), with the Session-Sender Identifier of RFC 8972: the
// session-sender's and the session-reflector's packets in unauthenticated mode (44 octets)
// and authenticated mode (112 octets, HMAC-SHA-256 truncated to 128 bits over the first 96
// octets), 64-bit NTP timestamps and the Error Estimate field. Packets may be longer than
// the base size: the rest is zero padding, and a reflector answers with the length it
// received (symmetric size, as TWAMP-Light peers expect).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/time.h"

namespace medic::probes {

inline constexpr size_t kUnauthenticatedSize = 44;
inline constexpr size_t kAuthenticatedSize = 112;
inline constexpr size_t kMaxPacketSize = 9000;
inline constexpr uint16_t kStampPort = 862;

enum class Mode : uint8_t { unauthenticated, authenticated };
inline size_t base_size(Mode m) { return m == Mode::authenticated ? kAuthenticatedSize : kUnauthenticatedSize; }

// NTP 64-bit format: seconds since 1900-01-01 and a binary fraction.
struct NtpTimestamp {
  uint32_t seconds = 0;
  uint32_t fraction = 0;
  bool operator==(const NtpTimestamp&) const = default;
};
NtpTimestamp to_ntp(Time t);
Time from_ntp(NtpTimestamp n);

// RFC 4656 4.1.2: S (clock synchronized to UTC), Z (0: NTP format), Scale, Multiplier;
// the error is Multiplier * 2^-32 * 2^Scale seconds. Multiplier must not be zero.
struct ErrorEstimate {
  bool synchronized = false;
  bool ptp = false;
  uint8_t scale = 0;       // 6 bits
  uint8_t multiplier = 1;
  uint16_t encode() const;
  static ErrorEstimate decode(uint16_t v);
  double seconds() const;
  // The smallest estimate at least `error_s` (for a clock that knows its own error).
  static ErrorEstimate from_seconds(double error_s, bool synchronized);
  bool operator==(const ErrorEstimate&) const = default;
};

struct SenderPacket {
  uint32_t seq = 0;
  NtpTimestamp timestamp;
  ErrorEstimate error;
  uint16_t ssid = 0;
};

struct ReflectorPacket {
  uint32_t seq = 0;
  NtpTimestamp timestamp;  // when the reflector sent it
  ErrorEstimate error;
  uint16_t ssid = 0;
  NtpTimestamp receive_timestamp;  // when the reflector received the sender's packet
  uint32_t sender_seq = 0;
  NtpTimestamp sender_timestamp;
  ErrorEstimate sender_error;
  uint8_t sender_ttl = 0;
};

// The HMAC key of an authenticated session (RFC 8762 4.4 leaves key management to the
// operator: it is configured on both ends).
class HmacKey {
 public:
  HmacKey() = default;
  explicit HmacKey(std::vector<uint8_t> key) : key_(std::move(key)) {}
  // "hex:00112233..." or a passphrase (its bytes).
  static Result<HmacKey> parse(const std::string& text);
  bool empty() const { return key_.empty(); }
  // HMAC-SHA-256 of `data`, first 16 octets.
  std::array<uint8_t, 16> mac(std::span<const uint8_t> data) const;

 private:
  std::vector<uint8_t> key_;
};

// Writes a packet of `size` octets (at least the mode's base size) into `out`, padding with
// zeros, signing in authenticated mode. Returns the size written.
size_t encode(const SenderPacket& p, Mode mode, const HmacKey* key, std::span<uint8_t> out, size_t size);
size_t encode(const ReflectorPacket& p, Mode mode, const HmacKey* key, std::span<uint8_t> out, size_t size);

// Strict decoding: errors say what is wrong ("36 octets, shorter than the 44 of an
// unauthenticated STAMP packet", "HMAC does not match"). MBZ fields are ignored on receipt,
// as RFC 8762 asks.
Result<SenderPacket> decode_sender(std::span<const uint8_t> in, Mode mode, const HmacKey* key);
Result<ReflectorPacket> decode_reflector(std::span<const uint8_t> in, Mode mode, const HmacKey* key);

}  // namespace medic::probes
