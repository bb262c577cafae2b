#include "probes/sender.h"

#include <poll.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace medic::probes {

namespace {
double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}
}  // namespace

double round_trip_s(Time t1, Time t2, Time t3, Time t4) {
  const double total = seconds(t4 - t1);
  const double held = seconds(t3 - t2);
  // A reflector whose clock steps can report nonsense; never let it make the RTT negative.
  return held >= 0 && held < total ? total - held : total;
}

Result<SessionReport> run_session(const SenderOptions& o) {
  if (o.count == 0) return Error{"count must be at least 1"};
  const size_t size = std::max(o.size == 0 ? base_size(o.mode) : o.size, base_size(o.mode));
  if (size > kMaxPacketSize) {
    return Error{"size " + std::to_string(size) + " is larger than " + std::to_string(kMaxPacketSize) + " octets"};
  }
  if (o.mode == Mode::authenticated && o.key.empty()) return Error{"authenticated mode needs a key"};
  if (o.target.addr.ss_family != o.bind.addr.ss_family) return Error{"the source and target address families differ"};
  auto sock = UdpSocket::open(o.bind, o.netns);
  if (!sock.ok()) return sock.failure();
  if (auto st = sock->connect(o.target); !st.ok()) return st.failure();

  SystemClock clock;
  SessionStats stats;
  SessionReport rep;
  rep.target = o.target.str();
  const size_t capacity = static_cast<size_t>(std::min<uint64_t>(o.count, uint64_t{1} << 26));
  std::vector<Time> sent_at;
  sent_at.reserve(capacity);
  std::vector<uint8_t> answered;  // per sequence number: a reply came
  answered.reserve(capacity);
  ReceiveBatch batch(64, kMaxPacketSize + 1);
  std::vector<uint8_t> tx(64 * size);
  std::vector<Outgoing> out;
  const auto started = std::chrono::steady_clock::now();
  const double cpu0 = cpu_seconds();
  const bool flood = o.interval_s <= 0;
  const Duration give_up = from_seconds(o.wait_s);
  uint64_t next = 0, cursor = 0, expired = 0;
  auto next_due = started;
  bool synced_remote = true;
  std::vector<int> ttls;

  auto on_replies = [&] {
    while (true) {
      const size_t n = sock->receive(batch);
      for (auto& d : batch.datagrams().first(n)) {
        auto rp = decode_reflector(d.data, o.mode, &o.key);
        if (!rp.ok() || rp->ssid != o.ssid || rp->sender_seq >= sent_at.size()) {
          ++rep.malformed;
          continue;
        }
        const uint32_t seq = rp->sender_seq;
        if (!answered[seq] && seq < cursor) --expired;  // given up on, then it came after all
        answered[seq] = 1;
        const Time t1 = sent_at[seq];
        const Time t2 = from_ntp(rp->receive_timestamp);
        const Time t3 = from_ntp(rp->timestamp);
        const double rtt = round_trip_s(t1, t2, t3, d.received);
        const bool both_synced = o.error.synchronized && rp->error.synchronized;
        synced_remote = synced_remote && rp->error.synchronized;
        stats.received(seq, rtt, both_synced ? seconds(t2 - t1) : NAN, both_synced ? seconds(d.received - t3) : NAN);
        if (rp->sender_ttl != 0 && ttls.size() < 64) ttls.push_back(rp->sender_ttl);
      }
      if (n < batch.capacity()) return;
    }
  };
  // Probes neither answered nor young enough to still be answered no longer hold the window.
  auto outstanding = [&](Time now) {
    while (cursor < next && (answered[cursor] || now - sent_at[cursor] > give_up)) {
      if (!answered[cursor]) ++expired;
      ++cursor;
    }
    return next - stats.received_count() - expired;
  };

  while (next < o.count) {
    out.clear();
    size_t burst = 0;
    const Time now0 = clock.now();
    while (next < o.count && burst < 64) {
      if (flood ? outstanding(now0) >= o.window : std::chrono::steady_clock::now() < next_due) break;
      SenderPacket p;
      p.seq = static_cast<uint32_t>(next);
      const Time now = clock.now();
      p.timestamp = to_ntp(now);
      p.error = o.error;
      p.ssid = o.ssid;
      const std::span<uint8_t> slot(tx.data() + burst * size, size);
      const size_t len = encode(p, o.mode, &o.key, slot, size);
      sent_at.push_back(now);
      answered.push_back(0);
      stats.sent(p.seq);
      out.push_back(Outgoing::to(std::span<const uint8_t>(slot.data(), len), nullptr));
      ++next;
      ++burst;
      if (!flood) {
        next_due += std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(o.interval_s));
      }
    }
    if (!out.empty()) sock->send(out);
    on_replies();
    // Sleep until a reply or the next send time (flood: only while the window is full).
    int timeout_ms = 0;
    if (!flood) {
      const auto left = next_due - std::chrono::steady_clock::now();
      timeout_ms = static_cast<int>(std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(left).count()));
    } else if (burst == 0) {
      timeout_ms = 1;
    }
    if (timeout_ms > 0) {
      pollfd pfd{sock->fd(), POLLIN, 0};
      ::poll(&pfd, 1, timeout_ms);
    }
  }
  // Late replies.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                                std::chrono::duration<double>(o.wait_s));
  while (stats.received_count() < stats.sent_count() && std::chrono::steady_clock::now() < deadline) {
    pollfd pfd{sock->fd(), POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    ::poll(&pfd, 1, static_cast<int>(std::max<int64_t>(1, left.count())));
    on_replies();
  }
  rep.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  rep.cpu_s = cpu_seconds() - cpu0;
  rep.sent = stats.sent_count();
  rep.received = stats.received_count();
  rep.lost = stats.lost();
  rep.duplicates = stats.duplicates();
  rep.reordered = stats.reordered();
  rep.loss = stats.loss_interval();
  rep.jitter_s = stats.jitter_s();
  if (stats.rtt().count() > 0) {
    rep.rtt_min_s = stats.rtt().min();
    rep.rtt_median_s = stats.rtt().quantile(0.5);
    rep.rtt_p99_s = stats.rtt().quantile(0.99);
    rep.rtt_max_s = stats.rtt().max();
  }
  rep.one_way = o.error.synchronized && synced_remote && stats.forward().count() > 0;
  if (rep.one_way) {
    rep.forward_median_s = stats.forward().quantile(0.5);
    rep.backward_median_s = stats.backward().quantile(0.5);
  }
  if (!ttls.empty()) rep.reflector_ttl = ttls.front();
  return rep;
}

}  // namespace medic::probes
