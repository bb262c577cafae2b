// Shared by the testbed tests: the namespace fabric of testbed/clos.sh built before each test
// (as root) and taken down after it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

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

  testing::TempDir dir_;
  bool up_ = false;
};

}  // namespace medic
