// A demo fabric (with the derived capacity groups), its capacity model and the readings
// capture takes, all under the test's control; and a field-by-field comparison of snapshots.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fabric/generator.h"
#include "remediation/capacity.h"
#include "remediation/capacity_config.h"
#include "snapshot/snapshot.h"

namespace medic::snapshot {

struct DemoFabric {
  fabric::Topology topo =
      remediation::with_derived_groups(fabric::generate_clos(*fabric::preset("demo")), remediation::CapacityConfig{});
  remediation::CapacityModel model{topo};
  std::vector<telemetry::PortSample> samples = std::vector<telemetry::PortSample>(topo.ports().size());
  std::vector<int> oper = std::vector<int>(topo.ports().size(), 1);
  std::vector<IncidentReading> incidents;
  Time now = from_unix_seconds(1'800'000'000);  // 2027-01-15T08:00:00Z

  FabricState state() const {
    return FabricState{topo,
                       model,
                       [this](fabric::PortId p) -> const telemetry::PortSample& { return samples[p]; },
                       [this](fabric::PortId p) { return oper[p]; },
                       incidents,
                       now};
  }
  fabric::PortId port(const std::string& device, const std::string& name) const {
    return *topo.find_port(device, name);
  }
  fabric::LinkId link(const std::string& ref) const { return *topo.find_link(ref); }
  fabric::DeviceId device(const std::string& name) const { return *topo.find_device(name); }
  std::string link_name(const std::string& ref) const { return topo.link(link(ref)).name; }

  // Readings of a healthy 400G port that has carried traffic for a while.
  void read(fabric::PortId p, Time at, double scale = 1.0) {
    using telemetry::Counter;
    telemetry::PortSample s;
    s.port = p;
    s.time = at;
    s.set(Counter::oper_up, 1);
    s.set(Counter::carrier_changes, 2);
    s.set(Counter::rx_packets, 4.2e11 * scale);
    s.set(Counter::tx_packets, 4.1e11 * scale);
    s.set(Counter::rx_bytes, 1.7e15 * scale);
    s.set(Counter::tx_bytes, 1.6e15 * scale);
    s.set(Counter::rx_errors, 0);
    s.set(Counter::rx_crc_errors, 0);
    s.set(Counter::rx_discards, 0);
    s.set(Counter::tx_discards, 0);
    s.set(Counter::rx_pause, 0);
    s.set(Counter::tx_pause, 0);
    s.set(Counter::fec_corrected_codewords, 123456 * scale);
    s.set(Counter::fec_uncorrectable_codewords, 0);
    s.set(Counter::rx_power_dbm, -1.93);
    s.set(Counter::tx_power_dbm, 0.41);
    s.set(Counter::temperature_c, 47.5);
    s.set(Counter::pre_fec_ber, 2.4e-9);
    samples[p] = s;
  }
};

inline void expect_same_port(const PortReading& a, const PortReading& b, const std::string& where) {
  EXPECT_EQ(a.device, b.device) << where;
  EXPECT_EQ(a.port, b.port) << where;
  EXPECT_EQ(a.link, b.link) << where;
  EXPECT_EQ(a.oper, b.oper) << where;
  EXPECT_EQ(a.drained, b.drained) << where;
  EXPECT_EQ(a.sampled_at, b.sampled_at) << where;
  EXPECT_EQ(a.present, b.present) << where;
  for (size_t c = 0; c < telemetry::kCounterCount; ++c) {
    const auto counter = static_cast<telemetry::Counter>(c);
    if (a.has(counter) && b.has(counter)) {
      EXPECT_EQ(a.get(counter), b.get(counter)) << where << " " << telemetry::to_string(counter);
    }
  }
}

// Every field of both, ids included.
inline void expect_same(const Snapshot& a, const Snapshot& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.scope, b.scope);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.incident_id, b.incident_id);
  EXPECT_EQ(a.action_id, b.action_id);
  EXPECT_EQ(a.taken_at, b.taken_at);
  EXPECT_EQ(a.link, b.link);
  ASSERT_EQ(a.ports.size(), b.ports.size());
  for (size_t i = 0; i < a.ports.size(); ++i) expect_same_port(a.ports[i], b.ports[i], "port " + std::to_string(i));
  ASSERT_EQ(a.groups.size(), b.groups.size());
  for (size_t i = 0; i < a.groups.size(); ++i) {
    const auto &x = a.groups[i], &y = b.groups[i];
    EXPECT_EQ(x.name, y.name) << i;
    EXPECT_EQ(x.kind, y.kind) << i;
    EXPECT_EQ(x.floor, y.floor) << i;
    EXPECT_EQ(x.capacity_gbps, y.capacity_gbps) << i;
    EXPECT_EQ(x.available_gbps, y.available_gbps) << i;
    EXPECT_EQ(x.links, y.links) << i;
    EXPECT_EQ(x.links_in_service, y.links_in_service) << i;
  }
  ASSERT_EQ(a.incidents.size(), b.incidents.size());
  for (size_t i = 0; i < a.incidents.size(); ++i) {
    const auto &x = a.incidents[i], &y = b.incidents[i];
    EXPECT_EQ(x.id, y.id) << i;
    EXPECT_EQ(x.incident_class, y.incident_class) << i;
    EXPECT_EQ(x.state, y.state) << i;
    EXPECT_EQ(x.severity, y.severity) << i;
    EXPECT_EQ(x.link, y.link) << i;
    EXPECT_EQ(x.device, y.device) << i;
  }
}

}  // namespace medic::snapshot
