// The STAMP session-reflector: answers valid test packets, drops and counts everything
// else, and limits how fast any one source is answered. The decision per packet is pure
// (ReflectorCore, time passed in); Reflector is the Boost.Asio shell around a socket.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <iterator>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/time.h"
#include "probes/packet.h"
#include "probes/udp.h"

namespace boost::asio {
class io_context;
}

namespace medic::probes {

struct ReflectorOptions {
  Mode mode = Mode::unauthenticated;
  HmacKey key;                   // authenticated mode
  bool stateful = false;         // own sequence numbers per session (tells forward from reverse loss)
  double rate_limit_pps = 20000; // answers per second per source address (0: no limit)
  double burst = 2000;           // tokens a source may save up
  size_t max_tracked = 100000;   // sources and sessions remembered (the least recently seen forgotten first)
  ErrorEstimate error;           // this clock's error (S set when synchronized)
  // Replies held back for an emulated delay (fabsim's policy) at most; past that a reply is
  // dropped and counted in dropped_by_policy, as an overloaded emulated network would lose it.
  size_t max_held = 65536;
};

struct ReflectorCounters {
  std::atomic<uint64_t> received{0};
  std::atomic<uint64_t> reflected{0};
  std::atomic<uint64_t> malformed{0};     // too short, or not a packet of the configured mode
  std::atomic<uint64_t> auth_failed{0};   // HMAC does not match
  std::atomic<uint64_t> rate_limited{0};
  std::atomic<uint64_t> dropped_by_policy{0};  // fabsim's emulated loss (and replies past max_held)
  std::atomic<uint64_t> send_failed{0};
};

// What to do with one test packet.
struct Reflection {
  bool answer = false;
  size_t size = 0;          // reply length (the received length: symmetric size)
  Duration delay{};         // hold the reply this long (fabsim's emulated delay)
};

namespace internal {
// At most `capacity` keys; a new key beyond that forgets the least recently used one, so a
// flood of new sources or sessions never resets the state of those still active.
template <class V>
class RecentMap {
 public:
  explicit RecentMap(size_t capacity) : capacity_(capacity > 0 ? capacity : 1) {}
  // The value under `key` (added as `initial` if absent); it becomes the most recent.
  V& get(const std::string& key, const V& initial) {
    if (auto it = index_.find(key); it != index_.end()) {
      items_.splice(items_.begin(), items_, it->second);
      return it->second->second;
    }
    if (index_.size() >= capacity_) {
      index_.erase(items_.back().first);  // reuse the oldest node
      items_.splice(items_.begin(), items_, std::prev(items_.end()));
      items_.front() = {key, initial};
    } else {
      items_.emplace_front(key, initial);
    }
    index_.emplace(key, items_.begin());
    return items_.front().second;
  }
  size_t size() const { return index_.size(); }

 private:
  using Items = std::list<std::pair<std::string, V>>;  // most recently used first
  size_t capacity_;
  Items items_;
  std::unordered_map<std::string, typename Items::iterator> index_;
};
}  // namespace internal

// Decides, per packet, whether and what to answer. Pure: no clock, no socket.
class ReflectorCore {
 public:
  explicit ReflectorCore(ReflectorOptions options);

  // `out` must hold kMaxPacketSize octets. `sent_at` is the time the reply will carry as
  // its transmit timestamp.
  Reflection handle(const Datagram& d, Time sent_at, std::span<uint8_t> out, ReflectorCounters& counters);

  // fabsim hook: called for every valid packet; may drop it or delay the answer.
  using Policy = std::function<Reflection(const Datagram&, const SenderPacket&)>;
  void set_policy(Policy p) { policy_ = std::move(p); }
  const ReflectorOptions& options() const { return options_; }

 private:
  bool admit(const Endpoint& peer, Time now);
  ReflectorOptions options_;
  struct Bucket {
    double tokens;
    Time last;
  };
  internal::RecentMap<Bucket> buckets_;
  internal::RecentMap<uint32_t> sessions_;  // stateful sequence numbers
  Policy policy_;
};

class Reflector {
 public:
  Reflector(boost::asio::io_context& io, UdpSocket socket, ReflectorOptions options, const Clock& clock);
  ~Reflector();
  void start();
  void stop();
  Endpoint local() const { return socket_.local(); }
  const ReflectorCounters& counters() const { return counters_; }
  ReflectorCore& core() { return core_; }

 private:
  struct Impl;
  void arm();
  void drain();
  void arm_hold();
  void send_held();
  void send_replies(std::span<const Outgoing> out);
  UdpSocket socket_;
  ReflectorCore core_;
  const Clock& clock_;
  ReflectorCounters counters_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace medic::probes
