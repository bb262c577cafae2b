// medicd's options: the config file (--config, TOML) sets every kind of option, a flag on the
// command line overrides it, and every bad key or value stops medicd (the real binary)
// with the file's line, or the flag, and status 2 before it touches any database.
#include "service/options.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "common/files.h"
#include "fabric/generator.h"
#include "fabric/loader.h"
#include "tests/service/bad_configs.h"
#include "tests/support/testing.h"

namespace medic::service {
namespace {

class Options : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("MEDIC_WEBHOOK_SECRET");
    ::setenv("MEDIC_DB_URL", "postgresql://nobody@127.0.0.1:1/none", 1);
    testing::write_file(dir.file("demo.json"),
                        fabric::topology_to_json(fabric::generate_clos(*fabric::preset("demo"))).dump());
  }
  void TearDown() override {
    if (db_env_) {
      ::setenv("MEDIC_DB_URL", db_env_->c_str(), 1);
    } else {
      ::unsetenv("MEDIC_DB_URL");
    }
  }
  std::string config(const std::string& text) {
    testing::write_file(dir.file("medicd.toml"), testing::expand(text, dir.path(), dir.file("medicd.toml")));
    return dir.file("medicd.toml");
  }
  // Parses `args`; the status when parsing stops (with what it wrote to err in err_).
  std::optional<int> parse(DaemonOptions& o, const std::vector<std::string>& args) {
    std::ostringstream out, err;
    const auto status = o.parse(args, out, err);
    err_ = err.str();
    return status;
  }

  // What config() refuses the settings with ("" when it takes them).
  static std::string config_error(DaemonOptions& o) {
    try {
      o.config();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  }

  std::optional<std::string> db_env_ = [] {
    const char* v = std::getenv("MEDIC_DB_URL");
    return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
  }();
  testing::TempDir dir;
  std::string err_;
};

TEST_F(Options, TheFileSetsEveryKindOfOption) {
  testing::write_file(dir.file("webhook-secret"), "s3cret\n");
  const std::string file = config(R"(# medicd
topology = "{DIR}/demo.json"   # the fabric
poll-interval = 2.5
scrape-concurrency = 64
pending-limit = 5_000
dry-run = true
no-probe = true
probe-paths-unknown = false
alertmanager = [
  "http://127.0.0.1:9093/",  # trailing slash dropped
  "https://am.example:9093",
]
webhook = "https://hooks.example/medic?team=fabric"
webhook-secret-file = "{DIR}/webhook-secret"
external-url = "https://medic.example/"
alert-repeat = 120
notify-retry-max = 10
notify-timeout = 0.5
log-level = 'debug'
name = "medicd \u00e9"
)");
  DaemonOptions o;
  ASSERT_EQ(parse(o, {"--config", file}), std::nullopt) << err_;
  EXPECT_EQ(o.config_file(), file);
  EXPECT_EQ(o.file_settings(), 16u);
  EXPECT_EQ(o.log_level(), "debug");
  const DaemonConfig c = o.config();
  const DaemonSettings& s = c.settings();
  EXPECT_EQ(s.topology_path, dir.file("demo.json"));
  EXPECT_EQ(s.poll_interval_s, 2.5);
  EXPECT_EQ(s.scrape_concurrency, 64);
  EXPECT_EQ(s.pending_limit, 5000u);
  EXPECT_TRUE(s.dry_run);
  EXPECT_FALSE(s.probe);
  EXPECT_FALSE(s.probe_paths_unknown);
  EXPECT_TRUE(s.standby);
  EXPECT_EQ(s.alertmanager_urls, (std::vector<std::string>{"http://127.0.0.1:9093", "https://am.example:9093"}));
  EXPECT_EQ(s.webhook_urls, (std::vector<std::string>{"https://hooks.example/medic?team=fabric"}));
  EXPECT_EQ(s.webhook_secret, "s3cret");
  EXPECT_EQ(s.external_url, "https://medic.example");
  EXPECT_EQ(s.alert_repeat_s, 120);
  EXPECT_EQ(s.notify_retry_max_s, 10);
  EXPECT_EQ(s.notify_timeout_s, 0.5);
  EXPECT_EQ(s.name, "medicd \xc3\xa9");
  EXPECT_EQ(s.db_url, "postgresql://nobody@127.0.0.1:1/none");  // $MEDIC_DB_URL, as without a file
}

TEST_F(Options, AFlagOverridesTheFile) {
  const std::string file = config(R"(topology = "{DIR}/demo.json"
poll-interval = 2
alertmanager = ["http://a.example:9093", "http://b.example:9093"]
dry-run = true
db = "postgresql://from-the-file/medic"
)");
  DaemonOptions o;
  ASSERT_EQ(parse(o, {"--poll-interval", "3", "--config", file, "--alertmanager", "http://c.example:9093",
                      "--dry-run=false", "--db", "postgresql://from-the-flag/medic"}),
            std::nullopt)
      << err_;
  const DaemonConfig c = o.config();
  EXPECT_EQ(c.settings().poll_interval_s, 3);
  // A repeatable option given on the command line replaces the file's whole list.
  EXPECT_EQ(c.settings().alertmanager_urls, std::vector<std::string>{"http://c.example:9093"});
  EXPECT_FALSE(c.settings().dry_run);
  EXPECT_EQ(c.settings().db_url, "postgresql://from-the-flag/medic");

  // Without the flag, the file's value beats $MEDIC_DB_URL.
  DaemonOptions p;
  ASSERT_EQ(parse(p, {"--config", file}), std::nullopt) << err_;
  EXPECT_EQ(p.config().settings().db_url, "postgresql://from-the-file/medic");
}

TEST_F(Options, AFlagsBadValueIsNamedByTheFlagEvenWhenTheFileHasTheKey) {
  const std::string file = config("topology = \"{DIR}/demo.json\"\nalert-repeat = 30\n");
  DaemonOptions o;
  ASSERT_EQ(parse(o, {"--config", file, "--alert-repeat", "5"}), std::nullopt) << err_;
  EXPECT_EQ(config_error(o), "--alert-repeat must be within [10, 3600] seconds");
}

TEST_F(Options, TheExternalUrlDefaultsToTheHttpAddress) {
  DaemonOptions o;
  ASSERT_EQ(parse(o, {"--topology", dir.file("demo.json"), "--http", "127.0.0.1:9400"}), std::nullopt) << err_;
  EXPECT_EQ(o.config().settings().external_url, "http://127.0.0.1:9400");
  DaemonOptions p;
  ASSERT_EQ(parse(p, {"--topology", dir.file("demo.json")}), std::nullopt) << err_;
  EXPECT_EQ(p.config().settings().external_url, "");
  EXPECT_EQ(p.file_settings(), 0u);
  EXPECT_EQ(p.config_file(), "");
}

TEST_F(Options, TheWebhookSecretComesFromItsFileOrTheEnvironment) {
  DaemonOptions o;
  ASSERT_EQ(parse(o, {"--topology", dir.file("demo.json"), "--webhook", "https://hooks.example/medic"}), std::nullopt);
  ::setenv("MEDIC_WEBHOOK_SECRET", "from-env", 1);
  EXPECT_EQ(o.config().settings().webhook_secret, "from-env");
  ::unsetenv("MEDIC_WEBHOOK_SECRET");
  EXPECT_EQ(config_error(o), "--webhook needs a secret: pass --webhook-secret-file FILE or set MEDIC_WEBHOOK_SECRET");
}

// One DaemonOptions parsed again (as the config fuzz harness does for every input) gives what
// a new one gives: nothing of an earlier parse, taken or refused, is left over.
TEST_F(Options, ParsingAgainStartsFromTheDefaults) {
  for (const char* f : {"driver-token", "api-token", "webhook-secret"}) testing::write_file(dir.file(f), "s3cret\n");
  testing::write_file(dir.file("ca.pem"), "not read here\n");
  // Every key, each to a value other than its default.
  const std::string every = config(R"(topology = "{DIR}/demo.json"
db = "postgresql://from-the-file/medic"
counter-map = "{DIR}/counter_map.json"
poll-interval = 2.5
scrape-timeout = 1.5
scrape-concurrency = 64
map-workers = 2
detectors = "{DIR}/detectors.json"
device-fault-links = 3
reopen-window = 600
backoff-max = 30
run-for = 5
dry-run = true
http = "127.0.0.1:9400"
driver-token = "t"
driver-token-file = "{DIR}/driver-token"
driver-ca = "{DIR}/ca.pem"
capacity = "{DIR}/capacity.json"
policy = "{DIR}/remediation.json"
snmp-credentials = "{DIR}/snmp.json"
snmp-trap-listen = "127.0.0.1:1162"
name = "first"
snapshot-retention = 7
incident-snapshots = 4
api-token = "a"
api-token-file = "{DIR}/api-token"
no-standby = true
no-probe = true
probe-rate = 1000
probe-round = 5
probe-per-round = 3
probe-timeout = 0.5
slo-refresh = 30
slo-window = 7
probe-paths-unknown = true
db-timeout = 3
db-connect-timeout = 3
switch-workers = 2
pending-limit = 500
log-level = "debug"
alertmanager = ["http://127.0.0.1:9093"]
webhook = "https://hooks.example/medic"
webhook-secret-file = "{DIR}/webhook-secret"
external-url = "https://medic.example"
alert-repeat = 120
notify-retry-max = 10
notify-timeout = 0.5
)");
  const std::string plain = dir.file("plain.toml");
  testing::write_file(plain, "topology = \"" + dir.file("demo.json") + "\"\n");
  const std::string bad = dir.file("bad.toml");
  testing::write_file(bad, "topology = \"" + dir.file("demo.json") + "\"\npoll-intervall = 2\n");

  DaemonOptions fresh;
  ASSERT_EQ(parse(fresh, {"--config", plain}), std::nullopt) << err_;
  const DaemonSettings want = fresh.config().settings();

  DaemonOptions o;
  ASSERT_EQ(parse(o, {"--config", every, "--log-level", "warn"}), std::nullopt) << err_;
  EXPECT_EQ(o.file_settings(), o.keys().size());  // the file above sets every key
  EXPECT_FALSE(o.settings() == fresh.settings());
  EXPECT_EQ(o.config().settings().webhook_secret, "s3cret");
  EXPECT_EQ(o.api_token(), "s3cret");

  // The command line alone: nothing of the file is left (a bad value is the flag's, not a
  // line of the file's).
  ASSERT_EQ(parse(o, {"--topology", dir.file("demo.json"), "--poll-interval", "0.001"}), std::nullopt) << err_;
  EXPECT_EQ(o.config_file(), "");
  EXPECT_EQ(o.file_settings(), 0u);
  EXPECT_EQ(o.log_level(), "info");
  EXPECT_EQ(config_error(o).rfind("--poll-interval", 0), 0u) << config_error(o);

  // A file refused half-way, then a command line refused, then the plain file.
  ASSERT_EQ(parse(o, {"--config", bad}), 2);
  EXPECT_NE(err_.find("poll-intervall"), std::string::npos) << err_;
  ASSERT_NE(parse(o, {"--poll-interval"}), std::nullopt);
  ASSERT_EQ(parse(o, {"--config", plain}), std::nullopt) << err_;
  EXPECT_TRUE(o.settings() == fresh.settings());
  EXPECT_EQ(o.log_level(), "info");
  EXPECT_EQ(o.config_file(), plain);
  EXPECT_EQ(o.file_settings(), 1u);
  EXPECT_TRUE(o.config().settings() == want);
  EXPECT_EQ(o.api_token(), "");
  EXPECT_EQ(o.settings().db_url, "postgresql://nobody@127.0.0.1:1/none");  // $MEDIC_DB_URL again

  // --config may be given once a parse, not once a lifetime.
  ASSERT_EQ(parse(o, {"--config", plain}), std::nullopt) << err_;
}

TEST_F(Options, EveryOptionIsAKey) {
  DaemonOptions o;
  const auto keys = o.keys();
  EXPECT_EQ(keys.size(), 47u);
  for (const char* k : {"topology", "poll-interval", "alertmanager", "webhook", "webhook-secret-file", "external-url",
                        "alert-repeat", "notify-retry-max", "notify-timeout", "no-probe", "log-level", "map-workers",
                        "snmp-credentials", "snmp-trap-listen"}) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  }
  EXPECT_EQ(std::find(keys.begin(), keys.end(), "config"), keys.end());
  EXPECT_EQ(std::find(keys.begin(), keys.end(), "webhook-secret"), keys.end());  // never a plain value
}

// Every bad file through the real medicd, with a database nothing listens on: the message
// is all it prints, so it never got as far as the database.
TEST_F(Options, MedicdRefusesEveryBadConfigBeforeTheDatabase) {
  const std::string db = "postgresql://nobody@127.0.0.1:" + std::to_string(testing::closed_port()) + "/x";
  for (const testing::BadConfig& c : testing::bad_configs()) {
    const std::string file = dir.file(c.name + ".toml");
    if (!c.file.empty()) testing::write_file(file, testing::expand(c.file, dir.path(), file));
    std::vector<std::string> args = {"--config", file, "--db", db};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const auto [status, output] = testing::run_command(MEDIC_MEDICD_BIN, args, std::chrono::seconds(30));
    EXPECT_EQ(status, 2) << c.name << ": " << output;
    EXPECT_EQ(output, "medicd: " + testing::expand(c.message, dir.path(), file) + "\n") << c.name;
  }
}

TEST_F(Options, MedicdSaysWhatIsWrongWithTheCommandLineAsBefore) {
  const auto [status, output] = testing::run_command(MEDIC_MEDICD_BIN, {"--db", "postgresql://nobody@127.0.0.1:1/x"});
  EXPECT_EQ(status, 106) << output;  // CLI11's own status, as medicd always gave
  EXPECT_EQ(output, "--topology is required\nRun with --help for more information.\n");
  const std::string file = config("topology = \"{DIR}/demo.json\"\n");
  const auto [twice, twice_output] = testing::run_command(MEDIC_MEDICD_BIN, {"--config", file, "--config", file});
  EXPECT_EQ(twice, 2) << twice_output;
  EXPECT_EQ(twice_output, "medicd: --config given twice: one file only\n");
}

}  // namespace
}  // namespace medic::service
