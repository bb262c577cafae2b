#include "probes/plan.h"

#include "common/random.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace medic::probes {

using fabric::DeviceId;
using fabric::kNone;
using fabric::LinkId;
using fabric::PortId;

namespace {

using Rng = SplitMix64;

// A GPU NIC: a host port linked to a switch (its ToR, the "attach" device).
struct Nic {
  PortId port;
  DeviceId attach;
  int zone;
};

constexpr uint8_t kFar = 255;

// Hop counts from `from` over the device graph; hosts are reached but not crossed.
std::vector<uint8_t> hops_from(const fabric::Topology& t, DeviceId from) {
  std::vector<uint8_t> dist(t.devices().size(), kFar);
  std::vector<DeviceId> queue{from};
  dist[from] = 0;
  for (size_t head = 0; head < queue.size(); ++head) {
    const DeviceId x = queue[head];
    if (x != from && !t.device(x).is_switch()) continue;
    if (dist[x] + 1 >= kFar) continue;
    for (PortId p : t.ports_of(x)) {
      const PortId q = t.peer(p);
      if (q == kNone) continue;
      const DeviceId y = t.port(q).device;
      if (dist[y] != kFar) continue;
      dist[y] = static_cast<uint8_t>(dist[x] + 1);
      queue.push_back(y);
    }
  }
  return dist;
}

bool crosses(const Path& p, LinkId l) { return std::find(p.begin(), p.end(), l) != p.end(); }

class Planner {
 public:
  Planner(const fabric::Topology& t, const EcmpModel& ecmp, const PlanConfig& c)
      : t_(t), ecmp_(ecmp), c_(c), rng_(c.seed), cover_(t.links().size(), 0) {
    for (DeviceId d = 0; d < t.devices().size(); ++d) {
      if (t.device(d).is_switch()) continue;
      for (PortId p : t.ports_of(d)) {
        const PortId q = t.peer(p);
        if (q == kNone) continue;
        const DeviceId attach = t.port(q).device;
        if (!t.device(attach).is_switch()) continue;
        const int zone = t.device(attach).zone >= 0 ? t.device(attach).zone : t.device(d).zone;
        nics_.push_back({p, attach, zone});
      }
    }
    // NICs grouped by zone (one group when the fabric has no zones) and by ToR.
    for (uint32_t i = 0; i < nics_.size(); ++i) {
      auto it = std::find(zones_.begin(), zones_.end(), nics_[i].zone);
      if (it == zones_.end()) {
        zones_.push_back(nics_[i].zone);
        by_zone_.emplace_back();
        it = zones_.end() - 1;
      }
      nic_zone_.push_back(static_cast<uint32_t>(it - zones_.begin()));
      by_zone_[nic_zone_.back()].push_back(i);
    }
    for (uint32_t i = 0; i < nics_.size(); ++i) nic_of_port_.emplace(nics_[i].port, i);
  }

  ProbePlan run() {
    ProbePlan plan;
    for (LinkId l = 0; l < t_.links().size(); ++l) {
      const auto& link = t_.link(l);
      if (link.a != kNone && link.b != kNone) plan.pinned.push_back(l);
    }
    sweep(plan);
    top_up(plan);
    return plan;
  }

 private:
  uint16_t sport() {
    const uint32_t span = c_.sport_count == 0 ? 1 : c_.sport_count;
    return static_cast<uint16_t>((c_.sport_base + rng_.below(span)) & 0xffff);
  }

  void add(ProbePlan& plan, Flow f, const Path& path) {
    for (LinkId l : path) ++cover_[l];
    plan.flows.push_back(f);
  }

  // A random NIC to send to from NIC i: on another ToR, in the same zone or another.
  // kNone when there is none (after a bounded number of draws).
  uint32_t random_peer(uint32_t i, bool same_zone) {
    const auto& pool = same_zone ? by_zone_[nic_zone_[i]] : all_;
    for (int tries = 0; tries < 64 && !pool.empty(); ++tries) {
      const uint32_t j = pool[rng_.below(pool.size())];
      if (nics_[j].attach == nics_[i].attach) continue;
      if (!same_zone && nic_zone_[j] == nic_zone_[i]) continue;
      return j;
    }
    return kNone;
  }

  // flows_per_nic flows from every NIC. Slot by slot (even slots to other zones, odd ones
  // within the zone, when both exist), destinations follow a random cyclic shift of a
  // shuffled NIC list, so that every NIC also receives about one flow per slot; a shift
  // that would land on the sender's own ToR (or zone) is replaced by a random pick.
  void sweep(ProbePlan& plan) {
    all_.resize(nics_.size());
    std::iota(all_.begin(), all_.end(), 0u);
    const bool zoned = zones_.size() > 1;
    const int slots = std::max(0, c_.flows_per_nic);
    std::vector<std::vector<uint32_t>> dest(static_cast<size_t>(slots), std::vector<uint32_t>(nics_.size(), kNone));
    for (int s = 0; s < slots; ++s) {
      const bool same_zone = !zoned || s % 2 == 1;
      auto assign = [&](std::vector<uint32_t> order) {
        if (order.size() < 2) return;
        for (size_t k = order.size() - 1; k > 0; --k) std::swap(order[k], order[rng_.below(k + 1)]);
        const size_t shift = 1 + rng_.below(order.size() - 1);
        for (size_t k = 0; k < order.size(); ++k) {
          const uint32_t i = order[k], j = order[(k + shift) % order.size()];
          const bool ok = nics_[j].attach != nics_[i].attach && (same_zone || nic_zone_[j] != nic_zone_[i]);
          dest[s][i] = ok ? j : random_peer(i, same_zone);
        }
      };
      if (same_zone) {
        for (const auto& zone : by_zone_) assign(zone);
      } else {
        assign(all_);
      }
      // A NIC with nobody to reach in the slot's kind (a zone of one ToR) tries the other.
      for (uint32_t i = 0; i < nics_.size(); ++i) {
        if (dest[s][i] == kNone && zoned) dest[s][i] = random_peer(i, !same_zone);
      }
    }
    for (uint32_t i = 0; i < nics_.size(); ++i) {
      for (int s = 0; s < slots; ++s) {
        const uint32_t j = dest[s][i];
        if (j == kNone) continue;
        const Flow f{nics_[i].port, nics_[j].port, sport()};
        const Path p = ecmp_.path_of(f);
        if (!p.empty()) add(plan, f, p);
      }
    }
  }

  // More flows for links crossed fewer than min_cover times. A NIC link is covered by
  // sending from that NIC. A switch-to-switch link u--v by sending from NICs nearest u (on
  // u's side) to NICs on v's side, sweeping source ports until the ECMP hash takes the
  // link; each direction is tried in turn.
  void top_up(ProbePlan& plan) {
    constexpr int kTriesPerFlow = 8192;
    for (LinkId l = 0; l < t_.links().size(); ++l) {
      if (cover_[l] >= static_cast<uint32_t>(std::max(0, c_.min_cover))) continue;
      const auto& link = t_.link(l);
      if (link.a == kNone || link.b == kNone) continue;
      auto nic_end = [&](PortId p) -> uint32_t {
        auto it = nic_of_port_.find(p);
        return it == nic_of_port_.end() ? kNone : it->second;
      };
      const uint32_t nic = nic_end(link.a) != kNone ? nic_end(link.a) : nic_end(link.b);
      if (nic != kNone) {
        for (int tries = 0; tries < kTriesPerFlow && cover_[l] < static_cast<uint32_t>(c_.min_cover); ++tries) {
          uint32_t j = random_peer(nic, tries % 2 == 1);
          if (j == kNone) j = random_peer(nic, tries % 2 == 0);
          if (j == kNone) break;
          const Flow f{nics_[nic].port, nics_[j].port, sport()};
          const Path p = ecmp_.path_of(f);
          if (crosses(p, l)) add(plan, f, p);
        }
        continue;
      }
      const DeviceId u = t_.port(link.a).device, v = t_.port(link.b).device;
      const auto du = hops_from(t_, u), dv = hops_from(t_, v);
      // Senders: NICs on the ToRs nearest each end (on its side); receivers: any NIC on
      // the other side.
      std::vector<uint32_t> near[2], far[2];
      for (int side = 0; side < 2; ++side) {
        const auto& mine = side == 0 ? du : dv;
        const auto& other = side == 0 ? dv : du;
        uint8_t best = kFar;
        for (const Nic& n : nics_) {
          if (mine[n.attach] < other[n.attach]) best = std::min(best, mine[n.attach]);
        }
        for (uint32_t i = 0; i < nics_.size(); ++i) {
          const DeviceId a = nics_[i].attach;
          if (mine[a] < other[a] && mine[a] == best) near[side].push_back(i);
          if (other[a] < mine[a]) far[side].push_back(i);
        }
      }
      for (int tries = 0; tries < kTriesPerFlow && cover_[l] < static_cast<uint32_t>(c_.min_cover); ++tries) {
        const int side = tries % 2;
        if (near[side].empty() || far[side].empty()) continue;
        const uint32_t i = near[side][rng_.below(near[side].size())];
        const uint32_t j = far[side][rng_.below(far[side].size())];
        const Flow f{nics_[i].port, nics_[j].port, sport()};
        const Path p = ecmp_.path_of(f);
        if (crosses(p, l)) add(plan, f, p);
      }
    }
  }

  const fabric::Topology& t_;
  const EcmpModel& ecmp_;
  const PlanConfig& c_;
  Rng rng_;
  std::vector<uint32_t> cover_;
  std::vector<Nic> nics_;
  std::vector<int> zones_;
  std::vector<std::vector<uint32_t>> by_zone_;
  std::vector<uint32_t> nic_zone_;
  std::vector<uint32_t> all_;
  std::unordered_map<PortId, uint32_t> nic_of_port_;
};

}  // namespace

ProbePlan make_plan(const fabric::Topology& topology, const EcmpModel& ecmp, const PlanConfig& config) {
  return Planner(topology, ecmp, config).run();
}

}  // namespace medic::probes
