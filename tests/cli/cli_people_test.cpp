// `medic users` and `medic audit`, and the decisions that need a reason, against a fresh
// PostgreSQL database per test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "tests/cli/cli_fixture.h"

namespace medic::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using nlohmann::json;

class CliPeopleTest : public CliDbTest {};

TEST_F(CliPeopleTest, UsersAddPrintsTheTokenOnceListNeverShowsIt) {
  const auto add = medic({"users", "add", "ana", "--role", "operator", "--by", "root", "--db", url()});
  ASSERT_EQ(add.code, 0) << add.err;
  const auto lines = lines_of(add.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "user ana (operator) added; its API token, shown this once:");
  const std::string token = lines[1];
  EXPECT_EQ(token.rfind("mdk_", 0), 0u);
  auto who = db_->authenticate(token);
  ASSERT_TRUE(who.ok() && who->has_value());
  EXPECT_EQ((*who)->name, "ana");

  const auto list = medic({"users", "list", "--db", url()});
  ASSERT_EQ(list.code, 0);
  EXPECT_THAT(list.out, HasSubstr("ana"));
  EXPECT_THAT(list.out, ::testing::Not(HasSubstr(token.substr(10))));
  const json j = json::parse(medic({"users", "list", "--json", "--db", url()}).out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["role"], "operator");
  EXPECT_FALSE(j[0].contains("token"));

  const auto rot = medic({"users", "rotate", "ana", "--db", url()});
  ASSERT_EQ(rot.code, 0) << rot.err;
  EXPECT_FALSE(db_->authenticate(token)->has_value());
  EXPECT_TRUE(db_->authenticate(lines_of(rot.out).at(1))->has_value());
  ASSERT_EQ(medic({"users", "disable", "ana", "--db", url()}).code, 0);
  EXPECT_TRUE((*db_->authenticate(lines_of(rot.out).at(1)))->disabled);
}

TEST_F(CliPeopleTest, BadArgumentsAreExactErrors) {
  const auto role = medic({"users", "add", "ana", "--role", "root", "--db", url()});
  EXPECT_EQ(role.code, 2);
  EXPECT_EQ(role.err, "medic: --role \"root\": expected viewer, operator or admin\n");
  const auto name = medic({"users", "add", "-x", "--role", "viewer", "--db", url()});
  EXPECT_NE(name.code, 0);
  ASSERT_EQ(medic({"users", "add", "ana", "--role", "viewer", "--db", url()}).code, 0);
  const auto dup = medic({"users", "add", "ana", "--role", "viewer", "--db", url()});
  EXPECT_EQ(dup.code, 1);
  EXPECT_EQ(dup.err, "medic: user \"ana\" exists already\n");
  const auto nobody = medic({"users", "disable", "nobody", "--db", url()});
  EXPECT_EQ(nobody.code, 1);
  EXPECT_EQ(nobody.err, "medic: no user \"nobody\"\n");
  const auto since = medic({"audit", "--since", "last week", "--db", url()});
  EXPECT_EQ(since.code, 2);
  EXPECT_EQ(since.err, "medic: --since \"last week\": expected an ISO 8601 time, Unix seconds or -N[smhd] (ago)\n");
  EXPECT_EQ(db_->users()->size(), 1u) << "nothing else was added";
}

TEST_F(CliPeopleTest, RejectDismissAndBreakerResetNeedAReasonAndAllAreAudited) {
  triage::IncidentUpdate u;
  u.cls = triage::IncidentClass::corruption;
  u.link = *topo_.find_link("rtsw0001:eth5");
  u.severity = detectors::Severity::critical;
  u.detected_at = u.started_at = SystemClock().now();
  const auto id = db_->open_incident(u, topo_, u.detected_at);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(db_->set_incident_state(*id, triage::IncidentState::pending_approval, u.detected_at).ok());
  const std::string n = std::to_string(*id);
  const auto no_reason = medic({"incidents", "reject", n, "--db", url()});
  EXPECT_EQ(no_reason.code, 2);
  EXPECT_EQ(no_reason.err, "medic: incidents reject needs --reason (it goes into the audit trail)\n");
  const auto approve = medic({"incidents", "approve", n, "--by", "ana", "--reason", "fcs both ends", "--db", url()});
  ASSERT_EQ(approve.code, 0) << approve.err;
  EXPECT_EQ(approve.out, "incident " + n + ": drain approved by ana; medicd drains it when capacity allows\n");
  ASSERT_TRUE(db_->open_breaker(SystemClock().now(), "circuit breaker open: 30 incidents").ok());
  const auto reset = medic({"breaker", "reset", "--by", "cy", "--db", url()});
  EXPECT_EQ(reset.code, 2);
  EXPECT_THAT(reset.err, HasSubstr("--reason"));
  ASSERT_EQ(medic({"breaker", "reset", "--by", "cy", "--reason", "zone outage over", "--db", url()}).code, 0);
  ASSERT_EQ(medic({"incidents", "dismiss", n, "--by", "bo", "--reason", "optic cleaned", "--db", url()}).code, 0);

  const auto audit = medic({"audit", "--json", "--db", url()});
  ASSERT_EQ(audit.code, 0) << audit.err;
  std::vector<std::string> got;
  for (const auto& r : json::parse(audit.out)) {
    got.push_back(r["who"].get<std::string>() + " " + r["role"].get<std::string>() + " " + r["what"].get<std::string>() +
                  " " + r["reason"].get<std::string>());
    if (r["role"] == "cli") {
      EXPECT_THAT(r["source"].get<std::string>(), HasSubstr("cli on "));
    }
  }
  EXPECT_THAT(got, ElementsAre("ana cli approve fcs both ends", "medicd daemon breaker_open circuit breaker open: 30 incidents",
                               "cy cli breaker_reset zone outage over",
                               "bo cli dismiss optic cleaned"));
  const auto by_incident = medic({"audit", "--incident", n, "--who", "bo", "--db", url()});
  ASSERT_EQ(by_incident.code, 0);
  EXPECT_THAT(by_incident.out, HasSubstr("optic cleaned"));
  EXPECT_THAT(by_incident.out, ::testing::Not(HasSubstr("fcs both ends")));
}

}  // namespace
}  // namespace medic::cli
