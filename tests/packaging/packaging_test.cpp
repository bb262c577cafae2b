// What packaging/ ships for running medicd as a service: the unit passes systemd's own
// check (systemd-analyze verify, which exits 0 even for unknown keys and bad values, so
// every line it says about the unit counts as a failure), the sysusers file makes the
// medicd user, and the example config passes `medic config check` as shipped and with
// every commented-out key put in, each key medicd knows being there exactly once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "service/options.h"
#include "tests/support/testing.h"

namespace medic {
namespace {

const std::string kSystemdAnalyze = "/usr/bin/systemd-analyze";
const std::string kSysusers = "/usr/bin/systemd-sysusers";

std::string packaging(const std::string& file) { return testing::source_dir() + "/packaging/" + file; }

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// The lines of systemd-analyze's output about `unit` (it may also speak of units of the host).
std::vector<std::string> verify(const std::string& unit) {
  const auto [status, output] = testing::run_command(kSystemdAnalyze, {"verify", "--man=no", unit});
  std::vector<std::string> about;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.find(unit) != std::string::npos) about.push_back(line);
  }
  if (status != 0) about.push_back("status " + std::to_string(status) + ": " + output);
  return about;
}

class Packaging : public ::testing::Test {
 protected:
  testing::TempDir dir;
};

TEST_F(Packaging, SystemdAcceptsTheUnit) {
  ASSERT_EQ(::access(kSystemdAnalyze.c_str(), X_OK), 0) << kSystemdAnalyze << " is not installed (scripts/setup installs systemd)";
  // verify wants ExecStart's binary to exist: the one just built stands in for /usr/local/bin's.
  const std::string unit =
      replaced(testing::read_file(packaging("systemd/medicd.service")), "/usr/local/bin/medicd", MEDIC_MEDICD_BIN);
  ASSERT_NE(unit.find("ExecStart=" + std::string(MEDIC_MEDICD_BIN) + " --config /etc/medic/medicd.toml\n"),
            std::string::npos);
  testing::write_file(dir.file("medicd.service"), unit);
  EXPECT_EQ(verify(dir.file("medicd.service")), std::vector<std::string>{});

  // The unit for a fabric without the netns driver, as its comment says to make it.
  std::string jsonrpc_only = unit;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"AmbientCapabilities=CAP_NET_ADMIN CAP_SYS_ADMIN\n", ""},
           {"CapabilityBoundingSet=CAP_NET_ADMIN CAP_SYS_ADMIN\n", "CapabilityBoundingSet=\n"},
           {"RestrictNamespaces=net mnt\n", "RestrictNamespaces=yes\n"},
           {"SystemCallFilter=@system-service @mount\n", "SystemCallFilter=@system-service\n"},
           {"RuntimeDirectory=medic-netns\nRuntimeDirectoryPreserve=yes\n", ""}}) {
    ASSERT_NE(jsonrpc_only.find(from), std::string::npos) << from;
    jsonrpc_only = replaced(jsonrpc_only, from, to);
  }
  testing::write_file(dir.file("medicd-jsonrpc.service"), jsonrpc_only);
  EXPECT_EQ(verify(dir.file("medicd-jsonrpc.service")), std::vector<std::string>{});

  // The check is real: a misspelt key is reported.
  testing::write_file(dir.file("bad.service"), replaced(unit, "ProtectHome=yes", "ProtectHom=yes"));
  EXPECT_EQ(verify(dir.file("bad.service")).size(), 1u);
}

TEST_F(Packaging, SysusersMakesTheMedicdUserAndGroup) {
  ASSERT_EQ(::access(kSysusers.c_str(), X_OK), 0) << kSysusers << " is not installed (scripts/setup installs systemd)";
  std::filesystem::create_directories(dir.file("root/etc"));  // --root writes below root/ only
  const auto [status, output] =
      testing::run_command(kSysusers, {"--root=" + dir.file("root"), packaging("systemd/medicd.sysusers.conf")});
  ASSERT_EQ(status, 0) << output;
  EXPECT_TRUE(std::regex_search(testing::read_file(dir.file("root/etc/passwd")),
                                std::regex("(^|\n)medicd:x:[0-9]+:[0-9]+:fabric-medic daemon:/:/usr/sbin/nologin\n")));
  EXPECT_TRUE(std::regex_search(testing::read_file(dir.file("root/etc/group")), std::regex("(^|\n)medicd:x:[0-9]+:\n")));
}

// The example config with /etc/medic/ moved to a test directory holding every file it
// names: the demo fabric, the data files, secrets and a CA bundle.
class ExampleConfig : public Packaging {
 protected:
  void SetUp() override {
    const auto [gen, topology] = testing::run_command(MEDIC_CLI_BIN, {"fabric", "gen", "demo"});
    ASSERT_EQ(gen, 0) << topology;
    testing::write_file(dir.file("fabric.json"), topology);
    for (const char* f : {"counter_map.json", "detectors.json", "capacity.json", "remediation.json"}) {
      testing::write_file(dir.file(f), testing::read_file(testing::source_dir() + "/data/" + f));
    }
    for (const char* f : {"driver-token", "api-token", "webhook.secret", "switch-ca.pem"}) {
      testing::write_file(dir.file(f), "not-a-real-secret\n");
    }
    example = replaced(testing::read_file(packaging("medicd.toml")), "/etc/medic/", dir.path() + "/");
  }
  std::pair<int, std::string> check(const std::string& text) {
    testing::write_file(dir.file("medicd.toml"), text);
    return testing::run_command(MEDIC_CLI_BIN, {"config", "check", dir.file("medicd.toml")}, std::chrono::seconds(60),
                                {"MEDIC_DB_URL=postgresql://nobody@127.0.0.1:1/none"});
  }
  std::string ok_line(size_t settings) const {
    return dir.file("medicd.toml") + ": OK: " + std::to_string(settings) + " settings; topology " +
           dir.file("fabric.json") + ": 28 devices, 80 links\n";
  }
  std::string example;
};

TEST_F(ExampleConfig, PassesConfigCheckAsShipped) {
  const auto [status, output] = check(example);
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output, ok_line(6));
}

TEST_F(ExampleConfig, EveryKeyIsThereOnceAndEveryShownValueIsGood) {
  const std::regex commented_key(R"(^# ([a-z][a-z-]*) = )");
  std::string all;
  size_t uncommented = 0;
  std::istringstream in(example);
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, commented_key)) {
      line = line.substr(2);
      ++uncommented;
    }
    all += line + "\n";
  }
  const service::DaemonOptions options;
  const size_t keys = options.keys().size();
  EXPECT_EQ(uncommented + 6, keys);
  // A key given twice is refused, a key medicd does not know is refused: N settings is every key.
  const auto [status, output] = check(all);
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output, ok_line(keys));
}

}  // namespace
}  // namespace medic
