#include "telemetry/snmp_traps.h"

#include <arpa/inet.h>
#include <net-snmp/library/large_fd_set.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <unordered_map>

#include "common/strings.h"
#include "telemetry/netsnmp.h"

#include <spdlog/spdlog.h>

namespace medic::telemetry {

namespace {

// The USM and parse failures net-snmp counts when it drops a message before any callback.
constexpr int kRefusals[] = {STAT_USMSTATSUNSUPPORTEDSECLEVELS, STAT_USMSTATSNOTINTIMEWINDOWS,
                             STAT_USMSTATSUNKNOWNUSERNAMES,     STAT_USMSTATSUNKNOWNENGINEIDS,
                             STAT_USMSTATSWRONGDIGESTS,         STAT_USMSTATSDECRYPTIONERRORS,
                             STAT_SNMPUNKNOWNSECURITYMODELS,    STAT_SNMPINBADCOMMUNITYNAMES};

uint64_t sum_of(std::span<const int> stats) {
  uint64_t n = 0;
  for (const int s : stats) n += snmp_get_statistic(s);
  return n;
}

std::string address_of(const netsnmp_pdu* pdu) {
  if (pdu->transport_data == nullptr || pdu->transport_data_length < static_cast<int>(sizeof(netsnmp_indexed_addr_pair))) {
    return {};
  }
  const auto* pair = static_cast<const netsnmp_indexed_addr_pair*>(pdu->transport_data);
  char text[INET6_ADDRSTRLEN] = {0};
  if (pair->remote_addr.sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &pair->remote_addr.sin.sin_addr, text, sizeof text);
  } else if (pair->remote_addr.sa.sa_family == AF_INET6) {
    const auto& a6 = pair->remote_addr.sin6.sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&a6)) {
      inet_ntop(AF_INET, &a6.s6_addr[12], text, sizeof text);
    } else {
      inet_ntop(AF_INET6, &a6, text, sizeof text);
    }
  }
  return text;
}

// An address as the agents' table keys it (IPv6 in its canonical text).
std::string canonical(std::string ip) {
  if (const size_t scope = ip.find('%'); scope != std::string::npos) ip.resize(scope);  // fe80::1%eth0
  in6_addr a6{};
  in_addr a4{};
  char text[INET6_ADDRSTRLEN] = {0};
  if (inet_pton(AF_INET, ip.c_str(), &a4) == 1) return ip;
  if (inet_pton(AF_INET6, ip.c_str(), &a6) == 1 && inet_ntop(AF_INET6, &a6, text, sizeof text) != nullptr) return text;
  return {};
}

}  // namespace

struct SnmpTrapReceiver::Impl {
  SnmpCredentials credentials;
  std::unordered_map<std::string, fabric::DeviceId> agents;
  void* sess = nullptr;
  int fd = -1;
  uint16_t port = 0;
  std::string address;
  SnmpTrapCounters counters;
  netsnmp_large_fd_set fdset;
  std::vector<SnmpLinkNotification> out;  // filled by the callback during read()
  const Clock* clock = nullptr;
  bool called_back = false;

  ~Impl() {
    if (sess != nullptr) snmp_sess_close(sess);
    netsnmp_large_fd_set_cleanup(&fdset);
  }

  bool authentic(const netsnmp_pdu* pdu) const {
    if (pdu->version == SNMP_VERSION_2c) {
      const std::string_view said(reinterpret_cast<const char*>(pdu->community), pdu->community_len);
      return credentials.version == SnmpCredentials::Version::v2c && !credentials.community.empty() &&
             said == credentials.community;
    }
    if (pdu->version == SNMP_VERSION_3) {
      // net-snmp checked the keys; the user and the level are medicd's to check.
      const std::string_view user(pdu->securityName != nullptr ? pdu->securityName : "", pdu->securityNameLen);
      return credentials.version == SnmpCredentials::Version::v3 && user == credentials.user &&
             pdu->securityLevel == SNMP_SEC_LEVEL_AUTHPRIV;
    }
    return false;  // SNMPv1 traps are not read
  }

  void take(netsnmp_pdu* pdu) {
    const bool inform = pdu->command == SNMP_MSG_INFORM;
    if (pdu->command != SNMP_MSG_TRAP2 && !inform) {
      ++counters.other;
      return;
    }
    const std::string from = address_of(pdu);
    const auto agent = agents.find(from);
    if (agent == agents.end() || agent->second == fabric::kNone) {
      ++counters.unknown_agent;
      spdlog::debug("SNMP notification from {}: no switch is polled at that address; dropped", from.empty() ? "?" : from);
      return;
    }
    if (!authentic(pdu)) {
      ++counters.bad_credentials;
      spdlog::debug("SNMP notification from {}: not medicd's community or SNMPv3 user and level; dropped", from);
      return;
    }
    if (inform) {
      netsnmp_pdu* reply = snmp_clone_pdu(pdu);
      if (reply != nullptr) {
        reply->command = SNMP_MSG_RESPONSE;
        reply->errstat = 0;
        reply->errindex = 0;
        if (snmp_sess_send(sess, reply) == 0) {
          snmp_free_pdu(reply);
        } else {
          ++counters.informs_answered;
        }
      }
    }
    std::vector<SnmpValue> values;
    for (netsnmp_variable_list* v = pdu->variables; v != nullptr && values.size() < 64; v = v->next_variable) {
      values.push_back(value_of(v));
    }
    auto trap = decode_link_trap(values);
    if (!trap) {
      ++counters.malformed;
      spdlog::debug("SNMP notification from {}: {}; dropped", from, trap.error());
      return;
    }
    if (trap->kind == SnmpLinkTrap::Kind::other) {
      ++counters.other;
      return;
    }
    SnmpLinkNotification n;
    n.device = agent->second;
    n.up = trap->kind == SnmpLinkTrap::Kind::link_up;
    n.if_index = trap->if_index;
    n.if_name = std::move(trap->if_name);
    n.uptime = trap->uptime;
    n.time = clock->now();
    ++(n.up ? counters.link_up : counters.link_down);
    out.push_back(std::move(n));
  }

  static int on_message(int op, netsnmp_session*, int, netsnmp_pdu* pdu, void* magic) {
    auto* im = static_cast<Impl*>(magic);
    if (op == NETSNMP_CALLBACK_OP_RECEIVED_MESSAGE && pdu != nullptr) {
      im->called_back = true;
      im->take(pdu);
    } else if (op == NETSNMP_CALLBACK_OP_SEC_ERROR) {
      im->called_back = true;
      ++im->counters.bad_credentials;  // an SNMPv3 message that failed its security checks
    }
    return 1;
  }
};

SnmpTrapReceiver::SnmpTrapReceiver() : impl_(std::make_unique<Impl>()) {}
SnmpTrapReceiver::~SnmpTrapReceiver() = default;

Result<std::unique_ptr<SnmpTrapReceiver>> SnmpTrapReceiver::open(
    const std::string& listen, const SnmpCredentials& credentials,
    std::vector<std::pair<std::string, fabric::DeviceId>> agents) {
  init_netsnmp();
  std::unique_ptr<SnmpTrapReceiver> r(new SnmpTrapReceiver());
  Impl& im = *r->impl_;
  im.credentials = credentials;
  for (auto& [ip, device] : agents) {
    const std::string key = canonical(ip);
    if (key.empty()) return Error::invalid("SNMP notifications: agent address " + quote(ip) + " is not an IP address");
    const auto [it, added] = im.agents.emplace(key, device);
    if (!added && it->second != device && it->second != fabric::kNone) {
      // Two switches' agents at one address (other ports): whose a notification is cannot
      // be told, so none from there is taken.
      spdlog::warn("SNMP notifications: two switches are polled at {}; notifications from it are dropped", key);
      it->second = fabric::kNone;
    }
  }
  // "ADDR:PORT" or "[ADDR]:PORT", as net-snmp's transports spell them.
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) {
    return Error::invalid("--snmp-trap-listen " + quote(listen) + ": expected ADDR:PORT");
  }
  std::string host = listen.substr(0, colon);
  const std::string port = listen.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 || std::stoul(port) > 65535) {
    return Error::invalid("--snmp-trap-listen " + quote(listen) + ": port " + quote(port) + " is not 0..65535");
  }
  const bool v6 = host.size() > 2 && host.front() == '[' && host.back() == ']';
  if (canonical(v6 ? host.substr(1, host.size() - 2) : host).empty()) {
    return Error::invalid("--snmp-trap-listen " + quote(listen) + ": " + quote(host) + " is not an IP address");
  }
  const std::string spec = (v6 ? "udp6:" : "udp:") + host + ":" + port;
  netsnmp_transport* t = netsnmp_transport_open_server("medic", spec.c_str());
  if (t == nullptr) {
    return Error::unavailable("--snmp-trap-listen " + listen + ": cannot listen there: " + std::strerror(errno));
  }
  netsnmp_session s;
  snmp_sess_init(&s);
  s.version = SNMP_DEFAULT_VERSION;
  s.peername = SNMP_DEFAULT_PEERNAME;
  s.community_len = SNMP_DEFAULT_COMMUNITY_LEN;
  s.callback = &Impl::on_message;
  s.callback_magic = &im;
  s.isAuthoritative = SNMP_SESS_UNKNOWNAUTH;
  im.sess = snmp_sess_add(&s, t, nullptr, nullptr);
  if (im.sess == nullptr) return Error::unavailable("--snmp-trap-listen " + listen + ": net-snmp would not open the session");
  im.fd = t->sock;
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  if (::getsockname(im.fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
    im.port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                          : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  }
  im.address = v6 ? host.substr(1, host.size() - 2) : host;
  netsnmp_large_fd_set_init(&im.fdset, FD_SETSIZE);
  return r;
}

int SnmpTrapReceiver::fd() const { return impl_->fd; }
uint16_t SnmpTrapReceiver::port() const { return impl_->port; }
const std::string& SnmpTrapReceiver::address() const { return impl_->address; }
const SnmpTrapCounters& SnmpTrapReceiver::counters() const { return impl_->counters; }

std::vector<SnmpLinkNotification> SnmpTrapReceiver::read(const Clock& clock, size_t max) {
  Impl& im = *impl_;
  im.out.clear();
  im.clock = &clock;
  for (size_t i = 0; i < max; ++i) {
    pollfd p{im.fd, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0 || (p.revents & POLLIN) == 0) break;
    if (im.fd >= static_cast<int>(im.fdset.lfs_setsize)) netsnmp_large_fd_set_resize(&im.fdset, im.fd + 1);
    NETSNMP_LARGE_FD_ZERO(&im.fdset);
    NETSNMP_LARGE_FD_SET(im.fd, &im.fdset);
    // One datagram a call. One that net-snmp's USM refused (its statistics say so) is
    // bad credentials whatever net-snmp then called back with; one dropped without a call
    // back or a refusal was not SNMP.
    const uint64_t refused = sum_of(kRefusals);
    const SnmpTrapCounters before = im.counters;
    const size_t handed = im.out.size();
    im.called_back = false;
    snmp_sess_read2(im.sess, &im.fdset);
    if (sum_of(kRefusals) > refused) {
      im.counters = before;
      im.out.resize(handed);
      ++im.counters.bad_credentials;
    } else if (!im.called_back) {
      ++im.counters.malformed;
    }
  }
  return std::move(im.out);
}

}  // namespace medic::telemetry
