// The userinfo of URLs ("scheme://user:password@host"): found once, for every place that
// shows a URL (errors, logs, metric labels) and must never show its password.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace medic {

// The authority of the URL whose "://" is at `scheme` in `text` (npos: the authority starts
// `text`): from after "://" up to the first byte of `stops`, and the '@' that ends its
// userinfo (npos when it has none; the last '@', so an '@' in a password is covered).
struct UrlAuthority {
  size_t start = 0;
  size_t end = 0;
  size_t at = std::string_view::npos;
};
UrlAuthority url_authority(std::string_view text, size_t scheme, std::string_view stops);

// `text` with the password of each "scheme://user:password@" as *** ("user:***@"). `stops`
// end an authority ("/?#" for a URL; add quotes, spaces and commas for free text). With
// `bare`, a text with no "://" is read as starting with an authority ("user:pw@host").
std::string hide_url_passwords(std::string text, std::string_view stops, bool bare = false);

// An SNMP agent's address in a topology: "snmp://HOST[:PORT]" (port 161 when left out;
// an IPv6 address in brackets); no user, path or query.
struct SnmpAddress {
  std::string host;
  uint16_t port = 161;
  std::string peer() const;  // net-snmp's "udp:HOST:PORT" ("udp6:[HOST]:PORT" for IPv6)
};
bool is_snmp_url(std::string_view url);
Result<SnmpAddress> parse_snmp_url(std::string_view url);

}  // namespace medic
