#include "sim/fabric_sim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fabric/generator.h"
#include "probes/ecmp.h"
#include "telemetry/prometheus.h"

namespace medic::sim {
namespace {

class FabricSimTest : public ::testing::Test {
 protected:
  fabric::PortId port(const std::string& dev, const std::string& name) { return *topo.find_port(dev, name); }
  fabric::DeviceId device(const std::string& name) { return *topo.find_device(name); }

  fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  FabricSim sim{topo};
  fabric::LinkId uplink = *topo.find_link("rtsw0001:eth5");
  fabric::PortId a = port("rtsw0001", "eth5");
  fabric::PortId b = port("ctsw001", "eth1");
};

TEST_F(FabricSimTest, UplinkEndsArePeers) {
  EXPECT_EQ(topo.link(uplink).a, a);
  EXPECT_EQ(topo.link(uplink).b, b);
  EXPECT_EQ(topo.peer(a), b);
}

TEST_F(FabricSimTest, CountersGrowWithTimeOnAnUpLink) {
  const PortCounters c0 = sim.counters(a, 0.0);
  EXPECT_EQ(c0.tx_packets, 0);
  const PortCounters c1 = sim.counters(a, 1.0);
  const PortCounters c2 = sim.counters(a, 2.0);
  EXPECT_GT(c1.tx_packets, 0);
  EXPECT_GT(c1.rx_packets, 0);
  EXPECT_GT(c2.tx_packets, c1.tx_packets);
  EXPECT_GT(c2.rx_packets, c1.rx_packets);
  EXPECT_GT(c2.tx_bytes, c1.tx_bytes);
  EXPECT_GT(c2.rx_bytes, c1.rx_bytes);
  EXPECT_DOUBLE_EQ(c2.tx_bytes, c2.tx_packets * 4096);
  EXPECT_TRUE(c2.oper_up);
  EXPECT_FALSE(c2.drained);
  EXPECT_EQ(c2.carrier_changes, 0);
  EXPECT_EQ(c2.rx_errors, 0);  // a clean link never shows errors
  // 400G at 25..60% utilisation in 4096-byte packets, for two seconds.
  const double pps_max = 400e9 * 0.6 / (8 * 4096);
  EXPECT_LE(c2.tx_packets, 2 * pps_max);
  EXPECT_GE(c2.tx_packets, 2 * 400e9 * 0.25 / (8 * 4096) - 2);
  // Asking again for the same time changes nothing.
  EXPECT_EQ(sim.counters(a, 2.0).tx_packets, c2.tx_packets);
}

TEST_F(FabricSimTest, WhatOneEndSendsTheOtherReceives) {
  const PortCounters ca = sim.counters(a, 5.0);
  const PortCounters cb = sim.counters(b, 5.0);
  EXPECT_EQ(ca.tx_packets, cb.rx_packets);
  EXPECT_EQ(cb.tx_packets, ca.rx_packets);
}

TEST_F(FabricSimTest, SameSeedSameCounters) {
  FabricSim other(topo);
  EXPECT_EQ(other.counters(a, 3.0).tx_packets, sim.counters(a, 3.0).tx_packets);
  FabricSim seeded(topo, 99);
  EXPECT_NE(seeded.counters(a, 3.0).tx_packets, sim.counters(a, 3.0).tx_packets);
}

TEST_F(FabricSimTest, LinkDrainedAtBothEndsCarriesNoTraffic) {
  EXPECT_TRUE(sim.carries_traffic(uplink));
  ASSERT_TRUE(sim.set_drained(device("rtsw0001"), "eth5", true, 1.0).ok());
  ASSERT_TRUE(sim.set_drained(device("ctsw001"), "eth1", true, 1.0).ok());
  EXPECT_FALSE(sim.carries_traffic(uplink));
  EXPECT_TRUE(sim.link_up(uplink));
  const PortCounters a1 = sim.counters(a, 1.0), b1 = sim.counters(b, 1.0);
  EXPECT_GT(a1.tx_packets, 0);
  const PortCounters a2 = sim.counters(a, 10.0), b2 = sim.counters(b, 10.0);
  EXPECT_EQ(a2.tx_packets, a1.tx_packets);
  EXPECT_EQ(a2.rx_packets, a1.rx_packets);
  EXPECT_EQ(b2.tx_packets, b1.tx_packets);
  EXPECT_EQ(b2.rx_packets, b1.rx_packets);
  EXPECT_TRUE(a2.drained);
  EXPECT_TRUE(b2.drained);
  EXPECT_TRUE(a2.oper_up);  // drained, not down

  // Undrain: traffic resumes.
  ASSERT_TRUE(sim.set_drained(device("rtsw0001"), "eth5", false, 10.0).ok());
  ASSERT_TRUE(sim.set_drained(device("ctsw001"), "eth1", false, 10.0).ok());
  EXPECT_TRUE(sim.carries_traffic(uplink));
  EXPECT_GT(sim.counters(a, 11.0).tx_packets, a2.tx_packets);
  EXPECT_GT(sim.counters(b, 11.0).tx_packets, b2.tx_packets);
}

TEST_F(FabricSimTest, DrainingOneEndStopsThatDirectionOnly) {
  ASSERT_TRUE(sim.set_drained(device("rtsw0001"), "eth5", true, 1.0).ok());
  EXPECT_TRUE(sim.carries_traffic(uplink));
  const PortCounters a1 = sim.counters(a, 1.0), b1 = sim.counters(b, 1.0);
  const PortCounters a2 = sim.counters(a, 4.0), b2 = sim.counters(b, 4.0);
  EXPECT_EQ(a2.tx_packets, a1.tx_packets);  // drained end sends nothing
  EXPECT_EQ(b2.rx_packets, b1.rx_packets);  // ... so its peer receives nothing
  EXPECT_GT(b2.tx_packets, b1.tx_packets);  // the other direction still flows
  EXPECT_GT(a2.rx_packets, a1.rx_packets);
  EXPECT_FALSE(b2.drained);
}

TEST_F(FabricSimTest, DrainIsIdempotentAndReturnsThePortState) {
  auto r = sim.set_drained(device("rtsw0001"), "eth5", true, 1.0);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->drained);
  r = sim.set_drained(device("rtsw0001"), "eth5", true, 2.0);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->drained);
  auto st = sim.state(device("rtsw0001"), "eth5", 2.0);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->drained);
  EXPECT_FALSE(sim.state(device("rtsw0001"), "eth6", 2.0)->drained);
}

TEST_F(FabricSimTest, SetLinkUpTogglesOperAndCountsCarrierChangesOnBothEnds) {
  sim.set_link_up(uplink, false, 2.0);
  EXPECT_FALSE(sim.link_up(uplink));
  EXPECT_FALSE(sim.carries_traffic(uplink));
  PortCounters ca = sim.counters(a, 2.0), cb = sim.counters(b, 2.0);
  EXPECT_FALSE(ca.oper_up);
  EXPECT_FALSE(cb.oper_up);
  EXPECT_EQ(ca.carrier_changes, 1);
  EXPECT_EQ(cb.carrier_changes, 1);
  EXPECT_LT(ca.rx_power_dbm, -30);  // dark fibre

  // Setting the same state again is not a carrier change.
  sim.set_link_up(uplink, false, 3.0);
  EXPECT_EQ(sim.counters(a, 3.0).carrier_changes, 1);
  // No traffic while down.
  const PortCounters down_later = sim.counters(a, 6.0);
  EXPECT_EQ(down_later.tx_packets, ca.tx_packets);
  EXPECT_EQ(down_later.rx_packets, ca.rx_packets);

  sim.set_link_up(uplink, true, 6.0);
  EXPECT_TRUE(sim.link_up(uplink));
  ca = sim.counters(a, 6.0);
  cb = sim.counters(b, 6.0);
  EXPECT_TRUE(ca.oper_up);
  EXPECT_TRUE(cb.oper_up);
  EXPECT_EQ(ca.carrier_changes, 2);
  EXPECT_EQ(cb.carrier_changes, 2);
  EXPECT_GT(ca.rx_power_dbm, -30);
  EXPECT_GT(sim.counters(a, 7.0).tx_packets, ca.tx_packets);
  // Other links are untouched.
  EXPECT_EQ(sim.counters(port("rtsw0001", "eth6"), 7.0).carrier_changes, 0);
}

TEST_F(FabricSimTest, UnknownInterfaceIsAnError) {
  auto r = sim.set_drained(device("rtsw0001"), "eth99", true, 1.0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "unknown interface \"eth99\" on rtsw0001");
  auto s = sim.state(device("ctsw002"), "bogus", 1.0);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), "unknown interface \"bogus\" on ctsw002");
}

// Collects every sample as "name|label=value" -> value.
class CollectSink final : public telemetry::PromSink {
 public:
  void on_sample(const telemetry::PromSample& s) override {
    std::string key(s.name);
    for (const auto& l : s.labels) key += "|" + std::string(l.name) + "=" + std::string(l.value);
    values[key] = s.value;
    names.insert(std::string(s.name));
    if (const auto* d = s.label("device")) devices.insert(std::string(*d));
    if (const auto* i = s.label("interface")) interfaces.insert(std::string(*i));
    types[std::string(s.name)] = s.type;
  }
  std::map<std::string, double> values;
  std::set<std::string> names, devices, interfaces;
  std::map<std::string, telemetry::MetricType> types;
};

TEST_F(FabricSimTest, PrometheusRenderingParsesAndCoversEveryPort) {
  sim.set_link_up(*topo.find_link("rtsw0001:eth6"), false, 1.0);
  const std::string text = sim.render_prometheus(device("rtsw0001"), 5.0);
  telemetry::PromParser parser;
  CollectSink sink;
  telemetry::PromStats stats;
  const Status st = parser.parse(text, sink, &stats);
  ASSERT_TRUE(st.ok()) << st.error();

  std::set<std::string> expected;
  for (const fabric::PortId p : topo.ports_of(device("rtsw0001"))) expected.insert(topo.port(p).name);
  ASSERT_EQ(expected.size(), 8u);
  EXPECT_EQ(sink.devices, expected);
  EXPECT_EQ(sink.interfaces, expected);
  // One sample per port of: up, 13 interface and PHY counter families, 2 FEC families and
  // temperature; then 3 lane families x 4 lanes.
  const std::vector<std::string> families = {
      "node_network_up", "node_network_carrier_changes_total", "node_network_receive_packets_total",
      "node_network_transmit_packets_total", "node_network_receive_bytes_total", "node_network_transmit_bytes_total",
      "node_network_receive_errs_total", "node_network_transmit_errs_total", "node_network_receive_drop_total",
      "node_network_transmit_drop_total", "node_ethtool_received_crc_errors_phy",
      "node_ethtool_received_symbol_err_phy", "node_ethtool_received_pause_ctrl_phy",
      "node_ethtool_transmitted_pause_ctrl_phy", "fec_corrected_bits_total", "fec_uncorrectable_codewords_total",
      "optics_temperature_celsius", "optics_rx_power_dbm", "optics_tx_power_dbm", "optics_laser_bias_milliamps"};
  EXPECT_EQ(stats.samples, 8u * (1 + 13 + 2 + 1 + 3 * 4));
  for (const auto& family : families) EXPECT_EQ(sink.names.count(family), 1u) << family;
  EXPECT_EQ(sink.names.size(), families.size()) << "no family left unchecked";
  EXPECT_EQ(sink.types["node_ethtool_received_crc_errors_phy"], telemetry::MetricType::untyped);
  EXPECT_EQ(sink.types["fec_corrected_bits_total"], telemetry::MetricType::counter);
  EXPECT_EQ(sink.types["node_network_transmit_packets_total"], telemetry::MetricType::counter);
  EXPECT_EQ(sink.types["node_network_up"], telemetry::MetricType::gauge);

  EXPECT_EQ(sink.values["node_network_up|device=eth5"], 1);
  EXPECT_EQ(sink.values["node_network_up|device=eth6"], 0);
  EXPECT_EQ(sink.values["node_network_carrier_changes_total|device=eth6"], 1);
  const PortCounters c5 = sim.counters(a, 5.0);
  EXPECT_EQ(sink.values["node_network_transmit_packets_total|device=eth5"], c5.tx_packets);
  EXPECT_EQ(sink.values["node_network_receive_bytes_total|device=eth5"], c5.rx_bytes);
  EXPECT_EQ(sink.values.count("optics_rx_power_dbm|interface=eth5|lane=4"), 1u);
  EXPECT_LT(sink.values["optics_rx_power_dbm|interface=eth6|lane=1"], -30);
}

// Every value prints as "%.17g" would: counters (whole numbers, printed by the integer
// conversion below 1e17) and whatever an absurd fault puts in their place, past 1e17,
// negative, fractional, a signed zero.
TEST_F(FabricSimTest, ValuesPrintAsPercent17g) {
  const fabric::PortId ports[] = {port("rtsw0001", "eth5"), port("rtsw0001", "eth6"), port("rtsw0001", "eth7"),
                                  port("rtsw0001", "eth8"), port("rtsw0001", "eth1"), port("rtsw0001", "eth2"),
                                  port("rtsw0001", "eth3")};
  const double absurd[] = {1e17, 99999999999999990.0, -5, 1.8446744073709552e19, -0.0, 0.1, -1e17 + 16};
  for (size_t i = 0; i < std::size(ports); ++i) {
    Fault f;
    f.kind = FaultKind::absurd;
    f.port = ports[i];
    f.counter = "rx_packets";
    f.value = absurd[i];
    sim.apply(f, SimEvent::Phase::start, 1.0);
  }
  const std::string text = sim.render_prometheus(device("rtsw0001"), 5.0);
  auto expect_line = [&](const std::string& family, fabric::PortId p, double v) {
    char number[64];
    std::snprintf(number, sizeof number, "%.17g", v);
    const std::string line = family + "{device=\"" + topo.port(p).name + "\"} " + number + "\n";
    EXPECT_NE(text.find(line), std::string::npos) << line;
  };
  size_t whole_seen = 0;
  for (const fabric::PortId p : topo.ports_of(device("rtsw0001"))) {
    const PortCounters c = sim.counters(p, 5.0);
    expect_line("node_network_receive_packets_total", p, c.rx_packets);
    expect_line("node_network_transmit_bytes_total", p, c.tx_bytes);
    expect_line("node_network_carrier_changes_total", p, c.carrier_changes);
    whole_seen += c.tx_bytes > 1000 && c.tx_bytes == std::trunc(c.tx_bytes);
  }
  EXPECT_GT(whole_seen, 0u) << "the fast path was not taken";
  for (size_t i = 0; i < std::size(ports); ++i) expect_line("node_network_receive_packets_total", ports[i], absurd[i]);
  EXPECT_NE(text.find("node_network_receive_packets_total{device=\"eth1\"} -0\n"), std::string::npos);
  EXPECT_NE(text.find("node_network_receive_packets_total{device=\"eth5\"} 1e+17\n"), std::string::npos);
  // Per-lane readings print as "%.2f" (the laser bias has no per-lane offset to read back).
  for (const fabric::PortId p : topo.ports_of(device("rtsw0001"))) {
    const PortCounters c = sim.counters(p, 5.0);
    for (int lane = 1; lane <= 4; ++lane) {
      char line[256];
      std::snprintf(line, sizeof line, "optics_laser_bias_milliamps{interface=\"%s\",lane=\"%d\"} %.2f\n",
                    topo.port(p).name.c_str(), lane, c.laser_bias_ma);
      EXPECT_NE(text.find(line), std::string::npos) << line;
    }
  }
}

// A probe's hops there and back are the ECMP model's paths for its 5-tuple and the reverse
// one (each hop named by the port the probe arrives at), kept per flow (the same flow asked
// again gets the same hops, not a new draw), and a probe's fate follows them: a link down on
// the way there loses it, one on neither path does not, and a fault's loss and delay on a
// port of the path reach the probe and end with the fault.
TEST(FabricSim, AProbesPathsAreTheEcmpModelsKeptPerFlow) {
  const fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  FabricSim sim(topo, 3);
  const probes::EcmpModel ecmp(topo, 3);
  // Host to host, under two ToRs, as the prober's path sessions go.
  const fabric::PortId src = *topo.find_port("host0001", "nic0");
  fabric::PortId dst = fabric::kNone;
  for (const auto& d : topo.devices()) {
    const auto nic = topo.find_port(d.name, "nic0");
    if (nic && topo.port(topo.peer(*nic)).device != topo.port(topo.peer(src)).device) {
      dst = *nic;
      break;
    }
  }
  ASSERT_NE(dst, fabric::kNone);
  // The ports a path arrives at, walked from the device it leaves.
  auto arrivals = [&](const probes::Path& path, fabric::PortId from) {
    std::vector<fabric::PortId> in;
    fabric::DeviceId at = topo.port(from).device;
    for (const fabric::LinkId l : path) {
      const auto& link = topo.link(l);
      in.push_back(topo.port(link.a).device == at ? link.b : link.a);
      at = topo.port(in.back()).device;
    }
    return in;
  };
  for (uint16_t sport = 40000; sport < 40064; ++sport) {
    const FabricSim::FlowHops& f = sim.flow_hops(src, dst, sport, 862);
    const probes::Path there_path = ecmp.path_of({src, dst, sport, 862});
    std::vector<fabric::PortId> want = arrivals(there_path, src);
    ASSERT_EQ(f.there, want.size()) << sport;
    ASSERT_GE(want.size(), 3u);  // host link, the fabric, host link
    EXPECT_EQ(topo.port(want.back()).device, topo.port(dst).device) << sport;
    const probes::Path back_path = ecmp.path_of({dst, src, 862, sport});
    const std::vector<fabric::PortId> back = arrivals(back_path, dst);
    ASSERT_FALSE(back.empty()) << sport;
    EXPECT_EQ(topo.port(back.back()).device, topo.port(src).device) << sport;
    want.insert(want.end(), back.begin(), back.end());
    EXPECT_EQ(f.in, want) << sport;
    // Each hop arrives over the path's own link, there and then back.
    for (size_t i = 0; i < f.in.size(); ++i) {
      const fabric::LinkId l = i < f.there ? there_path[i] : back_path[i - f.there];
      EXPECT_EQ(topo.port(f.in[i]).link, l) << sport << " hop " << i;
    }
    EXPECT_EQ(&sim.flow_hops(src, dst, sport, 862), &f) << "asked again, not kept";
  }

  const FabricSim::FlowHops& f = sim.flow_hops(src, dst, 40000, 862);
  std::mt19937_64 rng(1);
  const ProbeFate clean = sim.probe(src, dst, 40000, 862, rng);
  EXPECT_TRUE(clean.delivered);
  EXPECT_EQ(clean.hops, f.there);
  EXPECT_EQ(clean.delay, Duration(2) * static_cast<int64_t>(f.in.size()));  // 2 us a hop
  const fabric::PortId mid = f.in[f.there / 2];
  const fabric::LinkId middle = topo.port(mid).link;
  sim.set_link_up(middle, false, 1);
  EXPECT_FALSE(sim.probe(src, dst, 40000, 862, rng).delivered);
  sim.set_link_up(middle, true, 2);
  EXPECT_TRUE(sim.probe(src, dst, 40000, 862, rng).delivered);
  // A link on neither path.
  fabric::LinkId elsewhere = fabric::kNone;
  for (fabric::LinkId l = 0; l < topo.links().size() && elsewhere == fabric::kNone; ++l) {
    const auto on = [&](fabric::PortId p) { return topo.port(p).link == l; };
    if (std::none_of(f.in.begin(), f.in.end(), on)) elsewhere = l;
  }
  ASSERT_NE(elsewhere, fabric::kNone);
  sim.set_link_up(elsewhere, false, 3);
  EXPECT_TRUE(sim.probe(src, dst, 40000, 862, rng).delivered);

  // Faults on a port of the path: all probes lost while a full probe_loss lasts, 5 ms more
  // on the way while a probe_delay does; both gone when they end.
  auto on_mid = [&](FaultKind kind, double value) {
    Fault fault;
    fault.kind = kind;
    fault.port = mid;
    fault.value = value;
    return fault;
  };
  const Fault loss = on_mid(FaultKind::probe_loss, 1.0);
  sim.apply(loss, SimEvent::Phase::start, 4);
  EXPECT_FALSE(sim.probe(src, dst, 40000, 862, rng).delivered);
  sim.apply(loss, SimEvent::Phase::end, 5);
  EXPECT_TRUE(sim.probe(src, dst, 40000, 862, rng).delivered);
  const Fault delay = on_mid(FaultKind::probe_delay, 5.0);
  sim.apply(delay, SimEvent::Phase::start, 6);
  EXPECT_EQ(sim.probe(src, dst, 40000, 862, rng).delay, clean.delay + from_seconds(0.005));
  sim.apply(delay, SimEvent::Phase::end, 7);
  EXPECT_EQ(sim.probe(src, dst, 40000, 862, rng).delay, clean.delay);
}

}  // namespace
}  // namespace medic::sim
