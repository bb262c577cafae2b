// A real net-snmp agent (Debian's snmpd) on 127.0.0.1 for one test: its own configuration,
// persistent directory and UDP port, a v2c community and a v3 authPriv (SHA/AES) user,
// stopped by its pid when the object goes. It serves this machine's own interfaces.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "telemetry/snmp.h"
#include "tests/support/testing.h"

namespace medic::telemetry {

using medic::testing::eventually;
using medic::testing::Process;
using medic::testing::read_file;
using medic::testing::run_command;
using medic::testing::TempDir;
using medic::testing::write_file;

inline constexpr const char* kSnmpd = "/usr/sbin/snmpd";
inline constexpr const char* kCommunity = "medic-test";
inline constexpr const char* kV3User = "medictest";
inline constexpr const char* kAuthPass = "auth-pass-123";
inline constexpr const char* kPrivPass = "priv-pass-123";

// The credentials of the agents above (another community, user or auth password: wrong ones).
inline SnmpCredentials v2c(const std::string& community = kCommunity) {
  SnmpCredentials c;
  c.community = community;
  return c;
}
inline SnmpCredentials v3(const std::string& auth = kAuthPass, const std::string& user = kV3User) {
  SnmpCredentials c;
  c.version = SnmpCredentials::Version::v3;
  c.user = user;
  c.auth_password = auth;
  c.priv_password = kPrivPass;
  return c;
}

// A loopback UDP port nothing listens on (bound, read, closed).
inline uint16_t free_udp_port() {
  const int s = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

// The environment every net-snmp tool runs with here: no MIB files wanted.
inline std::vector<std::string> snmp_tool_env(const std::string& persist) {
  return {"MIBS=", "MIBDIRS=/nonexistent", "SNMP_PERSISTENT_DIR=" + persist};
}

class LoopbackSnmpd {
 public:
  // `extra`: more lines of snmpd.conf (a `pass` program serving more MIBs, say).
  explicit LoopbackSnmpd(uint16_t port = 0, std::string extra = "")
      : port_(port != 0 ? port : free_udp_port()), extra_(std::move(extra)) {
    start();
  }

  // Stops the agent and starts a new one on the same port (sysUpTime starts again).
  void restart() {
    proc_.reset();
    start();
  }
  void stop() { proc_.reset(); }

  uint16_t port() const { return port_; }
  std::string url() const { return "snmp://127.0.0.1:" + std::to_string(port_); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  const std::string& persist() const { return persist_; }

  // snmpbulkwalk -On of one subtree from this agent, over v2c.
  std::string bulkwalk(const std::string& oid) const {
    const auto [code, out] = run_command("/usr/bin/snmpbulkwalk", {"-v2c", "-c", kCommunity, "-On", "-t", "2", address(), oid},
                                         std::chrono::seconds(20), snmp_tool_env(persist_));
    EXPECT_EQ(code, 0) << out;
    return out;
  }

 private:
  void start() {
    dir_ = std::make_unique<TempDir>();
    persist_ = dir_->file("persist");
    const std::string conf = dir_->file("snmpd.conf");
    write_file(conf, std::string("rocommunity ") + kCommunity + " 127.0.0.1\n" + "createUser " + kV3User + " SHA \"" +
                         kAuthPass + "\" AES \"" + kPrivPass + "\"\n" + "rouser " + kV3User + " priv\n" + extra_);
    proc_ = std::make_unique<Process>(kSnmpd,
                                      std::vector<std::string>{"-f", "-Lf", dir_->file("snmpd.log"), "-C", "-c", conf,
                                                               "-p", dir_->file("snmpd.pid"), "udp:" + address()},
                                      snmp_tool_env(persist_));
    // Ready when it answers sysUpTime.
    const bool up = eventually(
        [&] {
          const auto [code, out] = run_command("/usr/bin/snmpget", {"-v2c", "-c", kCommunity, "-On", "-t", "0.2", "-r", "0",
                                                                    address(), "1.3.6.1.2.1.1.3.0"},
                                               std::chrono::seconds(5), snmp_tool_env(persist_));
          return code == 0 && out.find("Timeticks") != std::string::npos;
        },
        std::chrono::seconds(20));
    ASSERT_TRUE(up) << "snmpd did not answer on " << address() << ": " << read_file(dir_->file("snmpd.log"));
  }

  uint16_t port_;
  std::string extra_;
  std::unique_ptr<TempDir> dir_;
  std::string persist_;
  std::unique_ptr<Process> proc_;
};

}  // namespace medic::telemetry
