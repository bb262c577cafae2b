// End to end: switches whose drain APIs misbehave (fabsim rpc_fault). Four uplinks flap, each
// on a switch whose drain API answers HTTP 500, answers garbage, closes the connection, or
// lies (says drained, keeps forwarding). For each: a bounded number of attempts, the action
// ends failed or rolled back, the incident goes to a person, neither end of the link is left
// drained, and no capacity group is ever below its floor (sampled from fabsim's own view of
// the links all along). A fifth flap on well-behaved switches is drained as usual. A 500,
// garbage or a closed connection says nothing of what the switch did, and its put-back is
// answered the same way: that end's state is not known, so medicd counts the link as
// drained (owed back by its incident) rather than in service; the lie is known to be undone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/http_client.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/support/testing.h"

namespace medic {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using namespace std::chrono_literals;

struct Case {
  const char* answer;  // fabsim's rpc_fault answer
  const char* device;  // the switch that misbehaves
  const char* link;    // the uplink that flaps
};
// The misbehaving end is the ToR for some and the spine for others, so that the failure
// comes first for some links and after the other end was drained for others.
constexpr Case kCases[] = {
    {"error", "rtsw0001", "rtsw0001:eth5--ctsw001:eth1"},
    {"garbage", "ctsw002", "rtsw0002:eth6--ctsw002:eth2"},
    {"close", "ctsw007", "rtsw0006:eth7--ctsw007:eth2"},
    {"lie", "rtsw0005", "rtsw0005:eth6--ctsw006:eth1"},
};
constexpr const char* kHealthy = "rtsw0003:eth8--ctsw004:eth3";  // both ends answer truly

std::string scenario() {
  json faults = json::array();
  double at = 15;
  auto flap = [&](const std::string& link) {
    faults.push_back({{"kind", "flap"},
                      {"link", link.substr(0, link.find("--"))},
                      {"at_s", at},
                      {"count", 5},
                      {"period_s", 1.0},
                      {"down_s", 0.3}});
    at += 1;
  };
  for (const Case& c : kCases) {
    faults.push_back({{"kind", "rpc_fault"}, {"device", c.device}, {"answer", c.answer}, {"at_s", 0}});
    flap(c.link);
  }
  flap(kHealthy);
  return json{{"faults", faults}}.dump(1);
}

// What fabsim says of every link: drained ends and whether it carries traffic.
struct LinkView {
  bool a_drained = false, b_drained = false, carries = true;
};
std::map<std::string, LinkView> links_of(HttpClient& http, const std::string& sim) {
  std::map<std::string, LinkView> out;
  auto r = http.get(sim + "/admin/links");
  if (!r.ok() || r->status != 200) return out;
  for (const auto& l : json::parse(r->body)) {
    out[l["name"]] = {l["a_drained"].get<bool>(), l["b_drained"].get<bool>(), l["carries_traffic"].get<bool>()};
  }
  return out;
}

// The capacity groups of the topology below their floors, from what fabsim says the links
// do ("" when none is).
std::string groups_below_floor(const json& topology, const std::map<std::string, LinkView>& links) {
  std::string below;
  for (const auto& g : topology["capacity_groups"]) {
    size_t total = 0, carrying = 0;
    for (const auto& end : g["links"]) {
      // A group names its links by one end; fabsim names them "a--b".
      for (const auto& [name, v] : links) {
        const std::string e = end.get<std::string>();
        const bool a_end = name.rfind(e + "--", 0) == 0;
        const bool b_end = name.size() > e.size() + 2 && name.compare(name.size() - e.size() - 2, 2, "--") == 0 &&
                           name.compare(name.size() - e.size(), std::string::npos, e) == 0;
        if (a_end || b_end) {
          ++total;
          carrying += v.carries ? 1 : 0;
        }
      }
    }
    if (total > 0 && static_cast<double>(carrying) < g["floor"].get<double>() * static_cast<double>(total)) {
      below += g["name"].get<std::string>() + " (" + std::to_string(carrying) + " of " + std::to_string(total) + ") ";
    }
  }
  return below;
}

TEST(E2ESwitchApi, MisbehavingDrainApisLeaveNothingHalfDrainedAndNoGroupBelowItsFloor) {
  curl_global_setup();
  testing::TempDir dir;
  testing::TestDatabase tdb;
  HttpClient http;
  ASSERT_NO_FATAL_FAILURE(write_demo_topology(dir));
  // A lie is caught by the counters within 8 s instead of 30.
  auto policy = json::parse(testing::read_file(std::string(MEDIC_SOURCE_DIR) + "/data/remediation.json"));
  policy["verify"]["window_s"] = 8;
  testing::write_file(dir.file("policy.json"), policy.dump());
  DemoFabsim fabsim;
  ASSERT_NO_FATAL_FAILURE(fabsim.start(dir, scenario()));
  const json topology = fabsim.exported_topology();
  testing::Process medicd(MEDIC_MEDICD_BIN, {"--topology", fabsim.exported, "--db", tdb.url(), "--no-probe", "--http",
                                             "127.0.0.1:0", "--policy", dir.file("policy.json"), "--run-for", "150"});
  const std::string api = api_of(medicd);
  ASSERT_FALSE(api.empty()) << medicd.output();
  ASSERT_TRUE(testing::eventually([&] { return leads(http, api, 1); }, 60s)) << medicd.output();

  auto drain_state = [&](const std::string& link) {
    return try_scalar(tdb, "SELECT string_agg(state, ',' ORDER BY id) FROM actions WHERE kind = 'drain' AND "
                           "state <> 'refused' AND link = '" + link + "'");
  };
  auto settled = [&] {
    for (const Case& c : kCases) {
      const std::string s = drain_state(c.link);
      if (s != "failed" && s != "rolled_back") return false;
      // The incident is escalated just after its action's end, in a transaction of its own
      // (and the drain counters move before that).
      if (try_scalar(tdb, std::string("SELECT state FROM incidents WHERE link = '") + c.link + "'") != "escalated") return false;
    }
    return drain_state(kHealthy) == "succeeded";
  };
  // Floors are checked from fabsim's view of the fabric at every step until all is settled.
  std::string below;
  size_t samples = 0;
  const bool done = testing::eventually(
      [&] {
        const auto links = links_of(http, fabsim.sim);
        if (!links.empty()) {
          ++samples;
          const std::string now = groups_below_floor(topology, links);
          if (!now.empty() && below.empty()) below = now;
        }
        return settled();
      },
      120s);
  EXPECT_EQ(below, "") << "a capacity group went below its floor";
  ASSERT_TRUE(done) << medicd.output() << "\n" << fabsim.output();
  EXPECT_GE(samples, 10u);

  const auto links = links_of(http, fabsim.sim);
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(c.answer) + " at " + c.device);
    const std::string where = std::string("link = '") + c.link + "'";
    // One drain, ended; the incident went to a person.
    EXPECT_EQ(try_scalar(tdb, "SELECT count(*) FROM actions WHERE kind = 'drain' AND state <> 'refused' AND " + where), "1");
    EXPECT_EQ(try_scalar(tdb, "SELECT state FROM incidents WHERE " + where), "escalated");
    // Neither end drained at the switch, and the link carries traffic again.
    ASSERT_TRUE(links.count(c.link)) << c.link;
    EXPECT_FALSE(links.at(c.link).a_drained);
    EXPECT_FALSE(links.at(c.link).b_drained);
    EXPECT_TRUE(links.at(c.link).carries);
    const bool lie = std::string(c.answer) == "lie";
    EXPECT_EQ(try_scalar(tdb, "SELECT count(*) FROM links WHERE drain_incident_id IS NOT NULL AND name = '" +
                                  std::string(c.link) + "'"),
              lie ? "0" : "1")
        << (lie ? "the lie's rollback was answered: in service" : "its end's state is not known: counted as drained");
    if (!lie) {
      EXPECT_THAT(try_scalar(tdb, "SELECT reason FROM actions WHERE kind = 'drain' AND " + where),
                  HasSubstr(std::string("not known to be undrained: ") + c.device + ":"));
    }
  }
  // Failures at the switch: after the driver's bounded attempts (a 500 and a closed connection
  // are retried; an answer that is not JSON-RPC is not), each naming the switch.
  const std::string error_reason = try_scalar(tdb, std::string("SELECT reason FROM actions WHERE link = '") +
                                                       kCases[0].link + "' AND kind = 'drain'");
  EXPECT_THAT(error_reason, HasSubstr("rtsw0001"));
  EXPECT_THAT(error_reason, HasSubstr("after 3 attempts"));
  const std::string close_reason = try_scalar(tdb, std::string("SELECT reason FROM actions WHERE link = '") +
                                                       kCases[2].link + "' AND kind = 'drain'");
  EXPECT_THAT(close_reason, HasSubstr("ctsw007"));
  EXPECT_THAT(close_reason, HasSubstr("after 3 attempts"));
  EXPECT_THAT(try_scalar(tdb, std::string("SELECT reason FROM actions WHERE link = '") + kCases[1].link +
                                  "' AND kind = 'drain'"),
              HasSubstr("ctsw002"));
  // The lie: caught by the counters, rolled back.
  EXPECT_EQ(drain_state(kCases[3].link), "rolled_back");
  EXPECT_THAT(try_scalar(tdb, std::string("SELECT reason FROM actions WHERE link = '") + kCases[3].link +
                                  "' AND kind = 'drain'"),
              HasSubstr("traffic did not move off the link"));
  // The well-behaved switches' link: drained, and only that one.
  EXPECT_TRUE(links.at(kHealthy).a_drained && links.at(kHealthy).b_drained);
  for (const auto& [name, v] : links) {
    if (name != kHealthy) {
      EXPECT_FALSE(v.a_drained || v.b_drained) << name << " is drained";
    }
  }
  EXPECT_EQ(metric(http, api, "medic_drains_succeeded_total"), 1);
  EXPECT_EQ(metric(http, api, "medic_drains_failed_total"), 4);
  EXPECT_EQ(metric(http, api, "medic_drains_rolled_back_total"), 1);
  EXPECT_EQ(metric(http, api, "medic_drains_unknown_total"), 3);
}

}  // namespace
}  // namespace medic
