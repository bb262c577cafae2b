#include "probes/ecmp.h"

#include "common/random.h"

#include <algorithm>
#include <limits>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace medic::probes {

using fabric::DeviceId;
using fabric::kNone;
using fabric::LinkId;
using fabric::PortId;

namespace {

// Hop counts fit a byte: a Clos is a handful of hops across; 255 marks "not reachable".
constexpr uint8_t kUnreached = 255;

// Per-destination distance vectors kept in the cache: 64 MiB worth of them, at least 16.
constexpr size_t kCacheBytes = size_t{64} << 20;

}  // namespace

struct EcmpModel::Impl {
  struct Hop {
    LinkId link;
    DeviceId next;
  };
  using Dist = std::shared_ptr<const std::vector<uint8_t>>;

  // Device adjacency in CSR form, one entry per link (parallel links are separate hops),
  // in the order of the device's ports.
  std::vector<uint32_t> offsets;
  std::vector<Hop> hops;
  std::vector<uint8_t> is_host;

  // LRU of distance vectors keyed by destination device; path_of() is const and may be
  // called from several threads, hence the mutex.
  size_t capacity = 16;
  std::mutex mu;
  std::list<DeviceId> lru;  // most recently used first
  std::unordered_map<DeviceId, std::pair<Dist, std::list<DeviceId>::iterator>> cache;

  explicit Impl(const fabric::Topology& t) {
    const size_t n = t.devices().size();
    offsets.assign(n + 1, 0);
    is_host.assign(n, 0);
    for (DeviceId d = 0; d < n; ++d) {
      is_host[d] = t.device(d).role == fabric::Role::host;
      for (PortId p : t.ports_of(d)) {
        const PortId q = t.peer(p);
        if (q == kNone) continue;
        hops.push_back({t.port(p).link, t.port(q).device});
      }
      offsets[d + 1] = static_cast<uint32_t>(hops.size());
    }
    capacity = std::max<size_t>(16, kCacheBytes / std::max<size_t>(1, n));
  }

  std::span<const Hop> hops_of(DeviceId d) const {
    return {hops.data() + offsets[d], hops.data() + offsets[d + 1]};
  }

  // A neighbour one step closer to `to` that may carry traffic on: switches, and the
  // destination device itself (hosts are endpoints, never transit).
  bool closer(const std::vector<uint8_t>& dist, DeviceId v, DeviceId u, DeviceId to) const {
    return dist[u] + 1 == dist[v] && (u == to || !is_host[u]);
  }

  std::vector<uint8_t> bfs(DeviceId to) const {
    std::vector<uint8_t> dist(is_host.size(), kUnreached);
    std::vector<DeviceId> queue;
    queue.reserve(is_host.size());
    dist[to] = 0;
    queue.push_back(to);
    for (size_t head = 0; head < queue.size(); ++head) {
      const DeviceId x = queue[head];
      if (x != to && is_host[x]) continue;  // reached, but nothing is reached through it
      if (dist[x] + 1 >= kUnreached) continue;
      for (const Hop& h : hops_of(x)) {
        if (dist[h.next] != kUnreached) continue;
        dist[h.next] = static_cast<uint8_t>(dist[x] + 1);
        queue.push_back(h.next);
      }
    }
    return dist;
  }

  Dist distances(DeviceId to) {
    {
      std::lock_guard lock(mu);
      if (auto it = cache.find(to); it != cache.end()) {
        lru.splice(lru.begin(), lru, it->second.second);
        return it->second.first;
      }
    }
    // Computed outside the lock; two threads racing for the same destination both compute
    // it and the second insert is dropped.
    auto d = std::make_shared<const std::vector<uint8_t>>(bfs(to));
    std::lock_guard lock(mu);
    if (auto it = cache.find(to); it != cache.end()) return it->second.first;
    if (cache.size() >= capacity) {
      cache.erase(lru.back());
      lru.pop_back();
    }
    lru.push_front(to);
    cache.emplace(to, std::make_pair(d, lru.begin()));
    return d;
  }
};

namespace {

// Where a path between two ports starts and ends: it leaves over src's link into `from`,
// crosses the fabric from `from` to `to` (the device on the far side of dst's link) and
// arrives over dst's link.
struct Ends {
  bool ok = false;
  bool one_link = false;  // src and dst are the two ends of one link
  LinkId first = kNone, last = kNone;
  DeviceId from = kNone, to = kNone;
};

Ends ends_of(const fabric::Topology& t, PortId src, PortId dst) {
  Ends e;
  if (src >= t.ports().size() || dst >= t.ports().size() || src == dst) return e;
  const PortId src_peer = t.peer(src), dst_peer = t.peer(dst);
  if (src_peer == kNone || dst_peer == kNone) return e;
  e.first = t.port(src).link;
  e.last = t.port(dst).link;
  e.from = t.port(src_peer).device;
  e.to = t.port(dst_peer).device;
  e.one_link = e.first == e.last;
  e.ok = true;
  return e;
}

}  // namespace

EcmpModel::EcmpModel(const fabric::Topology& topology, uint64_t seed)
    : topology_(topology), seed_(seed), impl_(std::make_shared<Impl>(topology)) {}

Path EcmpModel::path_of(const Flow& f) const {
  const Ends e = ends_of(topology_, f.src, f.dst);
  if (!e.ok) return {};
  if (e.one_link) return {e.first};
  if (e.from != e.to && impl_->is_host[e.from]) return {};
  const auto dist_ptr = impl_->distances(e.to);
  const std::vector<uint8_t>& dist = *dist_ptr;
  if (dist[e.from] == kUnreached) return {};

  // The flow's part of the hash, then one draw per switch salted with the switch's id and
  // the fabric's seed, so that tiers do not polarize (pick the same index everywhere).
  const uint64_t flow_key =
      mix64(mix64((uint64_t{f.src} << 32) | f.dst) ^ ((uint64_t{f.sport} << 16) | f.dport));
  Path path;
  path.reserve(static_cast<size_t>(dist[e.from]) + 2);
  path.push_back(e.first);
  DeviceId v = e.from;
  while (v != e.to) {
    const auto hops = impl_->hops_of(v);
    uint32_t n = 0;
    for (const auto& h : hops) n += impl_->closer(dist, v, h.next, e.to);
    if (n == 0) return {};  // cannot happen with consistent distances; be safe
    const uint64_t h = mix64(flow_key ^ mix64(seed_ ^ (uint64_t{v} * 0xd6e8feb86659fd93ULL)));
    uint32_t pick = static_cast<uint32_t>(h % n);
    for (const auto& hop : hops) {
      if (!impl_->closer(dist, v, hop.next, e.to)) continue;
      if (pick-- == 0) {
        path.push_back(hop.link);
        v = hop.next;
        break;
      }
    }
  }
  path.push_back(e.last);
  return path;
}

std::vector<Path> EcmpModel::paths(PortId src, PortId dst, size_t limit) const {
  std::vector<Path> out;
  if (limit == 0) return out;
  const Ends e = ends_of(topology_, src, dst);
  if (!e.ok) return out;
  if (e.one_link) return {{e.first}};
  if (e.from != e.to && impl_->is_host[e.from]) return out;
  const auto dist_ptr = impl_->distances(e.to);
  const std::vector<uint8_t>& dist = *dist_ptr;
  if (dist[e.from] == kUnreached) return out;

  // Depth-first over the distance DAG, in port order, stopping at `limit`.
  Path cur{e.first};
  const Impl& impl = *impl_;
  auto walk = [&](auto&& self, DeviceId v) -> void {
    if (out.size() >= limit) return;
    if (v == e.to) {
      out.push_back(cur);
      out.back().push_back(e.last);
      return;
    }
    for (const auto& h : impl.hops_of(v)) {
      if (!impl.closer(dist, v, h.next, e.to)) continue;
      cur.push_back(h.link);
      self(self, h.next);
      cur.pop_back();
      if (out.size() >= limit) return;
    }
  };
  walk(walk, e.from);
  return out;
}

uint64_t EcmpModel::path_count(PortId src, PortId dst) const {
  const Ends e = ends_of(topology_, src, dst);
  if (!e.ok) return 0;
  if (e.one_link) return 1;
  if (e.from != e.to && impl_->is_host[e.from]) return 0;
  const auto dist_ptr = impl_->distances(e.to);
  const std::vector<uint8_t>& dist = *dist_ptr;
  if (dist[e.from] == kUnreached) return 0;

  // Paths from v = sum over v's next hops of paths from the next device; memoized, and
  // saturating rather than wrapping on absurdly meshed fabrics.
  constexpr uint64_t kUnknown = std::numeric_limits<uint64_t>::max();
  std::unordered_map<DeviceId, uint64_t> memo;
  const Impl& impl = *impl_;
  auto count = [&](auto&& self, DeviceId v) -> uint64_t {
    if (v == e.to) return 1;
    if (auto it = memo.find(v); it != memo.end()) return it->second;
    uint64_t total = 0;
    for (const auto& h : impl.hops_of(v)) {
      if (!impl.closer(dist, v, h.next, e.to)) continue;
      const uint64_t c = self(self, h.next);
      total = c > kUnknown - total ? kUnknown : total + c;
    }
    memo.emplace(v, total);
    return total;
  };
  return count(count, e.from);
}

}  // namespace medic::probes
