// The emulated fabric behind fabsim: per-port counters that grow with the traffic each link
// carries, oper and drain state, optics readings that follow the light actually sent and
// lost on the way, and the faults a scenario injects. Time is passed in (seconds since the
// emulator started) so the model is deterministic under test.
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "fabric/topology.h"
#include "probes/ecmp.h"
#include "sim/scenario.h"

namespace medic::sim {

struct PortCounters {
  bool oper_up = true;
  bool drained = false;
  double carrier_changes = 0, link_down_events = 0;
  double rx_packets = 0, tx_packets = 0, rx_bytes = 0, tx_bytes = 0;
  double rx_errors = 0, tx_errors = 0, rx_discards = 0, tx_discards = 0;
  double crc_errors = 0, symbol_errors = 0;
  double fec_corrected_bits = 0, fec_uncorrectable = 0;
  double rx_pause = 0, tx_pause = 0;
  double rx_power_dbm = 0, tx_power_dbm = 0, temperature_c = 0, laser_bias_ma = 0;
};

enum class DeviceMode : uint8_t { normal, silent, garbage };

// The fate of one probe round trip through the emulated fabric.
struct ProbeFate {
  bool delivered = false;   // there and back
  Duration delay{};         // one-way hop and fault delays of both directions
  size_t hops = 0;          // links crossed on the way there
};

class FabricSim {
 public:
  explicit FabricSim(const fabric::Topology& topology, uint64_t seed = 1);

  const fabric::Topology& topology() const { return topology_; }

  void set_link_up(fabric::LinkId link, bool up, double t);
  bool link_up(fabric::LinkId link) const { return links_[link].up; }
  // A link carries traffic when it is up and at least one end is not drained.
  bool carries_traffic(fabric::LinkId link) const;

  // Drain or undrain a switch interface (idempotent). Error: unknown interface.
  Result<PortCounters> set_drained(fabric::DeviceId device, std::string_view port, bool drained, double t);
  Result<PortCounters> state(fabric::DeviceId device, std::string_view port, double t);
  // Every drain API call that reached an interface, in the order carried out (a lying
  // device's too, marked), so tests can tell when a switch was first touched. The last
  // kDrainCallsKept are kept; drain_calls_dropped() counts the older ones.
  struct DrainCall {
    double t = 0;  // scenario seconds
    fabric::PortId port = fabric::kNone;
    bool drained = false;
    bool carried_out = true;  // false: a lying device answered and did nothing
  };
  static constexpr size_t kDrainCallsKept = 10000;
  const std::deque<DrainCall>& drain_calls() const { return drain_calls_; }
  uint64_t drain_calls_dropped() const { return drain_calls_dropped_; }

  PortCounters counters(fabric::PortId port, double t);

  // A scenario event: a link down/up, or a fault starting or ending.
  void apply(const Fault& fault, SimEvent::Phase phase, double t);
  DeviceMode mode(fabric::DeviceId device) const { return modes_[device]; }
  bool reflector_down(fabric::DeviceId device) const { return reflector_down_[device] != 0; }
  // Seconds the device's drain API takes to answer now (rpc_delay faults).
  double rpc_delay_s(fabric::DeviceId device) const { return rpc_delay_s_[device]; }
  // How the device's drain API misbehaves now (rpc_fault faults); a lying device's
  // set_drained and state answer what was asked for and change nothing.
  RpcAnswer rpc_answer(fabric::DeviceId device) const { return rpc_answer_[device]; }

  // A STAMP probe from the port with address `src` to the port with address `dst`: the path
  // it takes there (ECMP by 5-tuple, as EcmpModel says) and back (the reverse 5-tuple),
  // losing it with each link's probe loss (gray failures, corruption, down links) and adding
  // each hop's delay. `draw` is a uniform random number in [0, 1) per hop.
  template <class Rng>
  ProbeFate probe(fabric::PortId src, fabric::PortId dst, uint16_t sport, uint16_t dport, Rng& rng);
  // The ports a flow's probe arrives at, hop by hop, there and back (the reverse 5-tuple),
  // as the ECMP model routes it. They depend on the topology alone, so they are kept per
  // flow: a prober sends the same flows round after round (up to kFlowsKept flows; past
  // that the cache starts over).
  struct FlowHops {
    std::vector<fabric::PortId> in;  // the receiving port of each hop: there, then back
    uint32_t there = 0;              // how many of them are on the way there
  };
  const FlowHops& flow_hops(fabric::PortId src, fabric::PortId dst, uint16_t sport, uint16_t dport);
  static constexpr size_t kFlowsKept = size_t{1} << 20;

  // A switch's ports in the Prometheus text format (node_exporter names, ethtool PHY
  // counters, optics_* and fec_* families).
  std::string render_prometheus(fabric::DeviceId device, double t);
  // A host's NICs as node_exporter 1.5 with its ethtool collector reports a mlx5 NIC.
  std::string render_host(fabric::DeviceId device, double t);
  // A switch as a gNMI gateway returns it: OpenConfig JSON (RFC 7951).
  std::string render_openconfig(fabric::DeviceId device, double t);

 private:
  struct PortState {
    double last_t = 0;
    double tx_pps = 0;        // offered load when the port may send
    double avg_bytes = 4096;
    double tx_base_dbm = 0.5;
    double fiber_loss_db = 1;  // on the light this port receives
    double lane_offset[4] = {0, 0, 0, 0};
    double base_ber = 1e-9;
    // Fractional parts carried between integrations, so that a rate below one event per
    // poll still adds up (a poller asking ten times a second must see the same totals).
    double carry_crc = 0, carry_bits = 0, carry_uncorrectable = 0, carry_discards = 0;
    double carry_tx_pause = 0, carry_rx_pause = 0;
    // Impairments set by faults.
    double extra_loss_db = 0, tx_drop_db = 0, drift_db_per_s = 0, drift_since = 0;
    double crc_rate = 0, fec_ber = 0, uncorrectable_per_s = 0, pause_tx_per_s = 0;
    double utilization = -1, discard_rate = 1e-8;
    double gray_loss = 0, extra_delay_ms = 0;
    std::string absurd_counter;  // read as absurd_value while an `absurd` fault lasts
    double absurd_value = 0;
    PortCounters c;
  };
  struct LinkState {
    bool up = true;
  };
  double tx_rate(fabric::PortId p) const;
  double tx_power(fabric::PortId p) const;
  double rx_power(fabric::PortId p, double t) const;
  void integrate(fabric::PortId p, double t);
  void integrate_link(fabric::PortId p, double t);
  // Recomputes a port's hop state (and its peer's) from its link and its faults.
  void refresh_hops(fabric::PortId p);

  const fabric::Topology& topology_;
  std::vector<PortState> ports_;
  std::vector<LinkState> links_;
  std::vector<DeviceMode> modes_;
  std::vector<uint8_t> reflector_down_;
  struct Busy {
    double share = 0, ms = 0;
  };
  std::vector<Busy> reflector_busy_;  // by device
  std::vector<double> rpc_delay_s_;
  std::vector<RpcAnswer> rpc_answer_;
  std::vector<int8_t> claimed_drained_;  // per port, what a lying device said it did (-1: nothing)
  std::deque<DrainCall> drain_calls_;
  uint64_t drain_calls_dropped_ = 0;
  probes::EcmpModel ecmp_;
  struct FlowKey {
    uint64_t ends;   // src << 32 | dst
    uint32_t ports;  // sport << 16 | dport
    bool operator==(const FlowKey&) const = default;
  };
  struct FlowKeyHash {
    size_t operator()(const FlowKey& k) const {
      uint64_t h = k.ends * 0x9e3779b97f4a7c15ULL ^ (uint64_t{k.ports} + 0x632be59bd9b4e019ULL);
      h ^= h >> 31;
      return static_cast<size_t>(h * 0xbf58476d1ce4e5b9ULL);
    }
  };
  std::unordered_map<FlowKey, FlowHops, FlowKeyHash> flow_hops_;
  // What a probe meets arriving at each port (the share of probes it loses, the delay it
  // adds), kept apart from PortState and up to date with the link and the faults: 16 bytes a port instead of PortState's few hundred, so that
  // 20,000 probes a second of about eight hops each stay in the cache.
  struct Hop {
    double loss = 1.0;  // down, unconnected: every probe lost
    Duration delay{};
  };
  std::vector<Hop> hops_;
};

template <class Rng>
ProbeFate FabricSim::probe(fabric::PortId src, fabric::PortId dst, uint16_t sport, uint16_t dport, Rng& rng) {
  ProbeFate fate;
  auto cross = [&](std::span<const fabric::PortId> hops) {
    for (const fabric::PortId in : hops) {
      const Hop& h = hops_[in];
      if (h.loss >= 1.0 || (h.loss > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < h.loss)) return false;
      fate.delay += h.delay;
    }
    return true;
  };
  if (reflector_down_[topology_.port(dst).device] != 0) return fate;  // nobody answers
  const FlowHops& f = flow_hops(src, dst, sport, dport);
  const std::span<const fabric::PortId> there(f.in.data(), f.there);
  const std::span<const fabric::PortId> back(f.in.data() + f.there, f.in.size() - f.there);
  if (there.empty()) return fate;
  fate.hops = there.size();
  if (!cross(there)) return fate;
  if (back.empty() || !cross(back)) return fate;
  fate.delivered = true;
  // A busy reflector answers some probes late: its host's delay, not the links'.
  const Busy& busy = reflector_busy_[topology_.port(dst).device];
  if (busy.share > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < busy.share) {
    fate.delay += from_seconds(busy.ms / 1000.0);
  }
  return fate;
}

}  // namespace medic::sim
