#include "remediation/capacity_config.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fabric/generator.h"
#include "fabric/loader.h"
#include "tests/support/testing.h"

namespace medic::remediation {
namespace {

using Floors = std::map<std::string, double, std::less<>>;

std::string capacity_error_of(const std::string& text) {
  try {
    CapacityConfig::parse(text, "c.json");
  } catch (const CapacityConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(CapacityConfig, Defaults) {
  const CapacityConfig c = CapacityConfig::parse("{}", "c.json");
  EXPECT_EQ(c.floors, (Floors{{"plane", 0.85}, {"spine_downlinks", 0.75}, {"spine_uplinks", 0.75}, {"tor_uplinks", 0.75}}));
  EXPECT_EQ(c.budget_fabric, 64);
  EXPECT_EQ(c.budget_per_switch, 2);
  EXPECT_EQ(c.budget().fabric, 64);
  EXPECT_EQ(c.budget().per_switch, 2);
}

TEST(CapacityConfig, ShippedFileLoadsAndMatchesTheDefaults) {
  const CapacityConfig f = CapacityConfig::load_file(testing::source_dir() + "/data/capacity.json");
  const CapacityConfig d;
  EXPECT_EQ(f.floors, d.floors);
  EXPECT_EQ(f.budget_fabric, d.budget_fabric);
  EXPECT_EQ(f.budget_per_switch, d.budget_per_switch);
}

TEST(CapacityConfig, FloorsNamedChangeTheirKindOthersKeepTheDefault) {
  const CapacityConfig c = CapacityConfig::parse(
      R"({"version": 1, "comment": "x", "floors": {"comment": "y", "tor_uplinks": 0.5, "plane": null},
          "budget": {"comment": "z", "fabric": 3}})",
      "c.json");
  EXPECT_EQ(c.floors, (Floors{{"spine_downlinks", 0.75}, {"spine_uplinks", 0.75}, {"tor_uplinks", 0.5}}));
  EXPECT_EQ(c.budget_fabric, 3);
  EXPECT_EQ(c.budget_per_switch, 2);
  const CapacityConfig one = CapacityConfig::parse(R"({"floors": {"spine_uplinks": 1}, "budget": {"per_switch": 1000000}})", "c.json");
  EXPECT_DOUBLE_EQ(one.floors.at("spine_uplinks"), 1.0);
  EXPECT_EQ(one.budget_per_switch, 1000000);
}

TEST(CapacityConfig, EveryParseErrorIsExact) {
  const std::pair<const char*, const char*> cases[] = {
      {"[]", "c.json: $: expected an object, got an array"},
      {"3", "c.json: $: expected an object, got an integer"},
      {R"({"floor": {}})", "c.json: $: unknown key \"floor\""},
      {R"({"version": 2})", "c.json: $.version: unsupported version 2 (this build reads version 1)"},
      {R"({"version": "1"})", "c.json: $.version: unsupported version \"1\" (this build reads version 1)"},
      {R"({"floors": [0.75]})", "c.json: $.floors: expected an object of group kind: floor, got an array"},
      {R"({"floors": {"tor": 0.75}})",
       "c.json: $.floors: unknown group kind \"tor\" (tor_uplinks, spine_downlinks, spine_uplinks, plane)"},
      {R"({"floors": {"plane": 0}})",
       "c.json: $.floors.plane: a floor must be a fraction in (0, 1] (or null: no such groups), got 0"},
      {R"({"floors": {"plane": 1.5}})",
       "c.json: $.floors.plane: a floor must be a fraction in (0, 1] (or null: no such groups), got 1.5"},
      {R"({"floors": {"tor_uplinks": "0.75"}})",
       "c.json: $.floors.tor_uplinks: a floor must be a fraction in (0, 1] (or null: no such groups), got \"0.75\""},
      {R"({"floors": {"tor_uplinks": -0.5}})",
       "c.json: $.floors.tor_uplinks: a floor must be a fraction in (0, 1] (or null: no such groups), got -0.5"},
      {R"({"budget": 64})", "c.json: $.budget: expected an object, got an integer"},
      {R"({"budget": {"switch": 1}})", "c.json: $.budget: unknown key \"switch\" (fabric, per_switch)"},
      {R"({"budget": {"fabric": 0}})", "c.json: $.budget.fabric: expected a whole number of links in [1, 1000000], got 0"},
      {R"({"budget": {"fabric": 1000001}})",
       "c.json: $.budget.fabric: expected a whole number of links in [1, 1000000], got 1000001"},
      {R"({"budget": {"per_switch": 2.0}})",
       "c.json: $.budget.per_switch: expected a whole number of links in [1, 1000000], got 2.0"},
      {R"({"budget": {"per_switch": -2}})",
       "c.json: $.budget.per_switch: expected a whole number of links in [1, 1000000], got -2"},
      {R"({"budget": {"per_switch": null}})",
       "c.json: $.budget.per_switch: expected a whole number of links in [1, 1000000], got null"},
  };
  for (const auto& [text, message] : cases) EXPECT_EQ(capacity_error_of(text), message) << text;
}

TEST(CapacityConfig, SyntaxErrorsNameFileLineAndColumn) {
  const std::string e = capacity_error_of("{\n \"budget\": {\"fabric\": }\n}");
  EXPECT_EQ(e.rfind("c.json: line 2, column 23: invalid JSON: ", 0), 0u) << e;
}

TEST(CapacityConfig, UnreadableFileIsNamed) {
  try {
    CapacityConfig::load_file("/nonexistent/capacity.json");
    FAIL() << "no error";
  } catch (const CapacityConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/capacity.json: cannot open: No such file or directory");
  }
}

// ---------------------------------------------------------------------------------------
// Derived groups and how they combine with the topology's own.

std::map<std::string, int> kinds(const fabric::Topology& t) {
  std::map<std::string, int> out;
  for (const auto& g : t.groups()) ++out[g.kind];
  return out;
}

std::vector<std::string> link_names(const fabric::Topology& t, const std::string& group) {
  std::vector<std::string> out;
  for (const auto l : t.group(*t.find_group(group)).links) out.push_back(t.link(l).name);
  return out;
}

class Derived : public ::testing::Test {
 protected:
  fabric::Topology demo = fabric::generate_clos(*fabric::preset("demo"));
};

TEST_F(Derived, DemoGetsEveryKindOnceAndKeepsEveryId) {
  const fabric::Topology t = with_derived_groups(demo, CapacityConfig{});
  // The generator's own ToR groups are the derived ones: not doubled.
  EXPECT_EQ(kinds(t), (std::map<std::string, int>{{"plane", 4}, {"spine_downlinks", 8}, {"spine_uplinks", 8}, {"tor_uplinks", 8}}));
  // Devices, ports and links and the topology's groups are where they were.
  nlohmann::json a = fabric::topology_to_json(demo), b = fabric::topology_to_json(t);
  a.erase("capacity_groups");
  b.erase("capacity_groups");
  EXPECT_EQ(a, b);
  for (fabric::GroupId g = 0; g < demo.groups().size(); ++g) {
    EXPECT_EQ(t.group(g).name, demo.group(g).name);
    EXPECT_EQ(t.group(g).links, demo.group(g).links);
  }
  EXPECT_EQ(link_names(t, "ctsw001 downlinks"),
            (std::vector<std::string>{"rtsw0001:eth5--ctsw001:eth1", "rtsw0002:eth5--ctsw001:eth2",
                                      "rtsw0003:eth5--ctsw001:eth3", "rtsw0004:eth5--ctsw001:eth4"}));
  const auto& up = t.group(*t.find_group("ctsw001 uplinks"));
  EXPECT_EQ(up.kind, "spine_uplinks");
  EXPECT_EQ(up.links.size(), 2u);
  EXPECT_DOUBLE_EQ(up.floor, 0.75);
  // A plane: the uplinks of its spine in each zone.
  int plane_links = 0;
  for (const auto& g : t.groups()) {
    if (g.kind != "plane") continue;
    EXPECT_EQ(g.links.size(), 4u) << g.name;
    EXPECT_DOUBLE_EQ(g.floor, 0.85);
    plane_links += static_cast<int>(g.links.size());
  }
  EXPECT_EQ(plane_links, 16);
  // Every spine uplink is in exactly one plane and its spine's uplinks.
  for (const auto l : up.links) EXPECT_EQ(t.groups_of(l).size(), 2u);
}

TEST_F(Derived, NoFloorsNoDerivedGroups) {
  CapacityConfig c;
  c.floors.clear();
  const fabric::Topology t = with_derived_groups(demo, c);
  EXPECT_EQ(fabric::topology_to_json(t), fabric::topology_to_json(demo));
}

TEST_F(Derived, TheHigherFloorOfTopologyAndConfigurationHolds) {
  CapacityConfig stricter;
  stricter.floors["tor_uplinks"] = 0.9;
  EXPECT_DOUBLE_EQ(with_derived_groups(demo, stricter).group(*demo.find_group("rtsw0001 uplinks")).floor, 0.9);
  CapacityConfig looser;
  looser.floors["tor_uplinks"] = 0.5;
  EXPECT_DOUBLE_EQ(with_derived_groups(demo, looser).group(*demo.find_group("rtsw0001 uplinks")).floor, 0.75);
  CapacityConfig none;
  none.floors.erase("tor_uplinks");
  EXPECT_DOUBLE_EQ(with_derived_groups(demo, none).group(*demo.find_group("rtsw0001 uplinks")).floor, 0.75);
}

// A topology file whose own groups use other names for the same links, and one whose group
// takes a derived name for other links.
std::string demo_with_groups(const fabric::Topology& demo, const nlohmann::json& groups) {
  nlohmann::json j = fabric::topology_to_json(demo);
  j["capacity_groups"] = groups;
  return j.dump();
}

TEST_F(Derived, SameLinksUnderAnotherNameAreOneGroup) {
  const auto file = demo_with_groups(
      demo, nlohmann::json::array({{{"name", "tor one up"},
                                    {"floor", 0.6},
                                    {"links", {"rtsw0001:eth8", "rtsw0001:eth7", "rtsw0001:eth6", "rtsw0001:eth5"}}},
                                   {{"name", "two of tor one"}, {"floor", 0.5}, {"links", {"rtsw0001:eth5", "rtsw0001:eth6"}}}}));
  const fabric::Topology own = fabric::parse_topology(file, "t.json");
  CapacityConfig c;
  c.floors["tor_uplinks"] = 0.8;
  const fabric::Topology t = with_derived_groups(own, c);
  EXPECT_FALSE(t.find_group("rtsw0001 uplinks").has_value());
  const auto& g = t.group(*t.find_group("tor one up"));
  EXPECT_EQ(g.kind, "custom");
  EXPECT_DOUBLE_EQ(g.floor, 0.8);
  // A subset is a group of its own.
  EXPECT_DOUBLE_EQ(t.group(*t.find_group("two of tor one")).floor, 0.5);
  EXPECT_DOUBLE_EQ(t.group(*t.find_group("rtsw0002 uplinks")).floor, 0.8);
}

TEST_F(Derived, DerivedNameForOtherLinksIsAnError) {
  const auto file = demo_with_groups(
      demo, nlohmann::json::array({{{"name", "ctsw001 uplinks"}, {"floor", 0.5}, {"links", {"rtsw0001:eth5"}}}}));
  const fabric::Topology own = fabric::parse_topology(file, "t.json");
  try {
    with_derived_groups(own, CapacityConfig{});
    FAIL() << "no error";
  } catch (const CapacityConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "capacity group \"ctsw001 uplinks\" of the topology has 1 link, not the 2 links of the spine_uplinks "
              "group derived under that name: list the same links or rename it");
  }
  // Not derived, no conflict.
  CapacityConfig c;
  c.floors.erase("spine_uplinks");
  EXPECT_EQ(with_derived_groups(own, c).group(*own.find_group("ctsw001 uplinks")).links.size(), 1u);
}

TEST(DerivedZones, SpineWithToRsOfTwoZonesGetsOneDownlinkGroupPerZone) {
  fabric::Topology::Builder b;
  auto dev = [&](const char* name, fabric::Role role, int zone) {
    fabric::Device d;
    d.name = name;
    d.role = role;
    d.zone = zone;
    ASSERT_EQ(b.add_device(d), "");
  };
  dev("t1", fabric::Role::rtsw, 1);
  dev("t2", fabric::Role::rtsw, 2);
  dev("t3", fabric::Role::rtsw, 2);
  dev("s", fabric::Role::ctsw, -1);
  ASSERT_EQ(b.add_link("t1", "up", "s", "d1", 400), "");
  ASSERT_EQ(b.add_link("t2", "up", "s", "d2", 400), "");
  ASSERT_EQ(b.add_link("t3", "up", "s", "d3", 400), "");
  const fabric::Topology t = with_derived_groups(std::move(b).build(), CapacityConfig{});
  EXPECT_EQ(link_names(t, "s downlinks zone 1"), std::vector<std::string>{"t1:up--s:d1"});
  EXPECT_EQ(link_names(t, "s downlinks zone 2"), (std::vector<std::string>{"t2:up--s:d2", "t3:up--s:d3"}));
  EXPECT_EQ(link_names(t, "t1 uplinks"), std::vector<std::string>{"t1:up--s:d1"});
  EXPECT_FALSE(t.find_group("s uplinks").has_value());  // no aggregation above: no group
}

}  // namespace
}  // namespace medic::remediation
