#include "probes/scheduler.h"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "common/thread_name.h"
#include "probes/huge_pages.h"
#include "probes/packet.h"
#include "probes/reply_index.h"
#include "probes/sender.h"
#include "probes/stats.h"
#include "probes/udp.h"

namespace medic::probes {

void SchedulerConfig::validate() const {
  if (!(round_s > 0)) throw std::invalid_argument("probe round must be positive");
  if (per_round < 1) throw std::invalid_argument("probes per round must be at least 1");
  if (!(max_rate > 0)) throw std::invalid_argument("probe rate must be positive");
  if (!(timeout_s > 0)) throw std::invalid_argument("probe timeout must be positive");
  if (!(telemetry_wait_s >= 0 && telemetry_wait_s <= 3600)) {
    throw std::invalid_argument("probe telemetry wait must be within [0, 3600] seconds");
  }
  if (window_rounds < 1) throw std::invalid_argument("probe window must be at least one round");
  if (!(outage_share > 0 && outage_share <= 1)) throw std::invalid_argument("probe outage share must be in (0, 1]");
  if (outage_min_sessions < 1) throw std::invalid_argument("probe outage minimum sessions must be at least 1");
  if (!(tick_s > 0 && tick_s <= 0.1)) throw std::invalid_argument("probe tick must be within (0, 0.1] seconds");
}

namespace {

struct RoundCounts {
  uint64_t sent = 0, lost = 0;
};

// What a session is, and its window: read when the sessions are planned and when a round
// closes.
struct Session {
  bool pinned = true;
  fabric::LinkId link = fabric::kNone;
  Flow flow;
  std::vector<Path> candidates;  // path sessions
  size_t socket = 0;
  Endpoint target, source;
  uint32_t sender = kNoEndpoint, reflector = kNoEndpoint;  // measurement endpoints
  uint16_t ssid = 0;
  std::deque<RoundCounts> window;
};

// What a probe and its reply touch, apart from the sessions above: at zone32k the prober
// sends a probe and reads a reply for sessions in random order among 200,000, and each
// cache line (and page) one touches costs more than the rest of the work. So a session's
// hot state is one cache line in one array, its addresses one in another, the send times
// of its round in a third, all on huge pages where the kernel gives them (perf on zone32k:
// two cache misses a probe were 8% of the prober's CPU when sessions were 700-byte structs
// with their own heap blocks).
struct alignas(64) Hot {
  uint32_t next_seq = 0;
  uint32_t round_first = 0;  // the sequence number of this round's first probe
  uint32_t round_sent = 0, round_received = 0;
  uint32_t socket = 0;
  uint32_t pin = UINT32_MAX;  // pinned sessions: their place in the round-trip rings
  uint32_t rtt_answers = 0;   // this round's answers, for a uniform sample past rtt_cap
  uint16_t ssid = 0;
  uint16_t rtt_count = 0;     // round-trip times kept this round
  double last_rtt = -1, jitter = 0;
};

// A session's addresses as sendmmsg takes them: the reflector's, and the source address
// the probe leaves from (IP_PKTINFO).
struct alignas(64) Wire {
  union {
    sockaddr_in v4;
    sockaddr_in6 v6;
  } to{};
  socklen_t to_len = 0;
  union {
    in_addr v4;
    in6_addr v6;
  } from{};
};

static_assert(sizeof(Hot) == 64 && sizeof(Wire) == 64, "a session's hot state and addresses: a cache line each");

// A send time already answered: a second reply to it is a duplicate.
constexpr Time kAnswered = Time::min();

struct Sock {
  UdpSocket sock;
  std::string source;
  uint16_t sport = 0;
};

}  // namespace

struct ProbeScheduler::Impl {
  EcmpModel ecmp;
  std::vector<Session> sessions;
  HugeVector<Hot> hot;    // by session
  HugeVector<Wire> wire;  // by session
  // The send times of this round's probes: per_round slots a session, the round's k-th
  // probe (seq round_first + k) in slot k; kAnswered once its reply came. Every session
  // starts at seq 0 and sends per_round probes a round, so k is seq % per_round until the
  // sequence numbers wrap at 2^32: a reply's slot can be fetched before its Hot is read.
  HugeVector<Time> sent_at;
  // Pinned sessions: the round-trip times of the window's rounds, kept as they are (a
  // session has per_round answers a round, 10 by default), a ring of window_rounds rounds
  // of up to rtt_cap values each: pinned session p's round r holds rtt_n[p * window + r]
  // values from rtts[(p * window + r) * rtt_cap]. Round rtt_round is this one; its count
  // is Hot::rtt_count until the round closes and writes it here (until then rtt_n holds
  // the count of the round a window earlier, which nothing reads). A quantile
  // sketch per round, grown an allocation at a time, made medicd grow by about 1 GB over
  // zone32k's first ten minutes (bench/load); this is about 250 bytes a session at the
  // defaults, allocated once.
  HugeVector<float> rtts;
  HugeVector<uint16_t> rtt_n;
  size_t rtt_round = 0;
  std::vector<Sock> sockets;
  ReplyIndex replies;
  std::vector<ProbeEndpoint> endpoints;  // probe sources, then reflectors
  std::deque<Time> round_starts;         // of the rounds in the window
  std::deque<Duration> round_starts_mono;  // the same on the monotonic clock
  size_t pinned = 0, paths = 0;
  std::thread thread;
  std::atomic<bool> stopping{false};
  std::mutex mu;
  std::vector<RoundResult> results;
  // What telemetry saw (note_telemetry), under down_mu: each link's carrier-change spans on
  // the monotonic clock, merged where they touch, and the time telemetry has been read past.
  std::mutex down_mu;
  std::unordered_map<fabric::LinkId, std::vector<std::pair<Duration, Duration>>> down;
  Duration read_after{};
  bool fed = false;
  // Spans kept a link at most (the oldest two merge past it): bounded whatever the rounds do.
  static constexpr size_t kSpansKept = 64;
  int epfd = -1;
  std::vector<size_t> order;                   // the order this pass visits the sessions in
  std::vector<std::vector<size_t>> by_socket;  // each socket's sessions
  std::mt19937_64 rng;

  Impl(const fabric::Topology& t, uint64_t seed) : ecmp(t, seed), rng(seed) {}
  ~Impl() {
    if (epfd >= 0) ::close(epfd);
  }

  // Sessions a pass visits one after the other from the same socket, at most.
  static constexpr size_t kSocketRun = 32;

  // A fresh random order for the next pass over the sessions. A stall of the prober, of one
  // reflector's host or of the network delays a run of consecutive probes, and that run must
  // fall on sessions of every endpoint alike (the background localization discounts), never
  // on the sessions of one reflector as if it were failing: so the order is random. But it
  // comes in runs of up to kSocketRun sessions of one socket, each run a random draw of that
  // socket's sessions (of many reflectors), so that a tick's probes leave in a few sendmmsg
  // calls and their replies come back in a few recvmmsg calls, not one call a probe across
  // the thousand sockets path sessions use.
  void shuffle_pass() {
    struct Run {
      size_t socket, from, to;
    };
    std::vector<Run> runs;
    for (size_t k = 0; k < by_socket.size(); ++k) {
      auto& list = by_socket[k];
      std::shuffle(list.begin(), list.end(), rng);
      for (size_t i = 0; i < list.size(); i += kSocketRun) runs.push_back({k, i, std::min(i + kSocketRun, list.size())});
    }
    std::shuffle(runs.begin(), runs.end(), rng);
    order.clear();
    for (const Run& r : runs) {
      order.insert(order.end(), by_socket[r.socket].begin() + static_cast<std::ptrdiff_t>(r.from),
                   by_socket[r.socket].begin() + static_cast<std::ptrdiff_t>(r.to));
    }
  }
};

ProbeScheduler::ProbeScheduler(const fabric::Topology& topology, SchedulerConfig config, const Clock& clock)
    : topology_(topology), config_(std::move(config)), clock_(clock) {
  config_.validate();
}

ProbeScheduler::~ProbeScheduler() { stop(); }

size_t ProbeScheduler::link_sessions() const { return impl_ ? impl_->pinned : 0; }
size_t ProbeScheduler::path_sessions() const { return impl_ ? impl_->paths : 0; }

void ProbeScheduler::note_telemetry(std::span<const LinkDownSpan> down, Duration read_after) {
  if (!impl_ || impl_->sessions.empty()) return;  // sessions are planned once, before the thread
  std::lock_guard lock(impl_->down_mu);
  impl_->fed = true;
  impl_->read_after = std::max(impl_->read_after, read_after);
  for (const LinkDownSpan& d : down) {
    if (d.link >= topology_.links().size()) continue;
    auto& spans = impl_->down[d.link];
    const Duration from = std::min(d.from, d.to), to = std::max(d.from, d.to);
    if (!spans.empty() && from <= spans.back().second && to >= spans.back().first) {
      spans.back().first = std::min(spans.back().first, from);
      spans.back().second = std::max(spans.back().second, to);
    } else {
      spans.emplace_back(from, to);
      if (spans.size() > Impl::kSpansKept) {
        spans[1].first = spans[0].first;
        spans.erase(spans.begin());
      }
    }
  }
}

std::vector<RoundResult> ProbeScheduler::take_results() {
  if (!impl_) return {};
  std::lock_guard lock(impl_->mu);
  return std::exchange(impl_->results, {});
}

Status ProbeScheduler::start() {
  impl_ = std::make_unique<Impl>(topology_, config_.seed);
  Impl& m = *impl_;
  const auto& t = topology_;
  std::map<std::pair<std::string, uint16_t>, size_t> socket_of;
  // A socket per probe source and source port. The sweep needs varied ports, not these
  // ones: a port someone else holds is replaced by one the kernel picks, and the flow's path
  // is worked out for the port actually used.
  auto socket_for = [&](const std::string& source, uint16_t sport, bool v6) -> Result<size_t> {
    const auto key = std::make_pair(source + (v6 ? "/6" : "/4"), sport);
    if (const auto it = socket_of.find(key); it != socket_of.end()) return it->second;
    const std::string netns = source.rfind("netns:", 0) == 0 ? source.substr(6) : "";
    const std::string any = v6 ? "[::]:" : "0.0.0.0:";
    auto s = UdpSocket::open(*Endpoint::parse(any + std::to_string(sport)), netns);
    if (!s.ok() && sport != 0) s = UdpSocket::open(*Endpoint::parse(any + "0"), netns);
    if (!s.ok()) return Error{"probe socket for " + source + " port " + std::to_string(sport) + ": " + s.error()};
    // Probes are 44 octets: never fragmented, and the kernel spends nothing on an IP
    // identification per probe (it was 3% of the prober's CPU on zone32k). Only a saving:
    // probing goes on without it.
    if (const auto df = s->set_dont_fragment(); !df.ok()) {
      spdlog::warn("prober: probe socket for {} port {}: {}", source, sport, df.error());
    }
    // Replies need their receive timestamp only: the kernel builds no TTL or address
    // per reply (another saving; replies are matched on the same fields either way).
    if (const auto ts = s->timestamps_only(); !ts.ok()) {
      spdlog::warn("prober: probe socket for {} port {}: {}", source, sport, ts.error());
    }
    const uint16_t bound = s->local().port();
    m.sockets.push_back(Sock{std::move(*s), source, bound});
    socket_of.emplace(key, m.sockets.size() - 1);
    return m.sockets.size() - 1;
  };
  auto endpoint = [&](fabric::PortId p, uint16_t port) -> std::optional<Endpoint> {
    const std::string& ip = t.port(p).ip;
    if (ip.empty()) return std::nullopt;
    auto e = Endpoint::parse(ip.find(':') != std::string::npos ? "[" + ip + "]:" + std::to_string(port)
                                                                : ip + ":" + std::to_string(port));
    if (!e.ok()) return std::nullopt;
    return *e;
  };
  std::map<std::string, uint32_t> sender_of;
  std::map<fabric::DeviceId, uint32_t> reflector_of;
  auto endpoints_for = [&](Session& s, const std::string& source, fabric::DeviceId reflector) {
    auto [si, snew] = sender_of.emplace(source, static_cast<uint32_t>(m.endpoints.size()));
    if (snew) m.endpoints.push_back({ProbeEndpoint::Kind::sender, source, fabric::kNone});
    auto [ri, rnew] = reflector_of.emplace(reflector, static_cast<uint32_t>(m.endpoints.size()));
    if (rnew) m.endpoints.push_back({ProbeEndpoint::Kind::reflector, t.device(reflector).name, reflector});
    s.sender = si->second;
    s.reflector = ri->second;
  };
  auto add_session = [&](Session s) {
    s.ssid = static_cast<uint16_t>(m.sessions.size() & 0xffff);
    m.replies.add(static_cast<uint32_t>(m.sessions.size()), s.ssid, static_cast<uint32_t>(s.socket), s.target);
    m.sessions.push_back(std::move(s));
  };

  const ProbePlan plan = make_plan(t, m.ecmp, config_.plan);
  if (config_.link_pinned) {
    for (const fabric::LinkId l : plan.pinned) {
      const auto& link = t.link(l);
      // From an end that can send to the far end's reflector.
      for (const auto& [from, to] : {std::pair{link.a, link.b}, std::pair{link.b, link.a}}) {
        const auto& sender = t.device(t.port(from).device);
        const auto& reflector = t.device(t.port(to).device);
        if (sender.probe_source.empty() || reflector.reflector_port == 0) continue;
        const auto src = endpoint(from, 0), dst = endpoint(to, reflector.reflector_port);
        if (!src || !dst || src->is_v6() != dst->is_v6()) continue;
        auto sock = socket_for(sender.probe_source, 0, src->is_v6());
        if (!sock.ok()) return sock.failure();
        Session s;
        s.pinned = true;
        s.link = l;
        s.socket = *sock;
        s.target = *dst;
        s.source = *src;
        endpoints_for(s, sender.probe_source, t.port(to).device);
        add_session(std::move(s));
        ++m.pinned;
        break;
      }
    }
  }
  if (config_.paths) {
    for (const Flow& f : plan.flows) {
      const auto& sender = t.device(t.port(f.src).device);
      const auto& reflector = t.device(t.port(f.dst).device);
      if (sender.probe_source.empty() || reflector.reflector_port == 0) continue;
      const auto src = endpoint(f.src, f.sport), dst = endpoint(f.dst, reflector.reflector_port);
      if (!src || !dst || src->is_v6() != dst->is_v6()) continue;
      auto sock = socket_for(sender.probe_source, f.sport, src->is_v6());
      if (!sock.ok()) return sock.failure();
      Session s;
      s.pinned = false;
      s.flow = f;
      s.flow.sport = m.sockets[*sock].sport;  // the port actually bound
      s.flow.dport = reflector.reflector_port;
      // A probe crosses its path there and the reply's path back: both are the evidence.
      // When the hash is known the way back is known too (ECMP hashes the reversed
      // 5-tuple, so it is often another path); otherwise it is taken to retrace the way there.
      auto round_trip = [](Path there, const Path& back) {
        for (const fabric::LinkId l : back) {
          if (std::find(there.begin(), there.end(), l) == there.end()) there.push_back(l);
        }
        return there;
      };
      if (config_.paths_known) {
        const Path there = m.ecmp.path_of(s.flow);
        const Path back = m.ecmp.path_of({s.flow.dst, s.flow.src, s.flow.dport, s.flow.sport});
        if (!there.empty() && !back.empty()) s.candidates.push_back(round_trip(there, back));
      } else {
        for (const Path& p : m.ecmp.paths(f.src, f.dst, 64)) s.candidates.push_back(p);
      }
      if (s.candidates.empty() || s.candidates.front().empty()) continue;
      s.socket = *sock;
      s.target = *dst;
      s.source = *src;
      endpoints_for(s, sender.probe_source, t.port(f.dst).device);
      add_session(std::move(s));
      ++m.paths;
    }
  }
  m.replies.finish();
  // The hot state and the addresses, apart (see Hot).
  m.hot.resize(m.sessions.size());
  m.wire.resize(m.sessions.size());
  m.sent_at.assign(m.sessions.size() * static_cast<size_t>(config_.per_round), kAnswered);
  uint32_t pins = 0;
  for (size_t i = 0; i < m.sessions.size(); ++i) {
    const Session& s = m.sessions[i];
    Hot& h = m.hot[i];
    h.socket = static_cast<uint32_t>(s.socket);
    h.ssid = s.ssid;
    if (s.pinned) h.pin = pins++;
    Wire& w = m.wire[i];
    std::memcpy(&w.to, &s.target.addr, std::min<size_t>(s.target.len, sizeof w.to));
    w.to_len = s.target.len;
    if (s.source.is_v6()) {
      w.from.v6 = reinterpret_cast<const sockaddr_in6*>(&s.source.addr)->sin6_addr;
    } else {
      w.from.v4 = reinterpret_cast<const sockaddr_in*>(&s.source.addr)->sin_addr;
    }
  }
  m.rtts.assign(m.pinned * config_.window_rtts(), 0.0f);
  m.rtt_n.assign(m.pinned * static_cast<size_t>(config_.window_rounds), 0);
  m.by_socket.assign(m.sockets.size(), {});
  for (size_t i = 0; i < m.sessions.size(); ++i) m.by_socket[m.sessions[i].socket].push_back(i);
  m.epfd = epoll_create1(EPOLL_CLOEXEC);
  for (size_t i = 0; i < m.sockets.size(); ++i) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    epoll_ctl(m.epfd, EPOLL_CTL_ADD, m.sockets[i].sock.fd(), &ev);
  }
  spdlog::info("prober: {} link-pinned and {} path sessions on {} sockets; {} probes per session per round",
               m.pinned, m.paths, m.sockets.size(), config_.per_round);

  m.thread = std::thread([this] {
    name_this_thread("medic-prober");
    Impl& im = *impl_;
    const auto& cfg = config_;
    ReceiveBatch batch(64, kMaxPacketSize + 1);
    std::vector<ReflectorPacket> packets(batch.capacity());  // the batch's, decoded
    std::vector<uint32_t> reply_of(batch.capacity());         // the batch's sessions
    std::vector<uint8_t> tx(64 * kUnauthenticatedSize);
    std::vector<std::vector<Outgoing>> per_socket(im.sockets.size());
    std::vector<size_t> touched;  // the sockets with probes this tick
    constexpr int kEvents = 256;
    epoll_event events[kEvents];
    const ErrorEstimate error = ErrorEstimate::from_seconds(1e-3, false);
    // Round-trip times kept per pinned session and round: all of them at medicd's settings,
    // a uniform sample past 64 (per_round can be up to 10,000).
    const size_t rtt_cap = static_cast<size_t>(std::min(cfg.per_round, SchedulerConfig::kKeptRttsPerRound));
    const size_t window = static_cast<size_t>(cfg.window_rounds);
    const size_t per_round = static_cast<size_t>(cfg.per_round);
    constexpr size_t kPrefetch = 8;
    auto record_rtt = [&](Hot& h, double rtt) {
      float* round = im.rtts.data() + (h.pin * window + im.rtt_round) * rtt_cap;
      ++h.rtt_answers;
      if (h.rtt_count < rtt_cap) {
        round[h.rtt_count++] = static_cast<float>(rtt);
      } else if (const uint64_t j = im.rng() % h.rtt_answers; j < rtt_cap) {
        round[j] = static_cast<float>(rtt);
      }
    };
    std::vector<float> window_rtts;  // one session's, at a round's close
    const auto tick = std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(cfg.tick_s));

    // Reads everything that has arrived on every socket, without waiting. Replies carry the
    // kernel's receive timestamp, so reading them a tick later changes no round-trip time.
    auto receive = [&] {
      while (true) {
        const int n = epoll_wait(im.epfd, events, kEvents, 0);
        for (int e = 0; e < n; ++e) {
          const size_t si = events[e].data.u64;
          Sock& s = im.sockets[si];
          while (true) {
            const size_t got = s.sock.receive(batch);
            ++counters_.receive_calls;
            const auto datagrams = batch.datagrams().first(got);
            // In three passes over the batch, each asking for the memory the next one reads
            // (the replies' sessions are in random places): decoding (asking for where each
            // reply's index entries start), finding the session (asking for its state and
            // send time), matching.
            for (size_t j = 0; j < got; ++j) {
              auto rp = decode_reflector(datagrams[j].data, Mode::unauthenticated, nullptr);
              reply_of[j] = ReplyIndex::kNoSession;
              if (!rp.ok()) continue;
              packets[j] = *rp;
              reply_of[j] = 0;
              im.replies.prefetch(rp->ssid);
            }
            for (size_t j = 0; j < got; ++j) {
              if (reply_of[j] == ReplyIndex::kNoSession) continue;
              const uint32_t idx = im.replies.find(packets[j].ssid, static_cast<uint32_t>(si), datagrams[j].peer);
              reply_of[j] = idx;
              if (idx == ReplyIndex::kNoSession) continue;
              __builtin_prefetch(&im.hot[idx], 1);
              __builtin_prefetch(&im.sent_at[idx * per_round + packets[j].sender_seq % per_round], 1);  // k, almost always
            }
            for (size_t j = 0; j < got; ++j) {
              const uint32_t idx = reply_of[j];
              if (idx == ReplyIndex::kNoSession) {  // malformed, or answering no session
                ++counters_.late_or_foreign;
                continue;
              }
              const Datagram& d = datagrams[j];
              const ReflectorPacket* rp = &packets[j];
              // This round's k-th probe of the session, not answered yet; anything else (a
              // duplicate, an answer from an earlier round) is late or foreign.
              Hot& h = im.hot[idx];
              const uint32_t k = rp->sender_seq - h.round_first;
              Time* sent = k < std::min<size_t>(h.round_sent, per_round) ? &im.sent_at[idx * per_round + k] : nullptr;
              if (sent == nullptr || *sent == kAnswered) {
                ++counters_.late_or_foreign;
                continue;
              }
              const double rtt = round_trip_s(*sent, from_ntp(rp->receive_timestamp), from_ntp(rp->timestamp), d.received);
              *sent = kAnswered;
              ++h.round_received;
              ++counters_.received;
              if (h.pin != UINT32_MAX) {
                record_rtt(h, rtt);
                if (h.last_rtt >= 0) h.jitter += (std::abs(rtt - h.last_rtt) - h.jitter) / 16.0;
                h.last_rtt = rtt;
              }
            }
            if (got < batch.capacity()) break;
          }
        }
        if (n < kEvents) return;
      }
    };
    // One tick: sleep to its start, read what arrived meanwhile. The prober wakes once a tick
    // whatever the probe rate, not once a probe or a reply: at medicd's 20,000 probes/s a
    // wake-up, a send and a read per probe cost more CPU than the probes themselves.
    auto next_tick = std::chrono::steady_clock::now();
    auto wait_tick = [&] {
      next_tick += tick;
      const auto now = std::chrono::steady_clock::now();
      if (next_tick < now) next_tick = now;  // late (a busy machine): no burst of catch-up ticks
      std::this_thread::sleep_until(next_tick);
      ++counters_.ticks;
      receive();
    };

    int round = 0;
    while (!im.stopping) {
      const size_t n_sessions = im.sessions.size();
      if (n_sessions == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        continue;
      }
      const uint64_t total = static_cast<uint64_t>(n_sessions) * static_cast<uint64_t>(cfg.per_round);
      const double duration = std::max(cfg.round_s, static_cast<double>(total) / cfg.max_rate);
      for (Hot& h : im.hot) {
        h.round_first = h.next_seq;
        h.round_sent = h.round_received = 0;
        h.rtt_count = 0;
        h.rtt_answers = 0;
      }
      im.rtt_round = (im.rtt_round + 1) % window;
      const auto start = std::chrono::steady_clock::now();
      next_tick = start;
      im.round_starts.push_back(clock_.now());
      im.round_starts_mono.push_back(clock_.monotonic());
      uint64_t done = 0;
      while (done < total && !im.stopping) {
        // The probes due by now (spread evenly over the round), sent together: one sendmmsg
        // per socket that has any.
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const uint64_t due = std::min<uint64_t>(total, static_cast<uint64_t>(elapsed / duration * static_cast<double>(total)) + 1);
        // Buffers must stay put while the batch is built: size them for this tick first.
        const uint64_t this_tick = due > done ? due - done : 0;
        tx.resize(std::max<size_t>(tx.size(), this_tick * kUnauthenticatedSize));
        const Time now = clock_.now();
        for (uint64_t k = 0; k < this_tick; ++k) {
          // Each pass over the sessions visits them in a fresh random order (shuffle_pass).
          const uint64_t slot_in_pass = (done + k) % n_sessions;
          const size_t pass = static_cast<size_t>((done + k) / n_sessions);
          if (slot_in_pass == 0 || im.order.size() != n_sessions) im.shuffle_pass();
          const size_t idx = im.order[slot_in_pass];
          // The sessions a few probes on are in random places: ask for them now.
          if (slot_in_pass + kPrefetch < n_sessions) {
            const size_t ahead = im.order[slot_in_pass + kPrefetch];
            __builtin_prefetch(&im.hot[ahead], 1);
            __builtin_prefetch(&im.wire[ahead]);
            // Each pass sends every session one probe: this is its pass-th of the round.
            __builtin_prefetch(&im.sent_at[ahead * per_round + std::min(pass, per_round - 1)], 1);
          }
          Hot& h = im.hot[idx];
          SenderPacket p;
          p.seq = h.next_seq++;
          p.timestamp = to_ntp(now);
          p.error = error;
          p.ssid = h.ssid;
          std::span<uint8_t> slot(tx.data() + k * kUnauthenticatedSize, kUnauthenticatedSize);
          encode(p, Mode::unauthenticated, nullptr, slot, kUnauthenticatedSize);
          if (h.round_sent < per_round) im.sent_at[idx * per_round + h.round_sent] = now;
          ++h.round_sent;
          const Wire& w = im.wire[idx];
          if (per_socket[h.socket].empty()) touched.push_back(h.socket);
          Outgoing o;
          o.data = slot;
          o.peer = reinterpret_cast<const sockaddr*>(&w.to);
          o.peer_len = w.to_len;
          o.source = &w.from;
          per_socket[h.socket].push_back(o);
        }
        for (const size_t i : touched) {
          const size_t sent = im.sockets[i].sock.send(per_socket[i]);
          ++counters_.send_calls;
          counters_.sent += sent;
          counters_.send_failed += per_socket[i].size() - sent;
          per_socket[i].clear();
        }
        touched.clear();
        done += this_tick;
        wait_tick();
      }
      // Stragglers.
      const auto wait_until = std::chrono::steady_clock::now() +
                              std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                  std::chrono::duration<double>(cfg.timeout_s));
      while (std::chrono::steady_clock::now() < wait_until && !im.stopping) wait_tick();
      // Telemetry read past the round's end, when the poll loop feeds it: a link that flapped
      // in the round's last moments must be known before the round is judged. Nothing is
      // read meanwhile: replies after the stragglers' wait are late, as they always were.
      if (cfg.telemetry_wait_s > 0) {
        const Duration ended = clock_.monotonic();
        const auto give_up = std::chrono::steady_clock::now() +
                             std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(cfg.telemetry_wait_s));
        while (!im.stopping && std::chrono::steady_clock::now() < give_up) {
          {
            std::lock_guard lock(im.down_mu);
            if (!im.fed || im.read_after >= ended) break;
          }
          std::this_thread::sleep_for(tick);
        }
      }
      if (im.stopping) break;

      // Close the round. First: did a prober lose this round to the measurement? When most
      // of one prober's sessions lost probes at once, the prober (or its host, its network,
      // or every reflector it probes) failed; its counts of this round are left out.
      RoundResult r;
      r.at = clock_.now();
      r.round = ++round;
      r.sessions = n_sessions;
      r.round_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::vector<uint8_t> out_of_round(im.endpoints.size(), 0);
      {
        std::vector<ProbeOutage> per(im.endpoints.size());
        for (size_t i = 0; i < n_sessions; ++i) {
          const Session& s = im.sessions[i];
          const Hot& h = im.hot[i];
          if (s.sender == kNoEndpoint || h.round_sent == 0) continue;
          ProbeOutage& o = per[s.sender];
          ++o.sessions;
          o.sent += h.round_sent;
          const uint64_t lost = h.round_sent - std::min(h.round_sent, h.round_received);
          o.lost += lost;
          if (lost > 0) ++o.lossy_sessions;
        }
        for (uint32_t e = 0; e < per.size(); ++e) {
          ProbeOutage& o = per[e];
          if (o.sessions == 0 || static_cast<int>(o.lossy_sessions) < cfg.outage_min_sessions ||
              static_cast<double>(o.lossy_sessions) < cfg.outage_share * static_cast<double>(o.sessions)) {
            continue;
          }
          o.sender = im.endpoints[e].name;
          out_of_round[e] = 1;
          ++counters_.outage_rounds;
          r.outages.push_back(std::move(o));
        }
      }
      // Window sums, link stats, localization.
      while (static_cast<int>(im.round_starts.size()) > cfg.window_rounds) im.round_starts.pop_front();
      while (static_cast<int>(im.round_starts_mono.size()) > cfg.window_rounds) im.round_starts_mono.pop_front();
      r.window_from = im.round_starts.front();
      // The window's rounds, [start, end] on the monotonic clock, and the links whose carrier
      // changed in any of them.
      const Duration closed = clock_.monotonic();
      std::vector<std::pair<Duration, Duration>> round_spans;
      for (size_t i = 0; i < im.round_starts_mono.size(); ++i) {
        round_spans.emplace_back(im.round_starts_mono[i],
                                 i + 1 < im.round_starts_mono.size() ? im.round_starts_mono[i + 1] : closed);
      }
      std::unordered_map<fabric::LinkId, std::vector<std::pair<Duration, Duration>>> down;
      {
        std::lock_guard lock(im.down_mu);
        for (auto it = im.down.begin(); it != im.down.end();) {
          std::erase_if(it->second, [&](const auto& s) { return s.second < im.round_starts_mono.front(); });
          it = it->second.empty() ? im.down.erase(it) : std::next(it);
        }
        if (!im.down.empty()) down = im.down;
      }
      // A session's round in which a link it may cross was down: left out (zero).
      auto leave_out_down_rounds = [&](Session& s) {
        auto check = [&](fabric::LinkId l) {
          const auto it = down.find(l);
          if (it == down.end()) return;
          const size_t n = std::min(s.window.size(), round_spans.size());
          for (size_t i = 0; i < n; ++i) {
            RoundCounts& w = s.window[s.window.size() - n + i];
            if (w.sent == 0) continue;
            const auto& [from, to] = round_spans[round_spans.size() - n + i];
            for (const auto& [a, b] : it->second) {
              if (a <= to && b >= from) {
                w = {0, 0};
                ++counters_.rounds_left_to_down_links;
                break;
              }
            }
          }
        };
        if (s.pinned) {
          check(s.link);
        } else {
          for (const Path& p : s.candidates) {
            for (const fabric::LinkId l : p) check(l);
          }
        }
      };
      std::vector<LinkObservation> links;
      std::vector<PathObservation> paths;
      for (size_t i = 0; i < n_sessions; ++i) {
        Session& s = im.sessions[i];
        const Hot& h = im.hot[i];
        const bool left_out = s.sender != kNoEndpoint && out_of_round[s.sender];
        if (left_out) {
          s.window.push_back({0, 0});
        } else {
          s.window.push_back({h.round_sent, h.round_sent - std::min(h.round_sent, h.round_received)});
        }
        // A left-out round's answers came late: not the link's latency.
        if (s.pinned) im.rtt_n[h.pin * window + im.rtt_round] = left_out ? 0 : h.rtt_count;
        r.sent += h.round_sent;
        r.received += h.round_received;
        while (static_cast<int>(s.window.size()) > cfg.window_rounds) s.window.pop_front();
        if (!down.empty()) leave_out_down_rounds(s);
        RoundCounts sum;
        for (const auto& w : s.window) {
          sum.sent += w.sent;
          sum.lost += w.lost;
        }
        if (s.pinned) {
          links.push_back({s.link, sum.sent, sum.lost, s.sender, s.reflector});
          window_rtts.clear();
          for (size_t w = 0; w < window; ++w) {
            const float* from = im.rtts.data() + (h.pin * window + w) * rtt_cap;
            window_rtts.insert(window_rtts.end(), from, from + im.rtt_n[h.pin * window + w]);
          }
          LinkProbeStats ls;
          ls.link = s.link;
          ls.sent = sum.sent;
          ls.lost = sum.lost;
          if (!window_rtts.empty()) {
            // Exact quantiles by nearest rank: the ceil(q n)-th smallest.
            std::sort(window_rtts.begin(), window_rtts.end());
            const double n = static_cast<double>(window_rtts.size());
            auto nearest_rank = [&](double q) {
              const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(q * n)));
              return static_cast<double>(window_rtts[std::min(rank, window_rtts.size()) - 1]);
            };
            ls.rtts = window_rtts.size();
            ls.rtt_min_s = window_rtts.front();
            ls.rtt_p25_s = nearest_rank(0.25);
            ls.rtt_p50_s = nearest_rank(0.5);
            ls.rtt_p99_s = nearest_rank(0.99);
          }
          ls.jitter_s = h.jitter;
          r.links.push_back(ls);
        } else {
          paths.push_back({s.candidates, sum.sent, sum.lost, s.sender, s.reflector});
        }
      }
      Localization loc = localize(topology_, links, paths, cfg.localize, im.endpoints);
      r.verdicts = std::move(loc.links);
      r.endpoints = std::move(loc.endpoints);
      ++counters_.rounds;
      {
        std::lock_guard lock(im.mu);
        im.results.push_back(std::move(r));
        if (im.results.size() > 16) im.results.erase(im.results.begin());  // nobody is taking them
      }
    }
  });
  return Ok{};
}

void ProbeScheduler::stop() {
  if (!impl_) return;
  impl_->stopping = true;
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace medic::probes
