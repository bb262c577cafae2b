#include "common/url.h"

#include <algorithm>
#include <charconv>

#include "common/strings.h"

namespace medic {

UrlAuthority url_authority(std::string_view text, size_t scheme, std::string_view stops) {
  constexpr size_t npos = std::string_view::npos;
  UrlAuthority a;
  a.start = scheme == npos ? 0 : std::min(scheme + 3, text.size());
  a.end = std::min(text.find_first_of(stops, a.start), text.size());
  const size_t at = a.end == 0 ? npos : text.rfind('@', a.end - 1);
  if (at != npos && at >= a.start) a.at = at;
  return a;
}

std::string hide_url_passwords(std::string text, std::string_view stops, bool bare) {
  constexpr size_t npos = std::string::npos;
  auto hide = [&](size_t scheme) {
    const UrlAuthority a = url_authority(text, scheme, stops);
    if (a.at == npos) return;
    const size_t colon = text.find(':', a.start);
    if (colon < a.at) text.replace(colon + 1, a.at - colon - 1, "***");
  };
  const size_t first = text.find("://");
  if (first == npos && bare) hide(npos);
  for (size_t s = first; s != npos; s = text.find("://", s + 3)) hide(s);
  return text;
}

namespace {

// A host as a URL may carry it: a name, an IPv4 address, or an IPv6 one in brackets.
bool plain_host(std::string_view h) {
  if (h.empty() || h.size() > 253) return false;
  return std::all_of(h.begin(), h.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
  });
}
bool ipv6_host(std::string_view h) {
  if (h.empty() || h.size() > 45) return false;
  return std::all_of(h.begin(), h.end(), [](char c) {
    return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || (c >= '0' && c <= '9') || c == ':' || c == '.';
  });
}

}  // namespace

bool is_snmp_url(std::string_view url) { return url.rfind("snmp://", 0) == 0; }

std::string SnmpAddress::peer() const {
  if (host.find(':') != std::string::npos) return "udp6:[" + host + "]:" + std::to_string(port);
  return "udp:" + host + ":" + std::to_string(port);
}

Result<SnmpAddress> parse_snmp_url(std::string_view url) {
  const std::string what = "SNMP address " + quote(url, 200);
  if (!is_snmp_url(url)) return Error::invalid(what + " does not start with snmp://");
  std::string_view rest = url.substr(7);
  SnmpAddress a;
  std::string_view port;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return Error::invalid(what + ": an IPv6 address needs its closing ]");
    a.host = std::string(rest.substr(1, close - 1));
    if (!ipv6_host(a.host)) return Error::invalid(what + ": " + quote(a.host) + " is not an IPv6 address");
    rest = rest.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return Error::invalid(what + ": expected :PORT after the address, got " + quote(rest));
      port = rest.substr(1);
      if (port.empty()) return Error::invalid(what + ": empty port");
    }
  } else {
    const size_t colon = rest.find(':');
    a.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = rest.substr(colon + 1);
      if (port.empty()) return Error::invalid(what + ": empty port");
    }
    if (a.host.empty()) return Error::invalid(what + " has no host");
    if (!plain_host(a.host)) {
      return Error::invalid(what + ": " + quote(a.host, 200) +
                            " is not a host name or address (snmp://HOST[:PORT], no path, user or query)");
    }
  }
  if (!port.empty()) {
    unsigned v = 0;
    const auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
    if (ec != std::errc() || p != port.data() + port.size() || v == 0 || v > 65535) {
      return Error::invalid(what + ": port " + quote(port, 40) + " is not a number from 1 to 65535");
    }
    a.port = static_cast<uint16_t>(v);
  }
  return a;
}

}  // namespace medic
