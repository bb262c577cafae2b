#include "probes/scheduler.h"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <random>
#include <stdexcept>

#include "common/thread_name.h"
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
  if (window_rounds < 1) throw std::invalid_argument("probe window must be at least one round");
  if (!(outage_share > 0 && outage_share <= 1)) throw std::invalid_argument("probe outage share must be in (0, 1]");
  if (outage_min_sessions < 1) throw std::invalid_argument("probe outage minimum sessions must be at least 1");
  if (!(tick_s > 0 && tick_s <= 0.1)) throw std::invalid_argument("probe tick must be within (0, 0.1] seconds");
}

namespace {

struct RoundCounts {
  uint64_t sent = 0, lost = 0;
};

struct Session {
  bool pinned = true;
  fabric::LinkId link = fabric::kNone;
  Flow flow;
  std::vector<Path> candidates;  // path sessions
  size_t socket = 0;
  Endpoint target, source;
  uint32_t sender = kNoEndpoint, reflector = kNoEndpoint;  // measurement endpoints
  uint16_t ssid = 0;
  uint32_t next_seq = 0;
  std::vector<std::pair<uint32_t, Time>> outstanding;  // this round
  uint64_t round_sent = 0, round_received = 0;
  std::deque<RoundCounts> window;
  // Pinned sessions: the round-trip times of the window's rounds, kept as they are (a
  // session has per_round answers a round, 10 by default), a ring of window_rounds rounds
  // of up to rtt_cap values each; round rtt_round is this one, rtt_n[r] how many round r
  // holds. A quantile sketch per round, grown an allocation at a time, made medicd grow by
  // about 1 GB over zone32k's first ten minutes (bench/load); this is about 250 bytes a
  // session at the defaults, allocated once.
  std::vector<float> rtts;
  std::vector<uint16_t> rtt_n;
  size_t rtt_round = 0;
  uint32_t rtt_answers = 0;  // this round's, for a uniform sample when they pass rtt_cap
  double last_rtt = -1, jitter = 0;
};

struct Sock {
  UdpSocket sock;
  std::string source;
  uint16_t sport = 0;
};

}  // namespace

struct ProbeScheduler::Impl {
  EcmpModel ecmp;
  std::vector<Session> sessions;
  std::vector<Sock> sockets;
  ReplyIndex replies;
  std::vector<ProbeEndpoint> endpoints;  // probe sources, then reflectors
  std::deque<Time> round_starts;         // of the rounds in the window
  size_t pinned = 0, paths = 0;
  std::thread thread;
  std::atomic<bool> stopping{false};
  std::mutex mu;
  std::vector<RoundResult> results;
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
    s.outstanding.reserve(static_cast<size_t>(config_.per_round));
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
    auto record_rtt = [&](Session& s, double rtt) {
      uint16_t& n = s.rtt_n[s.rtt_round];
      ++s.rtt_answers;
      if (n < rtt_cap) {
        s.rtts[s.rtt_round * rtt_cap + n++] = static_cast<float>(rtt);
      } else if (const uint64_t j = im.rng() % s.rtt_answers; j < rtt_cap) {
        s.rtts[s.rtt_round * rtt_cap + j] = static_cast<float>(rtt);
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
            for (const Datagram& d : batch.datagrams().first(got)) {
              auto rp = decode_reflector(d.data, Mode::unauthenticated, nullptr);
              if (!rp.ok()) {
                ++counters_.late_or_foreign;
                continue;
              }
              const uint32_t idx = im.replies.find(rp->ssid, static_cast<uint32_t>(si), d.peer);
              if (idx == ReplyIndex::kNoSession) {
                ++counters_.late_or_foreign;
                continue;
              }
              Session* match = &im.sessions[idx];
              auto& out = match->outstanding;
              const auto o = std::find_if(out.begin(), out.end(), [&](const auto& x) { return x.first == rp->sender_seq; });
              if (o == out.end()) {
                ++counters_.late_or_foreign;
                continue;
              }
              const double rtt = round_trip_s(o->second, from_ntp(rp->receive_timestamp), from_ntp(rp->timestamp), d.received);
              out.erase(o);
              ++match->round_received;
              ++counters_.received;
              if (match->pinned) {
                record_rtt(*match, rtt);
                if (match->last_rtt >= 0) match->jitter += (std::abs(rtt - match->last_rtt) - match->jitter) / 16.0;
                match->last_rtt = rtt;
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
      for (Session& s : im.sessions) {
        s.outstanding.clear();
        s.round_sent = s.round_received = 0;
        if (s.pinned) {
          if (s.rtt_n.empty()) {
            s.rtts.assign(window * rtt_cap, 0.0f);
            s.rtt_n.assign(window, 0);
          }
          s.rtt_round = (s.rtt_round + 1) % window;
          s.rtt_n[s.rtt_round] = 0;
          s.rtt_answers = 0;
        }
      }
      const auto start = std::chrono::steady_clock::now();
      next_tick = start;
      im.round_starts.push_back(clock_.now());
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
          if (slot_in_pass == 0 || im.order.size() != n_sessions) im.shuffle_pass();
          Session& s = im.sessions[im.order[slot_in_pass]];
          SenderPacket p;
          p.seq = s.next_seq++;
          p.timestamp = to_ntp(now);
          p.error = error;
          p.ssid = s.ssid;
          std::span<uint8_t> slot(tx.data() + k * kUnauthenticatedSize, kUnauthenticatedSize);
          encode(p, Mode::unauthenticated, nullptr, slot, kUnauthenticatedSize);
          s.outstanding.emplace_back(p.seq, now);
          ++s.round_sent;
          if (per_socket[s.socket].empty()) touched.push_back(s.socket);
          per_socket[s.socket].push_back(Outgoing{slot, &s.target, &s.source});
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
        for (const Session& s : im.sessions) {
          if (s.sender == kNoEndpoint || s.round_sent == 0) continue;
          ProbeOutage& o = per[s.sender];
          ++o.sessions;
          o.sent += s.round_sent;
          const uint64_t lost = s.round_sent - std::min(s.round_sent, s.round_received);
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
      r.window_from = im.round_starts.front();
      std::vector<LinkObservation> links;
      std::vector<PathObservation> paths;
      for (Session& s : im.sessions) {
        const bool left_out = s.sender != kNoEndpoint && out_of_round[s.sender];
        if (left_out) {
          s.window.push_back({0, 0});
          if (s.pinned) s.rtt_n[s.rtt_round] = 0;  // late answers, not the link's latency
        } else {
          s.window.push_back({s.round_sent, s.round_sent - std::min(s.round_sent, s.round_received)});
        }
        r.sent += s.round_sent;
        r.received += s.round_received;
        while (static_cast<int>(s.window.size()) > cfg.window_rounds) s.window.pop_front();
        RoundCounts sum;
        for (const auto& w : s.window) {
          sum.sent += w.sent;
          sum.lost += w.lost;
        }
        if (s.pinned) {
          links.push_back({s.link, sum.sent, sum.lost, s.sender, s.reflector});
          window_rtts.clear();
          for (size_t w = 0; w < s.rtt_n.size(); ++w) {
            const auto from = s.rtts.begin() + static_cast<std::ptrdiff_t>(w * rtt_cap);
            window_rtts.insert(window_rtts.end(), from, from + s.rtt_n[w]);
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
          ls.jitter_s = s.jitter;
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
