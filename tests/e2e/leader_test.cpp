// Leader election end to end: two medicd on one database and one fabsim with a flapping
// link. The first leads and drains the link; the second waits on standby and does nothing.
// The leader is killed with SIGKILL, if possible while its drain is still unfinished; the
// standby takes over with a higher epoch, reconciles the drain, and the link ends with
// exactly one drain in total. A third daemon with --no-standby exits with status 3.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <regex>
#include <thread>

#include "common/http_client.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/support/testing.h"

namespace medic {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kFlapping = "rtsw0001:eth5--ctsw001:eth1";

std::string scenario() {
  return json{{"comment", "one link flapping for a long while"},
              {"faults",
               {{{"kind", "flap"}, {"link", "rtsw0001:eth5"}, {"at_s", 4}, {"count", 200}, {"period_s", 0.5},
                 {"down_s", 0.15}}}}}
      .dump(1);
}

TEST(E2ELeader, StandbyTakesOverAfterKillNineWithoutADoubleDrain) {
  curl_global_setup();
  testing::TempDir dir;
  testing::TestDatabase tdb;
  HttpClient http;

  ASSERT_NO_FATAL_FAILURE(write_demo_topology(dir));
  DemoFabsim fabsim;
  ASSERT_NO_FATAL_FAILURE(fabsim.start(dir, scenario()));
  const std::string& exported = fabsim.exported;
  const std::string& sim = fabsim.sim;

  auto args = [&](const std::string& name, std::vector<std::string> more = {}) {
    std::vector<std::string> a{"--topology", exported, "--db", tdb.url(), "--poll-interval", "0.2", "--name", name,
                               "--no-probe", "--run-for", "240"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };

  // a leads.
  auto a = std::make_unique<testing::Process>(MEDIC_MEDICD_BIN, args("a", {"--http", "127.0.0.1:0"}));
  ASSERT_TRUE(testing::eventually([&] { return try_scalar(tdb, "SELECT daemon || ' ' || epoch FROM leader") == "a 1"; },
                                  60s))
      << a->output();
  const std::string a_api = api_of(*a);
  ASSERT_FALSE(a_api.empty()) << a->output();
  ASSERT_TRUE(testing::eventually([&] { return leads(http, a_api, 1); }, 30s)) << a->output();

  // b waits on standby and says who leads.
  testing::Process b(MEDIC_MEDICD_BIN, args("b", {"--http", "127.0.0.1:0"}));
  const std::string api = api_of(b);
  ASSERT_FALSE(api.empty()) << b.output();
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto [status, body] = healthz(http, api);
        return status == 200 && body.rfind("ok: standby, a (epoch 1) leads", 0) == 0 &&
               metric(http, api, "medic_role") == 3.0;
      },
      60s))
      << healthz(http, api).second << "\n" << b.output();

  // A third daemon told not to wait exits at once.
  const auto [c_status, c_out] = testing::run_command(MEDIC_MEDICD_BIN, args("c", {"--no-standby"}), 60s);
  EXPECT_EQ(c_status, 3) << c_out;
  EXPECT_THAT(c_out, HasSubstr("another medicd leads (advisory lock held); --no-standby given, exiting"));

  // a drains the flapping link. It is killed as soon as the switches have drained it
  // (applied), which is usually before the traffic check has finished the action.
  std::string seen;
  {
    pqxx::connection conn(tdb.url());
    const auto deadline = std::chrono::steady_clock::now() + 90s;
    while (seen.empty() && std::chrono::steady_clock::now() < deadline) {
      pqxx::nontransaction q(conn);
      const auto r = q.exec_params("SELECT id || ' ' || kind || ' ' || state || ' ' || daemon FROM actions "
                                   "WHERE link = $1 AND state NOT IN ('refused', 'intent')",
                                   kFlapping);
      if (!r.empty()) {
        seen = r[0][0].as<std::string>();
        EXPECT_EQ(q.exec("SELECT count(*) FROM actions WHERE daemon = 'b'")[0][0].as<std::string>(), "0")
            << "b acted on standby";
        break;
      }
      q.commit();
      std::this_thread::sleep_for(5ms);
    }
  }
  ASSERT_NE(seen, "") << "a never drained " << kFlapping << ":\n" << a->output();
  // Up to here b only waited.
  EXPECT_EQ(metric(http, api, "medic_leader"), 0.0) << b.output();
  EXPECT_EQ(metric(http, api, "medic_role"), 3.0) << b.output();
  ASSERT_TRUE(a->signal(SIGKILL));
  ASSERT_TRUE(a->wait(10s));
  a.reset();
  EXPECT_THAT(seen, ::testing::MatchesRegex("[0-9]+ drain (applied|succeeded) a")) << seen;
  const std::string action_id = seen.substr(0, seen.find(' '));

  // b takes over with a higher epoch.
  ASSERT_TRUE(testing::eventually([&] { return try_scalar(tdb, "SELECT daemon || ' ' || epoch FROM leader") == "b 2"; },
                                  60s))
      << b.output();
  ASSERT_TRUE(testing::eventually([&] { return leads(http, api, 2); }, 30s)) << b.output();

  // The one drain is finished (reconciled by b if a died in the middle of it), the
  // incident waits for repair, and b adds nothing of its own however long it runs.
  const std::string incident_where = std::string("link = '") + kFlapping + "'";
  ASSERT_TRUE(testing::eventually(
      [&] { return try_scalar(tdb, "SELECT state FROM incidents WHERE " + incident_where) == "repair_requested"; }, 60s))
      << b.output();
  const auto cycles = metric(http, api, "medic_cycles_total");
  ASSERT_TRUE(cycles);
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto c = metric(http, api, "medic_cycles_total");
        return c && *c >= *cycles + 25;
      },
      60s));
  EXPECT_EQ(tdb.column("SELECT id || ' ' || kind || ' ' || state || ' ' || daemon FROM actions WHERE state <> "
                       "'refused' ORDER BY id"),
            std::vector<std::string>{action_id + " drain succeeded a"})
      << "exactly one drain, a's, whoever finished it\n"
      << b.output();
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents WHERE " + incident_where), "1");
  EXPECT_EQ(tdb.scalar("SELECT drain_state FROM links WHERE name = '" + std::string(kFlapping) + "'"), "drained");
  // Whether a had finished its drain before it died: the steps say who verified it.
  const bool reconciled = tdb.scalar("SELECT count(*) FROM actions WHERE id = " + action_id +
                                     " AND steps::text LIKE '%reconcile: switch reports drained%'") == "1";
  std::printf("leader test: a killed with action %s %s\n", action_id.c_str(),
              reconciled ? "unfinished (b reconciled and verified it)" : "already succeeded");
  if (seen.find("succeeded") != std::string::npos) {
    EXPECT_FALSE(reconciled) << "a had finished the drain before it died";
  }
  if (reconciled) {
    EXPECT_THAT(b.output(), HasSubstr("reconcile action " + action_id + ": " + kFlapping +
                                      " is drained at the switch; verifying"));
    EXPECT_EQ(metric(http, api, "medic_actions_reconciled_total"), 1);
  } else {
    EXPECT_EQ(metric(http, api, "medic_actions_reconciled_total"), 0);
  }
  EXPECT_EQ(metric(http, api, "medic_db_errors_total"), 0);

  // The switches agree: both ends of the link drained, nothing else.
  auto r = http.get(sim + "/admin/links");
  ASSERT_TRUE(r.ok());
  std::vector<std::string> drained;
  for (const auto& l : json::parse(r->body)) {
    if (l["a_drained"].get<bool>() || l["b_drained"].get<bool>()) {
      drained.push_back(l["name"].get<std::string>() + (l["a_drained"].get<bool>() && l["b_drained"].get<bool>()
                                                            ? " both ends"
                                                            : " one end"));
    }
  }
  EXPECT_EQ(drained, std::vector<std::string>{std::string(kFlapping) + " both ends"});

  ASSERT_TRUE(b.signal(SIGTERM));
  const auto status = b.wait(30s);
  ASSERT_TRUE(status) << b.output();
  EXPECT_EQ(*status, 0) << b.output();
}

}  // namespace
}  // namespace medic
