// Hostile files and requests at medicd's door: every file is validated before medicd
// connects or waits for the lock (a standby with a broken file stops at once, never at a
// takeover); only regular files are read; tokens come from files; /healthz and /metrics
// refuse other methods; a path that is not UTF-8 is a 400; a flood of idle connections
// never locks /healthz out.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/http_client.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/support/testing.h"

namespace medic {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using namespace std::chrono_literals;

class E2EStartup : public ::testing::Test {
 protected:
  void SetUp() override {
    curl_global_setup();
    ASSERT_NO_FATAL_FAILURE(write_demo_topology(dir));
  }
  // medicd with `more` arguments and a database nothing listens on: it must stop on the
  // file before it ever tries the database.
  std::pair<int, std::string> run_bad(const std::vector<std::string>& more) {
    std::vector<std::string> args{"--topology", dir.file("demo.json"), "--db",
                                  "postgresql://nobody@127.0.0.1:" + std::to_string(testing::closed_port()) + "/x"};
    args.insert(args.end(), more.begin(), more.end());
    return testing::run_command(MEDIC_MEDICD_BIN, args, 30s);
  }

  testing::TempDir dir;
  HttpClient http;
};

TEST_F(E2EStartup, EveryFileIsCheckedBeforeTheDatabase) {
  testing::write_file(dir.file("bad-detectors.json"), R"({"version": 2})");
  testing::write_file(dir.file("bad-map.json"), R"({"prometheus": [{"metric": "x"}]})");
  auto [s1, o1] = run_bad({"--detectors", dir.file("bad-detectors.json")});
  EXPECT_EQ(s1, 2) << o1;
  EXPECT_THAT(o1, HasSubstr("bad-detectors.json: $.version: unsupported version 2"));
  EXPECT_THAT(o1, ::testing::Not(HasSubstr("PostgreSQL")));
  auto [s2, o2] = run_bad({"--counter-map", dir.file("bad-map.json")});
  EXPECT_EQ(s2, 2) << o2;
  EXPECT_THAT(o2, HasSubstr("bad-map.json: $.prometheus[0]"));
}

TEST_F(E2EStartup, AStandbyWithABrokenFileStopsAtOnceNotAtTakeover) {
  testing::TestDatabase tdb;
  testing::Process leader(MEDIC_MEDICD_BIN, {"--topology", dir.file("demo.json"), "--db", tdb.url(), "--name", "a",
                                             "--no-probe", "--run-for", "120"});
  ASSERT_TRUE(testing::eventually([&] { return try_scalar(tdb, "SELECT daemon FROM leader") == "a"; }, 60s))
      << leader.output();
  testing::write_file(dir.file("bad.json"), R"({"flap": {"half_life_s": -1}})");
  const auto [status, out] = testing::run_command(
      MEDIC_MEDICD_BIN, {"--topology", dir.file("demo.json"), "--db", tdb.url(), "--name", "b", "--detectors", dir.file("bad.json")},
      30s);
  EXPECT_EQ(status, 2) << out;
  EXPECT_THAT(out, HasSubstr("bad.json: $.flap.half_life_s: must not be negative"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("standby")));
}

TEST_F(E2EStartup, OnlyRegularFilesAreRead) {
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  auto [s1, o1] = run_bad({"--policy", "/dev/zero"});
  EXPECT_EQ(s1, 2) << o1;
  EXPECT_THAT(o1, HasSubstr("medicd: /dev/zero: a character device, not a regular file"));
  auto [s2, o2] = run_bad({"--policy", dir.file("fifo")});  // would hang a plain reader
  EXPECT_EQ(s2, 2) << o2;
  EXPECT_THAT(o2, HasSubstr("fifo: a FIFO, not a regular file"));
  auto [s3, o3] = run_bad({"--capacity", dir.path()});
  EXPECT_EQ(s3, 2) << o3;
  EXPECT_THAT(o3, HasSubstr(": a directory, not a regular file"));
}

TEST_F(E2EStartup, LinkSpeedsPastAnyLinkStopMedicd) {
  json doc = json::parse(testing::read_file(dir.file("demo.json")));
  doc["links"][0]["speed_gbps"] = 1e16;
  testing::write_file(dir.file("fast.json"), doc.dump());
  const auto [status, out] =
      testing::run_command(MEDIC_MEDICD_BIN, {"--topology", dir.file("fast.json"), "--db", "postgresql://x@127.0.0.1:1/x"}, 30s);
  EXPECT_EQ(status, 2) << out;
  EXPECT_THAT(out, HasSubstr("$.links[0].speed_gbps: speed must be at most 100000 Gb/s (100 Tb/s), got 1e+16"));
}

TEST_F(E2EStartup, HostileRequestsAndIdleFloodsLeaveHealthAnswering) {
  testing::TestDatabase tdb;
  testing::write_file(dir.file("token"), "t0ken-from-a-file\n");
  testing::Process medicd(MEDIC_MEDICD_BIN, {"--topology", dir.file("demo.json"), "--db", tdb.url(), "--no-probe", "--http",
                                             "127.0.0.1:0", "--api-token-file", dir.file("token"), "--run-for", "120"});
  const std::string api = api_of(medicd);
  ASSERT_FALSE(api.empty()) << medicd.output();
  ASSERT_TRUE(testing::eventually([&] {
    auto r = http.get(api + "/healthz");
    return r.ok() && r->status == 200;
  }, 60s)) << medicd.output();
  // Methods that change nothing here are refused.
  for (const char* path : {"/healthz", "/metrics"}) {
    auto r = http.post(api + path, "x", "text/plain");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->status, 405u) << path;
  }
  // A path that is not UTF-8.
  const uint16_t port = static_cast<uint16_t>(std::stoi(api.substr(api.rfind(':') + 1)));
  auto raw = [&](const std::string& request) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string out;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
      char buf[4096];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n > 0) out.assign(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
  };
  EXPECT_THAT(raw("GET /api/%FF HTTP/1.1\r\nHost: x\r\n\r\n"), HasSubstr("HTTP/1.1 400"));
  for (const char* method : {"PUT", "DELETE", "PATCH"}) {
    for (const char* path : {"/healthz", "/metrics"}) {
      const std::string answer = raw(std::string(method) + " " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
      EXPECT_THAT(answer, HasSubstr("HTTP/1.1 405")) << method << " " << path;
      EXPECT_THAT(answer, HasSubstr("Allow: GET, HEAD")) << method << " " << path;
    }
  }
  // The bootstrap token from the file is known; another is refused. It decides nothing
  // (people do, with their own tokens), so an approval with it is refused by role.
  HttpCallOptions good, bad;
  good.headers = {{"Authorization", "Bearer t0ken-from-a-file"}};
  bad.headers = {{"Authorization", "Bearer nope"}};
  auto refused = http.post(api + "/api/incidents/1/approve", "{}", "application/json", bad);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, 401u);
  auto allowed = http.post(api + "/api/incidents/1/approve", "{}", "application/json", good);
  ASSERT_TRUE(allowed.ok());
  EXPECT_EQ(allowed->status, 403u) << allowed->body;  // past the token: the bootstrap token decides nothing
  EXPECT_THAT(allowed->body, HasSubstr("it only reads and manages users"));
  // 4,096 connections that never say anything; /healthz still answers.
  std::vector<int> idle;
  for (int i = 0; i < 4096; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) idle.push_back(fd);
  }
  EXPECT_GE(idle.size(), 4000u);
  for (int i = 0; i < 3; ++i) {
    auto h = http.get(api + "/healthz");
    ASSERT_TRUE(h.ok()) << h.error();
    EXPECT_EQ(h->status, 200u);
  }
  for (const int fd : idle) ::close(fd);
  EXPECT_TRUE(medicd.running());
}

}  // namespace
}  // namespace medic
