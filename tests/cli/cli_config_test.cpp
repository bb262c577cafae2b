// `medic config check FILE`: medicd's config file checked as medicd checks it at start-up
// (keys, values, settings, every file it names), without a database; the same messages as
// medicd for every bad file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/cli/cli_fixture.h"
#include "tests/service/bad_configs.h"
#include "tests/support/testing.h"

namespace medic::cli {
namespace {

class CliConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    const Ran r = medic({"fabric", "gen", "demo"});
    ASSERT_EQ(r.code, 0) << r.err;
    testing::write_file(dir.file("demo.json"), r.out);
    ::setenv("MEDIC_DB_URL", "postgresql://nobody@127.0.0.1:1/none", 1);  // named, never connected to
  }
  std::string config(const std::string& name, const std::string& text) {
    const std::string file = dir.file(name);
    testing::write_file(file, testing::expand(text, dir.path(), file));
    return file;
  }

  ScopedUnset db_env{"MEDIC_DB_URL"};
  ScopedUnset secret_env{"MEDIC_WEBHOOK_SECRET"};
  testing::TempDir dir;
};

TEST_F(CliConfig, AGoodFileSaysOKWithItsCounts) {
  const std::string file = config("medicd.toml", R"(topology = "{DIR}/demo.json"
poll-interval = 2
alertmanager = ["http://127.0.0.1:9093"]
dry-run = true
)");
  const Ran r = medic({"config", "check", file});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, file + ": OK: 4 settings; topology " + dir.file("demo.json") + ": 28 devices, 80 links\n");
}

TEST_F(CliConfig, EveryBadFileGetsMedicdsMessage) {
  for (const testing::BadConfig& c : testing::bad_configs()) {
    if (!c.flags.empty()) continue;  // medicd's flags: the check takes the file alone
    const std::string file = dir.file(c.name + ".toml");
    if (!c.file.empty()) testing::write_file(file, testing::expand(c.file, dir.path(), file));
    const Ran r = medic({"config", "check", file});
    EXPECT_EQ(r.code, 2) << c.name << ": " << r.err;
    EXPECT_EQ(r.err, "medic: " + testing::expand(c.message, dir.path(), file) + "\n") << c.name;
    EXPECT_EQ(r.out, "") << c.name;
  }
}

TEST_F(CliConfig, WithoutADatabaseItSaysWhatMedicdSays) {
  ::unsetenv("MEDIC_DB_URL");
  const std::string file = config("medicd.toml", "topology = \"{DIR}/demo.json\"\n");
  const Ran r = medic({"config", "check", file});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "medic: no database: pass --db URL or set MEDIC_DB_URL\n");
}

TEST_F(CliConfig, TheServicesEnvironmentFileIsReadAsSystemdGivesIt) {
  ::unsetenv("MEDIC_DB_URL");
  const std::string file = config("medicd.toml", "topology = \"{DIR}/demo.json\"\nwebhook = [\"http://127.0.0.1:9/h\"]\n");
  // Without it: what medicd would say without its environment.
  Ran r = medic({"config", "check", file});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "medic: no database: pass --db URL or set MEDIC_DB_URL\n");
  testing::write_file(dir.file("medicd.env"), "# the service's environment\n\nMEDIC_DB_URL=\"postgresql://medicd@/medic\"\n"
                                               "MEDIC_WEBHOOK_SECRET='s3cret s3cret'\n");
  r = medic({"config", "check", file, "--env-file", dir.file("medicd.env")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(std::string(std::getenv("MEDIC_WEBHOOK_SECRET")), "s3cret s3cret");
  // A line that is no KEY=VALUE, and a file that is not there, are refused with where.
  testing::write_file(dir.file("bad.env"), "MEDIC_DB_URL=postgresql://x/y\nexport THIS\n");
  r = medic({"config", "check", file, "--env-file", dir.file("bad.env")});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "medic: " + dir.file("bad.env") + ":2: expected KEY=VALUE\n");
  r = medic({"config", "check", file, "--env-file", dir.file("none.env")});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "medic: " + dir.file("none.env") + ": cannot open\n");
}

TEST_F(CliConfig, EveryFileItNamesIsLoaded) {
  testing::write_file(dir.file("bad-detectors.json"), R"({"version": 2})");
  const std::string file =
      config("medicd.toml", "topology = \"{DIR}/demo.json\"\ndetectors = \"{DIR}/bad-detectors.json\"\n");
  const Ran r = medic({"config", "check", file});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "medic: " + dir.file("bad-detectors.json") + ": $.version: unsupported version 2 (this build reads version 1)\n");
}

// A topology whose switches are polled over SNMP needs credentials before medicd starts:
// from --snmp-credentials FILE or the environment, checked like every other file.
TEST_F(CliConfig, SwitchesPolledOverSnmpNeedTheirCredentials) {
  ScopedUnset community{"MEDIC_SNMP_COMMUNITY"}, user{"MEDIC_SNMP_USER"};
  nlohmann::json topo = nlohmann::json::parse(testing::read_file(dir.file("demo.json")));
  for (auto& sw : topo["switches"]) sw["telemetry"] = "snmp://127.0.0.1:16100";
  ASSERT_GT(topo["switches"].size(), 0u);
  testing::write_file(dir.file("snmp.json"), topo.dump());
  const std::string file = config("medicd.toml", "topology = \"{DIR}/snmp.json\"\n");
  const Ran none = medic({"config", "check", file});
  EXPECT_EQ(none.code, 2);
  EXPECT_THAT(none.err, ::testing::MatchesRegex("medic: .*snmp.json: [0-9]+ switch\\(es\\) are polled over SNMP \\(snmp://\\), "
                                                "but there are no SNMP credentials: --snmp-credentials FILE, or "
                                                "MEDIC_SNMP_COMMUNITY / MEDIC_SNMP_USER\n"));
  testing::write_file(dir.file("snmp-creds.json"), R"({"version": "3", "user": "medic", "auth_password": "short"})");
  const std::string bad = config("bad.toml", "topology = \"{DIR}/snmp.json\"\nsnmp-credentials = \"{DIR}/snmp-creds.json\"\n");
  const Ran refused = medic({"config", "check", bad});
  EXPECT_EQ(refused.code, 2);
  EXPECT_EQ(refused.err, "medic: " + dir.file("snmp-creds.json") + ": $.auth_password: at least 8 characters (RFC 3414)\n");
  testing::write_file(dir.file("snmp-creds.json"), R"({"version": "2c", "community": "fabric-ro"})");
  const Ran ok = medic({"config", "check", bad});
  EXPECT_EQ(ok.code, 0) << ok.err;
  ::setenv("MEDIC_SNMP_COMMUNITY", "fabric-ro", 1);
  const Ran from_env = medic({"config", "check", file});
  EXPECT_EQ(from_env.code, 0) << from_env.err;
}

// The latency check asks for round trips the prober must keep: a detectors file asking for
// more than the window holds would never judge a link, so it is refused at start-up.
TEST_F(CliConfig, ALatencyCheckTheProbersWindowCannotFeedIsRefused) {
  testing::write_file(dir.file("detectors.json"), R"({"probe": {"latency_min_rtts": 100}})");
  // 6 rounds of 10 probes keep 60 round trips a link.
  const std::string file = config("medicd.toml", "topology = \"{DIR}/demo.json\"\ndetectors = \"{DIR}/detectors.json\"\n");
  Ran r = medic({"config", "check", file});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "medic: " + dir.file("detectors.json") +
                       ": $.probe.latency_min_rtts: 100 round trips, but the prober keeps 60 a link (6 rounds of "
                       "--probe-per-round 10): no link's latency would ever be judged; lower it or raise --probe-per-round\n");
  EXPECT_EQ(r.out, "");
  // 20 a round keep 120: enough.
  const std::string more = config("more.toml", "topology = \"{DIR}/demo.json\"\ndetectors = \"{DIR}/detectors.json\"\n"
                                               "probe-per-round = 20\n");
  r = medic({"config", "check", more});
  EXPECT_EQ(r.code, 0) << r.err;
  // Without probing there is nothing to feed.
  const std::string off = config("off.toml", "topology = \"{DIR}/demo.json\"\ndetectors = \"{DIR}/detectors.json\"\n"
                                             "no-probe = true\n");
  r = medic({"config", "check", off});
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST_F(CliConfig, RealBinaryExitStatus) {
  const std::string good = config("good.toml", "topology = \"{DIR}/demo.json\"\n");
  const std::string env = "MEDIC_DB_URL=postgresql://nobody@127.0.0.1:1/none";
  auto [status, output] = testing::run_command(MEDIC_CLI_BIN, {"config", "check", good}, std::chrono::seconds(60), {env});
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output, good + ": OK: 1 setting; topology " + dir.file("demo.json") + ": 28 devices, 80 links\n");
  const std::string bad = config("bad.toml", "topology = \"{DIR}/demo.json\"\npol-interval = 1\n");
  auto [bad_status, bad_output] =
      testing::run_command(MEDIC_CLI_BIN, {"config", "check", bad}, std::chrono::seconds(60), {env});
  EXPECT_EQ(bad_status, 2);
  EXPECT_EQ(bad_output, "medic: " + bad + ":2: unknown key \"pol-interval\" (did you mean \"poll-interval\"?)\n");
}

}  // namespace
}  // namespace medic::cli
