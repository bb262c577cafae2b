// `medic capacity show|whatif --db`: the drain and oper states medicd records in the links
// table, read into the capacity view; against a fresh PostgreSQL database per test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "db/capacity_states.h"
#include "tests/db/all_stores.h"
#include "fabric/generator.h"
#include "fabric/loader.h"
#include "tests/cli/cli_fixture.h"
#include "tests/support/testing.h"

namespace medic::cli {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

class CliCapacityDb : public CliDbTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(CliDbTest::SetUp());
    topo_file = dir.file("demo.json");
    testing::write_file(topo_file, fabric::topology_to_json(topo_).dump());
  }
  // Sets a link's recorded states as medicd would.
  void set(const std::string& ref, const std::string& drain, const std::string& oper) {
    tdb_.exec("UPDATE links SET drain_state = '" + drain + "', oper_state = '" + oper + "' WHERE name = '" + link_name(ref) +
             "'");
  }

  testing::TempDir dir;
  std::string topo_file;
};

TEST_F(CliCapacityDb, ReadsOnlyLinksNotPlainlyInService) {
  tdb_.exec("UPDATE links SET oper_state = 'up'");
  set("rtsw0001:eth5", "drained", "up");
  set("rtsw0002:eth6", "draining", "up");
  set("rtsw0003:eth7", "undrained", "down");
  set("rtsw0004:eth8", "undraining", "unknown");
  const auto rows = db::read_link_capacity_states(tdb_.url());
  ASSERT_TRUE(rows.ok()) << rows.error();
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[0].link, link_name("rtsw0001:eth5"));
  EXPECT_EQ((*rows)[0].drain_state, "drained");
  EXPECT_EQ((*rows)[0].oper_state, "up");
  EXPECT_EQ((*rows)[2].link, link_name("rtsw0003:eth7"));
  EXPECT_EQ((*rows)[2].oper_state, "down");
  EXPECT_EQ((*rows)[3].drain_state, "undraining");
}

TEST_F(CliCapacityDb, ShowCountsDrainedDrainingAndDownLinks) {
  tdb_.exec("UPDATE links SET oper_state = 'up'");
  set("rtsw0003:eth5", "drained", "up");
  set("rtsw0003:eth6", "undrained", "down");
  set("rtsw0001:eth5", "draining", "up");
  set("rtsw0002:eth5", "undraining", "down");
  const Ran r = medic({"capacity", "show", "--topology", topo_file, "--group", "rtsw0003 uplinks", "--db", tdb_.url()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("link states: " + db::redact_url(tdb_.url()) + ": 2 drained, 1 draining, 2 down\n"));
  EXPECT_THAT(r.out, HasSubstr("rtsw0003 uplinks  tor_uplinks  2/4    800/1600  50.0%       75.0%  0 (BELOW FLOOR)\n"));
  EXPECT_THAT(r.out, HasSubstr("rtsw0003:eth5--ctsw001:eth3  400   drained\n"));
  EXPECT_THAT(r.out, HasSubstr("rtsw0003:eth6--ctsw002:eth3  400   down\n"));
  EXPECT_THAT(r.out, HasSubstr("rtsw0003:eth7--ctsw003:eth3  400   in service\n"));
  EXPECT_THAT(r.out, HasSubstr("drain budget: 3 of 64 links drained or draining fabric-wide; at most 2 per switch\n"));
  // ctsw001 is at the far end of all three (more than its budget: the states are what they
  // are), then the ToRs one each, by name.
  EXPECT_THAT(r.out, HasSubstr("busiest switches: ctsw001 3/2, rtsw0001 1/2, rtsw0002 1/2, rtsw0003 1/2\n"));

  const Ran j = medic({"capacity", "show", "--topology", topo_file, "--db", tdb_.url(), "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const json doc = json::parse(j.out);
  EXPECT_EQ(doc["states"], json({{"source", db::redact_url(tdb_.url())},
                                 {"drained", 2},
                                 {"draining", 1},
                                 {"down", 2},
                                 {"oper_unknown", 0},
                                 {"not_in_topology", 0}}));
  EXPECT_EQ(doc["budget"]["fabric"]["used"], 3);
}

TEST_F(CliCapacityDb, UnknownOperStateCountsUpAndIsSaid) {
  // Straight after sync_inventory medicd has not seen any link yet: every oper state unknown.
  const Ran r = medic({"capacity", "show", "--topology", topo_file, "--db", tdb_.url()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(": 0 drained, 0 draining, 0 down, " + std::to_string(topo_.links().size()) +
                               " of unknown oper state (counted up)\n"));
}

TEST_F(CliCapacityDb, LinksOfTheDatabaseNotInTheTopologyAreCounted) {
  tdb_.exec("UPDATE links SET oper_state = 'up'");
  tdb_.exec("INSERT INTO links (name, a_device, a_port, b_device, b_port, speed_gbps, drain_state, oper_state) "
           "VALUES ('old:e1--gone:e1', 'old', 'e1', 'gone', 'e1', 400, 'drained', 'up')");
  const Ran r = medic({"capacity", "show", "--topology", topo_file, "--db", tdb_.url()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(": 0 drained, 0 draining, 0 down; 1 links of the database are not in the topology\n"));
}

TEST_F(CliCapacityDb, WhatIfOnTopOfTheRecordedStates) {
  tdb_.exec("UPDATE links SET oper_state = 'up'");
  set("rtsw0003:eth6", "undrained", "down");
  set("rtsw0003:eth7", "drained", "up");
  // Draining the drained link changes nothing; another uplink would take the group to 25%.
  Ran r = medic({"capacity", "whatif", "--topology", topo_file, "--drain", "rtsw0003:eth7", "--db", tdb_.url()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("  rtsw0003:eth7--ctsw003:eth3 (drained: nothing changes)\n"));
  EXPECT_THAT(r.out, HasSubstr("no capacity group changes\n"));
  EXPECT_THAT(r.out, HasSubstr("drain budget: 1 -> 1 of 64 links fabric-wide\n"));
  r = medic({"capacity", "whatif", "--topology", topo_file, "--drain", "rtsw0003:eth8", "--db", tdb_.url()});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("rtsw0003 uplinks   tor_uplinks      50.0% (2/4)   25.0% (1/4)  75.0%  BREAKS FLOOR\n"));
  EXPECT_THAT(r.out, HasSubstr("  rtsw0003 uplinks would fall to 25.0% < floor 75.0%\n"));
}

TEST_F(CliCapacityDb, DatabaseNotMigratedIsAnError) {
  testing::TestDatabase empty;
  Ran r = medic({"capacity", "show", "--topology", topo_file, "--db", empty.url()});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("medic: link states: "));
  EXPECT_THAT(r.err, HasSubstr("links"));
  r = medic({"capacity", "whatif", "--topology", topo_file, "--drain", "rtsw0001:eth5", "--db", empty.url()});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("medic: link states: "));
}

}  // namespace
}  // namespace medic::cli
