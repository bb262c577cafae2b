#include "fabric/generator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "fabric/loader.h"

namespace medic::fabric {
namespace {

using ::testing::ElementsAre;

// zone32k is large (~150k ports): build it once for the whole suite.
const Topology& zone32k() {
  static const Topology t = generate_clos(*preset("zone32k"));
  return t;
}

Role role_of_port(const Topology& t, PortId p) { return t.device(t.port(p).device).role; }

// Counts links by the (unordered) pair of roles at their ends.
std::map<std::pair<Role, Role>, size_t> links_by_roles(const Topology& t) {
  std::map<std::pair<Role, Role>, size_t> out;
  for (const Link& l : t.links()) {
    Role a = role_of_port(t, l.a), b = role_of_port(t, l.b);
    if (b < a) std::swap(a, b);
    ++out[{a, b}];
  }
  return out;
}

TEST(Generator, Zone32kDeviceCounts) {
  const Topology& t = zone32k();
  std::map<Role, int> roles;
  for (const auto& d : t.devices()) ++roles[d.role];
  EXPECT_EQ(roles[Role::rtsw], 2016);
  EXPECT_EQ(roles[Role::ctsw], 144);
  EXPECT_EQ(roles[Role::atsw], 72);
  EXPECT_EQ(roles[Role::host], 4032);
  EXPECT_EQ(t.devices().size(), 2016u + 144u + 72u + 4032u);
}

TEST(Generator, Zone32kLinkAndPortCounts) {
  const Topology& t = zone32k();
  const auto by = links_by_roles(t);
  EXPECT_EQ(by.at({Role::rtsw, Role::host}), 32256u);
  EXPECT_EQ(by.at({Role::rtsw, Role::ctsw}), 36288u);
  EXPECT_EQ(by.at({Role::ctsw, Role::atsw}), 5184u);
  EXPECT_EQ(by.size(), 3u);  // no other kinds of link
  EXPECT_EQ(t.links().size(), 32256u + 36288u + 5184u);
  EXPECT_EQ(t.ports().size(), 147456u);
  for (const Port& p : t.ports()) ASSERT_NE(p.link, kNone) << "unlinked port " << p.name;
}

TEST(Generator, Zone32kTotalCapacity) {
  EXPECT_DOUBLE_EQ(zone32k().total_capacity_gbps(), 73728.0 * 400.0);
  for (const Link& l : zone32k().links()) ASSERT_DOUBLE_EQ(l.speed_gbps, 400.0);
}

TEST(Generator, Zone32kOneUplinkGroupPerTor) {
  const Topology& t = zone32k();
  ASSERT_EQ(t.groups().size(), 2016u);
  std::set<std::string> tors;
  for (const CapacityGroup& g : t.groups()) {
    ASSERT_DOUBLE_EQ(g.floor, 0.75) << g.name;
    ASSERT_EQ(g.links.size(), 18u) << g.name;
    ASSERT_EQ(g.kind, "tor_uplinks");
    ASSERT_DOUBLE_EQ(g.total_gbps, 18 * 400.0);
    // Every link of the group is an uplink of the ToR that names the group.
    const std::string tor = g.name.substr(0, g.name.find(' '));
    ASSERT_EQ(g.name, tor + " uplinks");
    tors.insert(tor);
    for (const LinkId l : g.links) {
      const Link& link = t.link(l);
      ASSERT_EQ(t.device(t.port(link.a).device).name, tor);
      ASSERT_EQ(role_of_port(t, link.b), Role::ctsw);
    }
  }
  EXPECT_EQ(tors.size(), 2016u);
  // Each uplink is in exactly its ToR's group; host links are in none.
  const LinkId host_link = *t.find_link("host0001:nic0");
  EXPECT_TRUE(t.groups_of(host_link).empty());
  const LinkId up = *t.find_link("rtsw0001:eth17");
  ASSERT_EQ(t.groups_of(up).size(), 1u);
  EXPECT_EQ(t.group(t.groups_of(up)[0]).name, "rtsw0001 uplinks");
}

TEST(Generator, Zone32kEveryTorHas16HostLinksAnd18UplinksOnePerZoneSpine) {
  const Topology& t = zone32k();
  int checked = 0;
  for (DeviceId d = 0; d < t.devices().size(); ++d) {
    const Device& dev = t.device(d);
    if (dev.role != Role::rtsw) continue;
    ++checked;
    int host_links = 0, uplinks = 0;
    std::set<DeviceId> spines;
    std::set<int> planes;
    for (const PortId p : t.ports_of(d)) {
      const PortId other = t.peer(p);
      ASSERT_NE(other, kNone);
      const Device& peer = t.device(t.port(other).device);
      if (peer.role == Role::host) {
        ++host_links;
        ASSERT_EQ(peer.zone, dev.zone);
      } else {
        ASSERT_EQ(peer.role, Role::ctsw) << dev.name;
        ASSERT_EQ(peer.zone, dev.zone) << dev.name << " -> " << peer.name;
        ++uplinks;
        spines.insert(t.port(other).device);
        planes.insert(peer.plane);
      }
    }
    ASSERT_EQ(host_links, 16) << dev.name;
    ASSERT_EQ(uplinks, 18) << dev.name;
    ASSERT_EQ(spines.size(), 18u) << dev.name;  // one to each CTSW of the zone
    ASSERT_EQ(planes.size(), 18u) << dev.name;
  }
  EXPECT_EQ(checked, 2016);
}

TEST(Generator, Zone32kEverySpineHas252DownlinksAnd36UplinksIntoItsPlane) {
  const Topology& t = zone32k();
  int checked = 0;
  for (DeviceId d = 0; d < t.devices().size(); ++d) {
    const Device& dev = t.device(d);
    if (dev.role != Role::ctsw) continue;
    ++checked;
    ASSERT_GE(dev.plane, 1);
    ASSERT_LE(dev.plane, 18);
    int down = 0, up = 0;
    std::set<DeviceId> tors;
    double down_gbps = 0, up_gbps = 0;
    for (const PortId p : t.ports_of(d)) {
      const PortId other = t.peer(p);
      const Device& peer = t.device(t.port(other).device);
      const double speed = t.link(t.port(p).link).speed_gbps;
      if (peer.role == Role::rtsw) {
        ++down;
        down_gbps += speed;
        tors.insert(t.port(other).device);
        ASSERT_EQ(peer.zone, dev.zone);
      } else {
        ASSERT_EQ(peer.role, Role::atsw) << dev.name;
        ASSERT_EQ(peer.plane, dev.plane) << dev.name << " -> " << peer.name;
        ++up;
        up_gbps += speed;
      }
    }
    ASSERT_EQ(down, 252) << dev.name;
    ASSERT_EQ(up, 36) << dev.name;
    ASSERT_EQ(tors.size(), 252u) << dev.name;
    ASSERT_DOUBLE_EQ(down_gbps / up_gbps, 7.0) << dev.name;  // 7:1 oversubscription
  }
  EXPECT_EQ(checked, 144);
}

TEST(Generator, Zone32kAggregationSwitchesServeOnePlaneFromEveryZone) {
  const Topology& t = zone32k();
  int checked = 0;
  for (DeviceId d = 0; d < t.devices().size(); ++d) {
    const Device& dev = t.device(d);
    if (dev.role != Role::atsw) continue;
    ++checked;
    std::set<int> zones;
    for (const PortId p : t.ports_of(d)) {
      const Device& peer = t.device(t.port(t.peer(p)).device);
      ASSERT_EQ(peer.role, Role::ctsw);
      ASSERT_EQ(peer.plane, dev.plane);
      zones.insert(peer.zone);
    }
    ASSERT_EQ(t.ports_of(d).size(), 72u) << dev.name;  // 8 zones x 9 links
    ASSERT_EQ(zones.size(), 8u) << dev.name;
  }
  EXPECT_EQ(checked, 72);
}

TEST(Generator, Zone32kHostsHaveEightNicsOnOneTor) {
  const Topology& t = zone32k();
  const DeviceId h = *t.find_device("host0001");
  EXPECT_EQ(t.device(h).role, Role::host);
  EXPECT_EQ(t.device(h).zone, 1);
  std::set<DeviceId> tors;
  for (const PortId p : t.ports_of(h)) tors.insert(t.port(t.peer(p)).device);
  EXPECT_EQ(t.ports_of(h).size(), 8u);
  EXPECT_EQ(tors.size(), 1u);
  EXPECT_EQ(t.device(*tors.begin()).name, "rtsw0001");
  EXPECT_TRUE(t.find_device("host4032"));
  EXPECT_FALSE(t.find_device("host4033"));
  EXPECT_TRUE(t.find_device("rtsw2016"));
  EXPECT_TRUE(t.find_device("ctsw144"));
  EXPECT_TRUE(t.find_device("atsw72"));
}

TEST(Generator, DemoPresetCounts) {
  const auto shape = preset("demo");
  ASSERT_TRUE(shape);
  const Topology t = generate_clos(*shape);
  std::map<Role, int> roles;
  for (const auto& d : t.devices()) ++roles[d.role];
  EXPECT_EQ(roles[Role::rtsw], 8);
  EXPECT_EQ(roles[Role::ctsw], 8);
  EXPECT_EQ(roles[Role::atsw], 4);
  EXPECT_EQ(roles[Role::host], 8);
  const auto by = links_by_roles(t);
  EXPECT_EQ(by.at({Role::rtsw, Role::host}), 32u);
  EXPECT_EQ(by.at({Role::rtsw, Role::ctsw}), 32u);
  EXPECT_EQ(by.at({Role::ctsw, Role::atsw}), 16u);
  EXPECT_EQ(t.links().size(), 80u);
  EXPECT_EQ(t.ports().size(), 160u);
  ASSERT_EQ(t.groups().size(), 8u);
  for (const auto& g : t.groups()) {
    EXPECT_EQ(g.links.size(), 4u);
    EXPECT_DOUBLE_EQ(g.floor, 0.75);
  }
  EXPECT_DOUBLE_EQ(t.total_capacity_gbps(), 80 * 400.0);
  EXPECT_TRUE(t.find_device("rtsw0001"));
  EXPECT_TRUE(t.find_device("ctsw001"));
  EXPECT_TRUE(t.find_device("atsw01"));
  EXPECT_TRUE(t.find_device("host0001"));
}

TEST(Generator, DemoPlanesAndZones) {
  const Topology t = generate_clos(*preset("demo"));
  // CTSW i of every zone is in plane i.
  EXPECT_EQ(t.device(*t.find_device("ctsw001")).plane, 1);
  EXPECT_EQ(t.device(*t.find_device("ctsw001")).zone, 1);
  EXPECT_EQ(t.device(*t.find_device("ctsw005")).plane, 1);
  EXPECT_EQ(t.device(*t.find_device("ctsw005")).zone, 2);
  EXPECT_EQ(t.device(*t.find_device("ctsw008")).plane, 4);
  EXPECT_EQ(t.device(*t.find_device("atsw04")).plane, 4);
  EXPECT_EQ(t.device(*t.find_device("atsw04")).zone, -1);
  EXPECT_EQ(t.device(*t.find_device("rtsw0005")).zone, 2);
  EXPECT_EQ(t.device(*t.find_device("rtsw0005")).plane, -1);
}

TEST(Generator, PresetNames) {
  EXPECT_THAT(preset_names(), ElementsAre("demo", "zone32k"));
  for (const auto& n : preset_names()) EXPECT_TRUE(preset(n)) << n;
  EXPECT_FALSE(preset("zone64k"));
  EXPECT_FALSE(preset(""));
}

TEST(Generator, UrlsUseTheBaseUrl) {
  ClosShape s = *preset("demo");
  s.base_url = "http://fabsim.test:9000";
  const Topology t = generate_clos(s);
  for (const Device& d : t.devices()) {
    if (!d.is_switch()) {
      EXPECT_EQ(d.telemetry_url, "http://fabsim.test:9000/h/" + d.name + "/metrics") << d.name;
      EXPECT_EQ(d.driver_kind, "") << d.name;
      continue;
    }
    // "mixed" telemetry (the default): ToRs in Prometheus text, the rest as OpenConfig JSON.
    EXPECT_EQ(d.telemetry_url,
              "http://fabsim.test:9000/s/" + d.name + (d.role == Role::rtsw ? "/metrics" : "/gnmi"));
    EXPECT_EQ(d.driver_kind, "jsonrpc");
    EXPECT_EQ(d.driver_url, "http://fabsim.test:9000/s/" + d.name + "/rpc");
  }
}

TEST(Generator, TelemetryFormatsAndOptics) {
  ClosShape s = *preset("demo");
  for (const char* format : {"prometheus", "openconfig"}) {
    s.telemetry_format = format;
    const Topology t = generate_clos(s);
    for (const Device& d : t.devices()) {
      if (!d.is_switch()) continue;
      EXPECT_EQ(d.telemetry_url, s.base_url + "/s/" + d.name + (std::string(format) == "openconfig" ? "/gnmi" : "/metrics"))
          << format;
    }
  }
  s.telemetry_format = "snmp";
  EXPECT_THROW(generate_clos(s), std::invalid_argument);

  // Host links carry the host optic, switch-to-switch links the fabric optic.
  s = *preset("demo");
  s.host_telemetry = false;
  const Topology t = generate_clos(s);
  EXPECT_EQ(t.device(*t.find_device("host0001")).telemetry_url, "");
  EXPECT_EQ(t.link(*t.find_link("host0001:nic0")).optic, "400G-SR8");
  EXPECT_EQ(t.link(*t.find_link("rtsw0001:eth5")).optic, "400G-DR4");
  EXPECT_EQ(t.link(*t.find_link("atsw01:eth1")).optic, "400G-DR4");
  for (const Link& l : t.links()) EXPECT_FALSE(l.optic.empty()) << l.name;
}

TEST(Generator, NonJsonRpcDriverHasNoDriverUrl) {
  ClosShape s = *preset("demo");
  s.driver_kind = "dryrun";
  const Topology t = generate_clos(s);
  const Device& d = t.device(*t.find_device("rtsw0001"));
  EXPECT_EQ(d.driver_kind, "dryrun");
  EXPECT_EQ(d.driver_url, "");
  EXPECT_EQ(d.telemetry_url, "http://127.0.0.1:18080/s/rtsw0001/metrics");
}

TEST(Generator, UplinksNotAMultipleOfAtswPerPlane) {
  ClosShape s;
  s.zones = 3;
  s.atsw_per_plane = 2;
  s.ctsw_uplinks = 3;
  const Topology t = generate_clos(s);
  std::map<DeviceId, int> per_atsw;
  for (const Link& l : t.links()) {
    if (role_of_port(t, l.b) == Role::atsw) ++per_atsw[t.port(l.b).device];
  }
  ASSERT_EQ(per_atsw.size(), 8u);  // 4 planes x 2
  int total = 0;
  for (const auto& [d, n] : per_atsw) total += n;
  EXPECT_EQ(total, 3 * 4 * 3);
}

TEST(Generator, NoAggregationLayer) {
  ClosShape s;
  s.atsw_per_plane = 0;
  s.ctsw_uplinks = 0;
  const Topology t = generate_clos(s);
  for (const Device& d : t.devices()) EXPECT_NE(d.role, Role::atsw);
  EXPECT_EQ(t.links().size(), 16u + 16u);
}

TEST(Generator, CustomSpeedAndFloor) {
  ClosShape s;
  s.speed_gbps = 800;
  s.tor_uplink_floor = 0.5;
  const Topology t = generate_clos(s);
  for (const Link& l : t.links()) EXPECT_DOUBLE_EQ(l.speed_gbps, 800);
  for (const CapacityGroup& g : t.groups()) {
    EXPECT_DOUBLE_EQ(g.floor, 0.5);
    EXPECT_DOUBLE_EQ(g.total_gbps, 4 * 800.0);
  }
}

TEST(Generator, InvalidShapesThrow) {
  const auto bad = [](auto mutate) {
    ClosShape s;
    mutate(s);
    return s;
  };
  const std::vector<ClosShape> shapes = {
      bad([](ClosShape& s) { s.zones = 0; }),
      bad([](ClosShape& s) { s.zones = -1; }),
      bad([](ClosShape& s) { s.rtsw_per_zone = 0; }),
      bad([](ClosShape& s) { s.ctsw_per_zone = 0; }),
      bad([](ClosShape& s) { s.gpus_per_rtsw = 0; }),
      bad([](ClosShape& s) { s.gpus_per_host = 0; }),
      bad([](ClosShape& s) { s.atsw_per_plane = -1; }),
      bad([](ClosShape& s) { s.ctsw_uplinks = -1; }),
      bad([](ClosShape& s) { s.speed_gbps = 0; }),
      bad([](ClosShape& s) { s.speed_gbps = -400; }),
      bad([](ClosShape& s) { s.speed_gbps = std::nan(""); }),
      bad([](ClosShape& s) { s.tor_uplink_floor = 0; }),
      bad([](ClosShape& s) { s.tor_uplink_floor = 1.5; }),
      bad([](ClosShape& s) { s.tor_uplink_floor = -0.1; }),
      bad([](ClosShape& s) { s.atsw_per_plane = 0; }),  // with the default 2 CTSW uplinks
      bad([](ClosShape& s) { s.gpus_per_rtsw = 6; }),   // 6 GPUs do not make whole 4-NIC hosts
  };
  for (size_t i = 0; i < shapes.size(); ++i) {
    EXPECT_THROW(generate_clos(shapes[i]), std::invalid_argument) << "shape " << i;
  }
}

TEST(Generator, InvalidShapeMessagesSayWhy) {
  ClosShape s;
  s.gpus_per_rtsw = 6;
  try {
    generate_clos(s);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("multiple of gpus_per_host"));
  }
  s = ClosShape{};
  s.atsw_per_plane = 0;
  try {
    generate_clos(s);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("ATSW"));
  }
}

TEST(Generator, DemoRoundTripsThroughTheLoader) {
  const Topology a = generate_clos(*preset("demo"));
  const Topology b = parse_topology(topology_to_json(a).dump(), "demo.json");
  ASSERT_EQ(a.devices().size(), b.devices().size());
  ASSERT_EQ(a.ports().size(), b.ports().size());
  ASSERT_EQ(a.links().size(), b.links().size());
  ASSERT_EQ(a.groups().size(), b.groups().size());
  for (LinkId l = 0; l < a.links().size(); ++l) EXPECT_EQ(a.link(l).name, b.link(l).name);
  for (GroupId g = 0; g < a.groups().size(); ++g) {
    EXPECT_EQ(a.group(g).name, b.group(g).name);
    EXPECT_EQ(a.group(g).links, b.group(g).links);
  }
}

}  // namespace
}  // namespace medic::fabric
