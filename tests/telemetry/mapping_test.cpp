#include "telemetry/mapping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fabric/loader.h"
#include "tests/support/testing.h"

namespace medic::telemetry {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const Time kT0 = from_unix_seconds(1'800'000'000);

// rtsw1:eth1 -- ctsw1:eth1, rtsw1:eth2 -- ctsw1:eth2. Both switches have an "eth1".
fabric::Topology small_topology() {
  return fabric::parse_topology(R"({
    "switches": [
      {"name": "rtsw1", "role": "rtsw", "telemetry": "http://sim/s/rtsw1/metrics", "driver": {"kind": "dryrun"}},
      {"name": "ctsw1", "role": "ctsw", "telemetry": "http://sim/s/ctsw1/metrics", "driver": {"kind": "dryrun"}}
    ],
    "links": [
      {"a": "rtsw1:eth1", "b": "ctsw1:eth1", "speed_gbps": 400},
      {"a": "rtsw1:eth2", "b": "ctsw1:eth2", "speed_gbps": 400}
    ]
  })",
                                "small.json");
}

std::string counter_map_path() { return testing::source_dir() + "/data/counter_map.json"; }

// The message of the CounterMapError a map text must raise.
std::string map_error(std::string_view text) {
  try {
    CounterMap::parse(text, "map.json");
  } catch (const CounterMapError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted:\n" << text;
  return "";
}

const PortSample* find(const std::vector<PortSample>& out, fabric::PortId p) {
  for (const auto& s : out) {
    if (s.port == p) return &s;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------
// CounterMap

TEST(CounterMap, LoadsTheShippedFile) {
  const CounterMap m = CounterMap::load_file(counter_map_path());
  // node_exporter, its ethtool names in both spellings, IF-MIB and OpenConfig paths.
  EXPECT_GE(m.size(), 80u);
  ASSERT_NE(m.prometheus("node_ethtool_rx_crc_errors_phy"), nullptr);
  ASSERT_NE(m.prometheus("node_ethtool_received_crc_errors_phy"), nullptr);
  EXPECT_EQ((*m.prometheus("node_ethtool_received_crc_errors_phy"))[0].counter, Counter::rx_crc_errors);
  ASSERT_NE(m.prometheus("ifHCInUcastPkts"), nullptr);
  ASSERT_NE(m.openconfig("interfaces/interface/state/counters/in-pkts"), nullptr);
  const auto* up = m.prometheus("node_network_up");
  ASSERT_NE(up, nullptr);
  ASSERT_EQ(up->size(), 1u);
  EXPECT_EQ((*up)[0].counter, Counter::oper_up);
  EXPECT_EQ((*up)[0].port_label, "device");
  EXPECT_EQ((*up)[0].transform, Transform::none);
  EXPECT_EQ((*up)[0].aggregate, Aggregate::last);
  EXPECT_EQ((*up)[0].scale, 1.0);

  const auto* carrier = m.prometheus("node_network_carrier_changes_total");
  ASSERT_NE(carrier, nullptr);
  EXPECT_EQ((*carrier)[0].counter, Counter::carrier_changes);

  const auto* rx_power = m.prometheus("optics_rx_power_dbm");
  ASSERT_NE(rx_power, nullptr);
  EXPECT_EQ((*rx_power)[0].counter, Counter::rx_power_dbm);
  EXPECT_EQ((*rx_power)[0].port_label, "interface");
  EXPECT_EQ((*rx_power)[0].aggregate, Aggregate::min);
  EXPECT_EQ((*m.prometheus("optics_temperature_celsius"))[0].aggregate, Aggregate::max);

  EXPECT_EQ(m.prometheus("go_goroutines"), nullptr);
}

TEST(CounterMap, ParsesEveryRuleKey) {
  const CounterMap m = CounterMap::parse(R"({
    "version": 1,
    "comment": "test map",
    "prometheus": [
      {"metric": "ifOperStatus", "counter": "oper_up", "port_label": "ifName", "transform": "ifoper_status"},
      {"metric": "hw", "counter": "rx_crc_errors", "port_label": "port", "match": {"type": "crc", "unit": "0"}},
      {"metric": "hw", "counter": "rx_symbol_errors", "port_label": "port", "match": {"type": "symbol"}},
      {"metric": "rx_mw", "counter": "rx_power_dbm", "port_label": "if", "transform": "mw_to_dbm", "aggregate": "min"},
      {"metric": "bits", "counter": "rx_bytes", "port_label": "if", "scale": 0.125, "aggregate": "sum",
       "comment": "bits to bytes"},
      {"metric": "up_gauge", "counter": "oper_up", "port_label": "if", "transform": "up"},
      {"metric": "plain", "counter": "tx_pause", "port_label": "if", "transform": "none", "aggregate": "last"}
    ]
  })",
                                         "inline.json");
  EXPECT_EQ(m.size(), 6u);  // distinct metric names
  const auto* hw = m.prometheus("hw");
  ASSERT_NE(hw, nullptr);
  ASSERT_EQ(hw->size(), 2u);
  EXPECT_EQ((*hw)[0].counter, Counter::rx_crc_errors);
  ASSERT_EQ((*hw)[0].match.size(), 2u);
  EXPECT_EQ((*hw)[1].counter, Counter::rx_symbol_errors);
  EXPECT_EQ((*m.prometheus("ifOperStatus"))[0].transform, Transform::ifoper_status);
  EXPECT_EQ((*m.prometheus("rx_mw"))[0].transform, Transform::mw_to_dbm);
  EXPECT_EQ((*m.prometheus("up_gauge"))[0].transform, Transform::up_string);
  EXPECT_EQ((*m.prometheus("bits"))[0].scale, 0.125);
  EXPECT_EQ((*m.prometheus("bits"))[0].aggregate, Aggregate::sum);
  EXPECT_EQ((*m.prometheus("plain"))[0].aggregate, Aggregate::last);
}

TEST(CounterMapErrors, NotAnObject) {
  EXPECT_EQ(map_error("[]"), "map.json: $: expected an object");
}

TEST(CounterMapErrors, RulesNotAnArray) {
  EXPECT_EQ(map_error(R"({"prometheus": {"metric": "x"}})"), "map.json: $.prometheus: expected an array of rules");
  EXPECT_EQ(map_error(R"({"version": 1})"), "map.json: $.prometheus: expected an array of rules");
}

TEST(CounterMapErrors, UnknownTopLevelKey) {
  EXPECT_EQ(map_error(R"({"prometheus": [], "promethues": []})"), "map.json: $: unknown key \"promethues\"");
}

TEST(CounterMapErrors, RuleNotAnObject) {
  EXPECT_EQ(map_error(R"({"prometheus": [{"metric": "a", "counter": "rx_packets", "port_label": "d"}, "b"]})"),
            "map.json: $.prometheus[1]: expected an object");
}

TEST(CounterMapErrors, UnknownRuleKey) {
  EXPECT_EQ(map_error(R"({"prometheus": [{"metric": "a", "countr": "rx_packets", "port_label": "d"}]})"),
            "map.json: $.prometheus[0]: unknown key \"countr\"");
}

TEST(CounterMapErrors, MissingRequiredKey) {
  EXPECT_EQ(map_error(R"({"prometheus": [{"counter": "rx_packets", "port_label": "d"}]})"),
            "map.json: $.prometheus[0]: missing required key \"metric\"");
  EXPECT_EQ(map_error(R"({"prometheus": [{"metric": "a", "counter": "rx_packets"}]})"),
            "map.json: $.prometheus[0]: missing required key \"port_label\"");
}

TEST(CounterMapErrors, WrongTypes) {
  EXPECT_EQ(map_error(R"({"prometheus": [{"metric": 5, "counter": "rx_packets", "port_label": "d"}]})"),
            "map.json: $.prometheus[0].metric: expected a string");
  EXPECT_EQ(map_error(R"({"prometheus": [{"metric": "a", "counter": "rx_packets", "port_label": "d", "scale": "8"}]})"),
            "map.json: $.prometheus[0].scale: expected a finite number");
  EXPECT_EQ(map_error(R"({"prometheus": [{"metric": "a", "counter": "rx_packets", "port_label": "d", "match": []}]})"),
            "map.json: $.prometheus[0].match: expected an object of label: value");
  EXPECT_EQ(
      map_error(R"({"prometheus": [{"metric": "a", "counter": "rx_packets", "port_label": "d", "match": {"t": 1}}]})"),
      "map.json: $.prometheus[0].match.t: expected a string");
}

TEST(CounterMapErrors, UnknownCounter) {
  EXPECT_EQ(map_error(R"({"prometheus": [
                {"metric": "a", "counter": "rx_packets", "port_label": "d"},
                {"metric": "b", "counter": "rx_crc", "port_label": "d"}]})"),
            "map.json: $.prometheus[1].counter: unknown canonical counter \"rx_crc\"");
}

TEST(CounterMapErrors, UnknownTransform) {
  EXPECT_EQ(map_error(R"({"prometheus": [{"metric": "a", "counter": "rx_power_dbm", "port_label": "d",
                                           "transform": "dbm"}]})"),
            "map.json: $.prometheus[0].transform: unknown transform \"dbm\" (none, mw_to_dbm, ifoper_status, up, oc_oper_status)");
}

TEST(CounterMapErrors, UnknownAggregate) {
  EXPECT_EQ(map_error(R"({"prometheus": [{"metric": "a", "counter": "rx_power_dbm", "port_label": "d",
                                           "aggregate": "avg"}]})"),
            "map.json: $.prometheus[0].aggregate: unknown aggregate \"avg\" (last, min, max, sum)");
}

TEST(CounterMapErrors, InvalidJson) {
  EXPECT_THAT(map_error("{\"prometheus\": [}"), StartsWith("map.json: invalid JSON: "));
}

TEST(CounterMapErrors, FileThatDoesNotExist) {
  testing::TempDir dir;
  const std::string path = dir.file("nope.json");
  try {
    CounterMap::load_file(path);
    FAIL();
  } catch (const CounterMapError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": cannot open");
  }
}

TEST(CounterMapErrors, FileErrorsNameTheFile) {
  testing::TempDir dir;
  const std::string path = dir.file("map.json");
  testing::write_file(path, R"({"prometheus": [{"metric": "a", "counter": "bogus", "port_label": "d"}]})");
  try {
    CounterMap::load_file(path);
    FAIL();
  } catch (const CounterMapError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": $.prometheus[0].counter: unknown canonical counter \"bogus\"");
  }
}

// ---------------------------------------------------------------------------------------
// ScrapeMapper

class ScrapeMapperTest : public ::testing::Test {
 protected:
  fabric::Topology topo = small_topology();
  CounterMap map = CounterMap::load_file(counter_map_path());
  fabric::DeviceId rtsw1 = *topo.find_device("rtsw1");
  fabric::DeviceId ctsw1 = *topo.find_device("ctsw1");
  fabric::PortId r_eth1 = *topo.find_port("rtsw1", "eth1");
  fabric::PortId r_eth2 = *topo.find_port("rtsw1", "eth2");
  fabric::PortId c_eth1 = *topo.find_port("ctsw1", "eth1");
};

TEST_F(ScrapeMapperTest, MapsNodeExporterNamesToPortSamples) {
  ScrapeMapper mapper(topo, map);
  std::vector<PortSample> out;
  MapStats st;
  const Status s = mapper.map_prometheus(rtsw1,
                                         "# HELP node_network_up up\n"
                                         "# TYPE node_network_up gauge\n"
                                         "node_network_up{device=\"eth1\"} 1\n"
                                         "node_network_up{device=\"eth2\"} 0\n"
                                         "# TYPE node_network_carrier_changes_total counter\n"
                                         "node_network_carrier_changes_total{device=\"eth1\"} 12\n"
                                         "node_network_carrier_changes_total{device=\"eth2\"} 3\n"
                                         "node_network_receive_bytes_total{device=\"eth1\"} 1e9\n"
                                         "node_network_transmit_packets_total{device=\"eth1\"} 77\n"
                                         "node_network_receive_drop_total{device=\"eth2\"} 5\n",
                                         kT0, out, &st);
  ASSERT_TRUE(s.ok()) << s.error();
  ASSERT_EQ(out.size(), 2u);
  const PortSample* e1 = find(out, r_eth1);
  const PortSample* e2 = find(out, r_eth2);
  ASSERT_NE(e1, nullptr);
  ASSERT_NE(e2, nullptr);
  EXPECT_EQ(e1->time, kT0);
  EXPECT_EQ(e1->get(Counter::oper_up), 1.0);
  EXPECT_EQ(e1->get(Counter::carrier_changes), 12.0);
  EXPECT_EQ(e1->get(Counter::rx_bytes), 1e9);
  EXPECT_EQ(e1->get(Counter::tx_packets), 77.0);
  EXPECT_FALSE(e1->has(Counter::rx_discards));
  EXPECT_EQ(e1->present, bit(Counter::oper_up) | bit(Counter::carrier_changes) | bit(Counter::rx_bytes) |
                             bit(Counter::tx_packets));
  EXPECT_TRUE(e2->has(Counter::oper_up));
  EXPECT_EQ(e2->get(Counter::oper_up), 0.0);
  EXPECT_EQ(e2->get(Counter::carrier_changes), 3.0);
  EXPECT_EQ(e2->get(Counter::rx_discards), 5.0);
  EXPECT_EQ(st.samples, 7u);
  EXPECT_EQ(st.mapped, 7u);
  EXPECT_EQ(st.unmapped, 0u);
  EXPECT_EQ(st.unknown_port, 0u);
}

TEST_F(ScrapeMapperTest, PortNamesResolveOnTheScrapedDevice) {
  ScrapeMapper mapper(topo, map);
  std::vector<PortSample> out;
  ASSERT_TRUE(mapper.map_prometheus(ctsw1, "node_network_up{device=\"eth1\"} 1\n", kT0, out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].port, c_eth1);
  EXPECT_NE(out[0].port, r_eth1);
}

TEST_F(ScrapeMapperTest, PerLaneOpticsAggregateMinAndMax) {
  ScrapeMapper mapper(topo, map);
  std::vector<PortSample> out;
  ASSERT_TRUE(mapper
                  .map_prometheus(rtsw1,
                                  "optics_rx_power_dbm{interface=\"eth1\",lane=\"1\"} -2.5\n"
                                  "optics_rx_power_dbm{interface=\"eth1\",lane=\"2\"} -7.25\n"
                                  "optics_rx_power_dbm{interface=\"eth1\",lane=\"3\"} -3\n"
                                  "optics_tx_power_dbm{interface=\"eth1\",lane=\"1\"} 1\n"
                                  "optics_tx_power_dbm{interface=\"eth1\",lane=\"2\"} 0.5\n"
                                  "optics_temperature_celsius{interface=\"eth1\",lane=\"1\"} 40\n"
                                  "optics_temperature_celsius{interface=\"eth1\",lane=\"2\"} 55\n"
                                  "optics_temperature_celsius{interface=\"eth1\",lane=\"3\"} 41\n"
                                  "optics_laser_bias_milliamps{interface=\"eth1\",lane=\"1\"} 8\n"
                                  "optics_laser_bias_milliamps{interface=\"eth1\",lane=\"2\"} 6\n",
                                  kT0, out)
                  .ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].get(Counter::rx_power_dbm), -7.25);
  EXPECT_EQ(out[0].get(Counter::tx_power_dbm), 0.5);
  EXPECT_EQ(out[0].get(Counter::temperature_c), 55.0);
  EXPECT_EQ(out[0].get(Counter::laser_bias_ma), 8.0);
}

TEST_F(ScrapeMapperTest, AggregateLastAndSum) {
  const CounterMap m = CounterMap::parse(R"({"prometheus": [
      {"metric": "a", "counter": "rx_errors", "port_label": "if", "aggregate": "sum"},
      {"metric": "b", "counter": "tx_errors", "port_label": "if"}]})",
                                         "m.json");
  ScrapeMapper mapper(topo, m);
  std::vector<PortSample> out;
  ASSERT_TRUE(mapper
                  .map_prometheus(rtsw1,
                                  "a{if=\"eth1\",q=\"0\"} 3\na{if=\"eth1\",q=\"1\"} 4\na{if=\"eth1\",q=\"2\"} 5\n"
                                  "b{if=\"eth1\",q=\"0\"} 9\nb{if=\"eth1\",q=\"1\"} 2\n",
                                  kT0, out)
                  .ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].get(Counter::rx_errors), 12.0);
  EXPECT_EQ(out[0].get(Counter::tx_errors), 2.0);  // last wins
}

TEST_F(ScrapeMapperTest, MatchLabelsSelectTheRule) {
  const CounterMap m = CounterMap::parse(R"({"prometheus": [
      {"metric": "hw", "counter": "rx_crc_errors", "port_label": "port", "match": {"type": "crc"}},
      {"metric": "hw", "counter": "rx_symbol_errors", "port_label": "port", "match": {"type": "symbol", "dir": "rx"}}
    ]})",
                                         "m.json");
  ScrapeMapper mapper(topo, m);
  std::vector<PortSample> out;
  MapStats st;
  ASSERT_TRUE(mapper
                  .map_prometheus(rtsw1,
                                  "hw{port=\"eth1\",type=\"crc\"} 5\n"
                                  "hw{port=\"eth1\",type=\"symbol\",dir=\"rx\"} 9\n"
                                  "hw{port=\"eth1\",type=\"symbol\",dir=\"tx\"} 100\n"  // dir does not match
                                  "hw{port=\"eth1\",type=\"symbol\"} 101\n"             // dir missing
                                  "hw{port=\"eth1\",type=\"other\"} 1\n",
                                  kT0, out, &st)
                  .ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].get(Counter::rx_crc_errors), 5.0);
  EXPECT_EQ(out[0].get(Counter::rx_symbol_errors), 9.0);
  EXPECT_EQ(out[0].present, bit(Counter::rx_crc_errors) | bit(Counter::rx_symbol_errors));
  EXPECT_EQ(st.samples, 5u);
  EXPECT_EQ(st.mapped, 2u);
  EXPECT_EQ(st.unmapped, 0u);  // the metric is known; no rule matched these samples
}

TEST_F(ScrapeMapperTest, UnknownPortsAndUnmappedMetricsAreCountedAndIgnored) {
  ScrapeMapper mapper(topo, map);
  std::vector<PortSample> out;
  MapStats st;
  ASSERT_TRUE(mapper
                  .map_prometheus(rtsw1,
                                  "node_network_up{device=\"lo\"} 1\n"          // no such port
                                  "node_network_up{device=\"eth9\"} 1\n"        // no such port
                                  "node_network_up{interface=\"eth1\"} 1\n"     // no port label
                                  "go_goroutines 12\n"                          // unmapped
                                  "process_cpu_seconds_total 3.5\n"             // unmapped
                                  "# TYPE rpc_seconds histogram\n"
                                  "rpc_seconds_bucket{le=\"1\"} 3\n"            // skipped
                                  "rpc_seconds_sum 0.5\n"                       // skipped
                                  "rpc_seconds_count 3\n"                       // skipped
                                  "node_network_up{device=\"eth2\"} 1\n",       // mapped
                                  kT0, out, &st)
                  .ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].port, r_eth2);
  EXPECT_EQ(st.samples, 9u);
  EXPECT_EQ(st.mapped, 1u);
  EXPECT_EQ(st.unmapped, 2u);
  EXPECT_EQ(st.unknown_port, 3u);
  EXPECT_EQ(st.skipped, 3u);
}

TEST_F(ScrapeMapperTest, HistogramNamedLikeAMappedMetricIsSkipped) {
  const CounterMap m = CounterMap::parse(R"({"prometheus": [
      {"metric": "lat_bucket", "counter": "rx_errors", "port_label": "if"}]})",
                                         "m.json");
  ScrapeMapper mapper(topo, m);
  std::vector<PortSample> out;
  MapStats st;
  ASSERT_TRUE(
      mapper.map_prometheus(rtsw1, "# TYPE lat histogram\nlat_bucket{if=\"eth1\",le=\"1\"} 3\n", kT0, out, &st).ok());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(st.skipped, 1u);
  EXPECT_EQ(st.mapped, 0u);
}

TEST_F(ScrapeMapperTest, StatsAccumulateOverScrapes) {
  ScrapeMapper mapper(topo, map);
  std::vector<PortSample> out;
  MapStats st;
  ASSERT_TRUE(mapper.map_prometheus(rtsw1, "node_network_up{device=\"eth1\"} 1\nx 1\n", kT0, out, &st).ok());
  ASSERT_TRUE(mapper.map_prometheus(ctsw1, "node_network_up{device=\"eth1\"} 1\n", kT0, out, &st).ok());
  EXPECT_EQ(st.samples, 3u);
  EXPECT_EQ(st.mapped, 2u);
  EXPECT_EQ(st.unmapped, 1u);
  ASSERT_EQ(out.size(), 2u);  // appended, not replaced
  EXPECT_EQ(out[0].port, r_eth1);
  EXPECT_EQ(out[1].port, c_eth1);
}

TEST_F(ScrapeMapperTest, MalformedPayloadAppendsNothingAndReturnsTheError) {
  ScrapeMapper mapper(topo, map);
  std::vector<PortSample> out(1);
  out[0].port = c_eth1;
  out[0].set(Counter::rx_packets, 42);
  MapStats st;
  const Status s = mapper.map_prometheus(rtsw1,
                                         "node_network_up{device=\"eth1\"} 1\n"
                                         "node_network_up{device=\"eth2\"} 1\n"
                                         "node_network_carrier_changes_total{device=\"eth1\" 4\n",
                                         kT0, out, &st);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), "line 3: expected ',' or '}' after the value of label device");
  ASSERT_EQ(out.size(), 1u);  // what was there before is kept, nothing added
  EXPECT_EQ(out[0].port, c_eth1);
  EXPECT_EQ(out[0].get(Counter::rx_packets), 42.0);
  EXPECT_EQ(st.samples, 0u);
  EXPECT_EQ(st.mapped, 0u);

  // The mapper is usable afterwards: the failed scrape left no stale state.
  const Status again = mapper.map_prometheus(rtsw1,
                                             "node_network_carrier_changes_total{device=\"eth2\"} 7\n"
                                             "node_network_up{device=\"eth1\"} 0\n",
                                             kT0 + std::chrono::seconds(10), out, &st);
  ASSERT_TRUE(again.ok()) << again.error();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1].port, r_eth2);
  EXPECT_EQ(out[1].present, bit(Counter::carrier_changes));
  EXPECT_EQ(out[1].get(Counter::carrier_changes), 7.0);
  EXPECT_EQ(out[2].port, r_eth1);
  EXPECT_EQ(out[2].present, bit(Counter::oper_up));
  EXPECT_EQ(out[2].get(Counter::oper_up), 0.0);
  EXPECT_EQ(out[2].time, kT0 + std::chrono::seconds(10));
}

TEST_F(ScrapeMapperTest, EachScrapeStartsFreshPortSamples) {
  ScrapeMapper mapper(topo, map);
  std::vector<PortSample> first, second;
  ASSERT_TRUE(mapper.map_prometheus(rtsw1, "node_network_up{device=\"eth1\"} 1\n", kT0, first).ok());
  ASSERT_TRUE(mapper
                  .map_prometheus(rtsw1, "node_network_receive_packets_total{device=\"eth1\"} 5\n",
                                  kT0 + std::chrono::seconds(1), second)
                  .ok());
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].present, bit(Counter::rx_packets));
  EXPECT_FALSE(first[0].has(Counter::rx_packets));
}

TEST_F(ScrapeMapperTest, MwToDbmTransform) {
  const CounterMap m = CounterMap::parse(R"({"prometheus": [
      {"metric": "rx_mw", "counter": "rx_power_dbm", "port_label": "if", "transform": "mw_to_dbm"}]})",
                                         "m.json");
  ScrapeMapper mapper(topo, m);
  const auto dbm = [&](const std::string& mw) {
    std::vector<PortSample> out;
    const Status s = mapper.map_prometheus(rtsw1, "rx_mw{if=\"eth1\"} " + mw + "\n", kT0, out);
    EXPECT_TRUE(s.ok());
    EXPECT_EQ(out.size(), 1u);
    return out.empty() ? std::nan("") : out[0].get(Counter::rx_power_dbm);
  };
  EXPECT_NEAR(dbm("1"), 0.0, 1e-12);
  EXPECT_NEAR(dbm("10"), 10.0, 1e-12);
  EXPECT_NEAR(dbm("0.5"), -3.0103, 1e-4);
  EXPECT_NEAR(dbm("0.001"), -30.0, 1e-9);
  EXPECT_EQ(dbm("0"), -40.0);  // no light
  EXPECT_EQ(dbm("-1"), -40.0);
  EXPECT_NEAR(dbm("0.0001"), -40.0, 1e-9);  // continuous at the cut-off
}

TEST_F(ScrapeMapperTest, IfOperStatusTransform) {
  const CounterMap m = CounterMap::parse(R"({"prometheus": [
      {"metric": "ifOperStatus", "counter": "oper_up", "port_label": "ifName", "transform": "ifoper_status"}]})",
                                         "m.json");
  ScrapeMapper mapper(topo, m);
  std::vector<PortSample> out;
  // IF-MIB: 1 up, 2 down, 3 testing, 5 dormant, 7 lowerLayerDown.
  for (const char* v : {"1", "2", "3", "5", "7"}) {
    ASSERT_TRUE(mapper.map_prometheus(rtsw1, std::string("ifOperStatus{ifName=\"eth1\"} ") + v + "\n", kT0, out).ok());
  }
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].get(Counter::oper_up), 1.0);
  for (size_t i = 1; i < out.size(); ++i) EXPECT_EQ(out[i].get(Counter::oper_up), 0.0) << i;
}

TEST_F(ScrapeMapperTest, UpTransformAndScale) {
  const CounterMap m = CounterMap::parse(R"({"prometheus": [
      {"metric": "up_gauge", "counter": "oper_up", "port_label": "if", "transform": "up"},
      {"metric": "rx_bits", "counter": "rx_bytes", "port_label": "if", "scale": 0.125}]})",
                                         "m.json");
  ScrapeMapper mapper(topo, m);
  std::vector<PortSample> out;
  ASSERT_TRUE(mapper.map_prometheus(rtsw1, "up_gauge{if=\"eth1\"} 5\nrx_bits{if=\"eth1\"} 8000\n"
                                           "up_gauge{if=\"eth2\"} 0\n",
                                    kT0, out)
                  .ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].get(Counter::oper_up), 1.0);
  EXPECT_EQ(out[0].get(Counter::rx_bytes), 1000.0);
  EXPECT_EQ(out[1].get(Counter::oper_up), 0.0);
}

TEST_F(ScrapeMapperTest, EmptyPayloadAddsNothing) {
  ScrapeMapper mapper(topo, map);
  std::vector<PortSample> out;
  MapStats st;
  ASSERT_TRUE(mapper.map_prometheus(rtsw1, "", kT0, out, &st).ok());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(st.samples, 0u);
}

}  // namespace
}  // namespace medic::telemetry
