// The repair queue's page in a real browser: medicd on fabsim with a real PostgreSQL, a
// corrupting link whose drain waits for approval, and tests/browser/queue_page.py driving
// Debian's chromium through chromium-driver (python3-selenium). This test sets the scene,
// runs the script, and checks the database afterwards: the approval is the operator's, the
// viewer's forged POST changed nothing, and the screenshots are written under the build tree.
// Then the SLO report's HTML file, rendered by tests/browser/slo_report.py (charts drawn,
// nothing fetched, no console error, printed to an A4 PDF).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/http_client.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/support/testing.h"

namespace medic {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kLink = "rtsw0001:eth5--ctsw001:eth1";

// The token `medic users add` printed (its second line).
std::string token_of(const std::string& out) {
  const size_t nl = out.find('\n');
  if (nl == std::string::npos) return "";
  return out.substr(nl + 1, out.find('\n', nl + 1) - nl - 1);
}

TEST(Browser, AnOperatorApprovesInTheBrowserAndAViewerCannot) {
  curl_global_setup();
  testing::TempDir dir;
  testing::TestDatabase tdb;
  HttpClient http;
  ASSERT_NO_FATAL_FAILURE(write_demo_topology(dir));
  // Corruption waits for a person here.
  json policy = json::parse(testing::read_file(std::string(MEDIC_SOURCE_DIR) + "/data/remediation.json"));
  policy["classes"]["corruption"] = "approval";
  testing::write_file(dir.file("policy.json"), policy.dump(1));
  DemoFabsim fabsim;
  ASSERT_NO_FATAL_FAILURE(fabsim.start(
      dir, json{{"faults", {{{"kind", "corrupt"}, {"end", "rtsw0001:eth5"}, {"at_s", 3}, {"rate", 1e-4}}}}}.dump()));
  testing::Process medicd(MEDIC_MEDICD_BIN, {"--topology", fabsim.exported, "--db", tdb.url(), "--no-probe", "--http",
                                             "127.0.0.1:0", "--policy", dir.file("policy.json"), "--run-for", "240"});
  const std::string api = api_of(medicd);
  ASSERT_FALSE(api.empty()) << medicd.output();
  ASSERT_TRUE(testing::eventually([&] { return leads(http, api, 1); }, 60s)) << medicd.output();

  auto add = [&](const std::string& name, const std::string& role) {
    const auto [rc, out] = testing::run_command(MEDIC_CLI_BIN, {"users", "add", name, "--role", role, "--db", tdb.url()});
    EXPECT_EQ(rc, 0) << out;
    return token_of(out);
  };
  const std::string operator_token = add("olivia", "operator");
  const std::string viewer_token = add("victor", "viewer");
  ASSERT_FALSE(operator_token.empty() || viewer_token.empty());

  ASSERT_TRUE(testing::eventually(
      [&] { return try_scalar(tdb, std::string("SELECT state FROM incidents WHERE link = '") + kLink + "'") == "pending_approval"; },
      60s))
      << medicd.output();
  const std::string id = try_scalar(tdb, std::string("SELECT id FROM incidents WHERE link = '") + kLink + "'");

  const std::string shots = std::string(MEDIC_BINARY_DIR) + "/screenshots";
  std::filesystem::create_directories(shots);
  for (const char* f : {"/queue.png", "/incident.png", "/slo-page.png", "/slo-report.png", "/slo-report.pdf"}) {
    std::filesystem::remove(shots + f);
  }
  const auto [rc, out] = testing::run_command(
      "/usr/bin/python3",
      {std::string(MEDIC_SOURCE_DIR) + "/tests/browser/queue_page.py", api, operator_token, viewer_token, id, shots}, 180s);
  EXPECT_EQ(rc, 0) << out << "\n" << medicd.output();
  EXPECT_THAT(out, HasSubstr("every check held"));

  // What the database says: the operator approved (by the token's name, from loopback), the
  // drain happened, and the viewer's forged dismiss left nothing behind.
  EXPECT_EQ(try_scalar(tdb, "SELECT who || ' ' || role || ' ' || reason || ' ' || source FROM audit WHERE what = 'approve'"),
            "olivia operator fcs rising on the receiving end http from 127.0.0.1");
  EXPECT_EQ(try_scalar(tdb, "SELECT count(*) FROM audit WHERE who = 'victor'"), "0");
  EXPECT_EQ(try_scalar(tdb, "SELECT count(*) FROM audit WHERE what = 'drain_succeeded' AND incident_id = " + id), "1");
  EXPECT_EQ(try_scalar(tdb, "SELECT approved_by FROM incidents WHERE id = " + id), "olivia");
  EXPECT_NE(try_scalar(tdb, "SELECT state FROM incidents WHERE id = " + id), "dismissed");

  // The SLO report's HTML file, as `medic slo report --format html` writes it, in the browser.
  const std::string report = shots + "/slo-report.html";
  const auto [src, sout] = testing::run_command(
      MEDIC_CLI_BIN, {"slo", "report", "--window", "1d", "--format", "html", "--out", report, "--db", tdb.url()});
  ASSERT_EQ(src, 0) << sout;
  const auto [brc, bout] = testing::run_command(
      "/usr/bin/python3", {std::string(MEDIC_SOURCE_DIR) + "/tests/browser/slo_report.py", report, shots}, 120s);
  EXPECT_EQ(brc, 0) << bout;
  EXPECT_THAT(bout, HasSubstr("every check held"));
  for (const char* f : {"/queue.png", "/incident.png", "/slo-page.png", "/slo-report.png", "/slo-report.pdf"}) {
    EXPECT_TRUE(std::filesystem::exists(shots + f)) << f;
    if (std::filesystem::exists(shots + f)) {
      EXPECT_GT(std::filesystem::file_size(shots + f), 10000u) << f;
    }
  }
}

}  // namespace
}  // namespace medic
