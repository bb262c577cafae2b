// The `medic` commands that need no database, run in process (and once as the real binary).
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

using nlohmann::json;

class CliFabric : public ::testing::Test {
 protected:
  // The demo fabric written by `medic fabric gen demo` to a file.
  std::string demo_file() {
    const Ran r = medic({"fabric", "gen", "demo"});
    EXPECT_EQ(r.code, 0) << r.err;
    const std::string path = dir.file("demo.json");
    testing::write_file(path, r.out);
    return path;
  }
  testing::TempDir dir;
};

TEST_F(CliFabric, GenDemoParsesAsTheGeneratedTopology) {
  const Ran r = medic({"fabric", "gen", "demo"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const fabric::Topology t = fabric::parse_topology(r.out, "stdout");
  const fabric::Topology expected = fabric::generate_clos(*fabric::preset("demo"));
  EXPECT_EQ(t.devices().size(), expected.devices().size());
  EXPECT_EQ(t.links().size(), expected.links().size());
  EXPECT_EQ(t.groups().size(), expected.groups().size());
  EXPECT_EQ(fabric::topology_to_json(t), fabric::topology_to_json(expected));
  const auto& sw = t.device(*t.find_device("rtsw0001"));
  EXPECT_EQ(sw.driver_kind, "jsonrpc");
  EXPECT_EQ(sw.driver_url, "http://127.0.0.1:18080/s/rtsw0001/rpc");
  EXPECT_EQ(sw.telemetry_url, "http://127.0.0.1:18080/s/rtsw0001/metrics");
}

TEST_F(CliFabric, GenHonoursBaseUrlAndDriver) {
  const Ran r = medic({"fabric", "gen", "demo", "--base-url", "http://198.18.1.3:9000", "--driver", "dryrun"});
  ASSERT_EQ(r.code, 0) << r.err;
  const fabric::Topology t = fabric::parse_topology(r.out, "stdout");
  const auto& sw = t.device(*t.find_device("ctsw003"));
  EXPECT_EQ(sw.driver_kind, "dryrun");
  EXPECT_EQ(sw.driver_url, "");
  EXPECT_EQ(sw.telemetry_url, "http://198.18.1.3:9000/s/ctsw003/gnmi");
  const auto& tor = t.device(*t.find_device("rtsw0003"));
  EXPECT_EQ(tor.driver_kind, "dryrun");
  EXPECT_EQ(tor.telemetry_url, "http://198.18.1.3:9000/s/rtsw0003/metrics");
  const auto& host = t.device(*t.find_device("host0003"));
  EXPECT_EQ(host.telemetry_url, "http://198.18.1.3:9000/h/host0003/metrics");
  EXPECT_EQ(host.driver_kind, "");
}

TEST_F(CliFabric, GenUnknownPresetListsKnownOnes) {
  const Ran r = medic({"fabric", "gen", "nope"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "medic: unknown preset \"nope\" (known: demo, zone32k)\n");
}

TEST_F(CliFabric, GenUnknownDriverIsRefused) {
  const Ran r = medic({"fabric", "gen", "demo", "--driver", "telnet"});
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(contains(r.err, "--driver")) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(CliFabric, CheckPrintsCounts) {
  const std::string file = demo_file();
  const Ran r = medic({"fabric", "check", file});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, file + ": ok\n"
                          "switches:        20 (atsw 4, ctsw 8, rtsw 8)\n"
                          "hosts:           8 (32 NICs)\n"
                          "ports:           160\n"
                          "links:           80 (ctsw-atsw 16, rtsw-ctsw 32, rtsw-host 32)\n"
                          "capacity groups: 8 (tor_uplinks 8)\n"
                          "total capacity:  32.0 Tb/s\n");
}

TEST_F(CliFabric, CheckJson) {
  const std::string file = demo_file();
  const Ran r = medic({"fabric", "check", "--json", file});
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["file"], file);
  EXPECT_EQ(j["switches"], 20);
  EXPECT_EQ(j["switches_by_role"]["atsw"], 4);
  EXPECT_EQ(j["switches_by_role"]["ctsw"], 8);
  EXPECT_EQ(j["switches_by_role"]["rtsw"], 8);
  EXPECT_EQ(j["hosts"], 8);
  EXPECT_EQ(j["nics"], 32);
  EXPECT_EQ(j["ports"], 160);
  EXPECT_EQ(j["links"], 80);
  EXPECT_EQ(j["links_by_kind"]["rtsw-host"], 32);
  EXPECT_EQ(j["links_by_kind"]["rtsw-ctsw"], 32);
  EXPECT_EQ(j["links_by_kind"]["ctsw-atsw"], 16);
  EXPECT_EQ(j["capacity_groups"], 8);
  EXPECT_EQ(j["capacity_groups_by_kind"]["tor_uplinks"], 8);
  EXPECT_DOUBLE_EQ(j["total_capacity_gbps"].get<double>(), 32000);
}

TEST_F(CliFabric, CheckBadFilePrintsEveryProblemWithFileAndPath) {
  const std::string file = dir.file("bad.json");
  testing::write_file(file, R"({
  "version": 1,
  "switches": [
    {"name": "s1", "role": "spine", "telemetry": "http://x/s1"},
    {"name": "s2", "role": "rtsw", "telemetry": "http://x/s2", "driver": {"kind": "dryrun"}}
  ],
  "links": [
    {"a": "s2:eth1", "b": "ghost:eth1", "speed_gbps": 400},
    {"a": "s2:eth2", "b": "s2:eth3", "speed_gbps": -1}
  ]
})");
  const Ran r = medic({"fabric", "check", file});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, file + ": $.switches[0].role: unknown role \"spine\" (expected rtsw, ctsw or atsw)\n" +
                       file + ": $.links[0].b: unknown switch \"ghost\" (no switch or host has that name)\n" +
                       file + ": $.links[1].speed_gbps: speed must be a positive number of Gb/s, got -1\n" +
                       "medic: " + file + ": 3 problems\n");
}

TEST_F(CliFabric, CheckInvalidJsonIsOneProblem) {
  const std::string file = dir.file("broken.json");
  testing::write_file(file, "{\n  \"switches\": [\n");
  const Ran r = medic({"fabric", "check", file});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, file + ": line ")) << r.err;
  EXPECT_TRUE(contains(r.err, "invalid JSON")) << r.err;
  EXPECT_TRUE(contains(r.err, "medic: " + file + ": 1 problem\n")) << r.err;
}

TEST_F(CliFabric, CheckMissingFile) {
  const std::string file = dir.file("absent.json");
  const Ran r = medic({"fabric", "check", file});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, file + ": cannot open: No such file or directory")) << r.err;
}

TEST_F(CliFabric, MissingArgumentIsAnError) {
  const Ran r = medic({"fabric", "check"});
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(contains(r.err, "file is required")) << r.err;
  const Ran g = medic({"fabric", "gen"});
  EXPECT_NE(g.code, 0);
  EXPECT_TRUE(contains(g.err, "preset is required")) << g.err;
}

TEST_F(CliFabric, MissingSubcommandIsAnError) {
  const Ran none = medic({});
  EXPECT_NE(none.code, 0);
  EXPECT_TRUE(contains(none.err, "A subcommand is required")) << none.err;
  const Ran fab = medic({"fabric"});
  EXPECT_NE(fab.code, 0);
  EXPECT_TRUE(contains(fab.err, "A subcommand is required")) << fab.err;
}

TEST_F(CliFabric, UnknownSubcommandIsNamed) {
  const Ran r = medic({"fabric", "frobnicate"});
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(r.err, "The following argument was not expected: frobnicate\nRun with --help for more information.\n");
  const Ran top = medic({"teleport"});
  EXPECT_NE(top.code, 0);
  EXPECT_TRUE(contains(top.err, "not expected: teleport")) << top.err;
}

TEST_F(CliFabric, UnknownFlagIsAnError) {
  const std::string file = demo_file();
  const Ran r = medic({"fabric", "check", "--bogus", file});
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(contains(r.err, "not expected: --bogus")) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(CliFabric, HelpGoesToStdoutWithStatusZero) {
  const Ran r = medic({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(contains(r.out, "fabric")) << r.out;
  EXPECT_TRUE(contains(r.out, "incidents")) << r.out;
}

TEST_F(CliFabric, DbMigrateWithoutADatabaseSaysSo) {
  ScopedUnset no_db("MEDIC_DB_URL");
  const Ran r = medic({"db", "migrate"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "medic: no database: pass --db URL or set MEDIC_DB_URL\n");
  EXPECT_EQ(r.out, "");
}

TEST_F(CliFabric, RealBinaryExitStatus) {
  const std::string good = demo_file();
  auto [status, output] = testing::run_command(MEDIC_CLI_BIN, {"fabric", "check", good}, std::chrono::seconds(60));
  EXPECT_EQ(status, 0) << output;
  EXPECT_TRUE(contains(output, "switches:        20 (atsw 4, ctsw 8, rtsw 8)\n")) << output;

  const std::string bad = dir.file("bad.json");
  testing::write_file(bad, R"({"switches": [], "links": [], "extra": 1})");
  auto [bad_status, bad_output] = testing::run_command(MEDIC_CLI_BIN, {"fabric", "check", bad}, std::chrono::seconds(60));
  EXPECT_EQ(bad_status, 1) << bad_output;
  EXPECT_TRUE(contains(bad_output, bad + ": $: unknown key \"extra\"")) << bad_output;

  auto [gen_status, gen_output] = testing::run_command(MEDIC_CLI_BIN, {"fabric", "gen", "nope"}, std::chrono::seconds(60));
  EXPECT_EQ(gen_status, 2) << gen_output;
}

}  // namespace
}  // namespace medic::cli
