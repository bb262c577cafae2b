// capture_link, capture_devices and capture_fabric on the demo fabric: exactly the ports of
// the devices concerned, the capacity groups touching them, the incidents on them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>

#include "tests/snapshot/snapshot_fixture.h"

namespace medic::snapshot {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAreArray;
using telemetry::Counter;

std::vector<std::string> port_names(const Snapshot& s) {
  std::vector<std::string> out;
  for (const auto& p : s.ports) out.push_back(p.device + ":" + p.port);
  return out;
}

std::vector<std::string> ports_of(const fabric::Topology& t, std::initializer_list<const char*> devices) {
  std::vector<std::string> out;
  for (const char* d : devices) {
    for (const auto& port : t.ports()) {
      if (t.device(port.device).name == d) out.push_back(std::string(d) + ":" + port.name);
    }
  }
  return out;
}

// Groups with a link that ends on one of the devices, found the long way.
std::vector<std::string> groups_touching(const fabric::Topology& t, std::initializer_list<const char*> devices) {
  std::vector<std::string> out;
  for (const auto& g : t.groups()) {
    bool touches = false;
    for (const fabric::LinkId l : g.links) {
      for (const fabric::PortId p : {t.link(l).a, t.link(l).b}) {
        for (const char* d : devices) touches = touches || t.device(t.port(p).device).name == d;
      }
    }
    if (touches) out.push_back(g.name);
  }
  return out;
}

std::vector<std::string> group_names(const Snapshot& s) {
  std::vector<std::string> out;
  for (const auto& g : s.groups) out.push_back(g.name);
  return out;
}

std::vector<int64_t> incident_ids(const Snapshot& s) {
  std::vector<int64_t> out;
  for (const auto& i : s.incidents) out.push_back(i.id);
  return out;
}

const PortReading& find(const Snapshot& s, const std::string& device, const std::string& port) {
  for (const auto& p : s.ports) {
    if (p.device == device && p.port == port) return p;
  }
  throw std::out_of_range(device + ":" + port + " not in the snapshot");
}

const GroupReading& group(const Snapshot& s, const std::string& name) {
  for (const auto& g : s.groups) {
    if (g.name == name) return g;
  }
  throw std::out_of_range(name + " not in the snapshot");
}

TEST(CaptureLink, TakesEveryPortOfBothDevicesAndNoOther) {
  DemoFabric f;
  const Snapshot s = capture_link(f.state(), f.link("rtsw0001:eth5"), std::string(kScopeIncident), "incident opened");
  // rtsw0001: 4 host ports and 4 uplinks; ctsw001: 4 ToR ports and 2 uplinks.
  EXPECT_EQ(s.ports.size(), 14u);
  EXPECT_THAT(port_names(s), UnorderedElementsAreArray(ports_of(f.topo, {"rtsw0001", "ctsw001"})));
  // Each port once.
  const auto names = port_names(s);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_EQ(s.scope, "incident");
  EXPECT_EQ(s.reason, "incident opened");
  EXPECT_EQ(s.link, "rtsw0001:eth5--ctsw001:eth1");
  EXPECT_EQ(s.taken_at, f.now);
  EXPECT_EQ(s.id, 0);
  EXPECT_EQ(s.incident_id, 0);
  EXPECT_EQ(s.action_id, 0);
}

TEST(CaptureLink, AHostLinkTakesTheHostAndItsTor) {
  DemoFabric f;
  const Snapshot s = capture_link(f.state(), f.link("host0001:nic2"), std::string(kScopeAction), "before drain");
  EXPECT_THAT(port_names(s), UnorderedElementsAreArray(ports_of(f.topo, {"host0001", "rtsw0001"})));
  EXPECT_EQ(s.link, "host0001:nic2--rtsw0001:eth3");
  EXPECT_EQ(s.scope, "action");
}

TEST(CaptureLink, TakesEveryGroupTouchingEitherDeviceAndNoOther) {
  DemoFabric f;
  const Snapshot s = capture_link(f.state(), f.link("rtsw0001:eth5"), "incident", "");
  const auto expected = groups_touching(f.topo, {"rtsw0001", "ctsw001"});
  // The ToR's uplinks, and the spine's downlinks, uplinks and plane (derived groups).
  EXPECT_GE(expected.size(), 4u);
  EXPECT_THAT(group_names(s), UnorderedElementsAreArray(expected));
  const auto names = group_names(s);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_THAT(names, ::testing::Contains("rtsw0001 uplinks"));
  // rtsw0002's uplinks touch ctsw001; zone 2's groups touch neither device.
  EXPECT_THAT(names, ::testing::Contains("rtsw0002 uplinks"));
  EXPECT_THAT(names, ::testing::Contains("ctsw002 downlinks"));
  EXPECT_THAT(names, ::testing::Not(::testing::Contains("rtsw0005 uplinks")));
  EXPECT_THAT(names, ::testing::Not(::testing::Contains("ctsw005 downlinks")));
}

TEST(CaptureLink, GroupsReadTheCapacityModel) {
  DemoFabric f;
  f.model.set_drained(f.link("rtsw0001:eth5"), true);
  f.model.set_oper_up(f.link("rtsw0001:eth6"), false);
  const Snapshot s = capture_link(f.state(), f.link("rtsw0001:eth5"), "action", "after drain");
  const GroupReading& g = group(s, "rtsw0001 uplinks");
  EXPECT_EQ(g.kind, "tor_uplinks");
  EXPECT_EQ(g.floor, 0.75);
  EXPECT_EQ(g.links, 4);
  EXPECT_EQ(g.links_in_service, 2);
  EXPECT_EQ(g.capacity_gbps, 1600);
  EXPECT_EQ(g.available_gbps, 800);
  EXPECT_EQ(g.fraction(), 0.5);
  EXPECT_TRUE(g.below_floor());
  // A group at its floor exactly is not below it.
  f.model.set_oper_up(f.link("rtsw0001:eth6"), true);
  const Snapshot at = capture_link(f.state(), f.link("rtsw0001:eth5"), "action", "");
  EXPECT_EQ(group(at, "rtsw0001 uplinks").links_in_service, 3);
  EXPECT_FALSE(group(at, "rtsw0001 uplinks").below_floor());
}

TEST(CaptureLink, TakesTheOpenIncidentsOnEitherDevice) {
  DemoFabric f;
  f.incidents = {
      {11, "link_flap", "triaged", "critical", f.link_name("rtsw0001:eth6"), "rtsw0001"},  // another link of rtsw0001
      {12, "switch_fault", "triaged", "critical", "", "ctsw001"},                         // the spine itself
      {13, "optics", "mitigated", "warning", f.link_name("rtsw0002:eth5"), "rtsw0002"},   // ends on ctsw001
      {14, "link_flap", "triaged", "critical", f.link_name("rtsw0002:eth6"), "rtsw0002"},  // rtsw0002-ctsw002
      {15, "host_fault", "triaged", "warning", "", "host0003"},                           // elsewhere
      {16, "corruption", "triaged", "critical", "rtsw0001:eth5", ""},                     // named by one end
      {17, "link_flap", "triaged", "critical", "no-such-link", "no-such-device"},         // unknown: left out
  };
  const Snapshot s = capture_link(f.state(), f.link("rtsw0001:eth5"), "incident", "");
  EXPECT_THAT(incident_ids(s), ElementsAre(11, 12, 13, 16));
  EXPECT_EQ(s.incidents[1].incident_class, "switch_fault");
  EXPECT_EQ(s.incidents[1].link, "");
  EXPECT_EQ(s.incidents[2].state, "mitigated");
  EXPECT_EQ(s.incidents[2].severity, "warning");
}

TEST(CaptureLink, ReadsOperDrainAndCounters) {
  DemoFabric f;
  const fabric::PortId eth5 = f.port("rtsw0001", "eth5");
  const fabric::PortId eth6 = f.port("rtsw0001", "eth6");
  const fabric::PortId eth7 = f.port("rtsw0001", "eth7");
  const Time scraped = f.now - from_seconds(0.8);
  f.read(eth5, scraped);
  f.samples[eth5].set(Counter::rx_crc_errors, 1234);
  f.samples[eth5].set(Counter::laser_bias_ma, std::numeric_limits<double>::quiet_NaN());  // not a reading
  f.samples[eth5].set(Counter::tx_errors, std::numeric_limits<double>::infinity());
  f.oper[eth5] = 1;
  f.oper[eth6] = 0;
  f.oper[eth7] = -1;
  f.oper[f.port("rtsw0001", "eth8")] = 7;  // anything positive is up
  f.oper[f.port("rtsw0001", "eth1")] = -3;  // anything negative is unknown
  f.model.set_drained(f.link("rtsw0001:eth6"), true);

  const Snapshot s = capture_link(f.state(), f.link("rtsw0001:eth5"), "incident", "");
  const PortReading& a = find(s, "rtsw0001", "eth5");
  EXPECT_EQ(a.link, "rtsw0001:eth5--ctsw001:eth1");
  EXPECT_EQ(a.oper, 1);
  EXPECT_FALSE(a.drained);
  EXPECT_EQ(a.sampled_at, scraped);
  EXPECT_EQ(a.get(Counter::rx_crc_errors), 1234);
  EXPECT_EQ(a.get(Counter::rx_bytes), 1.7e15);
  EXPECT_EQ(a.get(Counter::pre_fec_ber), 2.4e-9);
  EXPECT_TRUE(a.has(Counter::rx_power_dbm));
  EXPECT_FALSE(a.has(Counter::laser_bias_ma));
  EXPECT_FALSE(a.has(Counter::tx_errors));
  EXPECT_FALSE(a.has(Counter::fec_codewords));  // never reported

  const PortReading& b = find(s, "rtsw0001", "eth6");
  EXPECT_EQ(b.oper, 0);
  EXPECT_TRUE(b.drained);
  EXPECT_EQ(b.sampled_at, std::nullopt);  // never answered
  EXPECT_EQ(b.present, 0u);
  EXPECT_EQ(find(s, "rtsw0001", "eth7").oper, -1);
  EXPECT_EQ(find(s, "rtsw0001", "eth8").oper, 1);
  EXPECT_EQ(find(s, "rtsw0001", "eth1").oper, -1);
  EXPECT_FALSE(find(s, "ctsw001", "eth1").drained);
  // Both ends of a drained link say so.
  const Snapshot spine = capture_link(f.state(), f.link("rtsw0001:eth6"), "incident", "");
  EXPECT_TRUE(find(spine, "rtsw0001", "eth6").drained);
  EXPECT_TRUE(find(spine, "ctsw002", "eth1").drained);
}

TEST(CaptureDevices, ASwitchFaultTakesThatSwitchOnly) {
  DemoFabric f;
  const fabric::DeviceId d = f.device("ctsw003");
  const Snapshot s = capture_devices(f.state(), {d, d}, "incident", "switch_fault opened");
  EXPECT_THAT(port_names(s), UnorderedElementsAreArray(ports_of(f.topo, {"ctsw003"})));
  EXPECT_THAT(group_names(s), UnorderedElementsAreArray(groups_touching(f.topo, {"ctsw003"})));
  EXPECT_EQ(s.link, "");
}

TEST(CaptureDevices, NoDevicesNoPorts) {
  DemoFabric f;
  f.incidents = {{1, "link_flap", "triaged", "critical", f.link_name("rtsw0001:eth5"), "rtsw0001"}};
  const Snapshot s = capture_devices(f.state(), {}, "incident", "");
  EXPECT_TRUE(s.ports.empty());
  EXPECT_TRUE(s.groups.empty());
  EXPECT_TRUE(s.incidents.empty());
}

TEST(CaptureFabric, EveryPortEveryGroupEveryIncident) {
  DemoFabric f;
  f.incidents = {{3, "link_flap", "triaged", "critical", f.link_name("rtsw0001:eth5"), "rtsw0001"},
                 {9, "host_fault", "triaged", "warning", "", "host0008"}};
  for (fabric::PortId p = 0; p < f.topo.ports().size(); ++p) f.read(p, f.now);
  const Snapshot s = capture_fabric(f.state(), "nightly");
  EXPECT_EQ(s.scope, "fabric");
  EXPECT_EQ(s.reason, "nightly");
  EXPECT_EQ(s.link, "");
  ASSERT_EQ(s.ports.size(), f.topo.ports().size());
  // Device by device, each device's ports in their order.
  size_t i = 0;
  for (fabric::DeviceId d = 0; d < f.topo.devices().size(); ++d) {
    for (const fabric::PortId p : f.topo.ports_of(d)) {
      ASSERT_EQ(s.ports[i].device, f.topo.device(d).name) << i;
      ASSERT_EQ(s.ports[i].port, f.topo.port(p).name) << i;
      ASSERT_EQ(s.ports[i].sampled_at, f.now) << i;
      ++i;
    }
  }
  ASSERT_EQ(s.groups.size(), f.topo.groups().size());
  for (size_t g = 0; g < s.groups.size(); ++g) {
    EXPECT_EQ(s.groups[g].name, f.topo.groups()[g].name);
    EXPECT_EQ(s.groups[g].links_in_service, s.groups[g].links);
  }
  EXPECT_THAT(incident_ids(s), ElementsAre(3, 9));
}

TEST(CaptureFabric, WithoutReadersEveryPortIsUnknown) {
  DemoFabric f;
  FabricState st = f.state();
  st.latest = nullptr;
  st.port_oper = nullptr;
  const Snapshot s = capture_fabric(st, "");
  ASSERT_FALSE(s.ports.empty());
  for (const auto& p : s.ports) {
    EXPECT_EQ(p.oper, -1);
    EXPECT_EQ(p.present, 0u);
  }
}

}  // namespace
}  // namespace medic::snapshot
