// End to end: a switch whose drain API takes 8 s to answer must hold nothing but its own
// action. rtsw0001's drain API answers 8 s late (fabsim rpc_delay); its uplink flaps, and
// while medicd waits on that switch (the JSON-RPC driver's 3 s timeout, 3 attempts), a
// second uplink on other switches starts flapping: it is detected and drained and verified
// before the slow switch's action has even ended, and no poll cycle stalls. The slow
// switch carries every call out when its late answer fires, long after medicd gave up on
// it: medicd puts the end back (those answers are lost too), so the end's state is not
// known, and the link is counted as drained, owed back by its incident, until it is
// undrained; at the switch, the put-backs land after the drains and nothing stays drained.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "common/http_client.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/support/testing.h"

namespace medic {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kSlow = "rtsw0001:eth5--ctsw001:eth1";    // its ToR's drain API is slow
constexpr const char* kSecond = "rtsw0005:eth7--ctsw007:eth1";  // other switches entirely

std::string scenario() {
  return json{{"faults",
               {{{"kind", "rpc_delay"}, {"device", "rtsw0001"}, {"at_s", 0}, {"seconds", 8}},
                {{"kind", "flap"}, {"link", "rtsw0001:eth5"}, {"at_s", 15}, {"count", 5}, {"period_s", 1.0},
                 {"down_s", 0.3}},
                {{"kind", "flap"}, {"link", "rtsw0005:eth7"}, {"at_s", 17}, {"count", 5}, {"period_s", 1.0},
                 {"down_s", 0.3}}}}}
      .dump(1);
}

// One sample of a histogram's bucket (le) from an exposition; nullopt when absent.
std::optional<double> bucket(const std::string& exposition, const std::string& name, const std::string& le) {
  std::smatch m;
  const std::regex re("(^|\n)" + name + "_bucket\\{le=\"" + le + "\"\\} ([0-9.e+]+)\n");
  if (!std::regex_search(exposition, m, re)) return std::nullopt;
  return std::stod(m[2]);
}

TEST(E2ESlowSwitch, ASlowDrainApiHoldsOnlyItsOwnActionWhileASecondFlapIsDrainedOnTime) {
  curl_global_setup();
  testing::TempDir dir;
  testing::TestDatabase tdb;
  HttpClient http;
  ASSERT_NO_FATAL_FAILURE(write_demo_topology(dir));
  DemoFabsim fabsim;
  ASSERT_NO_FATAL_FAILURE(fabsim.start(dir, scenario()));
  testing::Process medicd(MEDIC_MEDICD_BIN, {"--topology", fabsim.exported, "--db", tdb.url(), "--no-probe", "--http",
                                             "127.0.0.1:0", "--run-for", "120"});
  const std::string api = api_of(medicd);
  ASSERT_FALSE(api.empty()) << medicd.output();
  ASSERT_TRUE(testing::eventually([&] { return leads(http, api, 1); }, 60s)) << medicd.output();

  auto action_of = [&](const char* link) {
    return try_scalar(tdb, std::string("SELECT state FROM actions WHERE kind = 'drain' AND state <> 'refused' AND link = '") +
                               link + "'");
  };
  // The second link is drained and verified while the slow switch's drain is still under way.
  ASSERT_TRUE(testing::eventually([&] { return action_of(kSecond) == "succeeded"; }, 60s))
      << medicd.output() << "\n" << fabsim.output();
  EXPECT_EQ(action_of(kSlow), "intent") << "the slow switch's drain should still be waiting for its answer";
  // On time: drained within seconds of its incident, as if nothing else were going on.
  const std::string second_where = std::string("link = '") + kSecond + "'";
  // The incident's mitigated_at is written just after the action's end, in a transaction of
  // its own.
  ASSERT_TRUE(testing::eventually(
      [&] { return try_scalar(tdb, "SELECT mitigated_at IS NOT NULL FROM incidents WHERE " + second_where) == "t"; }, 15s))
      << medicd.output();
  const double detect_to_mitigate = std::stod(try_scalar(
      tdb, "SELECT extract(epoch from mitigated_at - detected_at) FROM incidents WHERE " + second_where));
  EXPECT_LT(detect_to_mitigate, 5.0);

  // The slow switch's drain ends failed (it never answered in time), escalated to a person.
  ASSERT_TRUE(testing::eventually([&] { return action_of(kSlow) == "failed"; }, 60s)) << medicd.output();
  // Escalated just after the action's end, in a transaction of its own.
  EXPECT_TRUE(testing::eventually(
      [&] { return try_scalar(tdb, std::string("SELECT state FROM incidents WHERE link = '") + kSlow + "'") == "escalated"; },
      15s))
      << try_scalar(tdb, std::string("SELECT state FROM incidents WHERE link = '") + kSlow + "'");
  const std::string reason =
      try_scalar(tdb, std::string("SELECT reason FROM actions WHERE state = 'failed' AND link = '") + kSlow + "'");
  EXPECT_THAT(reason, HasSubstr("after 3 attempts"));
  EXPECT_THAT(reason, HasSubstr("not known to be undrained: rtsw0001:eth5 (counted as drained until undrained)"));
  // Counted as drained, owed back by its incident: no other drain is given its headroom.
  EXPECT_EQ(try_scalar(tdb, std::string("SELECT count(*) FROM links l JOIN incidents i ON i.id = l.drain_incident_id "
                                        "WHERE l.name = '") + kSlow + "' AND i.link = l.name"),
            "1");
  // At the switch: the three drain attempts medicd gave up on were carried out late, and
  // after them its three put-backs, so in the end the end is not drained (fabsim carries
  // calls out in the order they came).
  std::string calls_seen;
  auto late_calls = [&] {
    auto lr = http.get(fabsim.sim + "/admin/drain_calls");
    if (!lr.ok() || lr->status != 200) return calls_seen = "unread: " + (lr.ok() ? lr->body : lr.error());
    std::string seq;
    const json doc = json::parse(lr->body);
    for (const auto& c : doc["calls"]) {
      if (c["endpoint"] == "rtsw0001:eth5" && c["carried_out"] == true) seq += c["drained"] == true ? "D" : "U";
    }
    calls_seen = seq + " of " + lr->body;
    return seq;
  };
  EXPECT_TRUE(testing::eventually([&] { return late_calls() == "DDDUUU"; }, 30s)) << calls_seen << "\n" << fabsim.output();
  const std::string sim_links = fabsim.sim + "/admin/links";
  auto lr = http.get(sim_links);
  ASSERT_TRUE(lr.ok() && lr->status == 200);
  for (const auto& l : json::parse(lr->body)) {
    if (l["name"] == kSlow) {
      EXPECT_FALSE(l["a_drained"].get<bool>() || l["b_drained"].get<bool>()) << l;
    }
  }
  EXPECT_EQ(try_scalar(tdb, "SELECT bool_and(a2.result_at < a1.result_at) FROM actions a1, actions a2 WHERE a1.link = '" +
                                std::string(kSlow) + "' AND a1.state = 'failed' AND a2.link = '" + kSecond +
                                "' AND a2.state = 'succeeded'"),
            "t");

  // No poll cycle stalled meanwhile: every one took under 2.5 s (the scrape timeout is 2 s).
  auto r = http.get(api + "/metrics");
  ASSERT_TRUE(r.ok() && r->status == 200);
  const auto count = testing::metric_value(r->body, "medic_poll_cycle_seconds_count");
  const auto fast = bucket(r->body, "medic_poll_cycle_seconds", "2.5");
  ASSERT_TRUE(count && fast) << r->body;
  EXPECT_GE(*count, 20);
  EXPECT_EQ(*fast, *count) << "a poll cycle took 2.5 s or more";
  // The switch calls are measured: the slow ones show as slow.
  const auto slow_calls = bucket(r->body, "medic_switch_call_seconds", "5");
  const auto all_calls = testing::metric_value(r->body, "medic_switch_call_seconds_count");
  ASSERT_TRUE(slow_calls && all_calls);
  EXPECT_LT(*slow_calls, *all_calls) << "the slow switch's call took more than 5 s";
  EXPECT_EQ(testing::metric_value(r->body, "medic_drains_succeeded_total"), 1);
  EXPECT_EQ(testing::metric_value(r->body, "medic_drains_failed_total"), 1);
  EXPECT_EQ(testing::metric_value(r->body, "medic_drains_unknown_total"), 1);
}

}  // namespace
}  // namespace medic
