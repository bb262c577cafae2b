#include "telemetry/snmp_collector.h"

#include "telemetry/netsnmp.h"
#include <net-snmp/library/large_fd_set.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "common/strings.h"

#include <spdlog/spdlog.h>

namespace medic::telemetry {

namespace {

using Steady = std::chrono::steady_clock;

bool oid_less(const std::vector<uint32_t>& a, const oid* b, size_t blen) {
  return std::lexicographical_compare(a.begin(), a.end(), b, b + blen);
}

}  // namespace

struct SnmpCollector::Impl {
  SnmpCredentials credentials;
  SnmpOptions options;
  SnmpCounters counters;
  // SNMPv3 keys, derived once from the passwords (the derivation hashes a megabyte).
  u_char auth_key[USM_AUTH_KU_LEN] = {0};
  size_t auth_key_len = 0;
  u_char priv_key[USM_PRIV_KU_LEN] = {0};
  size_t priv_key_len = 0;
  int epfd = -1;
  netsnmp_large_fd_set fdset;

  struct Agent {
    void* sess = nullptr;
    int fd = -1;
    std::string url;
    SnmpAgentState state;
    // SNMPv3: whether this session has learnt the agent's engine. net-snmp learns it inside
    // the first send, synchronously (one request and its retries): see scrape().
    bool discovered = false;
    bool deferred = false;  // its discovery waited for a later poll
  };
  std::unordered_map<fabric::DeviceId, Agent> agents;
  std::unordered_map<int, Agent*> by_fd;  // each open session's socket

  // One walk in progress.
  struct Walk {
    size_t index = 0;  // into the targets
    Agent* agent = nullptr;
    std::vector<size_t> columns;                // columns still being walked
    std::vector<std::vector<uint32_t>> cursor;  // per column of snmp_columns(): last OID seen
    std::vector<size_t> asked;                  // the columns the request in flight asks for
    bool asked_uptime = false, uptime_read = false;
    size_t requests = 0;
    std::vector<SnmpValue> values;
    size_t max_varbinds = 0;
    Steady::time_point started, deadline, sent;
    bool in_flight = false, done = false, failed = false;
    bool no_answer = false;  // a request went unanswered through all its retries
    std::string error;
  };

  ~Impl() {
    for (auto& [d, a] : agents) close(a);
    if (epfd >= 0) ::close(epfd);
    netsnmp_large_fd_set_cleanup(&fdset);
  }

  // Closes an agent's session (its outstanding request, if any, is dropped).
  void close(Agent& a) {
    if (a.fd >= 0) {
      epoll_ctl(epfd, EPOLL_CTL_DEL, a.fd, nullptr);
      by_fd.erase(a.fd);
    }
    if (a.sess != nullptr) snmp_sess_close(a.sess);
    a.sess = nullptr;
    a.fd = -1;
  }

  // Opens (once) the session of an agent; false with `error` set when it cannot.
  bool open(Agent& a, const std::string& url, std::string& error) {
    if (a.sess != nullptr && a.url == url) return true;
    if (a.sess != nullptr) close(a);
    auto addr = parse_snmp_url(url);
    if (!addr) {
      error = addr.error();
      return false;
    }
    const std::string peer = addr->peer();
    netsnmp_session s;
    snmp_sess_init(&s);
    s.peername = const_cast<char*>(peer.c_str());
    s.timeout = static_cast<long>(options.request_timeout_s * 1e6);
    s.retries = options.retries;
    if (credentials.version == SnmpCredentials::Version::v2c) {
      s.version = SNMP_VERSION_2c;
      s.community = reinterpret_cast<u_char*>(const_cast<char*>(credentials.community.data()));
      s.community_len = credentials.community.size();
    } else {
      s.version = SNMP_VERSION_3;
      s.securityName = const_cast<char*>(credentials.user.c_str());
      s.securityNameLen = credentials.user.size();
      s.securityLevel = SNMP_SEC_LEVEL_AUTHPRIV;
      s.securityAuthProto = usmHMACSHA1AuthProtocol;
      s.securityAuthProtoLen = USM_AUTH_PROTO_SHA_LEN;
      std::memcpy(s.securityAuthKey, auth_key, auth_key_len);
      s.securityAuthKeyLen = auth_key_len;
      s.securityPrivProto = usmAESPrivProtocol;
      s.securityPrivProtoLen = USM_PRIV_PROTO_AES_LEN;
      std::memcpy(s.securityPrivKey, priv_key, priv_key_len);
      s.securityPrivKeyLen = priv_key_len;
    }
    void* sess = snmp_sess_open(&s);
    if (sess == nullptr) {
      int liberr = 0, syserr = 0;
      char* msg = nullptr;
      snmp_error(&s, &liberr, &syserr, &msg);
      error = std::string("cannot open an SNMP session to ") + peer + ": " + (msg != nullptr ? msg : "unknown error");
      SNMP_FREE(msg);
      return false;
    }
    netsnmp_transport* t = snmp_sess_transport(sess);
    a.sess = sess;
    a.discovered = false;
    a.fd = t != nullptr ? t->sock : -1;
    a.url = url;
    ++counters.opened;
    if (a.fd >= 0) {
      by_fd[a.fd] = &a;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = a.fd;
      epoll_ctl(epfd, EPOLL_CTL_ADD, a.fd, &ev);
    }
    return true;
  }

  static int on_response(int op, netsnmp_session*, int, netsnmp_pdu* pdu, void* magic) {
    auto* w = static_cast<Walk*>(magic);
    if (op == NETSNMP_CALLBACK_OP_RESEND) return 1;  // told, not finished: the request goes again
    w->in_flight = false;
    if (op == NETSNMP_CALLBACK_OP_TIMED_OUT) {
      w->failed = true;
      w->no_answer = true;  // said with the walk's numbers once it is finished
      return 1;
    }
    if (op != NETSNMP_CALLBACK_OP_RECEIVED_MESSAGE || pdu == nullptr) {
      w->failed = true;
      w->error = op == NETSNMP_CALLBACK_OP_DISCONNECT    ? "refused: nothing answers SNMP at that port"
                 : op == NETSNMP_CALLBACK_OP_SEND_FAILED ? "cannot send the request"
                 : op == NETSNMP_CALLBACK_OP_SEC_ERROR   ? "the answer failed SNMPv3 security checks (wrong keys?)"
                                                         : "SNMP session error " + std::to_string(op);
      return 1;
    }
    w->agent->discovered = true;
    take(*w, pdu);
    return 1;
  }

  static void take(Walk& w, netsnmp_pdu* pdu) {
    if (pdu->command == SNMP_MSG_REPORT) {
      w.failed = true;
      w.error = "the agent refused the request (SNMPv3 report: wrong user, key or security level)";
      return;
    }
    if (pdu->errstat == SNMP_ERR_TOOBIG && w.max_varbinds > 1) {
      w.max_varbinds = std::max<size_t>(1, w.max_varbinds / 2);  // ask again for less
      return;
    }
    if (pdu->errstat != SNMP_ERR_NOERROR) {
      w.failed = true;
      w.error = std::string("the agent answered ") + snmp_errstring(static_cast<int>(pdu->errstat));
      return;
    }
    const auto& cols = snmp_columns();
    netsnmp_variable_list* v = pdu->variables;
    if (w.asked_uptime && v != nullptr) {
      w.values.push_back(value_of(v));
      w.uptime_read = true;
      v = v->next_variable;
    }
    const size_t m = w.asked.size();
    std::vector<bool> ended(cols.size(), false);
    for (size_t i = 0; v != nullptr && m > 0; v = v->next_variable, ++i) {
      const size_t c = w.asked[i % m];
      if (ended[c]) continue;
      const auto& prefix = cols[c].oid;
      const bool inside = v->name_length > prefix.size() && std::equal(prefix.begin(), prefix.end(), v->name);
      const u_char t = v->type;
      if (!inside || t == SNMP_ENDOFMIBVIEW || t == SNMP_NOSUCHOBJECT || t == SNMP_NOSUCHINSTANCE) {
        ended[c] = true;
        continue;
      }
      // An agent that answers an OID not after the one asked would be walked forever.
      if (!oid_less(w.cursor[c], v->name, v->name_length)) {
        ended[c] = true;
        if (w.error.empty()) w.error = std::string(cols[c].name) + ": the agent answered OIDs out of order";
        continue;
      }
      w.cursor[c].assign(v->name, v->name + v->name_length);
      w.values.push_back(value_of(v));
    }
    std::erase_if(w.columns, [&](size_t c) { return ended[c]; });
  }

  // Sends the walk's next request; false (with the walk failed) when it cannot.
  bool send(Walk& w) {
    netsnmp_pdu* pdu = snmp_pdu_create(SNMP_MSG_GETBULK);
    w.asked_uptime = !w.uptime_read;  // until it has come back (a tooBig answer carries nothing)
    pdu->non_repeaters = w.asked_uptime ? 1 : 0;
    const size_t m = w.columns.size();
    pdu->max_repetitions = static_cast<long>(std::max<size_t>(1, w.max_varbinds / std::max<size_t>(1, m)));
    if (w.asked_uptime) {
      const auto up = snmp_sys_uptime_oid();
      std::vector<oid> prefix(up.begin(), up.end() - 1);  // getnext of sysUpTime is sysUpTime.0
      snmp_add_null_var(pdu, prefix.data(), prefix.size());
    }
    w.asked = w.columns;
    for (const size_t c : w.columns) {
      const auto& o = w.cursor[c];
      std::vector<oid> name(o.begin(), o.end());
      snmp_add_null_var(pdu, name.data(), name.size());
    }
    if (snmp_sess_async_send(w.agent->sess, pdu, &Impl::on_response, &w) == 0) {
      snmp_free_pdu(pdu);
      w.failed = true;
      const std::string why = snmp_api_errstring(snmp_sess_session(w.agent->sess)->s_snmp_errno);
      w.error = credentials.version == SnmpCredentials::Version::v3 && !w.agent->discovered
                    ? "SNMPv3 engine discovery failed: " + why
                    : "cannot send: " + why;
      return false;
    }
    ++counters.requests;
    ++w.requests;
    w.in_flight = true;
    w.sent = Steady::now();
    return true;
  }

};

SnmpCollector::SnmpCollector(SnmpCredentials credentials, SnmpOptions options) : impl_(std::make_unique<Impl>()) {
  init_netsnmp();
  impl_->credentials = std::move(credentials);
  impl_->options = options;
  impl_->epfd = epoll_create1(EPOLL_CLOEXEC);
  netsnmp_large_fd_set_init(&impl_->fdset, FD_SETSIZE);
  if (impl_->credentials.version == SnmpCredentials::Version::v3) {
    auto& c = impl_->credentials;
    impl_->auth_key_len = USM_AUTH_KU_LEN;
    generate_Ku(usmHMACSHA1AuthProtocol, USM_AUTH_PROTO_SHA_LEN, reinterpret_cast<const u_char*>(c.auth_password.data()),
                c.auth_password.size(), impl_->auth_key, &impl_->auth_key_len);
    impl_->priv_key_len = USM_PRIV_KU_LEN;
    generate_Ku(usmHMACSHA1AuthProtocol, USM_AUTH_PROTO_SHA_LEN, reinterpret_cast<const u_char*>(c.priv_password.data()),
                c.priv_password.size(), impl_->priv_key, &impl_->priv_key_len);
  }
}

SnmpCollector::~SnmpCollector() = default;

const SnmpCounters& SnmpCollector::counters() const { return impl_->counters; }

SnmpAgentState::Notification SnmpCollector::judge_notification(fabric::DeviceId device, uint32_t if_index, bool up,
                                                              std::optional<uint64_t> uptime) {
  const auto it = impl_->agents.find(device);
  if (it == impl_->agents.end()) return SnmpAgentState::Notification::fresh;
  return it->second.state.judge_notification(if_index, up, uptime);
}

std::optional<std::string> SnmpCollector::interface_name(fabric::DeviceId device, uint32_t if_index) const {
  const auto it = impl_->agents.find(device);
  if (it == impl_->agents.end()) return std::nullopt;
  return it->second.state.name_of(if_index);
}

std::vector<ScrapeResult> SnmpCollector::scrape(std::span<const ScrapeTarget> targets, const Clock& clock,
                                                const std::function<void(ScrapeResult&)>& on_result) {
  Impl& im = *impl_;
  const auto& cols = snmp_columns();
  std::vector<ScrapeResult> results(targets.size());
  std::deque<Impl::Walk> walks;  // stable addresses: net-snmp holds a pointer to each
  std::vector<Impl::Walk*> active;
  size_t next = 0;
  const auto walk_time = std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(im.options.timeout_s));
  const auto request_time =
      std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(im.options.request_timeout_s));

  auto finish = [&](Impl::Walk& w) {
    w.done = true;
    ScrapeResult& r = results[w.index];
    r.device = targets[w.index].device;
    r.time = clock.now();
    r.mono = clock.monotonic();
    r.seconds = std::chrono::duration<double>(Steady::now() - w.started).count();
    if (w.failed) {
      r.ok = false;
      r.error = w.error;
      if (w.no_answer) {
        r.error = "no answer after " + std::to_string(im.options.retries + 1) + " tries of " +
                  std::to_string(static_cast<long>(im.options.request_timeout_s * 1000)) + " ms (" +
                  std::to_string(w.values.size()) + " values read)";
      }
    } else {
      SnmpAgentState::Poll p = w.agent->state.render(w.values);
      if (p.restarted) ++im.counters.restarts;
      if (p.renumbered) ++im.counters.renumbered;
      if (p.interfaces == 0) {
        r.ok = false;
        r.error = "the agent named no interface with counters (ifName in IF-MIB ifXTable, values in ifTable)";
      } else {
        r.ok = true;
        r.content_type = std::string(kSnmpContentType);
        r.body = std::move(p.body);
        if (!w.error.empty()) r.error = w.error;  // a note, the answer is still good
        else if (!p.problem.empty()) r.error = p.problem;
      }
    }
    if (on_result) on_result(r);
  };

  Steady::duration discovery_time{};
  auto timed_out = [&](Impl::Walk& w) {
    w.failed = true;
    w.no_answer = false;  // closing the session may have called back "timed out": the walk's own deadline it was
    w.error = "timeout after " + std::to_string(static_cast<long>(im.options.timeout_s * 1000)) + " ms (" +
              std::to_string(w.values.size()) + " values read)";
    finish(w);
  };

  auto start = [&](size_t i) {
    Impl::Walk& w = walks.emplace_back();
    w.index = i;
    w.started = Steady::now();
    w.deadline = w.started + walk_time;
    w.max_varbinds = std::max<size_t>(1, im.options.max_varbinds);
    Impl::Agent& a = im.agents[targets[i].device];
    w.agent = &a;
    std::string error;
    if (!im.open(a, targets[i].url, error)) {
      w.failed = true;
      w.error = error;
      finish(w);
      return;
    }
    w.cursor.resize(cols.size());
    for (size_t c = 0; c < cols.size(); ++c) {
      if (!a.state.wants(cols[c])) continue;
      w.columns.push_back(c);
      w.cursor[c] = cols[c].oid;
    }
    // SNMPv3 engine discovery blocks this thread for an agent's first request (a round trip,
    // or the request's timeout and retries when it is silent): once a poll has spent its
    // walk time on discoveries, the rest wait for the next poll instead of holding this one.
    const bool discovering = im.credentials.version == SnmpCredentials::Version::v3 && !a.discovered;
    if (discovering && discovery_time >= walk_time) {
      a.deferred = true;  // first in line next poll
      w.failed = true;
      w.error = "SNMPv3 engine discovery deferred to the next poll (this poll spent " +
                std::to_string(static_cast<long>(im.options.timeout_s * 1000)) + " ms discovering other agents)";
      finish(w);
      return;
    }
    a.deferred = false;
    const auto sending = Steady::now();
    const bool sent = im.send(w);
    if (discovering) {
      // The walks already under way lost that time to this thread, not to their agents.
      const auto spent = Steady::now() - sending;
      discovery_time += spent;
      for (Impl::Walk* other : active) other->deadline += spent;
      w.deadline += spent;
    }
    if (!sent) {
      finish(w);
      return;
    }
    active.push_back(&w);
  };

  // Should anything below throw, no session may keep a request whose callback points into
  // `walks`: close those still waiting before `walks` goes.
  struct InFlightGuard {
    Impl& im;
    std::vector<Impl::Walk*>& active;
    ~InFlightGuard() {
      for (Impl::Walk* w : active) {
        if (w->in_flight) im.close(*w->agent);
      }
    }
  } guard{im, active};
  // Agents whose SNMPv3 discovery a poll deferred go first in the next, so silent agents
  // early in the list cannot spend every poll's discovery time before they get theirs.
  std::vector<size_t> order(targets.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(), [&](size_t i) {
    const auto it = im.agents.find(targets[i].device);
    return it != im.agents.end() && it->second.deferred;
  });
  std::vector<epoll_event> events(64);
  auto last_timeout_check = Steady::now();
  while (next < targets.size() || !active.empty()) {
    while (next < order.size() && active.size() < std::max<size_t>(1, im.options.max_in_flight)) start(order[next++]);
    if (active.empty()) continue;
    const int n = epoll_wait(im.epfd, events.data(), static_cast<int>(events.size()), 10);
    for (int k = 0; k < n; ++k) {
      // Every readable session is read, whether or not its walk still waits: a late answer
      // (after its request timed out, or to an agent not polled now) is read and dropped by
      // net-snmp, not left to wake epoll again and again.
      const int fd = events[static_cast<size_t>(k)].data.fd;
      const auto it = im.by_fd.find(fd);
      if (it == im.by_fd.end() || it->second->sess == nullptr) {
        epoll_ctl(im.epfd, EPOLL_CTL_DEL, fd, nullptr);
        continue;
      }
      if (fd >= static_cast<int>(im.fdset.lfs_setsize)) netsnmp_large_fd_set_resize(&im.fdset, fd + 1);
      NETSNMP_LARGE_FD_ZERO(&im.fdset);
      NETSNMP_LARGE_FD_SET(fd, &im.fdset);
      snmp_sess_read2(it->second->sess, &im.fdset);
    }
    const auto now = Steady::now();
    if (now - last_timeout_check >= std::chrono::milliseconds(20)) {
      last_timeout_check = now;
      for (Impl::Walk* w : active) {
        if (w->in_flight && now - w->sent >= request_time) snmp_sess_timeout(w->agent->sess);
      }
    }
    for (Impl::Walk* w : active) {
      if (w->in_flight) {
        if (now >= w->deadline) {
          // Forget the request: the next poll's session must not take its late answer.
          w->in_flight = false;
          im.close(*w->agent);
          timed_out(*w);  // after the close, which may have called back
        }
        continue;
      }
      if (w->failed) {
        finish(*w);
        continue;
      }
      if (w->values.size() > im.options.max_values) {
        w->failed = true;
        w->error = "the walk returned more than " + std::to_string(im.options.max_values) + " values; cut off";
        finish(*w);
        continue;
      }
      if (w->columns.empty()) {
        finish(*w);
        continue;
      }
      if (now >= w->deadline) {
        timed_out(*w);
        continue;
      }
      if (!im.send(*w)) finish(*w);
    }
    std::erase_if(active, [](const Impl::Walk* w) { return w->done; });
  }
  return results;
}

}  // namespace medic::telemetry
