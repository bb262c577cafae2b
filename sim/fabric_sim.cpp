#include "sim/fabric_sim.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "common/strings.h"

namespace medic::sim {

namespace {
constexpr double kNoLight = -40.0;

// Adds `amount` to `carry` and takes out the whole events.
double whole(double& carry, double amount) {
  carry += amount;
  const double n = std::floor(carry);
  carry -= n;
  return n;
}
}  // namespace

FabricSim::FabricSim(const fabric::Topology& topology, uint64_t seed)
    : topology_(topology),
      ports_(topology.ports().size()),
      links_(topology.links().size()),
      modes_(topology.devices().size(), DeviceMode::normal),
      reflector_down_(topology.devices().size(), 0),
      reflector_busy_(topology.devices().size()),
      rpc_delay_s_(topology.devices().size(), 0.0),
      rpc_answer_(topology.devices().size(), RpcAnswer::none),
      claimed_drained_(topology.ports().size(), -1),
      ecmp_(topology, seed),
      hops_(topology.ports().size()) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> util(0.25, 0.6);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_real_distribution<double> temp(38.0, 52.0);
  std::uniform_real_distribution<double> ber_exp(-10.0, -8.0);
  for (fabric::PortId p = 0; p < ports_.size(); ++p) {
    PortState& s = ports_[p];
    const fabric::LinkId l = topology.port(p).link;
    const double speed = l == fabric::kNone ? 0.0 : topology.link(l).speed_gbps;
    s.tx_pps = speed * 1e9 * util(rng) / (8.0 * s.avg_bytes);
    s.tx_base_dbm = 0.5 + 0.5 * unit(rng);
    // Multimode host links lose less than the fabric's single-mode runs; both stay well
    // inside their optic types' budgets.
    const bool host_link = l != fabric::kNone && (!topology.device(topology.port(p).device).is_switch() ||
                                                  !topology.device(topology.port(topology.peer(p)).device).is_switch());
    s.fiber_loss_db = host_link ? 0.6 + 0.3 * unit(rng) : 1.2 + 0.6 * unit(rng);
    for (double& o : s.lane_offset) o = 0.15 * unit(rng);
    s.base_ber = std::pow(10.0, ber_exp(rng));
    s.c.temperature_c = temp(rng);
    s.c.laser_bias_ma = 7.5 + unit(rng);
  }
  for (fabric::PortId p = 0; p < ports_.size(); ++p) {
    ports_[p].c.tx_power_dbm = tx_power(p);
    ports_[p].c.rx_power_dbm = rx_power(p, 0);
    refresh_hops(p);
  }
}

bool FabricSim::carries_traffic(fabric::LinkId link) const {
  const auto& l = topology_.link(link);
  return links_[link].up && (!ports_[l.a].c.drained || !ports_[l.b].c.drained);
}

double FabricSim::tx_rate(fabric::PortId p) const {
  const fabric::LinkId l = topology_.port(p).link;
  if (l == fabric::kNone || !links_[l].up || ports_[p].c.drained) return 0.0;
  const PortState& s = ports_[p];
  if (s.utilization >= 0) {
    return topology_.link(l).speed_gbps * 1e9 * s.utilization / (8.0 * s.avg_bytes);
  }
  return s.tx_pps;
}

double FabricSim::tx_power(fabric::PortId p) const { return ports_[p].tx_base_dbm - ports_[p].tx_drop_db; }

double FabricSim::rx_power(fabric::PortId p, double t) const {
  const fabric::LinkId l = topology_.port(p).link;
  const fabric::PortId peer = topology_.peer(p);
  if (l == fabric::kNone || peer == fabric::kNone || !links_[l].up) return kNoLight;
  const PortState& s = ports_[p];
  const double drift = s.drift_db_per_s > 0 ? s.drift_db_per_s * std::max(0.0, t - s.drift_since) : 0.0;
  return std::max(kNoLight, tx_power(peer) - s.fiber_loss_db - s.extra_loss_db - drift);
}

void FabricSim::integrate(fabric::PortId p, double t) {
  PortState& s = ports_[p];
  const double dt = t - s.last_t;
  s.c.rx_power_dbm = rx_power(p, t);
  s.c.tx_power_dbm = tx_power(p);
  if (dt <= 0) return;
  const fabric::LinkId l = topology_.port(p).link;
  const fabric::PortId peer = topology_.peer(p);
  const bool up = l != fabric::kNone && links_[l].up;
  const double tx = tx_rate(p) * dt;
  const double rx = peer == fabric::kNone ? 0.0 : tx_rate(peer) * dt;
  // Corrupted frames fail their FCS and are not counted as received packets.
  s.carry_crc += rx * s.crc_rate;
  const double crc = std::floor(s.carry_crc);
  s.carry_crc -= crc;
  const double good = std::floor(rx) - crc;
  s.c.tx_packets += std::floor(tx);
  s.c.rx_packets += std::max(0.0, good);
  s.c.tx_bytes += std::floor(tx) * s.avg_bytes;
  s.c.rx_bytes += std::max(0.0, good) * s.avg_bytes;
  s.c.crc_errors += crc;
  s.c.rx_errors += crc;
  s.c.symbol_errors += crc;  // every FCS failure here starts as a PCS symbol error
  s.c.rx_discards += whole(s.carry_discards, (rx + tx) * s.discard_rate);
  if (up) {
    const double speed_bps = topology_.link(l).speed_gbps * 1e9;
    s.c.fec_corrected_bits += whole(s.carry_bits, (s.base_ber + s.fec_ber) * speed_bps * dt);
    s.c.fec_uncorrectable += whole(s.carry_uncorrectable, s.uncorrectable_per_s * dt);
    s.c.tx_pause += whole(s.carry_tx_pause, s.pause_tx_per_s * dt);
    if (peer != fabric::kNone) s.c.rx_pause += whole(s.carry_rx_pause, ports_[peer].pause_tx_per_s * dt);
  }
  s.last_t = t;
}

void FabricSim::integrate_link(fabric::PortId p, double t) {
  integrate(p, t);
  const fabric::PortId peer = topology_.peer(p);
  if (peer != fabric::kNone) integrate(peer, t);
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
    if (!up) c.link_down_events += 1;
    c.rx_power_dbm = rx_power(p, t);
  }
  refresh_hops(tl.a);
}

void FabricSim::apply(const Fault& f, SimEvent::Phase phase, double t) {
  if (phase == SimEvent::Phase::link_down || phase == SimEvent::Phase::link_up) {
    set_link_up(f.link, phase == SimEvent::Phase::link_up, t);
    return;
  }
  const bool on = phase == SimEvent::Phase::start;
  if (f.port != fabric::kNone) integrate_link(f.port, t);
  PortState* s = f.port != fabric::kNone ? &ports_[f.port] : nullptr;
  switch (f.kind) {
    case FaultKind::optics_loss: s->extra_loss_db = on ? f.value : 0; break;
    case FaultKind::weak_tx: s->tx_drop_db = on ? f.value : 0; break;
    case FaultKind::optics_drift:
      s->drift_db_per_s = on ? f.value / 60.0 : 0;
      s->drift_since = t;
      break;
    case FaultKind::corrupt: s->crc_rate = on ? f.value : 0; break;
    case FaultKind::fec:
      s->fec_ber = on ? f.value : 0;
      s->uncorrectable_per_s = on ? f.value2 : 0;
      break;
    case FaultKind::pause: s->pause_tx_per_s = on ? f.value : 0; break;
    case FaultKind::congestion:
      s->utilization = on ? f.value : -1;
      s->discard_rate = on ? f.value2 : 1e-8;
      break;
    case FaultKind::silent: modes_[f.device] = on ? DeviceMode::silent : DeviceMode::normal; break;
    case FaultKind::garbage: modes_[f.device] = on ? DeviceMode::garbage : DeviceMode::normal; break;
    case FaultKind::reboot:
      if (on) {
        for (const fabric::PortId p : topology_.ports_of(f.device)) {
          integrate_link(p, t);
          PortCounters& c = ports_[p].c;
          const PortCounters keep = c;
          c = PortCounters{};
          c.oper_up = keep.oper_up;
          c.drained = keep.drained;
          c.rx_power_dbm = keep.rx_power_dbm;
          c.tx_power_dbm = keep.tx_power_dbm;
          c.temperature_c = keep.temperature_c;
          c.laser_bias_ma = keep.laser_bias_ma;
        }
      }
      break;
    case FaultKind::probe_loss: s->gray_loss = on ? f.value : 0; break;
    case FaultKind::probe_delay: s->extra_delay_ms = on ? f.value : 0; break;
    case FaultKind::reflector_down: reflector_down_[f.device] = on ? 1 : 0; break;
    case FaultKind::reflector_busy: reflector_busy_[f.device] = on ? Busy{f.value, f.value2} : Busy{}; break;
    case FaultKind::rpc_delay: rpc_delay_s_[f.device] = on ? f.value : 0; break;
    case FaultKind::rpc_fault:
      rpc_answer_[f.device] = on ? f.answer : RpcAnswer::none;
      for (const fabric::PortId p : topology_.ports_of(f.device)) claimed_drained_[p] = -1;
      break;
    case FaultKind::absurd:
      s->absurd_counter = on ? f.counter : "";
      s->absurd_value = f.value;
      break;
    case FaultKind::flap:
    case FaultKind::down: break;
  }
  if (f.port != fabric::kNone) {
    integrate_link(f.port, t);
    refresh_hops(f.port);
  }
}

const FabricSim::FlowHops& FabricSim::flow_hops(fabric::PortId src, fabric::PortId dst, uint16_t sport,
                                                uint16_t dport) {
  const FlowKey key{(uint64_t{src} << 32) | dst, (uint32_t{sport} << 16) | dport};
  if (const auto it = flow_hops_.find(key); it != flow_hops_.end()) return it->second;
  if (flow_hops_.size() >= kFlowsKept) flow_hops_.clear();
  FlowHops f;
  // Each link's far end from the device the probe is at: the port it arrives at.
  auto walk = [&](const probes::Path& path, fabric::DeviceId at) {
    for (const fabric::LinkId l : path) {
      const auto& link = topology_.link(l);
      const fabric::PortId in = topology_.port(link.a).device == at ? link.b : link.a;
      f.in.push_back(in);
      at = topology_.port(in).device;
    }
  };
  walk(ecmp_.path_of({src, dst, sport, dport}), topology_.port(src).device);
  f.there = static_cast<uint32_t>(f.in.size());
  walk(ecmp_.path_of({dst, src, dport, sport}), topology_.port(dst).device);
  return flow_hops_.emplace(key, std::move(f)).first->second;
}

void FabricSim::refresh_hops(fabric::PortId p) {
  const fabric::PortId peer = topology_.peer(p);
  for (const fabric::PortId q : {p, peer}) {
    if (q == fabric::kNone) continue;
    const fabric::LinkId l = topology_.port(q).link;
    const PortState& s = ports_[q];
    Hop& h = hops_[q];
    // Corrupted frames fail their FCS: probes die with them; gray loss leaves no counter.
    h.loss = l == fabric::kNone || !links_[l].up ? 1.0 : std::min(1.0, s.gray_loss + s.crc_rate);
    // A couple of microseconds per hop through a cut-through switch, plus fault delay.
    h.delay = Duration(2) + from_seconds(s.extra_delay_ms / 1000.0);
  }
}

Result<PortCounters> FabricSim::set_drained(fabric::DeviceId device, std::string_view port, bool drained, double t) {
  const auto p = topology_.find_port(device, port);
  if (!p || topology_.port(*p).link == fabric::kNone) {
    return Error{"unknown interface " + quote(port) + " on " + topology_.device(device).name};
  }
  integrate_link(*p, t);
  if (drain_calls_.size() == kDrainCallsKept) {
    drain_calls_.pop_front();
    ++drain_calls_dropped_;
  }
  drain_calls_.push_back({t, *p, drained, rpc_answer_[device] != RpcAnswer::lie});
  if (rpc_answer_[device] == RpcAnswer::lie) {
    claimed_drained_[*p] = drained ? 1 : 0;
    PortCounters said = ports_[*p].c;
    said.drained = drained;
    return said;
  }
  ports_[*p].c.drained = drained;
  return ports_[*p].c;
}

Result<PortCounters> FabricSim::state(fabric::DeviceId device, std::string_view port, double t) {
  const auto p = topology_.find_port(device, port);
  if (!p || topology_.port(*p).link == fabric::kNone) {
    return Error{"unknown interface " + quote(port) + " on " + topology_.device(device).name};
  }
  PortCounters c = counters(*p, t);
  if (rpc_answer_[device] == RpcAnswer::lie && claimed_drained_[*p] >= 0) c.drained = claimed_drained_[*p] == 1;
  return c;
}

PortCounters FabricSim::counters(fabric::PortId port, double t) {
  integrate(port, t);
  PortCounters c = ports_[port].c;
  const PortState& s = ports_[port];
  if (s.absurd_counter.empty()) return c;
  // What a broken exporter reports; the port's real counters go on underneath.
  double* fields[] = {&c.carrier_changes, &c.link_down_events, &c.rx_packets, &c.tx_packets, &c.rx_bytes,
                      &c.tx_bytes, &c.rx_errors, &c.tx_errors, &c.rx_discards, &c.tx_discards,
                      &c.crc_errors, &c.symbol_errors, &c.fec_corrected_bits, &c.fec_uncorrectable,
                      &c.rx_pause, &c.tx_pause, &c.rx_power_dbm, &c.tx_power_dbm, &c.temperature_c,
                      &c.laser_bias_ma};
  const auto& names = absurd_counters();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == s.absurd_counter) *fields[i] = s.absurd_value;
  }
  return c;
}

namespace {

class PromWriter {
 public:
  explicit PromWriter(std::string& out) : out_(out) {}
  void family(const char* name, const char* type, const char* help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  // What "%s{%s=\"%s\"} %.17g\n" prints, without printf: to_chars formats as printf does in
  // the C locale, several times faster, and a zone32k poll is 3.8 M of these lines. Each
  // line is put together in a buffer and appended once.
  void sample(std::string_view name, std::string_view label, std::string_view port, double v) {
    char* p = start(name, label.size() + port.size() + 6);  // {, =", "} and a blank
    *p++ = '{';
    p = put(p, label);
    p = put(p, "=\"");
    p = put(p, port);
    p = put(p, "\"} ");
    finish(p, v, std::chars_format::general, 17);
  }
  // "%s{interface=\"%s\",lane=\"%d\"} %.2f\n" (the lane's digits: 12 bytes at most).
  void lane(std::string_view name, std::string_view port, int lane, double v) {
    char* p = start(name, port.size() + 36);
    p = put(p, "{interface=\"");
    p = put(p, port);
    p = put(p, "\",lane=\"");
    const auto r = std::to_chars(p, p + 12, lane);
    p = put(r.ptr, "\"} ");
    finish(p, v, std::chars_format::fixed, 2);
  }

 private:
  static constexpr size_t kNumber = 400;  // %.2f of the largest double is 312 bytes
  static char* put(char* p, std::string_view s) {
    std::memcpy(p, s.data(), s.size());
    return p + s.size();
  }
  // The line's start, after its name, with room for `more` bytes and a number.
  char* start(std::string_view name, size_t more) {
    const size_t need = name.size() + more + kNumber + 1;
    if (line_.size() < need) line_.resize(need);
    return put(line_.data(), name);
  }
  void finish(char* p, double v, std::chars_format format, int precision) {
    // Counters are whole numbers: %.17g prints one below 1e17 as its digits, which the
    // integer conversion prints for less (zone32k's render: 0.18 to 0.15 s a poll; -0
    // keeps its sign).
    const bool whole = format == std::chars_format::general && precision == 17 && v > -1e17 && v < 1e17 &&
                       v == std::trunc(v) && !(v == 0 && std::signbit(v));
    char* const end = p + kNumber;
    const auto r = whole ? std::to_chars(p, end, static_cast<int64_t>(v)) : std::to_chars(p, end, v, format, precision);
    *r.ptr = '\n';
    out_.append(line_.data(), static_cast<size_t>(r.ptr + 1 - line_.data()));
  }

  std::string& out_;
  std::string line_ = std::string(1024, '\0');  // the line being put together
};

// Every per-port family fabsim exports the way node_exporter names it, once; switches and
// hosts each export the ones marked for them, in this order.
struct PortFamily {
  const char* name;
  const char* type;
  const char* help;
  double PortCounters::*field;
  bool on_switch, on_host;
};
constexpr PortFamily kPortFamilies[] = {
    {"node_network_carrier_changes_total", "counter", "Network device property: carrier_changes_total",
     &PortCounters::carrier_changes, true, true},
    {"node_network_receive_packets_total", "counter", "Network device statistic receive_packets.",
     &PortCounters::rx_packets, true, true},
    {"node_network_transmit_packets_total", "counter", "Network device statistic transmit_packets.",
     &PortCounters::tx_packets, true, true},
    {"node_network_receive_bytes_total", "counter", "Network device statistic receive_bytes.", &PortCounters::rx_bytes,
     true, true},
    {"node_network_transmit_bytes_total", "counter", "Network device statistic transmit_bytes.",
     &PortCounters::tx_bytes, true, true},
    {"node_network_receive_errs_total", "counter", "Network device statistic receive_errs.", &PortCounters::rx_errors,
     true, true},
    {"node_network_transmit_errs_total", "counter", "Network device statistic transmit_errs.",
     &PortCounters::tx_errors, true, false},
    {"node_network_receive_drop_total", "counter", "Network device statistic receive_drop.",
     &PortCounters::rx_discards, true, true},
    {"node_network_transmit_drop_total", "counter", "Network device statistic transmit_drop.",
     &PortCounters::tx_discards, true, false},
    {"node_ethtool_received_crc_errors_phy", "untyped", "Network interface rx_crc_errors_phy",
     &PortCounters::crc_errors, true, true},
    {"node_ethtool_received_symbol_err_phy", "untyped", "Network interface rx_symbol_err_phy",
     &PortCounters::symbol_errors, true, true},
    {"node_ethtool_link_down_events_phy", "untyped", "Network interface link_down_events_phy",
     &PortCounters::link_down_events, false, true},
    {"node_ethtool_received_pause_ctrl_phy", "untyped", "Network interface rx_pause_ctrl_phy", &PortCounters::rx_pause,
     true, true},
    {"node_ethtool_transmitted_pause_ctrl_phy", "untyped", "Network interface tx_pause_ctrl_phy",
     &PortCounters::tx_pause, true, true},
    {"node_ethtool_received_discards_phy", "untyped", "Network interface rx_discards_phy", &PortCounters::rx_discards,
     false, true},
    {"node_ethtool_received_corrected_bits_phy", "untyped", "Network interface rx_corrected_bits_phy",
     &PortCounters::fec_corrected_bits, false, true},
};

// node_network_up and every port family the device kind exports.
void write_port_families(PromWriter& w, const fabric::Topology& topology, std::span<const fabric::PortId> ports,
                         const std::vector<PortCounters>& cs, bool host) {
  w.family("node_network_up", "gauge", "Value is 1 if operstate is 'up', 0 otherwise.");
  for (size_t i = 0; i < ports.size(); ++i) {
    w.sample("node_network_up", "device", topology.port(ports[i]).name, cs[i].oper_up ? 1 : 0);
  }
  for (const PortFamily& f : kPortFamilies) {
    if (!(host ? f.on_host : f.on_switch)) continue;
    w.family(f.name, f.type, f.help);
    const std::string_view name = f.name;
    for (size_t i = 0; i < ports.size(); ++i) w.sample(name, "device", topology.port(ports[i]).name, cs[i].*f.field);
  }
}

}  // namespace

std::string FabricSim::render_prometheus(fabric::DeviceId device, double t) {
  const auto ports = topology_.ports_of(device);
  std::vector<const PortState*> ps;
  std::vector<PortCounters> cs;
  cs.reserve(ports.size());
  for (const fabric::PortId p : ports) {
    cs.push_back(counters(p, t));
    ps.push_back(&ports_[p]);
  }
  std::string out;
  out.reserve(ports.size() * 2200 + 4000);
  PromWriter w(out);
  write_port_families(w, topology_, ports, cs, false);
  w.family("fec_corrected_bits_total", "counter", "Bits corrected by FEC on receive.");
  for (size_t i = 0; i < ports.size(); ++i) {
    w.sample("fec_corrected_bits_total", "interface", topology_.port(ports[i]).name, cs[i].fec_corrected_bits);
  }
  w.family("fec_uncorrectable_codewords_total", "counter", "FEC codewords that could not be corrected.");
  for (size_t i = 0; i < ports.size(); ++i) {
    w.sample("fec_uncorrectable_codewords_total", "interface", topology_.port(ports[i]).name, cs[i].fec_uncorrectable);
  }
  w.family("optics_temperature_celsius", "gauge", "Transceiver temperature.");
  for (size_t i = 0; i < ports.size(); ++i) {
    w.sample("optics_temperature_celsius", "interface", topology_.port(ports[i]).name, cs[i].temperature_c);
  }
  struct LaneFamily {
    const char* name;
    const char* help;
    int which;
  };
  static const LaneFamily kLanes[] = {{"optics_rx_power_dbm", "Transceiver receive power per lane, dBm.", 0},
                                      {"optics_tx_power_dbm", "Transceiver transmit power per lane, dBm.", 1},
                                      {"optics_laser_bias_milliamps", "Transceiver laser bias current per lane.", 2}};
  for (const LaneFamily& f : kLanes) {
    w.family(f.name, "gauge", f.help);
    const std::string_view name = f.name;
    for (size_t i = 0; i < ports.size(); ++i) {
      for (int lane = 0; lane < 4; ++lane) {
        const double base = f.which == 0 ? cs[i].rx_power_dbm : f.which == 1 ? cs[i].tx_power_dbm : cs[i].laser_bias_ma;
        const double v = f.which == 2 || base <= kNoLight ? base : base + ps[i]->lane_offset[lane];
        w.lane(name, topology_.port(ports[i]).name, lane + 1, v);
      }
    }
  }
  return out;
}

std::string FabricSim::render_host(fabric::DeviceId device, double t) {
  const auto ports = topology_.ports_of(device);
  std::vector<PortCounters> cs;
  for (const fabric::PortId p : ports) cs.push_back(counters(p, t));
  std::string out;
  out.reserve(ports.size() * 1800 + 2000);
  PromWriter w(out);
  write_port_families(w, topology_, ports, cs, true);
  return out;
}

std::string FabricSim::render_openconfig(fabric::DeviceId device, double t) {
  // Written by hand rather than through a JSON library: this is the hot path of a
  // zone-wide scrape, and the shape is fixed. Counters are strings, as RFC 7951 encodes
  // 64-bit integers; readings are decimal64 strings.
  const auto ports = topology_.ports_of(device);
  std::string out;
  out.reserve(ports.size() * 1600 + 256);
  char buf[512];
  auto counter = [&](const char* name, double v, bool last = false) {
    std::snprintf(buf, sizeof buf, "\"%s\":\"%.0f\"%s", name, v, last ? "" : ",");
    out += buf;
  };
  out += "{\"openconfig-interfaces:interfaces\":{\"interface\":[";
  std::vector<PortCounters> cs;
  for (size_t i = 0; i < ports.size(); ++i) {
    const PortCounters c = counters(ports[i], t);
    cs.push_back(c);
    const std::string& name = topology_.port(ports[i]).name;
    if (i) out += ',';
    out += "{\"name\":\"" + name + "\",\"state\":{\"name\":\"" + name + "\",\"oper-status\":\"" +
           (c.oper_up ? "UP" : "DOWN") + "\",\"openconfig-platform-transceiver:transceiver\":\"" + name +
           "-xcvr\",\"counters\":{";
    counter("carrier-transitions", c.carrier_changes);
    counter("in-pkts", c.rx_packets);
    counter("out-pkts", c.tx_packets);
    counter("in-octets", c.rx_bytes);
    counter("out-octets", c.tx_bytes);
    counter("in-errors", c.rx_errors);
    counter("out-errors", c.tx_errors);
    counter("in-discards", c.rx_discards);
    counter("out-discards", c.tx_discards);
    counter("in-fcs-errors", c.crc_errors, true);
    out += "}},\"openconfig-if-ethernet:ethernet\":{\"state\":{\"counters\":{";
    counter("in-crc-errors", c.crc_errors);
    counter("in-mac-pause-frames", c.rx_pause);
    counter("out-mac-pause-frames", c.tx_pause, true);
    out += "}}}}";
  }
  out += "]},\"openconfig-platform:components\":{\"component\":[";
  for (size_t i = 0; i < ports.size(); ++i) {
    const PortCounters& c = cs[i];
    const std::string& name = topology_.port(ports[i]).name;
    if (i) out += ',';
    std::snprintf(buf, sizeof buf, "{\"name\":\"%s-xcvr\",\"state\":{\"temperature\":{\"instant\":\"%.1f\"}},",
                  name.c_str(), c.temperature_c);
    out += buf;
    out += "\"openconfig-platform-transceiver:transceiver\":{\"state\":{";
    counter("fec-corrected-bits", c.fec_corrected_bits);
    counter("fec-uncorrectable-words", c.fec_uncorrectable, true);
    out += "},\"physical-channels\":{\"channel\":[";
    for (int lane = 0; lane < 4; ++lane) {
      const double off = ports_[ports[i]].lane_offset[lane];
      const double rx = c.rx_power_dbm <= kNoLight ? c.rx_power_dbm : c.rx_power_dbm + off;
      std::snprintf(buf, sizeof buf,
                    "%s{\"index\":%d,\"state\":{\"index\":%d,\"input-power\":{\"instant\":\"%.2f\"},"
                    "\"output-power\":{\"instant\":\"%.2f\"},\"laser-bias-current\":{\"instant\":\"%.2f\"}}}",
                    lane ? "," : "", lane, lane, rx, c.tx_power_dbm + off, c.laser_bias_ma);
      out += buf;
    }
    out += "]}}}";
  }
  out += "]}}";
  return out;
}

}  // namespace medic::sim
