#include "probes/reflector.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <vector>

#include "common/asio.h"

namespace medic::probes {

namespace {
std::string host_key(const Endpoint& e) {
  if (e.addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&e.addr);
    return std::string(reinterpret_cast<const char*>(&a->sin_addr), 4);
  }
  const auto* a = reinterpret_cast<const sockaddr_in6*>(&e.addr);
  return std::string(reinterpret_cast<const char*>(&a->sin6_addr), 16);
}
}  // namespace

ReflectorCore::ReflectorCore(ReflectorOptions options)
    : options_(std::move(options)), buckets_(options_.max_tracked), sessions_(options_.max_tracked) {}

bool ReflectorCore::admit(const Endpoint& peer, Time now) {
  if (options_.rate_limit_pps <= 0) return true;
  Bucket& b = buckets_.get(host_key(peer), Bucket{options_.burst, now});
  // Datagram times are the wall clock, which may step back: that adds nothing, takes nothing.
  const double elapsed = std::max(0.0, seconds(now - b.last));
  b.tokens = std::min(options_.burst, b.tokens + elapsed * options_.rate_limit_pps);
  b.last = now;
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

Reflection ReflectorCore::handle(const Datagram& d, Time sent_at, std::span<uint8_t> out, ReflectorCounters& c) {
  ++c.received;
  Reflection r;
  if (d.data.size() > kMaxPacketSize) {
    ++c.malformed;
    return r;
  }
  auto sp = decode_sender(d.data, options_.mode, &options_.key);
  if (!sp.ok()) {
    if (sp.error().rfind("HMAC", 0) == 0) {
      ++c.auth_failed;
    } else {
      ++c.malformed;
    }
    return r;
  }
  if (!admit(d.peer, d.received)) {
    ++c.rate_limited;
    return r;
  }
  if (policy_) {
    const Reflection p = policy_(d, *sp);
    if (!p.answer) {
      ++c.dropped_by_policy;
      return r;
    }
    r.delay = p.delay;
  }
  ReflectorPacket rp;
  if (options_.stateful) {
    // One sequence per session: sender address and port, and its SSID.
    std::string key = host_key(d.peer);
    key.push_back(static_cast<char>(d.peer.port() >> 8));
    key.push_back(static_cast<char>(d.peer.port()));
    key.push_back(static_cast<char>(sp->ssid >> 8));
    key.push_back(static_cast<char>(sp->ssid));
    rp.seq = sessions_.get(key, 0)++;
  } else {
    rp.seq = sp->seq;  // stateless: the sender's own number
  }
  // The transmit timestamp is when the reflector answered; an emulated delay (fabsim) is the
  // network's, so it is not part of the reflector's holding time.
  rp.timestamp = to_ntp(sent_at);
  rp.error = options_.error;
  rp.ssid = sp->ssid;
  rp.receive_timestamp = to_ntp(d.received);
  rp.sender_seq = sp->seq;
  rp.sender_timestamp = sp->timestamp;
  rp.sender_error = sp->error;
  rp.sender_ttl = d.ttl >= 0 ? static_cast<uint8_t>(d.ttl) : 0;
  r.size = encode(rp, options_.mode, &options_.key, out, d.data.size());
  r.answer = r.size > 0;
  return r;
}

namespace {
using Steady = std::chrono::steady_clock;
}  // namespace

struct Reflector::Impl {
  explicit Impl(asio::io_context& io, int fd) : io(io), wait(io, ::dup(fd)), hold_timer(io) {}
  asio::io_context& io;
  asio::posix::stream_descriptor wait;  // readiness only; I/O goes through the socket
  ReceiveBatch batch{64, kMaxPacketSize + 1};
  std::vector<uint8_t> replies = std::vector<uint8_t>(64 * kMaxPacketSize);
  std::vector<Outgoing> out;
  std::vector<Endpoint> peers, sources;
  bool stopped = false;

  // Replies an emulated delay holds back (fabsim): a heap by the time each is due, one timer
  // for the earliest, the due ones sent in one batch. (A timer and four allocations per
  // reply were a sixth of fabsim's time at 20,000 probes a second.)
  struct Held {
    Steady::time_point due;
    uint64_t order;  // among replies due at once (one batch's), the first come goes first
    std::vector<uint8_t> bytes;
    Endpoint peer;
    std::optional<Endpoint> source;
  };
  static bool later(const Held& a, const Held& b) { return a.due != b.due ? a.due > b.due : a.order > b.order; }
  uint64_t held_count = 0;
  std::vector<Held> held;
  std::vector<Held> due;                    // taken off the heap, being sent
  std::vector<std::vector<uint8_t>> spare;  // the buffers of sent replies, used again
  std::vector<Outgoing> due_out;
  asio::steady_timer hold_timer;
  Steady::time_point armed_for = Steady::time_point::max();
};

Reflector::Reflector(asio::io_context& io, UdpSocket socket, ReflectorOptions options, const Clock& clock)
    : socket_(std::move(socket)), core_(std::move(options)), clock_(clock),
      impl_(std::make_unique<Impl>(io, socket_.fd())) {}

Reflector::~Reflector() { stop(); }

void Reflector::start() { arm(); }

void Reflector::stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  boost::system::error_code ec;
  impl_->wait.cancel(ec);
  impl_->wait.close(ec);
  impl_->hold_timer.cancel();
  impl_->held.clear();
}

void Reflector::arm() {
  if (impl_->stopped) return;
  impl_->wait.async_wait(asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& ec) {
    if (ec || impl_->stopped) return;
    drain();
    arm_hold();
    arm();
  });
}

// The hold timer waits for the earliest held reply; setting it earlier cancels the wait
// before (whose handler then does nothing: the new wait is the one that counts).
void Reflector::arm_hold() {
  Impl& m = *impl_;
  if (m.stopped || m.held.empty() || m.held.front().due >= m.armed_for) return;
  m.armed_for = m.held.front().due;
  m.hold_timer.expires_at(m.armed_for);
  m.hold_timer.async_wait([this](const boost::system::error_code& ec) {
    if (ec || impl_->stopped) return;
    impl_->armed_for = Steady::time_point::max();
    send_held();
    arm_hold();
  });
}

void Reflector::send_held() {
  Impl& m = *impl_;
  const auto now = Steady::now();
  m.due.clear();
  while (!m.held.empty() && m.held.front().due <= now) {
    std::pop_heap(m.held.begin(), m.held.end(), Impl::later);
    m.due.push_back(std::move(m.held.back()));
    m.held.pop_back();
  }
  m.due_out.clear();
  for (const Impl::Held& h : m.due) {
    m.due_out.push_back(Outgoing::to(h.bytes, &h.peer, h.source ? &*h.source : nullptr));
  }
  send_replies(m.due_out);
  for (Impl::Held& h : m.due) m.spare.push_back(std::move(h.bytes));
}

// A reply the kernel refuses (a peer or source address it will not send to) is counted and
// skipped; the ones after it still go.
void Reflector::send_replies(std::span<const Outgoing> out) {
  size_t at = 0;
  while (at < out.size()) {
    const size_t sent = socket_.send(out.subspan(at));
    counters_.reflected += sent;
    at += sent;
    if (at < out.size()) {
      ++counters_.send_failed;
      ++at;
    }
  }
}

void Reflector::drain() {
  Impl& m = *impl_;
  // At most a few batches per wake-up so one busy source cannot starve the io_context.
  for (int round = 0; round < 16; ++round) {
    const size_t n = socket_.receive(m.batch);
    if (n == 0) return;
    m.out.clear();
    m.peers.resize(n);
    m.sources.resize(n);
    const Time now = clock_.now();
    const auto steady_now = Steady::now();
    auto datagrams = m.batch.datagrams();
    for (size_t i = 0; i < n; ++i) {
      const Datagram& d = datagrams[i];
      std::span<uint8_t> buf(m.replies.data() + i * kMaxPacketSize, kMaxPacketSize);
      const Reflection r = core_.handle(d, now, buf, counters_);
      if (!r.answer) continue;
      m.peers[i] = d.peer;
      const Endpoint* source = nullptr;
      if (d.local) {
        m.sources[i] = *d.local;
        source = &m.sources[i];
      }
      if (r.delay.count() > 0) {
        // Emulated delay (fabsim): held, and sent when due (arm_hold, send_held).
        if (m.held.size() >= core_.options().max_held) {
          ++counters_.dropped_by_policy;
          continue;
        }
        Impl::Held h{steady_now + std::chrono::microseconds(r.delay.count()), m.held_count++, {}, d.peer, d.local};
        if (!m.spare.empty()) {
          h.bytes = std::move(m.spare.back());
          m.spare.pop_back();
        }
        h.bytes.assign(buf.begin(), buf.begin() + static_cast<long>(r.size));
        m.held.push_back(std::move(h));
        std::push_heap(m.held.begin(), m.held.end(), Impl::later);
        continue;
      }
      m.out.push_back(Outgoing::to(std::span<const uint8_t>(buf.data(), r.size), &m.peers[i], source));
    }
    send_replies(m.out);
    if (n < m.batch.capacity()) return;
  }
}

}  // namespace medic::probes
