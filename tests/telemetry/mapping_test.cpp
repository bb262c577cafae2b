#include "telemetry/mapping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fabric/loader.h"
#include "tests/support/epoch.h"
#include "tests/support/testing.h"

namespace medic::telemetry {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

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
  EXPECT_THAT(map_error("{\"prometheus\": [}"), StartsWith("map.json: line 1, column 17: invalid JSON: syntax error while parsing value - unexpected '}'"));
}

TEST(CounterMapErrors, FileThatDoesNotExist) {
  testing::TempDir dir;
  const std::string path = dir.file("nope.json");
  try {
    CounterMap::load_file(path);
    FAIL();
  } catch (const CounterMapError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": cannot open: No such file or directory");
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

// ---------------------------------------------------------------------------------------
// OpenConfig through the mapper

TEST_F(ScrapeMapperTest, OpenConfigInterfacesAndTransceivers) {
  ScrapeMapper mapper(topo, map);
  std::vector<PortSample> out;
  MapStats st;
  const Status s = mapper.map_openconfig(ctsw1, R"({
    "openconfig-platform:components": {"component": [
      {"name": "eth1-xcvr", "state": {"temperature": {"instant": "41.5"}},
       "openconfig-platform-transceiver:transceiver": {"physical-channels": {"channel": [
         {"index": 0, "state": {"input-power": {"instant": "-2.5"}, "output-power": {"instant": "1.25"}}},
         {"index": 1, "state": {"input-power": {"instant": "-6.75"}, "output-power": {"instant": "0.5"}}}]}}}]},
    "openconfig-interfaces:interfaces": {"interface": [
      {"name": "eth1", "state": {"oper-status": "UP", "openconfig-platform-transceiver:transceiver": "eth1-xcvr",
                                 "counters": {"in-pkts": "9007199254740993", "carrier-transitions": "12"}}},
      {"name": "eth2", "state": {"oper-status": "DOWN", "counters": {"carrier-transitions": 3}}}]}})",
                                         kT0, out, &st);
  ASSERT_TRUE(s.ok()) << s.error();
  ASSERT_EQ(out.size(), 2u);
  const PortSample* e1 = find(out, c_eth1);
  const PortSample* e2 = find(out, *topo.find_port("ctsw1", "eth2"));
  ASSERT_NE(e1, nullptr);
  ASSERT_NE(e2, nullptr);
  EXPECT_EQ(e1->time, kT0);
  EXPECT_EQ(e1->get(Counter::oper_up), 1.0);
  EXPECT_EQ(e1->get(Counter::carrier_changes), 12.0);
  EXPECT_EQ(e1->get(Counter::rx_packets), 9007199254740992.0);  // 2^53 + 1 rounds to the nearest double
  EXPECT_EQ(e1->get(Counter::rx_power_dbm), -6.75);
  EXPECT_EQ(e1->get(Counter::tx_power_dbm), 0.5);
  EXPECT_EQ(e1->get(Counter::temperature_c), 41.5);
  EXPECT_EQ(e1->present, bit(Counter::oper_up) | bit(Counter::carrier_changes) | bit(Counter::rx_packets) |
                             bit(Counter::rx_power_dbm) | bit(Counter::tx_power_dbm) | bit(Counter::temperature_c));
  EXPECT_TRUE(e2->has(Counter::oper_up));
  EXPECT_EQ(e2->get(Counter::oper_up), 0.0);
  EXPECT_EQ(e2->get(Counter::carrier_changes), 3.0);
  EXPECT_EQ(st.samples, 16u);  // every leaf, names, lane indexes and the transceiver reference included
  EXPECT_EQ(st.mapped, 10u);
  EXPECT_EQ(st.unmapped, 6u);
  EXPECT_EQ(st.unknown_port, 0u);
  EXPECT_EQ(st.unparsable, 0u);
}

TEST_F(ScrapeMapperTest, OpenConfigOperStatusOnlyUpIsUp) {
  ScrapeMapper mapper(topo, map);
  for (const char* status : {"DOWN", "LOWER_LAYER_DOWN", "TESTING", "DORMANT", "NOT_PRESENT", "UNKNOWN", "up", "1"}) {
    std::vector<PortSample> out;
    MapStats st;
    ASSERT_TRUE(mapper
                    .map_openconfig(ctsw1,
                                    std::string(R"({"openconfig-interfaces:interfaces": {"interface": [{"name": "eth1",
                                      "state": {"oper-status": ")") +
                                        status + "\"}}]}}",
                                    kT0, out, &st)
                    .ok());
    ASSERT_EQ(out.size(), 1u) << status;
    EXPECT_EQ(out[0].get(Counter::oper_up), 0.0) << status;
    EXPECT_EQ(st.unparsable, 0u) << status;  // an enumeration is never "unparsable"
  }
}

// A counter of the wrong type is a broken answer: the whole payload is refused with the
// leaf's path and what it held (the device counts as silent for that poll), never mapped.
TEST_F(ScrapeMapperTest, OpenConfigCountersOfTheWrongTypeRefuseThePayload) {
  const std::pair<std::string, std::string> cases[] = {
      {R"("in-pkts": "abc")", R"(expected a number, got "abc")"},
      {R"("in-pkts": "n/a")", R"(expected a number, got "n/a")"},
      {R"("in-pkts": "")", R"(expected a number, got "")"},
      {R"("in-pkts": "12 ")", R"(expected a number, got "12 ")"},
      {R"("in-pkts": "0x10")", R"(expected a number, got "0x10")"},
      {R"("in-pkts": null)", "expected a number, got null"},
      {R"("in-pkts": [])", "expected a number, got an array"},
      {R"("in-pkts": true)", "expected a number, got a boolean"},
      {R"("in-pkts": -5)", "expected a counter (a number >= 0), got a number"},
      {R"("carrier-transitions": "-3")", R"(expected a counter (a number >= 0), got "-3")"},
      {R"("in-pkts": "\u00ff\u0001")", "expected a number, got \"\xc3\xbf\\x01\""},  // UTF-8 kept, control bytes escaped
  };
  for (const auto& [leaf, why] : cases) {
    ScrapeMapper mapper(topo, map);
    std::vector<PortSample> out;
    const std::string body = R"({"openconfig-interfaces:interfaces": {"interface": [{"name": "eth1",
        "state": {"oper-status": "UP", "counters": {"in-discards": "7", )" + leaf + "}}}]}}";
    const Status st = mapper.map_openconfig(rtsw1, body, kT0, out);
    ASSERT_FALSE(st.ok()) << leaf;
    const std::string path = leaf.find("carrier") != std::string::npos ? "carrier-transitions" : "in-pkts";
    EXPECT_EQ(st.error(), "interfaces/interface/state/counters/" + path + " of \"eth1\": " + why) << leaf;
    EXPECT_TRUE(out.empty()) << leaf << ": nothing of a refused payload is kept";
  }
  // Gauges may be negative; an oper-status must be its string.
  ScrapeMapper mapper(topo, map);
  std::vector<PortSample> out;
  const Status bad_oper = mapper.map_openconfig(
      rtsw1, R"({"openconfig-interfaces:interfaces": {"interface": [{"name": "eth1", "state": {"oper-status": 1}}]}})", kT0,
      out);
  ASSERT_FALSE(bad_oper.ok());
  EXPECT_EQ(bad_oper.error(),
            "interfaces/interface/state/oper-status of \"eth1\": expected an oper-status string (UP, DOWN, ...), got a number");
}

TEST_F(ScrapeMapperTest, OpenConfigUnknownPortsAreCounted) {
  ScrapeMapper mapper(topo, map);
  std::vector<PortSample> out;
  MapStats st;
  ASSERT_TRUE(mapper
                  .map_openconfig(rtsw1, R"({
                    "openconfig-platform:components": {"component": [
                      {"name": "TempSensor-ASIC", "state": {"temperature": {"instant": "61.5"}}},
                      {"name": "xcvr-spare", "openconfig-platform-transceiver:transceiver": {"state": {"fec-corrected-bits": "1"}}}]},
                    "openconfig-interfaces:interfaces": {"interface": [
                      {"name": "Management1", "state": {"oper-status": "UP", "counters": {"in-pkts": "5"}}},
                      {"name": "eth2", "state": {"oper-status": "UP"}}]}})",
                                  kT0, out, &st)
                  .ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].port, r_eth2);
  EXPECT_EQ(st.unknown_port, 4u);  // temperature, fec bits, Management1's two counters
  EXPECT_EQ(st.mapped, 1u);
}

TEST_F(ScrapeMapperTest, OpenConfigResultDoesNotDependOnKeyOrder) {
  // RFC 7951 objects are unordered: the two leaves that both count FCS errors must give the
  // same canonical value whichever the gateway writes first.
  const std::string fcs_first = R"({"openconfig-interfaces:interfaces": {"interface": [{"name": "eth1",
      "state": {"counters": {"in-fcs-errors": "17"}},
      "openconfig-if-ethernet:ethernet": {"state": {"counters": {"in-crc-errors": "19"}}}}]}})";
  const std::string crc_first = R"({"openconfig-interfaces:interfaces": {"interface": [{"name": "eth1",
      "openconfig-if-ethernet:ethernet": {"state": {"counters": {"in-crc-errors": "19"}}},
      "state": {"counters": {"in-fcs-errors": "17"}}}]}})";
  ScrapeMapper mapper(topo, map);
  std::vector<PortSample> a, b;
  ASSERT_TRUE(mapper.map_openconfig(rtsw1, fcs_first, kT0, a).ok());
  ASSERT_TRUE(mapper.map_openconfig(rtsw1, crc_first, kT0, b).ok());
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].get(Counter::rx_crc_errors), 19.0);
  EXPECT_EQ(b[0].get(Counter::rx_crc_errors), 19.0);
}

TEST_F(ScrapeMapperTest, MalformedOpenConfigAppendsNothingAndReturnsTheError) {
  ScrapeMapper mapper(topo, map);
  std::vector<PortSample> out(1);
  out[0].port = c_eth1;
  MapStats st;
  // The first interface is complete (and streamed to the mapper) before the error.
  const Status s = mapper.map_openconfig(rtsw1, R"({"openconfig-interfaces:interfaces": {"interface": [
      {"name": "eth1", "state": {"oper-status": "UP"}}, {"name": "eth2", "state": {"oper-status": "UP"}]}})",
                                         kT0, out, &st);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error(), StartsWith("byte "));
  EXPECT_THAT(s.error(), HasSubstr("syntax error"));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].port, c_eth1);
  EXPECT_EQ(st.samples, 0u);
  EXPECT_EQ(st.mapped, 0u);
  // Nothing stale is left behind for the next scrape.
  ASSERT_TRUE(mapper
                  .map_openconfig(rtsw1, R"({"openconfig-interfaces:interfaces": {"interface": [
                    {"name": "eth1", "state": {"counters": {"in-pkts": "4"}}}]}})",
                                  kT0, out, &st)
                  .ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].port, r_eth1);
  EXPECT_EQ(out[1].present, bit(Counter::rx_packets));
}

// ---------------------------------------------------------------------------------------
// Format detection and dispatch

TEST(DetectFormat, ByContentType) {
  EXPECT_EQ(detect_format("application/json", "# HELP x y\n"), PayloadFormat::openconfig);
  EXPECT_EQ(detect_format("application/json; charset=utf-8", ""), PayloadFormat::openconfig);
  EXPECT_EQ(detect_format("application/yang-data+json", "x 1\n"), PayloadFormat::openconfig);
  EXPECT_EQ(detect_format("text/plain; version=0.0.4; charset=utf-8", "# HELP up 1\nup 1\n"), PayloadFormat::prometheus);
  EXPECT_EQ(detect_format("application/openmetrics-text; version=1.0.0", "up 1\n"), PayloadFormat::prometheus);
}

TEST(DetectFormat, ByBodyWhenTheContentTypeSaysNothing) {
  EXPECT_EQ(detect_format("", "{\"openconfig-interfaces:interfaces\": {}}"), PayloadFormat::openconfig);
  EXPECT_EQ(detect_format("", " \r\n\t {}"), PayloadFormat::openconfig);
  EXPECT_EQ(detect_format("", "[{\"update\": []}]"), PayloadFormat::openconfig);
  EXPECT_EQ(detect_format("text/plain", "\n{}"), PayloadFormat::openconfig);
  EXPECT_EQ(detect_format("", "# TYPE up gauge\nup 1\n"), PayloadFormat::prometheus);
  EXPECT_EQ(detect_format("", "  node_network_up{device=\"eth1\"} 1\n"), PayloadFormat::prometheus);
  EXPECT_EQ(detect_format("", ""), PayloadFormat::prometheus);
  EXPECT_EQ(detect_format("", " \n "), PayloadFormat::prometheus);
}

TEST_F(ScrapeMapperTest, MapDispatchesOnTheFormat) {
  const std::string oc = R"({"openconfig-interfaces:interfaces": {"interface": [{"name": "eth1", "state": {"oper-status": "UP"}}]}})";
  const std::string prom = "node_network_up{device=\"eth2\"} 1\n";
  ScrapeMapper mapper(topo, map);
  std::vector<PortSample> out;
  ASSERT_TRUE(mapper.map(rtsw1, PayloadFormat::openconfig, oc, kT0, out).ok());
  ASSERT_TRUE(mapper.map(rtsw1, PayloadFormat::prometheus, prom, kT0, out).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].port, r_eth1);
  EXPECT_EQ(out[1].port, r_eth2);
  // The wrong parser for the body fails with that parser's error.
  const Status as_prom = mapper.map(rtsw1, PayloadFormat::prometheus, oc, kT0, out);
  ASSERT_FALSE(as_prom.ok());
  EXPECT_THAT(as_prom.error(), StartsWith("line 1: "));
  const Status as_oc = mapper.map(rtsw1, PayloadFormat::openconfig, prom, kT0, out);
  ASSERT_FALSE(as_oc.ok());
  EXPECT_THAT(as_oc.error(), StartsWith("byte "));
  EXPECT_EQ(out.size(), 2u);
  // detect_format picks the right one for each body.
  ASSERT_TRUE(mapper.map(ctsw1, detect_format("", oc), oc, kT0, out).ok());
  ASSERT_TRUE(mapper.map(ctsw1, detect_format("", prom), prom, kT0, out).ok());
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[2].port, c_eth1);
  EXPECT_EQ(out[3].port, *topo.find_port("ctsw1", "eth2"));
}

// ---------------------------------------------------------------------------------------
// Real-looking payloads (tests/fixtures/telemetry/) with the shipped counter map

// host1 (node_exporter 1.5, mlx5), host2 (an older node_exporter), rtsw1 (snmp_exporter
// if_mib), ctsw1 (gNMI). Ports the payloads name but the topology lacks (lo, eno1, mgmt0,
// Management1, ...) are unknown ports.
fabric::Topology fixture_topology() {
  return fabric::parse_topology(R"({
    "switches": [
      {"name": "rtsw1", "role": "rtsw", "telemetry": "http://snmp-exporter:9116/snmp?module=if_mib&target=rtsw1",
       "driver": {"kind": "dryrun"}},
      {"name": "ctsw1", "role": "ctsw", "telemetry": "http://gnmi-gw:8080/ctsw1", "driver": {"kind": "dryrun"}}
    ],
    "hosts": [
      {"name": "host1", "nics": ["enp12s0np0", "enp13s0np0"], "telemetry": "http://host1:9100/metrics"},
      {"name": "host2", "nics": ["eth2", "eth3"], "telemetry": "http://host2:9100/metrics"}
    ],
    "links": [
      {"a": "host1:enp12s0np0", "b": "rtsw1:Eth1/1", "speed_gbps": 400},
      {"a": "host1:enp13s0np0", "b": "rtsw1:Eth1/2", "speed_gbps": 400},
      {"a": "host2:eth2", "b": "rtsw1:Eth1/3", "speed_gbps": 400},
      {"a": "host2:eth3", "b": "rtsw1:Eth1/4", "speed_gbps": 400},
      {"a": "rtsw1:Eth1/49", "b": "ctsw1:Ethernet1", "speed_gbps": 400},
      {"a": "rtsw1:Eth1/50", "b": "ctsw1:Ethernet2", "speed_gbps": 400},
      {"a": "rtsw1:Eth1/51", "b": "ctsw1:Ethernet3", "speed_gbps": 400}
    ]
  })",
                                "fixture.json");
}

class FixtureTest : public ::testing::Test {
 protected:
  std::string fixture(const std::string& name) { return testing::read_file(testing::fixture_path("telemetry/" + name)); }
  const PortSample& sample(const std::vector<PortSample>& out, std::string_view device, std::string_view port) {
    const auto p = topo.find_port(device, port);
    EXPECT_TRUE(p.has_value()) << device << ":" << port;
    for (const auto& s : out) {
      if (p && s.port == *p) return s;
    }
    ADD_FAILURE() << "no sample for " << device << ":" << port;
    static const PortSample none;
    return none;
  }

  fabric::Topology topo = fixture_topology();
  CounterMap map = CounterMap::load_file(counter_map_path());
  ScrapeMapper mapper{topo, map};
};

TEST_F(FixtureTest, NodeExporter15WithEthtoolOnMlx5) {
  std::vector<PortSample> out;
  MapStats st;
  const Status s = mapper.map_prometheus(*topo.find_device("host1"), fixture("node_exporter_1.5_mlx5_host.prom"),
                                         kT0, out, &st);
  ASSERT_TRUE(s.ok()) << s.error();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(st.samples, 90u);
  EXPECT_EQ(st.skipped, 14u);       // the go_gc_duration_seconds summary and the histogram
  EXPECT_EQ(st.unknown_port, 20u);  // eno1 and lo in ten mapped node_network families
  EXPECT_EQ(st.unmapped, 12u);
  EXPECT_EQ(st.mapped, 44u);        // one per mapped sample of a known port

  const PortSample& a = sample(out, "host1", "enp12s0np0");
  EXPECT_EQ(a.time, kT0);
  EXPECT_EQ(a.get(Counter::oper_up), 1.0);
  EXPECT_EQ(a.get(Counter::carrier_changes), 8.0);
  EXPECT_EQ(a.get(Counter::link_down_events), 3.0);
  EXPECT_EQ(a.get(Counter::rx_crc_errors), 17.0);
  EXPECT_EQ(a.get(Counter::rx_symbol_errors), 29.0);  // max of the PCS and the PHY symbol errors
  EXPECT_EQ(a.get(Counter::fec_corrected_bits), 918273.0);
  EXPECT_EQ(a.get(Counter::rx_pause), 0.0);
  EXPECT_EQ(a.get(Counter::tx_pause), 1.538e6);
  EXPECT_EQ(a.get(Counter::rx_errors), 17.0);
  EXPECT_EQ(a.get(Counter::tx_errors), 0.0);
  EXPECT_EQ(a.get(Counter::tx_discards), 0.0);
  // Where an ethtool _phy counter and a node_network one map to the same canonical counter,
  // the larger wins (aggregate "max"): on a RoCE NIC the kernel's counters leave out RDMA
  // traffic, and dividing errors by them would overstate corruption. Independent of order.
  EXPECT_EQ(a.get(Counter::rx_packets), 2.09876543211e11);
  EXPECT_EQ(a.get(Counter::tx_packets), 2.08765432109e11);
  EXPECT_EQ(a.get(Counter::rx_bytes), 8.81234567891234e14);
  EXPECT_EQ(a.get(Counter::tx_bytes), 8.7911223344556e14);
  EXPECT_EQ(a.get(Counter::rx_discards), 412.0);
  EXPECT_EQ(a.present, bit(Counter::oper_up) | bit(Counter::carrier_changes) | bit(Counter::link_down_events) |
                           bit(Counter::rx_packets) | bit(Counter::tx_packets) | bit(Counter::rx_bytes) |
                           bit(Counter::tx_bytes) | bit(Counter::rx_errors) | bit(Counter::tx_errors) |
                           bit(Counter::rx_discards) | bit(Counter::tx_discards) | bit(Counter::rx_crc_errors) |
                           bit(Counter::rx_symbol_errors) | bit(Counter::fec_corrected_bits) | bit(Counter::rx_pause) |
                           bit(Counter::tx_pause));

  const PortSample& b = sample(out, "host1", "enp13s0np0");
  EXPECT_TRUE(b.has(Counter::oper_up));
  EXPECT_EQ(b.get(Counter::oper_up), 0.0);
  EXPECT_EQ(b.get(Counter::carrier_changes), 2.0);
  EXPECT_EQ(b.get(Counter::link_down_events), 0.0);
  EXPECT_EQ(b.get(Counter::fec_corrected_bits), 1204.0);
  EXPECT_EQ(b.get(Counter::tx_pause), 96.0);
  EXPECT_EQ(b.present, a.present);
}

TEST_F(FixtureTest, OlderNodeExporterEthtoolSpelling) {
  std::vector<PortSample> out;
  MapStats st;
  const Status s = mapper.map_prometheus(*topo.find_device("host2"),
                                         fixture("node_exporter_1.3_mlx5_host_old_names.prom"), kT0, out, &st);
  ASSERT_TRUE(s.ok()) << s.error();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(st.samples, 19u);
  EXPECT_EQ(st.mapped, 18u);
  EXPECT_EQ(st.unmapped, 1u);
  EXPECT_EQ(st.unknown_port, 0u);
  const PortSample& e3 = sample(out, "host2", "eth3");
  EXPECT_EQ(e3.get(Counter::rx_crc_errors), 2381.0);
  EXPECT_EQ(e3.get(Counter::rx_symbol_errors), 911.0);
  EXPECT_EQ(e3.get(Counter::link_down_events), 6.0);
  EXPECT_EQ(e3.get(Counter::fec_corrected_bits), 7.0421e6);
  EXPECT_EQ(e3.get(Counter::rx_discards), 14.0);
  EXPECT_EQ(e3.get(Counter::carrier_changes), 14.0);
  EXPECT_EQ(e3.get(Counter::oper_up), 1.0);
  const PortSample& e2 = sample(out, "host2", "eth2");
  EXPECT_EQ(e2.get(Counter::rx_pause), 3.0);
  EXPECT_EQ(e2.get(Counter::tx_pause), 77.0);
  EXPECT_EQ(e2.get(Counter::fec_corrected_bits), 55.0);
  EXPECT_EQ(e2.present, bit(Counter::oper_up) | bit(Counter::carrier_changes) | bit(Counter::link_down_events) |
                            bit(Counter::rx_discards) | bit(Counter::rx_crc_errors) | bit(Counter::rx_symbol_errors) |
                            bit(Counter::fec_corrected_bits) | bit(Counter::rx_pause) | bit(Counter::tx_pause));
}

TEST_F(FixtureTest, SnmpExporterIfMib) {
  std::vector<PortSample> out;
  MapStats st;
  const Status s =
      mapper.map_prometheus(*topo.find_device("rtsw1"), fixture("snmp_exporter_if_mib_switch.prom"), kT0, out, &st);
  ASSERT_TRUE(s.ok()) << s.error();
  ASSERT_EQ(out.size(), 7u);  // Eth1/1-4 and Eth1/49-51; mgmt0 is not in the topology
  EXPECT_EQ(st.samples, 99u);
  EXPECT_EQ(st.mapped, 70u);
  EXPECT_EQ(st.unknown_port, 10u);
  EXPECT_EQ(st.unmapped, 19u);
  EXPECT_EQ(st.skipped, 0u);

  // Received packets are unicast + multicast + broadcast.
  const PortSample& p1 = sample(out, "rtsw1", "Eth1/1");
  EXPECT_EQ(p1.get(Counter::rx_packets), 81234567890123.0 + 1234567.0 + 89.0);
  EXPECT_EQ(p1.get(Counter::tx_packets), 8.0987654321e13);  // only unicast is exported here
  EXPECT_EQ(p1.get(Counter::rx_bytes), 9.8765432101234e16);
  EXPECT_EQ(p1.get(Counter::tx_bytes), 9.7531e16);
  EXPECT_EQ(p1.get(Counter::rx_errors), 12.0);
  EXPECT_EQ(p1.get(Counter::rx_discards), 3.0);
  EXPECT_EQ(p1.get(Counter::rx_crc_errors), 12.0);
  EXPECT_EQ(p1.get(Counter::oper_up), 1.0);
  EXPECT_EQ(p1.present, bit(Counter::oper_up) | bit(Counter::rx_packets) | bit(Counter::tx_packets) |
                            bit(Counter::rx_bytes) | bit(Counter::tx_bytes) | bit(Counter::rx_errors) |
                            bit(Counter::rx_discards) | bit(Counter::rx_crc_errors));
  EXPECT_EQ(sample(out, "rtsw1", "Eth1/4").get(Counter::rx_packets), 77000000005135.0);
  EXPECT_EQ(sample(out, "rtsw1", "Eth1/49").get(Counter::rx_packets), 150000000987000.0);
  EXPECT_EQ(sample(out, "rtsw1", "Eth1/49").get(Counter::rx_discards), 1104.0);
  EXPECT_EQ(sample(out, "rtsw1", "Eth1/50").get(Counter::rx_packets), 1.4999e14 + 990112.0 + 3.0);
  // ifOperStatus: 1 up; 2 down and 7 lowerLayerDown are down.
  EXPECT_EQ(sample(out, "rtsw1", "Eth1/2").get(Counter::oper_up), 0.0);
  EXPECT_EQ(sample(out, "rtsw1", "Eth1/3").get(Counter::oper_up), 0.0);
  EXPECT_TRUE(sample(out, "rtsw1", "Eth1/3").has(Counter::oper_up));
  EXPECT_EQ(sample(out, "rtsw1", "Eth1/51").get(Counter::oper_up), 1.0);
}

TEST_F(FixtureTest, GnmiJsonIetf) {
  std::vector<PortSample> out;
  MapStats st;
  const Status s =
      mapper.map_openconfig(*topo.find_device("ctsw1"), fixture("gnmi_get_json_ietf_switch.json"), kT0, out, &st);
  ASSERT_TRUE(s.ok()) << s.error();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(st.samples, 132u);
  EXPECT_EQ(st.mapped, 72u);
  EXPECT_EQ(st.unknown_port, 5u);  // TempSensor-ASIC, xcvr-spare (2), Management1 (2)
  EXPECT_EQ(st.unmapped, 55u);
  EXPECT_EQ(st.unparsable, 0u);

  const PortSample& e1 = sample(out, "ctsw1", "Ethernet1");
  EXPECT_EQ(e1.get(Counter::oper_up), 1.0);
  EXPECT_EQ(e1.get(Counter::carrier_changes), 4.0);
  EXPECT_EQ(e1.get(Counter::rx_packets), 149998877665544.0);  // not the subinterface's 99
  EXPECT_EQ(e1.get(Counter::tx_packets), 150001122334455.0);
  EXPECT_EQ(e1.get(Counter::rx_bytes), 190000011122233344.0);
  EXPECT_EQ(e1.get(Counter::tx_bytes), 190000099988877766.0);
  EXPECT_EQ(e1.get(Counter::rx_discards), 12.0);
  EXPECT_EQ(e1.get(Counter::rx_crc_errors), 0.0);
  EXPECT_EQ(e1.get(Counter::tx_pause), 311.0);
  EXPECT_EQ(e1.get(Counter::rx_power_dbm), -7.48);  // the weakest of four lanes
  EXPECT_EQ(e1.get(Counter::tx_power_dbm), 0.87);
  EXPECT_EQ(e1.get(Counter::laser_bias_ma), 9.85);
  EXPECT_EQ(e1.get(Counter::temperature_c), 44.8);
  EXPECT_EQ(e1.get(Counter::fec_corrected_bits), 918273645.0);
  EXPECT_EQ(e1.get(Counter::fec_uncorrectable_codewords), 4.0);
  EXPECT_FALSE(e1.has(Counter::link_down_events));
  EXPECT_FALSE(e1.has(Counter::pre_fec_ber));

  // No transceiver leaf: the component named like the interface.
  const PortSample& e2 = sample(out, "ctsw1", "Ethernet2");
  EXPECT_EQ(e2.get(Counter::oper_up), 0.0);
  EXPECT_EQ(e2.get(Counter::carrier_changes), 7.0);
  EXPECT_EQ(e2.get(Counter::rx_crc_errors), 19.0);  // max of in-crc-errors 19 and in-fcs-errors 17
  EXPECT_EQ(e2.get(Counter::rx_power_dbm), -3.20);
  EXPECT_EQ(e2.get(Counter::tx_power_dbm), 0.50);
  EXPECT_EQ(e2.get(Counter::laser_bias_ma), 6.60);
  EXPECT_EQ(e2.get(Counter::temperature_c), 39.25);
  EXPECT_EQ(e2.get(Counter::fec_uncorrectable_codewords), 0.0);

  // The transceiver (51.5) and a port component named like the interface (38.0).
  const PortSample& e3 = sample(out, "ctsw1", "Ethernet3");
  EXPECT_EQ(e3.get(Counter::oper_up), 0.0);  // LOWER_LAYER_DOWN
  EXPECT_EQ(e3.get(Counter::temperature_c), 51.5);
  EXPECT_EQ(e3.get(Counter::rx_power_dbm), -40.0);
  EXPECT_EQ(e3.get(Counter::tx_power_dbm), -1.35);
  EXPECT_EQ(e3.get(Counter::laser_bias_ma), 5.2);
  EXPECT_EQ(e3.get(Counter::fec_corrected_bits), 123.0);
  EXPECT_EQ(e3.get(Counter::rx_packets), 1000.0);
  EXPECT_EQ(e3.get(Counter::tx_packets), 2000.0);
}

TEST_F(FixtureTest, DetectFormatOnTheFixtures) {
  EXPECT_EQ(detect_format("", fixture("gnmi_get_json_ietf_switch.json")), PayloadFormat::openconfig);
  EXPECT_EQ(detect_format("", fixture("snmp_exporter_if_mib_switch.prom")), PayloadFormat::prometheus);
  EXPECT_EQ(detect_format("text/plain; version=0.0.4; charset=utf-8", fixture("node_exporter_1.5_mlx5_host.prom")),
            PayloadFormat::prometheus);
}

TEST(CounterMapErrors, OnlyVersionOneIsRead) {
  try {
    CounterMap::parse(R"({"version": 2, "prometheus": []})", "m.json");
    ADD_FAILURE() << "version 2 accepted";
  } catch (const CounterMapError& e) {
    EXPECT_STREQ(e.what(), "m.json: $.version: unsupported version 2 (this build reads version 1)");
  }
  EXPECT_NO_THROW(CounterMap::parse(R"({"version": 1, "prometheus": []})", "m.json"));
}

}  // namespace
}  // namespace medic::telemetry
