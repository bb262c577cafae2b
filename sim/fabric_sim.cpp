#include "sim/fabric_sim.h"

#include <cmath>
#include <cstdio>
#include <random>

#include "common/strings.h"

namespace medic::sim {

FabricSim::FabricSim(const fabric::Topology& topology, uint64_t seed)
    : topology_(topology), ports_(topology.ports().size()), links_(topology.links().size()) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> util(0.25, 0.6);
  std::uniform_real_distribution<double> power(-1.0, 1.0);
  std::uniform_real_distribution<double> temp(38.0, 52.0);
  for (fabric::PortId p = 0; p < ports_.size(); ++p) {
    PortState& s = ports_[p];
    const fabric::LinkId l = topology.port(p).link;
    const double speed = l == fabric::kNone ? 0.0 : topology.link(l).speed_gbps;
    s.tx_pps = speed * 1e9 * util(rng) / (8.0 * s.avg_bytes);
    s.rx_power_base = -2.0 + power(rng);
    s.c.tx_power_dbm = 0.5 + power(rng) * 0.5;
    s.c.temperature_c = temp(rng);
    s.c.laser_bias_ma = 7.5 + power(rng);
    s.c.rx_power_dbm = s.rx_power_base;
  }
}

bool FabricSim::carries_traffic(fabric::LinkId link) const {
  const auto& l = topology_.link(link);
  return links_[link].up && (!ports_[l.a].c.drained || !ports_[l.b].c.drained);
}

double FabricSim::tx_rate(fabric::PortId p) const {
  const fabric::LinkId l = topology_.port(p).link;
  if (l == fabric::kNone || !links_[l].up || ports_[p].c.drained) return 0.0;
  return ports_[p].tx_pps;
}

void FabricSim::integrate(fabric::PortId p, double t) {
  PortState& s = ports_[p];
  const double dt = t - s.last_t;
  if (dt <= 0) return;
  const fabric::PortId peer = topology_.peer(p);
  const double tx = tx_rate(p) * dt;
  const double rx = peer == fabric::kNone ? 0.0 : tx_rate(peer) * dt;
  s.c.tx_packets += std::floor(tx);
  s.c.rx_packets += std::floor(rx);
  s.c.tx_bytes += std::floor(tx) * s.avg_bytes;
  s.c.rx_bytes += std::floor(rx) * s.avg_bytes;
  // A trickle of congestion discards, proportional to traffic (never errors on a clean link).
  s.c.rx_discards += std::floor(rx * 1e-7);
  s.last_t = t;
}

void FabricSim::set_link_up(fabric::LinkId link, bool up, double t) {
  LinkState& l = links_[link];
  if (l.up == up) return;
  const auto& tl = topology_.link(link);
  integrate(tl.a, t);
  integrate(tl.b, t);
  l.up = up;
  for (const fabric::PortId p : {tl.a, tl.b}) {
    PortCounters& c = ports_[p].c;
    c.oper_up = up;
    c.carrier_changes += 1;
    c.rx_power_dbm = up ? ports_[p].rx_power_base : -40.0;
  }
}

Result<PortCounters> FabricSim::set_drained(fabric::DeviceId device, std::string_view port, bool drained, double t) {
  const auto p = topology_.find_port(device, port);
  if (!p || topology_.port(*p).link == fabric::kNone) {
    return Error{"unknown interface " + quote(port) + " on " + topology_.device(device).name};
  }
  integrate(*p, t);
  const fabric::PortId peer = topology_.peer(*p);
  if (peer != fabric::kNone) integrate(peer, t);
  ports_[*p].c.drained = drained;
  return ports_[*p].c;
}

Result<PortCounters> FabricSim::state(fabric::DeviceId device, std::string_view port, double t) {
  const auto p = topology_.find_port(device, port);
  if (!p || topology_.port(*p).link == fabric::kNone) {
    return Error{"unknown interface " + quote(port) + " on " + topology_.device(device).name};
  }
  return counters(*p, t);
}

PortCounters FabricSim::counters(fabric::PortId port, double t) {
  integrate(port, t);
  return ports_[port].c;
}

std::string FabricSim::render_prometheus(fabric::DeviceId device, double t) {
  struct Family {
    const char* name;
    const char* type;
    const char* help;
  };
  static constexpr Family kFamilies[] = {
      {"node_network_up", "gauge", "Value is 1 if operstate is 'up', 0 otherwise."},
      {"node_network_carrier_changes_total", "counter", "Network device property: carrier_changes_total"},
      {"node_network_receive_packets_total", "counter", "Network device statistic receive_packets."},
      {"node_network_transmit_packets_total", "counter", "Network device statistic transmit_packets."},
      {"node_network_receive_bytes_total", "counter", "Network device statistic receive_bytes."},
      {"node_network_transmit_bytes_total", "counter", "Network device statistic transmit_bytes."},
      {"node_network_receive_errs_total", "counter", "Network device statistic receive_errs."},
      {"node_network_transmit_errs_total", "counter", "Network device statistic transmit_errs."},
      {"node_network_receive_drop_total", "counter", "Network device statistic receive_drop."},
      {"node_network_transmit_drop_total", "counter", "Network device statistic transmit_drop."},
      {"optics_rx_power_dbm", "gauge", "Transceiver receive power per lane, dBm."},
      {"optics_tx_power_dbm", "gauge", "Transceiver transmit power per lane, dBm."},
      {"optics_temperature_celsius", "gauge", "Transceiver temperature."},
      {"optics_laser_bias_milliamps", "gauge", "Transceiver laser bias current per lane."},
  };
  const auto ports = topology_.ports_of(device);
  std::vector<PortCounters> cs;
  cs.reserve(ports.size());
  for (const fabric::PortId p : ports) cs.push_back(counters(p, t));
  std::string out;
  out.reserve(ports.size() * 1200 + 2000);
  char buf[256];
  for (size_t f = 0; f < std::size(kFamilies); ++f) {
    const Family& fam = kFamilies[f];
    out += "# HELP ";
    out += fam.name;
    out += ' ';
    out += fam.help;
    out += "\n# TYPE ";
    out += fam.name;
    out += ' ';
    out += fam.type;
    out += '\n';
    for (size_t i = 0; i < ports.size(); ++i) {
      const PortCounters& c = cs[i];
      const std::string& name = topology_.port(ports[i]).name;
      double v = 0;
      switch (f) {
        case 0: v = c.oper_up ? 1 : 0; break;
        case 1: v = c.carrier_changes; break;
        case 2: v = c.rx_packets; break;
        case 3: v = c.tx_packets; break;
        case 4: v = c.rx_bytes; break;
        case 5: v = c.tx_bytes; break;
        case 6: v = c.rx_errors; break;
        case 7: v = c.tx_errors; break;
        case 8: v = c.rx_discards; break;
        case 9: v = c.tx_discards; break;
        default: break;
      }
      if (f < 10) {
        std::snprintf(buf, sizeof buf, "%s{device=\"%s\"} %.17g\n", fam.name, name.c_str(), v);
        out += buf;
      } else if (f == 12) {
        std::snprintf(buf, sizeof buf, "%s{interface=\"%s\"} %.2f\n", fam.name, name.c_str(), c.temperature_c);
        out += buf;
      } else {
        // Four lanes of a 400G-DR4 optic; lanes differ slightly.
        for (int lane = 1; lane <= 4; ++lane) {
          const double base = f == 10 ? c.rx_power_dbm : f == 11 ? c.tx_power_dbm : c.laser_bias_ma;
          const double lv = base - 0.05 * (lane - 1);
          std::snprintf(buf, sizeof buf, "%s{interface=\"%s\",lane=\"%d\"} %.2f\n", fam.name, name.c_str(), lane, lv);
          out += buf;
        }
      }
    }
  }
  return out;
}

}  // namespace medic::sim
