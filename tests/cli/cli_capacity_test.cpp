// `medic capacity show` and `medic capacity whatif` without a database (every link up and
// undrained), run in process: output, JSON, exit statuses and every bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "fabric/generator.h"
#include "fabric/loader.h"
#include "tests/cli/cli_fixture.h"
#include "tests/support/testing.h"

namespace medic::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using nlohmann::json;

// The table row that starts with `first` (a group or link name, which has spaces), split
// into the name and the words after it.
std::vector<std::string> row(const std::string& table, const std::string& first) {
  std::vector<std::vector<std::string>> found;
  for (const auto& l : lines_of(table)) {
    if (l.rfind(first + "  ", 0) != 0) continue;
    std::vector<std::string> w{first};
    std::istringstream in(l.substr(first.size()));
    for (std::string x; in >> x;) w.push_back(x);
    found.push_back(w);
  }
  if (found.size() != 1) return {"<" + std::to_string(found.size()) + " rows for " + first + ">"};
  return found.front();
}

class CliCapacity : public ::testing::Test {
 protected:
  void SetUp() override {
    topo_file = dir.file("demo.json");
    testing::write_file(topo_file, fabric::topology_to_json(fabric::generate_clos(*fabric::preset("demo"))).dump());
  }
  std::string capacity_file(const std::string& text) {
    const std::string path = dir.file("capacity.json");
    testing::write_file(path, text);
    return path;
  }
  ScopedUnset no_db{"MEDIC_DB_URL"};  // no database: every link in service
  testing::TempDir dir;
  std::string topo_file;
};

TEST_F(CliCapacity, ShowEveryGroup) {
  const Ran r = medic({"capacity", "show", "--topology", topo_file});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto ls = lines_of(r.out);
  ASSERT_GE(ls.size(), 3u);
  EXPECT_EQ(ls[0], "capacity groups of " + topo_file +
                       ": 28 (plane 4, spine_downlinks 8, spine_uplinks 8, tor_uplinks 8)");
  EXPECT_EQ(ls[1], "link states: none (no --db): every link counted up and undrained");
  EXPECT_EQ(ls[2], "GROUP              KIND             LINKS  GBPS       IN SERVICE  FLOOR  HEADROOM");
  EXPECT_THAT(row(r.out, "rtsw0001 uplinks"), ElementsAre("rtsw0001 uplinks", "tor_uplinks", "4/4", "1600/1600",
                                                          "100.0%", "75.0%", "1"));
  EXPECT_THAT(row(r.out, "ctsw005 downlinks"), ElementsAre("ctsw005 downlinks", "spine_downlinks", "4/4",
                                                           "1600/1600", "100.0%", "75.0%", "1"));
  EXPECT_THAT(row(r.out, "ctsw002 uplinks"),
              ElementsAre("ctsw002 uplinks", "spine_uplinks", "2/2", "800/800", "100.0%", "75.0%", "0"));
  EXPECT_THAT(row(r.out, "plane 1"), ElementsAre("plane 1", "plane", "4/4", "1600/1600", "100.0%", "85.0%", "0"));
  EXPECT_EQ(ls.size(), 3u + 28u + 3u);
  EXPECT_EQ(ls[ls.size() - 2], "drain budget: 0 of 64 links drained or draining fabric-wide; at most 2 per switch");
  EXPECT_EQ(ls.back(), "busiest switches: none (no link drained or draining)");
}

TEST_F(CliCapacity, ShowOneGroupWithItsLinks) {
  const Ran r = medic({"capacity", "show", "--topology", topo_file, "--group", "rtsw0003 uplinks"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "capacity groups of " + topo_file + ": 28 (plane 4, spine_downlinks 8, spine_uplinks 8, tor_uplinks 8)\n"
            "link states: none (no --db): every link counted up and undrained\n"
            "GROUP             KIND         LINKS  GBPS       IN SERVICE  FLOOR  HEADROOM\n"
            "rtsw0003 uplinks  tor_uplinks  4/4    1600/1600  100.0%      75.0%  1\n"
            "\n"
            "LINK                         GBPS  STATE\n"
            "rtsw0003:eth5--ctsw001:eth3  400   in service\n"
            "rtsw0003:eth6--ctsw002:eth3  400   in service\n"
            "rtsw0003:eth7--ctsw003:eth3  400   in service\n"
            "rtsw0003:eth8--ctsw004:eth3  400   in service\n"
            "\n"
            "drain budget: 0 of 64 links drained or draining fabric-wide; at most 2 per switch\n"
            "busiest switches: none (no link drained or draining)\n");
}

TEST_F(CliCapacity, ShowJson) {
  const Ran r = medic({"capacity", "show", "--topology", topo_file, "--group", "ctsw001 uplinks", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["topology"], topo_file);
  EXPECT_EQ(j["states"]["source"], nullptr);
  ASSERT_EQ(j["groups"].size(), 1u);
  const json& g = j["groups"][0];
  EXPECT_EQ(g["name"], "ctsw001 uplinks");
  EXPECT_EQ(g["kind"], "spine_uplinks");
  EXPECT_EQ(g["links"], 2);
  EXPECT_EQ(g["links_in_service"], 2);
  EXPECT_EQ(g["gbps"], 800.0);
  EXPECT_EQ(g["gbps_in_service"], 800.0);
  EXPECT_EQ(g["fraction"], 1.0);
  EXPECT_EQ(g["floor"], 0.75);
  EXPECT_EQ(g["below_floor"], false);
  EXPECT_EQ(g["headroom"], 0);
  ASSERT_EQ(g["link_states"].size(), 2u);
  EXPECT_EQ(g["link_states"][0]["in_service"], true);
  EXPECT_EQ(j["budget"]["fabric"]["used"], 0);
  EXPECT_EQ(j["budget"]["fabric"]["limit"], 64);
  EXPECT_EQ(j["budget"]["per_switch_limit"], 2);
  EXPECT_EQ(j["budget"]["busiest_switches"], json::array());
  // Without --group: every group, no link states.
  const Ran all = medic({"capacity", "show", "--topology", topo_file, "--json"});
  ASSERT_EQ(all.code, 0) << all.err;
  const json a = json::parse(all.out);
  EXPECT_EQ(a["groups"].size(), 28u);
  EXPECT_FALSE(a["groups"][0].contains("link_states"));
}

TEST_F(CliCapacity, ShowWithAnotherCapacityFile) {
  const std::string cap = capacity_file(R"({"floors": {"tor_uplinks": 0.5, "plane": null}, "budget": {"fabric": 5, "per_switch": 1}})");
  const Ran r = medic({"capacity", "show", "--topology", topo_file, "--capacity", cap});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(": 24 (spine_downlinks 8, spine_uplinks 8, tor_uplinks 8)\n"));
  // The topology file's own floor (0.75) is higher than the configuration's (0.5): it holds.
  EXPECT_THAT(row(r.out, "rtsw0001 uplinks"), ElementsAre("rtsw0001 uplinks", "tor_uplinks", "4/4", "1600/1600",
                                                          "100.0%", "75.0%", "1"));
  EXPECT_THAT(r.out, HasSubstr("drain budget: 0 of 5 links drained or draining fabric-wide; at most 1 per switch\n"));
}

TEST_F(CliCapacity, ShowBadInputs) {
  Ran r = medic({"capacity", "show", "--topology", topo_file, "--group", "rtsw0099 uplinks"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "medic: --group \"rtsw0099 uplinks\": no such capacity group in " + topo_file +
                       " (groups are named like \"rtsw0001 uplinks\"; medic capacity show lists them)\n");

  r = medic({"capacity", "show", "--topology", dir.file("missing.json")});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr(dir.file("missing.json") + ": cannot open"));

  const std::string bad = dir.file("bad.json");
  testing::write_file(bad, R"({"switches": [], "links": [], "capacity_groups": [{"name": "g", "floor": 2, "links": []}]})");
  r = medic({"capacity", "show", "--topology", bad});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, bad + ": $.capacity_groups[0].floor: floor must be a fraction in (0, 1], got 2\nmedic: " + bad +
                       ": 1 problem\n");

  const std::string cap = capacity_file(R"({"budget": {"fabric": 0}})");
  r = medic({"capacity", "show", "--topology", topo_file, "--capacity", cap});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "medic: " + cap + ": $.budget.fabric: expected a whole number of links in [1, 1000000], got 0\n");

  r = medic({"capacity", "show"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--topology"));

  r = medic({"capacity"});
  EXPECT_EQ(r.code, 2);
}

TEST_F(CliCapacity, WhatIfAllowed) {
  const Ran r = medic({"capacity", "whatif", "--topology", topo_file, "--drain", "rtsw0001:eth5"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
            "what if 1 link was drained:\n"
            "  rtsw0001:eth5--ctsw001:eth1 (in service)\n"
            "link states: none (no --db): every link counted up and undrained\n"
            "GROUP              KIND             BEFORE        AFTER        FLOOR  RESULT\n"
            "rtsw0001 uplinks   tor_uplinks      100.0% (4/4)  75.0% (3/4)  75.0%  ok\n"
            "ctsw001 downlinks  spine_downlinks  100.0% (4/4)  75.0% (3/4)  75.0%  ok\n"
            "drain budget: 0 -> 1 of 64 links fabric-wide; per switch (at most 2): rtsw0001 0 -> 1, ctsw001 0 -> 1\n"
            "allowed: every group stays at or above its floor and the budget holds\n");
}

TEST_F(CliCapacity, WhatIfRefusedListsEveryProblem) {
  const std::string cap = capacity_file(R"({"budget": {"fabric": 2, "per_switch": 1}})");
  const Ran r = medic({"capacity", "whatif", "--topology", topo_file, "--capacity", cap, "--drain",
                       "rtsw0003:eth5, rtsw0003:eth6--ctsw002:eth3,ctsw001:eth5"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err, "");
  const auto ls = lines_of(r.out);
  EXPECT_EQ(ls[0], "what if 3 links were drained:");
  EXPECT_THAT(row(r.out, "rtsw0003 uplinks"), ElementsAre("rtsw0003 uplinks", "tor_uplinks", "100.0%", "(4/4)",
                                                          "50.0%", "(2/4)", "75.0%", "BREAKS", "FLOOR"));
  EXPECT_THAT(row(r.out, "ctsw001 uplinks"), ElementsAre("ctsw001 uplinks", "spine_uplinks", "100.0%", "(2/2)",
                                                         "50.0%", "(1/2)", "75.0%", "BREAKS", "FLOOR"));
  EXPECT_THAT(r.out, HasSubstr("drain budget: 0 -> 3 of 2 links fabric-wide; per switch (at most 1): "));
  EXPECT_THAT(r.out, HasSubstr("rtsw0003 0 -> 2 (OVER)"));
  EXPECT_THAT(r.out, HasSubstr("ctsw001 0 -> 2 (OVER)"));
  const std::string tail = r.out.substr(r.out.find("refused: "));
  // atsw01 gets one, its limit: not a problem.
  EXPECT_THAT(r.out, HasSubstr("atsw01 0 -> 1\n"));
  EXPECT_THAT(lines_of(tail), ElementsAre("refused: 6 problems", "  rtsw0003 uplinks would fall to 50.0% < floor 75.0%",
                                          "  ctsw001 uplinks would fall to 50.0% < floor 75.0%",
                                          "  plane 1 would fall to 75.0% < floor 85.0%",
                                          "  drain budget: 3 links drained or draining fabric-wide > limit 2",
                                          "  drain budget on rtsw0003: 2 links drained or draining > limit 1 per switch",
                                          "  drain budget on ctsw001: 2 links drained or draining > limit 1 per switch"));
}

TEST_F(CliCapacity, WhatIfJson) {
  const Ran r = medic({"capacity", "whatif", "--topology", topo_file, "--drain", "rtsw0003:eth5,rtsw0003:eth6", "--json"});
  EXPECT_EQ(r.code, 1) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["allowed"], false);
  ASSERT_EQ(j["links"].size(), 2u);
  EXPECT_EQ(j["links"][0]["link"], "rtsw0003:eth5--ctsw001:eth3");
  EXPECT_EQ(j["links"][0]["state"], "in service");
  EXPECT_EQ(j["links"][0]["changes"], true);
  ASSERT_EQ(j["groups"].size(), 3u);
  const json& g = j["groups"][0];
  EXPECT_EQ(g["name"], "rtsw0003 uplinks");
  EXPECT_EQ(g["links_before"], 4);
  EXPECT_EQ(g["links_after"], 2);
  EXPECT_EQ(g["before"], 1.0);
  EXPECT_EQ(g["after"], 0.5);
  EXPECT_EQ(g["floor"], 0.75);
  EXPECT_EQ(g["breaks_floor"], true);
  EXPECT_EQ(j["groups"][1]["name"], "ctsw001 downlinks");
  EXPECT_EQ(j["groups"][1]["breaks_floor"], false);
  EXPECT_EQ(j["budget"]["fabric"], json({{"before", 0}, {"after", 2}, {"limit", 64}}));
  EXPECT_EQ(j["budget"]["switches"][0], json({{"name", "rtsw0003"}, {"before", 0}, {"after", 2}, {"over", false}}));
  EXPECT_EQ(j["problems"], json::array({"rtsw0003 uplinks would fall to 50.0% < floor 75.0%"}));

  const Ran ok = medic({"capacity", "whatif", "--topology", topo_file, "--drain", "host0001:nic0", "--json"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(json::parse(ok.out)["groups"], json::array());
  EXPECT_EQ(json::parse(ok.out)["problems"], json::array());
}

TEST_F(CliCapacity, WhatIfOfALinkInNoGroup) {
  const Ran r = medic({"capacity", "whatif", "--topology", topo_file, "--drain", "host0002:nic1"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("no capacity group changes\n"));
  EXPECT_THAT(r.out, HasSubstr("drain budget: 0 -> 1 of 64 links fabric-wide; per switch (at most 2): rtsw0002 0 -> 1\n"));
}

TEST_F(CliCapacity, WhatIfBadDrainLists) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "medic: --drain: no links given (L1,L2,... by name or either end as device:port)\n"},
      {" , ", "medic: --drain: no links given (L1,L2,... by name or either end as device:port)\n"},
      {"rtsw0001:eth5,,rtsw0002:eth5", "medic: --drain: item 2 is empty\n"},
      {"rtsw0001:eth5,", "medic: --drain: item 2 is empty\n"},
      {"rtsw0001:eth99", "medic: --drain: unknown link \"rtsw0001:eth99\" (a link's name, or either end as device:port)\n"},
      {"rtsw0001:eth5,rtsw0001:eth5", "medic: --drain: \"rtsw0001:eth5\" is listed twice\n"},
      {"rtsw0001:eth5,ctsw001:eth1",
       "medic: --drain: \"rtsw0001:eth5\" and \"ctsw001:eth1\" are the same link \"rtsw0001:eth5--ctsw001:eth1\"\n"},
      {"nope,rtsw0001:eth5,rtsw0001:eth5--ctsw001:eth1",
       "medic: --drain: unknown link \"nope\" (a link's name, or either end as device:port)\n"
       "medic: --drain: \"rtsw0001:eth5\" and \"rtsw0001:eth5--ctsw001:eth1\" are the same link "
       "\"rtsw0001:eth5--ctsw001:eth1\"\n"},
  };
  for (const auto& [list, message] : cases) {
    const Ran r = medic({"capacity", "whatif", "--topology", topo_file, "--drain", list});
    EXPECT_EQ(r.code, 2) << list;
    EXPECT_EQ(r.out, "") << list;
    EXPECT_EQ(r.err, message) << list;
  }
}

TEST_F(CliCapacity, WhatIfTroubleIsExitTwoNotOne) {
  // 1 means "refused"; anything that stops an answer is 2.
  Ran r = medic({"capacity", "whatif", "--topology", dir.file("missing.json"), "--drain", "a:b"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("cannot open"));
  r = medic({"capacity", "whatif", "--topology", topo_file, "--capacity", dir.file("missing.json"), "--drain", "a:b"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "medic: " + dir.file("missing.json") + ": cannot open: No such file or directory\n");
  r = medic({"capacity", "whatif", "--topology", topo_file});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--drain is required"));
  const std::string url = "postgresql://medic@127.0.0.1:" + std::to_string(testing::closed_port()) + "/none";
  r = medic({"capacity", "whatif", "--topology", topo_file, "--drain", "rtsw0001:eth5", "--db", url});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("medic: cannot connect to PostgreSQL at postgresql://medic@127.0.0.1:"));
  r = medic({"capacity", "show", "--topology", topo_file, "--db", url});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("medic: cannot connect to PostgreSQL at postgresql://medic@127.0.0.1:"));
}

}  // namespace
}  // namespace medic::cli
