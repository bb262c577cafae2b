#include "fabric/loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/testing.h"

namespace medic::fabric {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kSource = "t.json";

// A small but complete fabric: two ToRs, one spine, one unconnected aggregation switch,
// one host with two NICs, four links (one named) and two capacity groups.
//   links[0] host1:nic0 -- rtsw1:eth1   (in group "rtsw1 all")
//   links[1] host1:nic1 -- rtsw2:eth1   (in no group: safe to break in error tests)
//   links[2] rtsw1:eth2 -- ctsw1:eth1   "up1" (in both groups)
//   links[3] rtsw2:eth2 -- ctsw1:eth2   200G (in "ctsw1 downlinks")
json valid_doc() {
  return json::parse(R"({
    "version": 1,
    "switches": [
      {"name": "rtsw1", "role": "rtsw", "zone": 1, "telemetry": "http://sim/s/rtsw1/metrics",
       "driver": {"kind": "jsonrpc", "url": "http://sim/s/rtsw1/rpc"}},
      {"name": "rtsw2", "role": "rtsw", "zone": 1, "telemetry": "http://sim/s/rtsw2/metrics",
       "driver": {"kind": "dryrun"}},
      {"name": "ctsw1", "role": "ctsw", "zone": 1, "plane": 1, "telemetry": "http://sim/s/ctsw1/metrics",
       "driver": {"kind": "netns"}},
      {"name": "atsw1", "role": "atsw", "plane": 1, "telemetry": "http://sim/s/atsw1/metrics",
       "driver": {"kind": "dryrun"}}
    ],
    "hosts": [
      {"name": "host1", "zone": 1, "nics": ["nic0", "nic1"], "telemetry": "http://host1:9100/metrics"}
    ],
    "links": [
      {"a": "host1:nic0", "b": "rtsw1:eth1", "speed_gbps": 400},
      {"a": "host1:nic1", "b": "rtsw2:eth1", "speed_gbps": 400},
      {"a": "rtsw1:eth2", "b": "ctsw1:eth1", "speed_gbps": 400, "name": "up1"},
      {"a": "rtsw2:eth2", "b": "ctsw1:eth2", "speed_gbps": 200}
    ],
    "capacity_groups": [
      {"name": "ctsw1 downlinks", "kind": "spine_downlinks", "floor": 0.5, "links": ["up1", "ctsw1:eth2"]},
      {"name": "rtsw1 all", "floor": 1.0, "links": ["rtsw1:eth1", "rtsw1:eth2"]}
    ]
  })");
}

// The problems parse_topology reports for a document; fails the test if it parses.
std::vector<std::string> problems_of_text(std::string_view text, const std::string& source = kSource) {
  try {
    parse_topology(text, source);
  } catch (const TopologyError& e) {
    EXPECT_FALSE(e.problems().empty());
    return e.problems();
  }
  ADD_FAILURE() << "parse_topology accepted the document";
  return {};
}

std::vector<std::string> problems_of(const json& doc) { return problems_of_text(doc.dump(2)); }

// ---------------------------------------------------------------------------------------
// A valid file

TEST(Loader, ValidFileLoadsWithCorrectCounts) {
  const Topology t = parse_topology(valid_doc().dump(), kSource);
  EXPECT_EQ(t.devices().size(), 5u);
  EXPECT_EQ(t.ports().size(), 8u);
  EXPECT_EQ(t.links().size(), 4u);
  EXPECT_EQ(t.groups().size(), 2u);
  EXPECT_DOUBLE_EQ(t.total_capacity_gbps(), 1400.0);
}

TEST(Loader, ValidFileKeepsDeviceAttributes) {
  const Topology t = parse_topology(valid_doc().dump(), kSource);
  const auto rtsw1 = t.find_device("rtsw1");
  ASSERT_TRUE(rtsw1);
  EXPECT_EQ(t.device(*rtsw1).role, Role::rtsw);
  EXPECT_EQ(t.device(*rtsw1).zone, 1);
  EXPECT_EQ(t.device(*rtsw1).plane, -1);
  EXPECT_EQ(t.device(*rtsw1).telemetry_url, "http://sim/s/rtsw1/metrics");
  EXPECT_EQ(t.device(*rtsw1).driver_kind, "jsonrpc");
  EXPECT_EQ(t.device(*rtsw1).driver_url, "http://sim/s/rtsw1/rpc");
  EXPECT_TRUE(t.device(*rtsw1).is_switch());

  const auto ctsw1 = t.find_device("ctsw1");
  ASSERT_TRUE(ctsw1);
  EXPECT_EQ(t.device(*ctsw1).role, Role::ctsw);
  EXPECT_EQ(t.device(*ctsw1).plane, 1);
  EXPECT_EQ(t.device(*ctsw1).driver_kind, "netns");
  EXPECT_EQ(t.device(*ctsw1).driver_url, "");

  const auto atsw1 = t.find_device("atsw1");
  ASSERT_TRUE(atsw1);
  EXPECT_EQ(t.device(*atsw1).role, Role::atsw);
  EXPECT_EQ(t.device(*atsw1).zone, -1);
  EXPECT_TRUE(t.ports_of(*atsw1).empty());

  const auto host1 = t.find_device("host1");
  ASSERT_TRUE(host1);
  EXPECT_EQ(t.device(*host1).role, Role::host);
  EXPECT_FALSE(t.device(*host1).is_switch());
  EXPECT_EQ(t.device(*host1).telemetry_url, "http://host1:9100/metrics");
  EXPECT_EQ(t.device(*host1).driver_kind, "");

  EXPECT_FALSE(t.find_device("rtsw9"));
}

TEST(Loader, FindLinkByNameAndByEitherEndpoint) {
  const Topology t = parse_topology(valid_doc().dump(), kSource);
  const auto by_name = t.find_link("up1");
  ASSERT_TRUE(by_name);
  EXPECT_EQ(t.link(*by_name).name, "up1");
  EXPECT_EQ(t.find_link("rtsw1:eth2"), by_name);
  EXPECT_EQ(t.find_link("ctsw1:eth1"), by_name);
  EXPECT_DOUBLE_EQ(t.link(*by_name).speed_gbps, 400.0);

  // An unnamed link is named "a--b".
  const auto host_link = t.find_link("host1:nic0--rtsw1:eth1");
  ASSERT_TRUE(host_link);
  EXPECT_EQ(host_link, t.find_link("host1:nic0"));
  EXPECT_EQ(host_link, t.find_link("rtsw1:eth1"));
  EXPECT_EQ(t.endpoint_name(t.link(*host_link).a), "host1:nic0");
  EXPECT_EQ(t.endpoint_name(t.link(*host_link).b), "rtsw1:eth1");

  EXPECT_FALSE(t.find_link("nope"));
  EXPECT_FALSE(t.find_link("rtsw1:eth99"));
  EXPECT_FALSE(t.find_link("rtsw9:eth1"));
  EXPECT_FALSE(t.find_link(""));
}

TEST(Loader, GroupsOfPortsOfAndPeer) {
  const Topology t = parse_topology(valid_doc().dump(), kSource);
  const auto down = t.find_group("ctsw1 downlinks");
  const auto all = t.find_group("rtsw1 all");
  ASSERT_TRUE(down);
  ASSERT_TRUE(all);
  EXPECT_FALSE(t.find_group("nope"));

  const LinkId up1 = *t.find_link("up1");
  EXPECT_THAT(std::vector<GroupId>(t.groups_of(up1).begin(), t.groups_of(up1).end()), ElementsAre(*down, *all));
  const LinkId ungrouped = *t.find_link("host1:nic1");
  EXPECT_TRUE(t.groups_of(ungrouped).empty());
  const LinkId l3 = *t.find_link("ctsw1:eth2");
  EXPECT_THAT(std::vector<GroupId>(t.groups_of(l3).begin(), t.groups_of(l3).end()), ElementsAre(*down));

  const CapacityGroup& g = t.group(*down);
  EXPECT_EQ(g.kind, "spine_downlinks");
  EXPECT_DOUBLE_EQ(g.floor, 0.5);
  EXPECT_DOUBLE_EQ(g.total_gbps, 600.0);
  EXPECT_THAT(g.links, ElementsAre(up1, l3));
  EXPECT_EQ(t.group(*all).kind, "custom");  // the default kind
  EXPECT_DOUBLE_EQ(t.group(*all).floor, 1.0);
  EXPECT_DOUBLE_EQ(t.group(*all).total_gbps, 800.0);

  const DeviceId host1 = *t.find_device("host1");
  std::vector<std::string> names;
  for (const PortId p : t.ports_of(host1)) names.push_back(t.port(p).name);
  EXPECT_THAT(names, ElementsAre("nic0", "nic1"));
  const DeviceId ctsw1 = *t.find_device("ctsw1");
  names.clear();
  for (const PortId p : t.ports_of(ctsw1)) names.push_back(t.endpoint_name(p));
  EXPECT_THAT(names, ElementsAre("ctsw1:eth1", "ctsw1:eth2"));

  const PortId nic0 = *t.find_port("host1", "nic0");
  const PortId eth1 = *t.find_port("rtsw1", "eth1");
  EXPECT_EQ(t.peer(nic0), eth1);
  EXPECT_EQ(t.peer(eth1), nic0);
  EXPECT_EQ(t.port(nic0).device, host1);
  EXPECT_EQ(t.port(nic0).link, t.port(eth1).link);
  EXPECT_FALSE(t.find_port("host1", "nic7"));
  EXPECT_FALSE(t.find_port("nobody", "nic0"));
}

TEST(Loader, DeclaredNicWithoutLinkHasNoPeer) {
  json doc = valid_doc();
  doc["hosts"][0]["nics"].push_back("nic2");
  const Topology t = parse_topology(doc.dump(), kSource);
  const auto nic2 = t.find_port("host1", "nic2");
  ASSERT_TRUE(nic2);
  EXPECT_EQ(t.port(*nic2).link, kNone);
  EXPECT_EQ(t.peer(*nic2), kNone);
  EXPECT_FALSE(t.find_link("host1:nic2"));
  EXPECT_EQ(t.ports_of(*t.find_device("host1")).size(), 3u);
}

TEST(Loader, FloorOfExactlyOneIsAccepted) {
  json doc = valid_doc();
  doc["capacity_groups"][0]["floor"] = 1.0;
  const Topology t = parse_topology(doc.dump(), kSource);
  EXPECT_DOUBLE_EQ(t.group(*t.find_group("ctsw1 downlinks")).floor, 1.0);
  doc["capacity_groups"][0]["floor"] = 1;  // an integer 1 is a number too
  EXPECT_NO_THROW(parse_topology(doc.dump(), kSource));
}

TEST(Loader, OptionalSectionsMayBeAbsent) {
  json doc = valid_doc();
  doc.erase("hosts");
  doc.erase("capacity_groups");
  doc.erase("version");
  doc["links"].erase(0);
  doc["links"].erase(0);
  const Topology t = parse_topology(doc.dump(), kSource);
  EXPECT_EQ(t.devices().size(), 4u);
  EXPECT_EQ(t.links().size(), 2u);
  EXPECT_TRUE(t.groups().empty());
  EXPECT_TRUE(t.groups_of(*t.find_link("up1")).empty());
}

TEST(Loader, LoadsAFile) {
  testing::TempDir dir;
  const std::string path = dir.file("fabric.json");
  testing::write_file(path, valid_doc().dump(2));
  const Topology t = load_topology_file(path);
  EXPECT_EQ(t.links().size(), 4u);
  EXPECT_TRUE(t.find_link("up1"));
}

// ---------------------------------------------------------------------------------------
// Errors: every one names the source, the JSON path and what is wrong.

TEST(LoaderErrors, UnknownSwitchInLinkEndpoint) {
  json doc = valid_doc();
  doc["links"][1]["b"] = "nope:eth1";
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.links[1].b: unknown switch \"nope\" (no switch or host has that name)"));
  doc = valid_doc();
  doc["links"][1]["a"] = "rtsw9:eth1";
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.links[1].a: unknown switch \"rtsw9\" (no switch or host has that name)"));
}

TEST(LoaderErrors, DuplicateSwitch) {
  json doc = valid_doc();
  json dup = doc["switches"][3];
  dup["role"] = "rtsw";
  doc["switches"].push_back(dup);
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.switches[4].name: duplicate switch \"atsw1\" (already defined as a switch)"));
}

TEST(LoaderErrors, HostNamedLikeASwitch) {
  json doc = valid_doc();
  doc["hosts"].push_back({{"name", "atsw1"}, {"nics", {"nic0"}}});
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.hosts[1].name: duplicate host \"atsw1\" (already defined as a switch)"));
}

TEST(LoaderErrors, PortUsedByTwoLinks) {
  json doc = valid_doc();
  doc["links"].push_back({{"a", "rtsw1:eth2"}, {"b", "rtsw2:eth9"}, {"speed_gbps", 400}});
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.links[4]: port rtsw1:eth2 is already used by link \"up1\""));
  // The second endpoint is checked as well.
  doc = valid_doc();
  doc["links"].push_back({{"a", "rtsw2:eth9"}, {"b", "rtsw1:eth1"}, {"speed_gbps", 400}});
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.links[4]: port rtsw1:eth1 is already used by link "
                                            "\"host1:nic0--rtsw1:eth1\""));
}

TEST(LoaderErrors, LinkFromASwitchToItself) {
  json doc = valid_doc();
  doc["links"].push_back({{"a", "atsw1:eth1"}, {"b", "atsw1:eth2"}, {"speed_gbps", 400}});
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.links[4]: link from \"atsw1\" to itself (atsw1:eth1 -- atsw1:eth2)"));
}

TEST(LoaderErrors, DuplicateLinkName) {
  json doc = valid_doc();
  doc["links"].push_back({{"a", "ctsw1:eth3"}, {"b", "atsw1:eth1"}, {"speed_gbps", 400}, {"name", "up1"}});
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.links[4]: duplicate link name \"up1\""));
}

TEST(LoaderErrors, FloorZero) {
  json doc = valid_doc();
  doc["capacity_groups"][0]["floor"] = 0;
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.capacity_groups[0].floor: floor must be a fraction in (0, 1], got 0"));
}

TEST(LoaderErrors, FloorAboveOne) {
  json doc = valid_doc();
  doc["capacity_groups"][0]["floor"] = 1.5;
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.capacity_groups[0].floor: floor must be a fraction in (0, 1], got 1.5"));
}

TEST(LoaderErrors, FloorNegative) {
  json doc = valid_doc();
  doc["capacity_groups"][1]["floor"] = -0.1;
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.capacity_groups[1].floor: floor must be a fraction in (0, 1], got -0.1"));
}

TEST(LoaderErrors, FloorNotANumber) {
  json doc = valid_doc();
  doc["capacity_groups"][1]["floor"] = "75%";
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.capacity_groups[1].floor: expected a number, got a string"));
}

TEST(LoaderErrors, MissingSpeed) {
  json doc = valid_doc();
  doc["links"][1].erase("speed_gbps");
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.links[1]: missing required key \"speed_gbps\""));
}

TEST(LoaderErrors, NegativeSpeed) {
  json doc = valid_doc();
  doc["links"][1]["speed_gbps"] = -400;
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.links[1].speed_gbps: speed must be a positive number of Gb/s, got -400"));
}

TEST(LoaderErrors, SpeedsPastAnyLinkAreRefused) {
  // 1e16 Gb/s once overflowed the capacity model's sums (what-if printed -9.2e20%).
  json doc = valid_doc();
  doc["links"][1]["speed_gbps"] = 1e16;
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.links[1].speed_gbps: speed must be at most 100000 Gb/s (100 Tb/s), "
                                            "got 1e+16"));
  doc["links"][1]["speed_gbps"] = 100000;
  EXPECT_NO_THROW(parse_topology(doc.dump(), "t.json"));
  // Built by code rather than read: the same bound.
  Topology::Builder b;
  Device a, c;
  a.name = "a";
  a.role = Role::rtsw;
  c.name = "b";
  c.role = Role::ctsw;
  ASSERT_EQ(b.add_device(a), "");
  ASSERT_EQ(b.add_device(c), "");
  EXPECT_EQ(b.add_link("a", "e1", "b", "e1", 1e16), "speed_gbps must be at most 100000 Gb/s, got 1e+16");
}

TEST(LoaderErrors, TelemetryAndDrainUrlsMustBeHttp) {
  json doc = valid_doc();
  doc["switches"][0]["telemetry"] = "ftp://sim/s/rtsw1/metrics";
  doc["switches"][1]["telemetry"] = "file:///etc/passwd";
  doc["switches"][0]["driver"]["url"] = "gopher://sim/rpc";
  doc["hosts"][0]["telemetry"] = "http://";
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.switches[0].telemetry: URL \"ftp://sim/s/rtsw1/metrics\" is not http://, https:// or snmp://",
                          "t.json: $.switches[0].driver.url: URL \"gopher://sim/rpc\" is not http:// or https://",
                          "t.json: $.switches[1].telemetry: URL \"file:///etc/passwd\" is not http://, https:// or snmp://",
                          "t.json: $.hosts[0].telemetry: URL \"http://\" has no host"));
}

TEST(LoaderErrors, SwitchesMayBePolledOverSnmpAtAnAgentAddress) {
  json doc = valid_doc();
  doc["switches"][0]["telemetry"] = "snmp://192.0.2.1";
  doc["switches"][1]["telemetry"] = "snmp://[2001:db8::1]:1161";
  const Topology t = parse_topology(doc.dump(), kSource);
  EXPECT_EQ(t.device(*t.find_device("rtsw2")).telemetry_url, "snmp://[2001:db8::1]:1161");
  doc["switches"][0]["telemetry"] = "snmp://";
  doc["switches"][1]["telemetry"] = "snmp://agent:0";
  doc["switches"][2]["telemetry"] = "snmp://agent/ifTable";
  doc["hosts"][0]["telemetry"] = "snmp://host-nic";  // a host's NIC exporter is HTTP only
  EXPECT_THAT(
      problems_of(doc),
      ElementsAre("t.json: $.switches[0].telemetry: SNMP address \"snmp://\" has no host",
                  "t.json: $.switches[1].telemetry: SNMP address \"snmp://agent:0\": port \"0\" is not a number from 1 to 65535",
                  "t.json: $.switches[2].telemetry: SNMP address \"snmp://agent/ifTable\": \"agent/ifTable\" is not a host "
                  "name or address (snmp://HOST[:PORT], no path, user or query)",
                  "t.json: $.hosts[0].telemetry: URL \"snmp://host-nic\" is not http:// or https://"));
}

TEST(LoaderErrors, ZeroSpeed) {
  json doc = valid_doc();
  doc["links"][1]["speed_gbps"] = 0;
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.links[1].speed_gbps: speed must be a positive number of Gb/s, got 0"));
  doc["links"][1]["speed_gbps"] = 0.0;
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.links[1].speed_gbps: speed must be a positive number of Gb/s, got 0.0"));
}

TEST(LoaderErrors, RoleAsNumber) {
  json doc = valid_doc();
  doc["switches"][3]["role"] = 3;
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.switches[3].role: expected a string, got an integer"));
}

TEST(LoaderErrors, ZoneAsString) {
  json doc = valid_doc();
  doc["switches"][3]["zone"] = "1";
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.switches[3].zone: expected an integer, got a string"));
}

TEST(LoaderErrors, ZoneFractionalOrNegative) {
  json doc = valid_doc();
  doc["switches"][3]["zone"] = 1.5;
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.switches[3].zone: expected an integer, got a number"));
  doc["switches"][3]["zone"] = -2;
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.switches[3].zone: out of range: -2"));
}

TEST(LoaderErrors, LinksNotAnArray) {
  json doc = valid_doc();
  doc.erase("capacity_groups");  // they would name links that no longer exist
  doc["links"] = {{"a", "rtsw1:eth1"}};
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.links: expected an array, got an object"));
}

TEST(LoaderErrors, SwitchNotAnObject) {
  json doc = valid_doc();
  doc["switches"].push_back("ctsw9");
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.switches[4]: expected an object, got a string"));
  doc = valid_doc();
  doc["switches"].push_back(json::array());
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.switches[4]: expected an object, got an array"));
}

TEST(LoaderErrors, SpeedAsString) {
  json doc = valid_doc();
  doc["links"][1]["speed_gbps"] = "400";
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.links[1].speed_gbps: expected a number, got a string"));
}

TEST(LoaderErrors, NameAsNumberAndNullTelemetry) {
  json doc = valid_doc();
  doc["switches"][3]["telemetry"] = nullptr;
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.switches[3].telemetry: expected a string, got null"));
  doc = valid_doc();
  doc["links"][1]["a"] = true;
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.links[1].a: expected a string, got a boolean"));
}

TEST(LoaderErrors, InvalidJsonReportsLineAndColumn) {
  // The stray ',' is on line 3, column 16.
  const std::string text = "{\n  \"version\": 1,\n  \"switches\": [,]\n}\n";
  const auto problems = problems_of_text(text, "bad.json");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], ::testing::StartsWith("bad.json: line 3, column 16: invalid JSON: syntax error"));
}

TEST(LoaderErrors, TruncatedJsonReportsWhereItEnds) {
  const std::string text = "{\n  \"switches\": [\n";
  const auto problems = problems_of_text(text, "cut.json");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], ::testing::StartsWith("cut.json: line 3, column 1: invalid JSON: "));
}

TEST(LoaderErrors, EmptyTextIsInvalidJson) {
  const auto problems = problems_of_text("", "empty.json");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], ::testing::StartsWith("empty.json: line 1, column 1: invalid JSON: "));
}

TEST(LoaderErrors, RootNotAnObject) {
  EXPECT_THAT(problems_of_text("[1, 2]"),
              ElementsAre("t.json: $: expected an object with \"switches\" and \"links\", got an array"));
}

TEST(LoaderErrors, MissingRequiredSections) {
  EXPECT_THAT(problems_of_text("{}"), ElementsAre("t.json: $: missing required key \"switches\"",
                                             "t.json: $: missing required key \"links\""));
}

TEST(LoaderErrors, UnsupportedVersion) {
  json doc = valid_doc();
  doc["version"] = 2;
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.version: unsupported version 2 (this build reads version 1)"));
  doc["version"] = "1";
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.version: unsupported version \"1\" (this build reads version 1)"));
}

TEST(LoaderErrors, UnknownTopLevelKeyIsATypo) {
  json doc = valid_doc();
  doc["capcity_groups"] = json::array();
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $: unknown key \"capcity_groups\""));
}

TEST(LoaderErrors, UnknownKeysInsideObjects) {
  json doc = valid_doc();
  doc["links"][1]["speed"] = 400;
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.links[1]: unknown key \"speed\""));
  doc = valid_doc();
  doc["switches"][0]["zonee"] = 1;
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.switches[0]: unknown key \"zonee\""));
  doc = valid_doc();
  doc["switches"][0]["driver"]["uri"] = "x";
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.switches[0].driver: unknown key \"uri\""));
  doc = valid_doc();
  doc["hosts"][0]["nic"] = json::array();
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.hosts[0]: unknown key \"nic\""));
  doc = valid_doc();
  doc["capacity_groups"][1]["flor"] = 0.5;
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.capacity_groups[1]: unknown key \"flor\""));
}

TEST(LoaderErrors, UnknownRole) {
  json doc = valid_doc();
  doc["switches"][3]["role"] = "spine";
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.switches[3].role: unknown role \"spine\" (expected rtsw, ctsw or atsw)"));
  // "host" is a role, but not one a switch can have.
  doc["switches"][3]["role"] = "host";
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.switches[3].role: unknown role \"host\" (expected rtsw, ctsw or atsw)"));
}

TEST(LoaderErrors, UnknownDriverKind) {
  json doc = valid_doc();
  doc["switches"][3]["driver"]["kind"] = "ssh";
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.switches[3].driver.kind: unknown driver kind \"ssh\" "
                                            "(expected jsonrpc, netns or dryrun)"));
}

TEST(LoaderErrors, JsonRpcDriverWithoutUrl) {
  json doc = valid_doc();
  doc["switches"][3]["driver"] = {{"kind", "jsonrpc"}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.switches[3].driver: driver kind \"jsonrpc\" needs a \"url\""));
  doc["switches"][3]["driver"]["url"] = "";
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.switches[3].driver: driver kind \"jsonrpc\" needs a \"url\""));
}

TEST(LoaderErrors, MissingDriverAndDriverNotAnObject) {
  json doc = valid_doc();
  doc["switches"][3].erase("driver");
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.switches[3]: missing required key \"driver\""));
  doc["switches"][3]["driver"] = "dryrun";
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.switches[3].driver: expected an object, got a string"));
}

TEST(LoaderErrors, EndpointWithoutColon) {
  json doc = valid_doc();
  doc["links"][1]["a"] = "host1nic1";
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.links[1].a: endpoint \"host1nic1\" is not written \"device:port\""));
}

TEST(LoaderErrors, EndpointWithEmptyDeviceOrPort) {
  json doc = valid_doc();
  doc["links"][1]["a"] = ":nic1";
  doc["links"][1]["b"] = "rtsw2:";
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.links[1].a: endpoint \":nic1\" is not written \"device:port\"",
                          "t.json: $.links[1].b: endpoint \"rtsw2:\" is not written \"device:port\""));
}

TEST(LoaderErrors, HostNicNotDeclared) {
  json doc = valid_doc();
  doc["links"][1]["a"] = "host1:nic7";
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.links[1].a: host \"host1\" has no NIC \"nic7\""));
}

TEST(LoaderErrors, DuplicateNic) {
  json doc = valid_doc();
  doc["hosts"][0]["nics"].push_back("nic0");
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.hosts[0].nics[2]: duplicate NIC \"nic0\" on host \"host1\""));
}

TEST(LoaderErrors, NicNotAString) {
  json doc = valid_doc();
  doc["hosts"][0]["nics"].push_back(7);
  doc["hosts"][0]["nics"].push_back("");
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.hosts[0].nics[2]: expected a NIC name, got an integer",
                                            "t.json: $.hosts[0].nics[3]: expected a NIC name, got a string"));
}

TEST(LoaderErrors, UnknownLinkInCapacityGroup) {
  json doc = valid_doc();
  doc["capacity_groups"][0]["links"].push_back("rtsw9:eth1");
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.capacity_groups[0].links[2]: unknown link \"rtsw9:eth1\""));
  // A declared port with no link is not a link either.
  doc = valid_doc();
  doc["hosts"][0]["nics"].push_back("nic2");
  doc["capacity_groups"][1]["links"].push_back("host1:nic2");
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.capacity_groups[1].links[2]: unknown link \"host1:nic2\""));
}

TEST(LoaderErrors, GroupLinkNotAString) {
  json doc = valid_doc();
  doc["capacity_groups"][0]["links"][0] = 2;
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.capacity_groups[0].links[0]: expected a link name or "
                                            "\"device:port\", got an integer"));
}

TEST(LoaderErrors, LinkListedTwiceInAGroup) {
  json doc = valid_doc();
  // "rtsw1:eth2" is an endpoint of "up1": the same link twice.
  doc["capacity_groups"][0]["links"].push_back("rtsw1:eth2");
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.capacity_groups[0]: link \"up1\" is listed twice in group "
                                            "\"ctsw1 downlinks\""));
}

TEST(LoaderErrors, RejectedGroupLeavesNoTraceOnTheNextGroup) {
  // The first group is rejected for listing "up1" twice; the second group also contains
  // "up1" (once) and is valid, so exactly one problem must be reported.
  json doc = valid_doc();
  doc["capacity_groups"][0]["links"] = {"up1", "ctsw1:eth2", "up1"};
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.capacity_groups[0]: link \"up1\" is listed twice in group "
                                            "\"ctsw1 downlinks\""));
}

TEST(LoaderErrors, GroupWithoutLinks) {
  json doc = valid_doc();
  doc["capacity_groups"][0]["links"] = json::array();
  EXPECT_THAT(problems_of(doc),
              ElementsAre("t.json: $.capacity_groups[0]: capacity group \"ctsw1 downlinks\" has no links"));
}

TEST(LoaderErrors, DuplicateGroup) {
  json doc = valid_doc();
  doc["capacity_groups"].push_back({{"name", "rtsw1 all"}, {"floor", 0.5}, {"links", {"host1:nic1"}}});
  EXPECT_THAT(problems_of(doc), ElementsAre("t.json: $.capacity_groups[2]: duplicate capacity group \"rtsw1 all\""));
}

TEST(LoaderErrors, FileThatDoesNotExist) {
  testing::TempDir dir;
  const std::string path = dir.file("missing.json");
  try {
    load_topology_file(path);
    FAIL() << "loaded a file that does not exist";
  } catch (const TopologyError& e) {
    EXPECT_THAT(e.problems(), ElementsAre(path + ": cannot open: No such file or directory"));
    EXPECT_EQ(std::string(e.what()), path + ": cannot open: No such file or directory");
  }
}

TEST(LoaderErrors, FileErrorsNameTheFile) {
  testing::TempDir dir;
  const std::string path = dir.file("fabric.json");
  json doc = valid_doc();
  doc["links"][1]["b"] = "nope:eth1";
  testing::write_file(path, doc.dump(2));
  try {
    load_topology_file(path);
    FAIL() << "loaded a broken file";
  } catch (const TopologyError& e) {
    EXPECT_THAT(e.problems(), ElementsAre(path + ": $.links[1].b: unknown switch \"nope\" (no switch or host has "
                                                 "that name)"));
  }
}

TEST(LoaderErrors, SeveralProblemsAreAllReported) {
  json doc = valid_doc();
  doc["switches"][3]["role"] = "spine";                  // switches
  doc["hosts"][0]["nics"].push_back("nic1");             // hosts
  doc["links"][1]["speed_gbps"] = -1;                    // links
  doc["links"].push_back({{"a", "x"}, {"b", "rtsw1:eth9"}, {"speed_gbps", 400}});
  doc["capacity_groups"][1]["floor"] = 0;                // groups
  doc["oops"] = 1;                                       // top level
  const auto problems = problems_of(doc);
  EXPECT_THAT(problems, ElementsAre("t.json: $: unknown key \"oops\"",
                                    "t.json: $.switches[3].role: unknown role \"spine\" (expected rtsw, ctsw or atsw)",
                                    "t.json: $.hosts[0].nics[2]: duplicate NIC \"nic1\" on host \"host1\"",
                                    "t.json: $.links[1].speed_gbps: speed must be a positive number of Gb/s, got -1",
                                    "t.json: $.links[4].a: endpoint \"x\" is not written \"device:port\"",
                                    "t.json: $.capacity_groups[1].floor: floor must be a fraction in (0, 1], got 0"));
  // what() carries them all, one a line.
  try {
    parse_topology(doc.dump(), kSource);
  } catch (const TopologyError& e) {
    std::string joined;
    for (const auto& p : problems) joined += (joined.empty() ? "" : "\n") + p;
    EXPECT_EQ(std::string(e.what()), joined);
  }
}

TEST(LoaderErrors, ManyProblemsAreSummarisedInWhat) {
  json doc = valid_doc();
  for (int i = 0; i < 25; ++i) doc["switches"].push_back(i);
  try {
    parse_topology(doc.dump(), kSource);
    FAIL() << "accepted 25 bad switches";
  } catch (const TopologyError& e) {
    EXPECT_EQ(e.problems().size(), 25u);
    EXPECT_EQ(e.problems().back(), "t.json: $.switches[28]: expected an object, got an integer");
    EXPECT_THAT(std::string(e.what()), HasSubstr("\n... and 5 more problems"));
    EXPECT_THAT(std::string(e.what()), ::testing::Not(HasSubstr("$.switches[28]")));
  }
}

// ---------------------------------------------------------------------------------------
// Round trip

TEST(Loader, RoundTripThroughJsonKeepsEverything) {
  json doc = valid_doc();
  doc["hosts"][0]["nics"].push_back("nic2");  // a NIC with no link survives too
  const Topology a = parse_topology(doc.dump(), kSource);
  const json out = topology_to_json(a);
  const Topology b = parse_topology(out.dump(), "roundtrip.json");
  ASSERT_EQ(a.devices().size(), b.devices().size());
  ASSERT_EQ(a.ports().size(), b.ports().size());
  ASSERT_EQ(a.links().size(), b.links().size());
  ASSERT_EQ(a.groups().size(), b.groups().size());
  for (DeviceId d = 0; d < a.devices().size(); ++d) {
    EXPECT_EQ(a.device(d).name, b.device(d).name);
    EXPECT_EQ(a.device(d).role, b.device(d).role);
    EXPECT_EQ(a.device(d).zone, b.device(d).zone);
    EXPECT_EQ(a.device(d).plane, b.device(d).plane);
    EXPECT_EQ(a.device(d).telemetry_url, b.device(d).telemetry_url);
    EXPECT_EQ(a.device(d).driver_kind, b.device(d).driver_kind);
    EXPECT_EQ(a.device(d).driver_url, b.device(d).driver_url);
  }
  for (PortId p = 0; p < a.ports().size(); ++p) EXPECT_EQ(a.endpoint_name(p), b.endpoint_name(p));
  for (LinkId l = 0; l < a.links().size(); ++l) {
    EXPECT_EQ(a.link(l).name, b.link(l).name);
    EXPECT_EQ(a.endpoint_name(a.link(l).a), b.endpoint_name(b.link(l).a));
    EXPECT_EQ(a.endpoint_name(a.link(l).b), b.endpoint_name(b.link(l).b));
    EXPECT_DOUBLE_EQ(a.link(l).speed_gbps, b.link(l).speed_gbps);
  }
  for (GroupId g = 0; g < a.groups().size(); ++g) {
    EXPECT_EQ(a.group(g).name, b.group(g).name);
    EXPECT_EQ(a.group(g).kind, b.group(g).kind);
    EXPECT_DOUBLE_EQ(a.group(g).floor, b.group(g).floor);
    EXPECT_EQ(a.group(g).links, b.group(g).links);
    EXPECT_DOUBLE_EQ(a.group(g).total_gbps, b.group(g).total_gbps);
  }
  EXPECT_DOUBLE_EQ(a.total_capacity_gbps(), b.total_capacity_gbps());
  // A second round trip is a fixed point.
  EXPECT_EQ(topology_to_json(b), out);
}

TEST(Loader, RoundTripOmitsDefaultLinkNames) {
  const Topology t = parse_topology(valid_doc().dump(), kSource);
  const json out = topology_to_json(t);
  EXPECT_EQ(out["version"], 1);
  ASSERT_EQ(out["links"].size(), 4u);
  EXPECT_FALSE(out["links"][0].contains("name"));
  EXPECT_EQ(out["links"][2]["name"], "up1");
  EXPECT_FALSE(out["switches"][3].contains("zone"));
  EXPECT_EQ(out["switches"][2]["plane"], 1);
  EXPECT_THAT(out["hosts"][0]["nics"], ::testing::Eq(json({"nic0", "nic1"})));
}

}  // namespace
}  // namespace medic::fabric
