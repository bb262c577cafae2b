// Shared by the testbed tests: the namespace fabric of testbed/clos.sh built before each test
// (as root) and taken down after it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "tests/support/testing.h"

namespace medic {

inline const char* ip_binary() { return ::access("/usr/sbin/ip", X_OK) == 0 ? "/usr/sbin/ip" : "/sbin/ip"; }

class TestbedFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "the testbed builds network namespaces and needs root (CI runs as root)";
    const auto [code, out] = testing::run_command("/bin/bash", {MEDIC_TESTBED_SCRIPT, "up", dir_.path()},
                                                  std::chrono::seconds(90),
                                                  {std::string("MEDIC_REFLECTOR=") + MEDIC_REFLECTOR_BIN});
    up_ = code == 0;
    ASSERT_EQ(code, 0) << out;
  }
  void TearDown() override {
    if (up_ || std::filesystem::exists(dir_.file("prefix"))) {
      const auto [code, out] =
          testing::run_command("/bin/bash", {MEDIC_TESTBED_SCRIPT, "down", dir_.path()}, std::chrono::seconds(60));
      EXPECT_EQ(code, 0) << out;
    }
  }
  // The network namespace of a testbed node ("r1", "h2", "mgmt").
  std::string ns(const std::string& node) {
    std::string n =
        testing::run_command("/bin/bash", {MEDIC_TESTBED_SCRIPT, "ns", dir_.path(), node}, std::chrono::seconds(10))
            .second;
    while (!n.empty() && (n.back() == '\n' || n.back() == ' ')) n.pop_back();
    return n;
  }

  // A GET to `url` made from inside a node's namespace (medicd's HTTP endpoint lives in
  // the management namespace): {status, body}, status 0 when nothing answered.
  std::pair<int, std::string> get_in(const std::string& node, const std::string& url) {
    const auto [code, out] = testing::run_command(
        ip_binary(), {"netns", "exec", ns(node), "curl", "-s", "-m", "5", "-w", "\n%{http_code}", url},
        std::chrono::seconds(10));
    const size_t nl = out.rfind('\n');
    if (code != 0 || nl == std::string::npos) return {0, out};
    return {std::atoi(out.c_str() + nl + 1), out.substr(0, nl)};
  }
  // One metric of the medicd at `base` in the management namespace.
  std::optional<double> metric_in_mgmt(const std::string& base, const std::string& name) {
    const auto [status, body] = get_in("mgmt", base + "/metrics");
    return status == 200 ? testing::metric_value(body, name) : std::nullopt;
  }
  // Whether that medicd leads and has reloaded what the database holds (/healthz and
  // medic_leader).
  bool leads_in_mgmt(const std::string& base) {
    const auto [status, body] = get_in("mgmt", base + "/healthz");
    return status == 200 && body.rfind("ok: leader", 0) == 0 && metric_in_mgmt(base, "medic_leader") == 1.0;
  }
  // Waits until that medicd has run `n` more poll cycles (baselines made, a few clean
  // rounds seen); false when it does not within `timeout`.
  bool cycles_pass(const std::string& base, int n, std::chrono::milliseconds timeout) {
    const auto start = metric_in_mgmt(base, "medic_cycles_total");
    if (!start) return false;
    return testing::eventually(
        [&] {
          const auto c = metric_in_mgmt(base, "medic_cycles_total");
          return c && *c >= *start + n;
        },
        timeout);
  }

  testing::TempDir dir_;
  bool up_ = false;
};

}  // namespace medic
