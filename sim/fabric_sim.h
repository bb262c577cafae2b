// The emulated fabric behind fabsim: per-port counters that grow with the traffic each link
// carries, oper and drain state, and the link events a scenario injects. Time is passed in
// (seconds since the emulator started) so the model is deterministic under test.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "fabric/topology.h"

namespace medic::sim {

struct PortCounters {
  bool oper_up = true;
  bool drained = false;
  double carrier_changes = 0;
  double rx_packets = 0, tx_packets = 0, rx_bytes = 0, tx_bytes = 0;
  double rx_errors = 0, tx_errors = 0, rx_discards = 0, tx_discards = 0;
  double rx_power_dbm = 0, tx_power_dbm = 0, temperature_c = 0, laser_bias_ma = 0;
};

class FabricSim {
 public:
  explicit FabricSim(const fabric::Topology& topology, uint64_t seed = 1);

  const fabric::Topology& topology() const { return topology_; }

  void set_link_up(fabric::LinkId link, bool up, double t);
  bool link_up(fabric::LinkId link) const { return links_[link].up; }
  // A link carries traffic in a direction when it is up and the sending end is not drained.
  bool carries_traffic(fabric::LinkId link) const;

  // Drain or undrain a switch interface (idempotent). Error: unknown interface.
  Result<PortCounters> set_drained(fabric::DeviceId device, std::string_view port, bool drained, double t);
  Result<PortCounters> state(fabric::DeviceId device, std::string_view port, double t);

  PortCounters counters(fabric::PortId port, double t);

  // The device's port counters in the Prometheus text format, with node_exporter names
  // for interfaces and optics_* gauges for transceivers.
  std::string render_prometheus(fabric::DeviceId device, double t);

 private:
  struct PortState {
    double last_t = 0;
    double tx_pps = 0;  // offered load when the port may send
    double avg_bytes = 4096;
    PortCounters c;
    double rx_power_base = -2.0;
  };
  struct LinkState {
    bool up = true;
  };
  double tx_rate(fabric::PortId p) const;
  void integrate(fabric::PortId p, double t);

  const fabric::Topology& topology_;
  std::vector<PortState> ports_;
  std::vector<LinkState> links_;
};

}  // namespace medic::sim
