// What each fault does to the emulated fabric: light, frames, FEC, pause frames, load,
// reboots, and what a device's telemetry endpoint answers. The renderings are read back
// with the real parsers and the real counter map, so fabsim and medicd agree on every
// counter of every port.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "fabric/generator.h"
#include "sim/fabric_sim.h"
#include "sim/server.h"
#include "telemetry/mapping.h"
#include "telemetry/openconfig.h"
#include "telemetry/prometheus.h"
#include "tests/support/testing.h"

namespace medic::sim {
namespace {

using Phase = SimEvent::Phase;
using telemetry::Counter;

constexpr double kSpeed = 400e9;      // the demo fabric's links, bits/s
constexpr double kFrameBytes = 4096;  // fabsim's frames
constexpr double kMaxBaseBer = 1e-8;  // fabsim's clean links stay below this

class FaultPhysicsTest : public ::testing::Test {
 protected:
  fabric::PortId port(const std::string& dev, const std::string& name) { return *topo.find_port(dev, name); }
  fabric::DeviceId device(const std::string& name) { return *topo.find_device(name); }

  Fault end_fault(FaultKind kind, fabric::PortId p, double value, double value2 = 0) {
    Fault f;
    f.kind = kind;
    f.port = p;
    f.link = topo.port(p).link;
    f.value = value;
    f.value2 = value2;
    return f;
  }
  Fault device_fault(FaultKind kind, const std::string& name) {
    Fault f;
    f.kind = kind;
    f.device = device(name);
    return f;
  }
  // Reads both ends at every step from t0 to t1, as a poller would.
  void poll(fabric::PortId p, double t0, double t1, double step) {
    const fabric::PortId q = topo.peer(p);
    const int n = static_cast<int>((t1 - t0) / step + 0.5);
    for (int i = 0; i <= n; ++i) {
      const double t = t0 + i * step;
      sim.counters(p, t);
      sim.counters(q, t);
    }
  }
  HttpResponse get(const std::string& path, double t) {
    HttpRequest req;
    req.method = "GET";
    req.target = path;
    req.path = path;
    return handle(sim, t, req, ServerOptions{});
  }

  fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  FabricSim sim{topo};
  fabric::LinkId uplink = *topo.find_link("rtsw0001:eth5");
  fabric::PortId a = port("rtsw0001", "eth5");  // ToR end
  fabric::PortId b = port("ctsw001", "eth1");   // spine end
  fabric::PortId nic = port("host0001", "nic0");
  fabric::PortId tor_down = port("rtsw0001", "eth1");  // the ToR port facing host0001:nic0
};

// ---------------------------------------------------------------------------------------
// Light

TEST_F(FaultPhysicsTest, RxPowerIsPeerTxMinusFiberLoss) {
  // Transmitters near 0.5 dBm; fabric fibers lose 0.6..1.8 dB, host links 0.3..0.9 dB.
  const PortCounters ca = sim.counters(a, 1), cb = sim.counters(b, 1);
  EXPECT_GE(ca.tx_power_dbm, 0.0);
  EXPECT_LE(ca.tx_power_dbm, 1.0);
  EXPECT_GE(cb.tx_power_dbm - ca.rx_power_dbm, 0.6);
  EXPECT_LE(cb.tx_power_dbm - ca.rx_power_dbm, 1.8);
  EXPECT_GE(ca.tx_power_dbm - cb.rx_power_dbm, 0.6);
  EXPECT_LE(ca.tx_power_dbm - cb.rx_power_dbm, 1.8);
  const PortCounters ch = sim.counters(nic, 1), ct = sim.counters(tor_down, 1);
  EXPECT_GE(ct.tx_power_dbm - ch.rx_power_dbm, 0.3);
  EXPECT_LE(ct.tx_power_dbm - ch.rx_power_dbm, 0.9);
  // Readings hold still while nothing changes.
  EXPECT_DOUBLE_EQ(sim.counters(a, 50).rx_power_dbm, ca.rx_power_dbm);
  EXPECT_DOUBLE_EQ(sim.counters(a, 50).tx_power_dbm, ca.tx_power_dbm);
}

TEST_F(FaultPhysicsTest, OpticsLossWeakensOnlyTheLightThatEndReceives) {
  const PortCounters a0 = sim.counters(a, 1), b0 = sim.counters(b, 1);
  const Fault f = end_fault(FaultKind::optics_loss, a, 6);
  sim.apply(f, Phase::start, 2);
  const PortCounters a1 = sim.counters(a, 3), b1 = sim.counters(b, 3);
  EXPECT_NEAR(a1.rx_power_dbm, a0.rx_power_dbm - 6, 1e-9);
  EXPECT_NEAR(a1.rx_power_dbm, b1.tx_power_dbm - (b0.tx_power_dbm - a0.rx_power_dbm) - 6, 1e-9);
  EXPECT_DOUBLE_EQ(a1.tx_power_dbm, a0.tx_power_dbm);
  EXPECT_DOUBLE_EQ(b1.rx_power_dbm, b0.rx_power_dbm) << "the other direction is clean";
  EXPECT_DOUBLE_EQ(b1.tx_power_dbm, b0.tx_power_dbm);
  sim.apply(f, Phase::end, 4);
  EXPECT_DOUBLE_EQ(sim.counters(a, 5).rx_power_dbm, a0.rx_power_dbm);
  // A loss beyond any budget bottoms out at the "no light" reading.
  sim.apply(end_fault(FaultKind::optics_loss, a, 80), Phase::start, 6);
  EXPECT_DOUBLE_EQ(sim.counters(a, 7).rx_power_dbm, -40.0);
}

TEST_F(FaultPhysicsTest, WeakTxLowersTheFarEndsReceivePower) {
  const PortCounters a0 = sim.counters(a, 1), b0 = sim.counters(b, 1);
  const Fault f = end_fault(FaultKind::weak_tx, a, 6);
  sim.apply(f, Phase::start, 2);
  const PortCounters a1 = sim.counters(a, 3), b1 = sim.counters(b, 3);
  EXPECT_NEAR(a1.tx_power_dbm, a0.tx_power_dbm - 6, 1e-9);
  EXPECT_NEAR(b1.rx_power_dbm, b0.rx_power_dbm - 6, 1e-9);
  EXPECT_DOUBLE_EQ(a1.rx_power_dbm, a0.rx_power_dbm) << "the weak laser's own receiver is fine";
  EXPECT_DOUBLE_EQ(b1.tx_power_dbm, b0.tx_power_dbm);
  // The fiber loss itself did not change: far rx is still this tx minus the same loss.
  EXPECT_NEAR(a1.tx_power_dbm - b1.rx_power_dbm, a0.tx_power_dbm - b0.rx_power_dbm, 1e-9);
  sim.apply(f, Phase::end, 4);
  EXPECT_DOUBLE_EQ(sim.counters(a, 5).tx_power_dbm, a0.tx_power_dbm);
  EXPECT_DOUBLE_EQ(sim.counters(b, 5).rx_power_dbm, b0.rx_power_dbm);
}

TEST_F(FaultPhysicsTest, OpticsDriftFadesWithTimeOnTopOfALoss) {
  const double rx0 = sim.counters(a, 1).rx_power_dbm;
  sim.apply(end_fault(FaultKind::optics_loss, a, 2), Phase::start, 5);
  const Fault drift = end_fault(FaultKind::optics_drift, a, 3);  // dB per minute
  sim.apply(drift, Phase::start, 10);
  EXPECT_NEAR(sim.counters(a, 10).rx_power_dbm, rx0 - 2, 1e-9);
  EXPECT_NEAR(sim.counters(a, 40).rx_power_dbm, rx0 - 2 - 1.5, 1e-9);
  EXPECT_NEAR(sim.counters(a, 70).rx_power_dbm, rx0 - 2 - 3, 1e-9);
  EXPECT_NEAR(sim.counters(b, 70).rx_power_dbm, sim.counters(b, 1).rx_power_dbm, 1e-9);
  sim.apply(drift, Phase::end, 70);
  EXPECT_NEAR(sim.counters(a, 100).rx_power_dbm, rx0 - 2, 1e-9);
}

TEST_F(FaultPhysicsTest, NoLightWhileTheLinkIsDown) {
  const PortCounters a0 = sim.counters(a, 1), b0 = sim.counters(b, 1);
  sim.apply(end_fault(FaultKind::optics_loss, a, 3), Phase::start, 1);
  sim.apply(end_fault(FaultKind::weak_tx, b, 1), Phase::start, 1);
  sim.set_link_up(uplink, false, 2);
  EXPECT_DOUBLE_EQ(sim.counters(a, 3).rx_power_dbm, -40.0);
  EXPECT_DOUBLE_EQ(sim.counters(b, 3).rx_power_dbm, -40.0);
  // Every lane reads "no light", with no per-lane offset.
  const std::string text = sim.render_prometheus(device("rtsw0001"), 3);
  for (int lane = 1; lane <= 4; ++lane) {
    EXPECT_NE(text.find("optics_rx_power_dbm{interface=\"eth5\",lane=\"" + std::to_string(lane) + "\"} -40.00\n"),
              std::string::npos)
        << lane;
  }
  sim.set_link_up(uplink, true, 4);
  EXPECT_NEAR(sim.counters(a, 5).rx_power_dbm, a0.rx_power_dbm - 3 - 1, 1e-9);
  EXPECT_NEAR(sim.counters(b, 5).rx_power_dbm, b0.rx_power_dbm, 1e-9);
}

// ---------------------------------------------------------------------------------------
// Frames

TEST_F(FaultPhysicsTest, CorruptFramesFailTheirFcsAndAreNotGoodPackets) {
  const double rate = 1e-3;
  poll(a, 0, 1, 1);
  const PortCounters a0 = sim.counters(a, 1), b0 = sim.counters(b, 1);
  const Fault f = end_fault(FaultKind::corrupt, a, rate);
  sim.apply(f, Phase::start, 1);
  poll(a, 1, 11, 0.25);
  const PortCounters a1 = sim.counters(a, 11), b1 = sim.counters(b, 11);
  const double crc = a1.crc_errors - a0.crc_errors;
  const double good = a1.rx_packets - a0.rx_packets;
  const double sent = b1.tx_packets - b0.tx_packets;
  ASSERT_GT(sent, 1e6);
  // Everything sent arrived, either as a good packet or as an FCS error.
  EXPECT_EQ(good + crc, sent);
  EXPECT_NEAR(crc, rate * sent, 2.0);
  EXPECT_EQ(a1.rx_errors - a0.rx_errors, crc);
  EXPECT_EQ(a1.symbol_errors - a0.symbol_errors, crc);
  EXPECT_EQ(a1.rx_bytes - a0.rx_bytes, good * kFrameBytes) << "bytes of good packets only";
  // The other direction, and the corrupting end's own transmit, are clean.
  EXPECT_EQ(b1.crc_errors, 0);
  EXPECT_EQ(b1.rx_errors, 0);
  EXPECT_EQ(b1.rx_packets - b0.rx_packets, a1.tx_packets - a0.tx_packets);

  sim.apply(f, Phase::end, 11);
  EXPECT_EQ(sim.counters(a, 20).crc_errors, a1.crc_errors);

  // At a rate of 1 nothing gets through.
  sim.apply(end_fault(FaultKind::corrupt, a, 1.0), Phase::start, 20);
  const PortCounters a2 = sim.counters(a, 20);
  const PortCounters a3 = sim.counters(a, 22);
  EXPECT_EQ(a3.rx_packets, a2.rx_packets);
  EXPECT_GT(a3.crc_errors, a2.crc_errors + 1e6);
}

TEST_F(FaultPhysicsTest, FecAddsCorrectedBitsAndUncorrectableCodewords) {
  const double ber = 1e-5, uncorrectable_per_s = 3;
  const PortCounters a0 = sim.counters(a, 0), b0 = sim.counters(b, 0);
  const Fault f = end_fault(FaultKind::fec, a, ber, uncorrectable_per_s);
  sim.apply(f, Phase::start, 0);
  poll(a, 0, 10, 0.1);  // a poller ten times a second sees the same totals
  const PortCounters a1 = sim.counters(a, 10), b1 = sim.counters(b, 10);
  const double bits = a1.fec_corrected_bits - a0.fec_corrected_bits;
  EXPECT_GE(bits, ber * kSpeed * 10 - 1);
  EXPECT_LE(bits, (ber + kMaxBaseBer) * kSpeed * 10 + 1);
  EXPECT_NEAR(a1.fec_uncorrectable - a0.fec_uncorrectable, uncorrectable_per_s * 10, 1.0);
  // The far end sees only its own clean background.
  EXPECT_LE(b1.fec_corrected_bits - b0.fec_corrected_bits, kMaxBaseBer * kSpeed * 10 + 1);
  EXPECT_EQ(b1.fec_uncorrectable, 0);
  EXPECT_EQ(a1.crc_errors, 0) << "FEC corrected what it could; nothing reached the FCS";

  sim.apply(f, Phase::end, 10);
  const PortCounters a2 = sim.counters(a, 20);
  EXPECT_EQ(a2.fec_uncorrectable, a1.fec_uncorrectable);
  EXPECT_LE(a2.fec_corrected_bits - a1.fec_corrected_bits, kMaxBaseBer * kSpeed * 10 + 1);
}

TEST_F(FaultPhysicsTest, PauseCountsAtTheSenderAndItsPeer) {
  const double fps = 5000;
  const Fault f = end_fault(FaultKind::pause, nic, fps);
  sim.apply(f, Phase::start, 0);
  poll(nic, 0, 10, 0.2);
  const PortCounters h = sim.counters(nic, 10), t = sim.counters(tor_down, 10);
  EXPECT_NEAR(h.tx_pause, fps * 10, 1.0);
  EXPECT_NEAR(t.rx_pause, fps * 10, 1.0);
  EXPECT_EQ(h.rx_pause, 0);
  EXPECT_EQ(t.tx_pause, 0);
  // Nothing crosses a link that is down.
  sim.set_link_up(topo.port(nic).link, false, 10);
  poll(nic, 10, 15, 0.5);
  EXPECT_EQ(sim.counters(nic, 15).tx_pause, h.tx_pause);
  EXPECT_EQ(sim.counters(tor_down, 15).rx_pause, t.rx_pause);
  sim.set_link_up(topo.port(nic).link, true, 15);
  sim.apply(f, Phase::end, 15);
  EXPECT_EQ(sim.counters(nic, 20).tx_pause, h.tx_pause);
}

TEST_F(FaultPhysicsTest, SlowRatesAreNotLostToFrequentPolling) {
  // Fractions of an event per poll add up, as they do for corrupt frames and FEC bits.
  sim.apply(end_fault(FaultKind::pause, nic, 5), Phase::start, 0);
  sim.apply(end_fault(FaultKind::fec, a, 0, 2), Phase::start, 0);
  poll(nic, 0, 20, 0.1);
  poll(a, 0, 20, 0.1);
  EXPECT_NEAR(sim.counters(nic, 20).tx_pause, 100, 1.0);
  EXPECT_NEAR(sim.counters(tor_down, 20).rx_pause, 100, 1.0);
  EXPECT_NEAR(sim.counters(a, 20).fec_uncorrectable, 40, 1.0);
}

TEST_F(FaultPhysicsTest, CongestionSetsUtilizationAndDiscards) {
  poll(a, 0, 10, 1);
  const PortCounters a0 = sim.counters(a, 10);
  const double base_pps = a0.tx_packets / 10;
  const Fault f = end_fault(FaultKind::congestion, a, 0.95, 0.01);
  sim.apply(f, Phase::start, 10);
  poll(a, 10, 20, 0.5);
  const PortCounters a1 = sim.counters(a, 20);
  const double sent = a1.tx_packets - a0.tx_packets;
  EXPECT_NEAR(sent, kSpeed * 0.95 / (8 * kFrameBytes) * 10, 20.0);
  EXPECT_GT(sent / 10, base_pps) << "the demo's links idle at 25..60%";
  const double moved = sent + (a1.rx_packets - a0.rx_packets);
  EXPECT_NEAR(a1.rx_discards - a0.rx_discards, 0.01 * moved, 25.0);
  sim.apply(f, Phase::end, 20);
  poll(a, 20, 30, 1);
  const PortCounters a2 = sim.counters(a, 30);
  EXPECT_NEAR((a2.tx_packets - a1.tx_packets) / 10, base_pps, 2.0);
  EXPECT_LE(a2.rx_discards - a1.rx_discards, 2.0) << "back to a clean link";
}

TEST_F(FaultPhysicsTest, RebootZeroesTheDevicesCountersOnly) {
  const fabric::DeviceId tor = device("rtsw0001");
  sim.set_link_up(*topo.find_link("rtsw0001:eth6"), false, 1);
  sim.apply(end_fault(FaultKind::corrupt, a, 1e-3), Phase::start, 1);
  ASSERT_TRUE(sim.set_drained(tor, "eth7", true, 1).ok());
  poll(a, 0, 5, 1);
  std::vector<PortCounters> before;
  for (const fabric::PortId p : topo.ports_of(tor)) before.push_back(sim.counters(p, 5));
  const PortCounters peer_before = sim.counters(b, 5);
  const auto ports = topo.ports_of(tor);
  const size_t ia = static_cast<size_t>(std::find(ports.begin(), ports.end(), a) - ports.begin());
  ASSERT_LT(ia, ports.size());
  ASSERT_GT(before[ia].crc_errors, 0);

  sim.apply(device_fault(FaultKind::reboot, "rtsw0001"), Phase::start, 5);
  for (size_t i = 0; i < ports.size(); ++i) {
    const PortCounters c = sim.counters(ports[i], 5);
    const std::string name = topo.port(ports[i]).name;
    for (const double v : {c.carrier_changes, c.link_down_events, c.rx_packets, c.tx_packets, c.rx_bytes, c.tx_bytes,
                           c.rx_errors, c.tx_errors, c.rx_discards, c.tx_discards, c.crc_errors, c.symbol_errors,
                           c.fec_corrected_bits, c.fec_uncorrectable, c.rx_pause, c.tx_pause}) {
      EXPECT_EQ(v, 0) << name;
    }
    // State and readings are not counters.
    EXPECT_EQ(c.oper_up, before[i].oper_up) << name;
    EXPECT_EQ(c.drained, before[i].drained) << name;
    EXPECT_DOUBLE_EQ(c.rx_power_dbm, before[i].rx_power_dbm) << name;
    EXPECT_DOUBLE_EQ(c.tx_power_dbm, before[i].tx_power_dbm) << name;
    EXPECT_DOUBLE_EQ(c.temperature_c, before[i].temperature_c) << name;
  }
  EXPECT_FALSE(sim.counters(port("rtsw0001", "eth6"), 5).oper_up);
  EXPECT_TRUE(sim.counters(port("rtsw0001", "eth7"), 5).drained);
  // The neighbour did not reboot.
  const PortCounters peer = sim.counters(b, 5);
  EXPECT_EQ(peer.tx_packets, peer_before.tx_packets);
  EXPECT_GT(peer.tx_packets, 0);
  // Counting starts again from zero, faults and all.
  const PortCounters after = sim.counters(a, 6);
  EXPECT_GT(after.tx_packets, 0);
  EXPECT_LT(after.tx_packets, before[ia].tx_packets);
  EXPECT_GT(after.crc_errors, 0);
}

// ---------------------------------------------------------------------------------------
// What the telemetry endpoints answer

class RejectAll final : public telemetry::PromSink, public telemetry::OcSink {
 public:
  void on_sample(const telemetry::PromSample&) override { ++n; }
  void on_leaf(std::string_view, std::string_view, std::string_view, telemetry::OcKind) override { ++n; }
  size_t n = 0;
};

TEST_F(FaultPhysicsTest, SilentDeviceAnswers503UntilItEnds) {
  const Fault sw = device_fault(FaultKind::silent, "rtsw0001");
  const Fault host = device_fault(FaultKind::silent, "host0001");
  sim.apply(sw, Phase::start, 1);
  sim.apply(host, Phase::start, 1);
  EXPECT_EQ(sim.mode(device("rtsw0001")), DeviceMode::silent);
  for (const char* path : {"/s/rtsw0001/metrics", "/s/rtsw0001/gnmi"}) {
    const HttpResponse r = get(path, 2);
    EXPECT_EQ(r.status, 503u) << path;
    EXPECT_EQ(r.body, "rtsw0001 is not answering\n") << path;
  }
  EXPECT_EQ(get("/h/host0001/metrics", 2).status, 503u);
  EXPECT_EQ(get("/s/rtsw0002/metrics", 2).status, 200u) << "only the silent device";
  EXPECT_EQ(get("/h/host0002/metrics", 2).status, 200u);
  // Its drain API still answers: only telemetry is lost.
  HttpRequest rpc;
  rpc.method = "POST";
  rpc.path = rpc.target = "/s/rtsw0001/rpc";
  rpc.body = R"({"jsonrpc": "2.0", "id": 1, "method": "interface.get_state", "params": {"interface": "eth5"}})";
  EXPECT_EQ(handle(sim, 2, rpc, ServerOptions{}).status, 200u);

  sim.apply(sw, Phase::end, 3);
  EXPECT_EQ(sim.mode(device("rtsw0001")), DeviceMode::normal);
  const HttpResponse back = get("/s/rtsw0001/metrics", 4);
  EXPECT_EQ(back.status, 200u);
  telemetry::PromParser parser;
  RejectAll sink;
  EXPECT_TRUE(parser.parse(back.body, sink).ok());
  EXPECT_GT(sink.n, 0u);
}

TEST_F(FaultPhysicsTest, GarbageIsRejectedByTheRealParsers) {
  const Fault tor = device_fault(FaultKind::garbage, "rtsw0001");
  sim.apply(tor, Phase::start, 1);
  sim.apply(device_fault(FaultKind::garbage, "ctsw001"), Phase::start, 1);
  sim.apply(device_fault(FaultKind::garbage, "host0001"), Phase::start, 1);
  EXPECT_EQ(sim.mode(device("ctsw001")), DeviceMode::garbage);
  for (const char* path : {"/s/rtsw0001/metrics", "/h/host0001/metrics", "/s/ctsw001/metrics"}) {
    const HttpResponse r = get(path, 2);
    EXPECT_EQ(r.status, 200u) << path << ": garbage comes with a 200";
    telemetry::PromParser parser;
    RejectAll sink;
    const Status st = parser.parse(r.body, sink);
    ASSERT_FALSE(st.ok()) << path;
    EXPECT_EQ(st.error().rfind("line ", 0), 0u) << st.error();
  }
  for (const char* path : {"/s/ctsw001/gnmi", "/s/rtsw0001/gnmi"}) {
    const HttpResponse r = get(path, 2);
    EXPECT_EQ(r.status, 200u) << path;
    EXPECT_EQ(r.content_type, "application/json");
    RejectAll sink;
    const Status st = telemetry::parse_openconfig(r.body, sink);
    ASSERT_FALSE(st.ok()) << path;
    EXPECT_EQ(st.error().rfind("byte ", 0), 0u) << st.error();
  }
  // And the mapper medicd uses rejects them whole, whatever format it takes them for.
  const auto map = telemetry::CounterMap::load_file(testing::source_dir() + "/data/counter_map.json");
  telemetry::ScrapeMapper mapper(topo, map);
  for (const char* path : {"/s/rtsw0001/metrics", "/s/ctsw001/gnmi"}) {
    const HttpResponse r = get(path, 2);
    std::vector<telemetry::PortSample> out;
    const auto fmt = telemetry::detect_format(r.content_type, r.body);
    EXPECT_FALSE(mapper.map(device(path[3] == 'r' ? "rtsw0001" : "ctsw001"), fmt, r.body, Time{}, out).ok()) << path;
    EXPECT_TRUE(out.empty()) << path;
  }
  sim.apply(tor, Phase::end, 3);
  EXPECT_EQ(sim.mode(device("rtsw0001")), DeviceMode::normal);
  telemetry::PromParser parser;
  RejectAll sink;
  EXPECT_TRUE(parser.parse(get("/s/rtsw0001/metrics", 4).body, sink).ok());
}

// ---------------------------------------------------------------------------------------
// Every rendering through the real parsers and the shipped counter map

uint32_t bits_of(std::initializer_list<Counter> cs) {
  uint32_t b = 0;
  for (const Counter c : cs) b |= telemetry::bit(c);
  return b;
}

const uint32_t kPrometheusSwitch = bits_of(
    {Counter::oper_up, Counter::carrier_changes, Counter::rx_packets, Counter::tx_packets, Counter::rx_bytes,
     Counter::tx_bytes, Counter::rx_errors, Counter::tx_errors, Counter::rx_discards, Counter::tx_discards,
     Counter::rx_crc_errors, Counter::rx_symbol_errors, Counter::rx_pause, Counter::tx_pause,
     Counter::fec_corrected_bits, Counter::fec_uncorrectable_codewords, Counter::temperature_c,
     Counter::rx_power_dbm, Counter::tx_power_dbm, Counter::laser_bias_ma});
const uint32_t kOpenConfigSwitch = bits_of(
    {Counter::oper_up, Counter::carrier_changes, Counter::rx_packets, Counter::tx_packets, Counter::rx_bytes,
     Counter::tx_bytes, Counter::rx_errors, Counter::tx_errors, Counter::rx_discards, Counter::tx_discards,
     Counter::rx_crc_errors, Counter::rx_pause, Counter::tx_pause, Counter::fec_corrected_bits,
     Counter::fec_uncorrectable_codewords, Counter::temperature_c, Counter::rx_power_dbm, Counter::tx_power_dbm,
     Counter::laser_bias_ma});
const uint32_t kHost = bits_of({Counter::oper_up, Counter::carrier_changes, Counter::link_down_events,
                                Counter::rx_packets, Counter::tx_packets, Counter::rx_bytes, Counter::tx_bytes,
                                Counter::rx_errors, Counter::rx_discards, Counter::rx_crc_errors,
                                Counter::rx_symbol_errors, Counter::rx_pause, Counter::tx_pause,
                                Counter::fec_corrected_bits});

// The canonical value fabsim's own counters give for `c`.
double expected(const PortCounters& p, Counter c) {
  switch (c) {
    case Counter::oper_up: return p.oper_up ? 1 : 0;
    case Counter::carrier_changes: return p.carrier_changes;
    case Counter::link_down_events: return p.link_down_events;
    case Counter::rx_packets: return p.rx_packets;
    case Counter::tx_packets: return p.tx_packets;
    case Counter::rx_bytes: return p.rx_bytes;
    case Counter::tx_bytes: return p.tx_bytes;
    case Counter::rx_errors: return p.rx_errors;
    case Counter::tx_errors: return p.tx_errors;
    case Counter::rx_discards: return p.rx_discards;
    case Counter::tx_discards: return p.tx_discards;
    case Counter::rx_crc_errors: return p.crc_errors;
    case Counter::rx_symbol_errors: return p.symbol_errors;
    case Counter::fec_corrected_bits: return p.fec_corrected_bits;
    case Counter::fec_uncorrectable_codewords: return p.fec_uncorrectable;
    case Counter::rx_pause: return p.rx_pause;
    case Counter::tx_pause: return p.tx_pause;
    case Counter::rx_power_dbm: return p.rx_power_dbm;
    case Counter::tx_power_dbm: return p.tx_power_dbm;
    case Counter::laser_bias_ma: return p.laser_bias_ma;
    case Counter::temperature_c: return p.temperature_c;
    default: return NAN;
  }
}

class RenderRoundTrip : public FaultPhysicsTest {
 protected:
  void SetUp() override {
    // Something in every counter: a down link, corruption, FEC, pause frames, load, a weak laser.
    sim.set_link_up(*topo.find_link("rtsw0001:eth6"), false, 1);
    sim.apply(end_fault(FaultKind::corrupt, a, 1e-3), Phase::start, 0);
    sim.apply(end_fault(FaultKind::corrupt, tor_down, 1e-4), Phase::start, 0);
    sim.apply(end_fault(FaultKind::corrupt, nic, 1e-4), Phase::start, 0);
    sim.apply(end_fault(FaultKind::fec, b, 1e-5, 3), Phase::start, 0);
    sim.apply(end_fault(FaultKind::fec, nic, 1e-5), Phase::start, 0);
    sim.apply(end_fault(FaultKind::pause, nic, 5000), Phase::start, 0);
    sim.apply(end_fault(FaultKind::congestion, port("rtsw0001", "eth7"), 0.9, 0.01), Phase::start, 0);
    sim.apply(end_fault(FaultKind::weak_tx, port("ctsw001", "eth2"), 6), Phase::start, 0);
    sim.set_link_up(*topo.find_link("host0002:nic1"), false, 2);
  }

  // Maps one device's payload and checks every port against FabricSim::counters().
  void check(fabric::DeviceId dev, telemetry::PayloadFormat format, const std::string& body, uint32_t want,
             double t) {
    SCOPED_TRACE(topo.device(dev).name + (format == telemetry::PayloadFormat::openconfig ? " openconfig" : " prometheus"));
    std::vector<telemetry::PortSample> out;
    telemetry::MapStats stats;
    const Status st = mapper.map(dev, format, body, Time{}, out, &stats);
    ASSERT_TRUE(st.ok()) << st.error();
    EXPECT_EQ(stats.unknown_port, 0u);
    EXPECT_EQ(stats.unparsable, 0u);
    if (format == telemetry::PayloadFormat::prometheus) {
      EXPECT_EQ(stats.unmapped, 0u) << "every family is mapped";
    }
    const auto ports = topo.ports_of(dev);
    ASSERT_EQ(out.size(), ports.size());
    for (const auto& s : out) {
      ASSERT_LT(s.port, topo.ports().size());
      ASSERT_EQ(topo.port(s.port).device, dev);
      const std::string name = topo.port(s.port).name;
      EXPECT_EQ(s.present, want) << name;
      const PortCounters c = sim.counters(s.port, t);
      for (size_t i = 0; i < telemetry::kCounterCount; ++i) {
        const Counter k = static_cast<Counter>(i);
        if (!s.has(k)) continue;
        const double got = s.get(k), exp = expected(c, k);
        switch (k) {
          case Counter::rx_power_dbm:
          case Counter::tx_power_dbm:
            // The weakest of four lanes, each within 0.15 dB of the port's reading; no light
            // is the same on every lane.
            if (exp <= -40) {
              EXPECT_DOUBLE_EQ(got, -40.0) << name << " " << telemetry::to_string(k);
            } else {
              EXPECT_NEAR(got, exp, 0.16) << name << " " << telemetry::to_string(k);
            }
            break;
          case Counter::temperature_c: EXPECT_NEAR(got, exp, 0.05) << name; break;
          case Counter::laser_bias_ma: EXPECT_NEAR(got, exp, 0.006) << name; break;
          default: EXPECT_EQ(got, exp) << name << " " << telemetry::to_string(k);
        }
      }
    }
  }

  telemetry::CounterMap map = telemetry::CounterMap::load_file(testing::source_dir() + "/data/counter_map.json");
  telemetry::ScrapeMapper mapper{topo, map};
};

TEST_F(RenderRoundTrip, EveryPortOfEveryDeviceInEveryFormat) {
  const double t = 7.5;
  size_t switches = 0, hosts = 0;
  for (fabric::DeviceId d = 0; d < topo.devices().size(); ++d) {
    if (topo.device(d).is_switch()) {
      ++switches;
      check(d, telemetry::PayloadFormat::prometheus, sim.render_prometheus(d, t), kPrometheusSwitch, t);
      check(d, telemetry::PayloadFormat::openconfig, sim.render_openconfig(d, t), kOpenConfigSwitch, t);
    } else {
      ++hosts;
      check(d, telemetry::PayloadFormat::prometheus, sim.render_host(d, t), kHost, t);
    }
  }
  EXPECT_EQ(switches, 20u);
  EXPECT_EQ(hosts, 8u);
}

TEST_F(RenderRoundTrip, TheFaultsShowInTheMappedCounters) {
  // Not just equal: the injected faults are visible where medicd's detectors look.
  const double t = 7.5;
  std::vector<telemetry::PortSample> tor, spine, host;
  ASSERT_TRUE(mapper.map(device("rtsw0001"), telemetry::PayloadFormat::prometheus,
                         sim.render_prometheus(device("rtsw0001"), t), Time{}, tor)
                  .ok());
  ASSERT_TRUE(mapper.map(device("ctsw001"), telemetry::PayloadFormat::openconfig,
                         sim.render_openconfig(device("ctsw001"), t), Time{}, spine)
                  .ok());
  ASSERT_TRUE(
      mapper.map(device("host0001"), telemetry::PayloadFormat::prometheus, sim.render_host(device("host0001"), t), Time{}, host)
          .ok());
  auto find = [](const std::vector<telemetry::PortSample>& v, fabric::PortId p) -> const telemetry::PortSample& {
    for (const auto& s : v) {
      if (s.port == p) return s;
    }
    throw std::runtime_error("port not in the payload");
  };
  EXPECT_GT(find(tor, a).get(Counter::rx_crc_errors), 1000);
  EXPECT_EQ(find(tor, port("rtsw0001", "eth6")).get(Counter::oper_up), 0);
  EXPECT_GT(find(tor, port("rtsw0001", "eth7")).get(Counter::rx_discards), 1000);
  EXPECT_GT(find(tor, tor_down).get(Counter::rx_pause), 30000);
  EXPECT_GT(find(spine, b).get(Counter::fec_uncorrectable_codewords), 20);
  EXPECT_LT(find(spine, port("ctsw001", "eth2")).get(Counter::tx_power_dbm), -4.5);
  EXPECT_GT(find(host, nic).get(Counter::tx_pause), 30000);
  EXPECT_GT(find(host, nic).get(Counter::rx_crc_errors), 10);
  EXPECT_GT(find(host, nic).get(Counter::fec_corrected_bits), 1e-5 * kSpeed * 7);
}

}  // namespace
}  // namespace medic::sim
