// `medic notify status` against a fresh PostgreSQL database: what each receiver is owed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "tests/cli/cli_fixture.h"

namespace medic::cli {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

class CliNotifyTest : public CliDbTest {};

TEST_F(CliNotifyTest, StatusSaysWhatEachReceiverIsOwedDeliveredAndRefused) {
  const auto none = medic({"notify", "status", "--db", url()});
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_EQ(none.out, "no receiver: medicd runs without --alertmanager or --webhook\n");

  ASSERT_TRUE(db_->set_receivers({{"alertmanager http://127.0.0.1:9093", "alertmanager"},
                                  {"webhook http://127.0.0.1:8080/hook", "webhook"}})
                  .ok());
  triage::IncidentUpdate u;
  u.cls = triage::IncidentClass::link_flap;
  u.link = *topo_.find_link("rtsw0001:eth5");
  u.severity = detectors::Severity::critical;
  u.started_at = u.detected_at = SystemClock().now();
  u.summary = "flaps";
  const auto id = db_->open_incident(u, topo_, u.detected_at);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(db_->set_incident_state(*id, triage::IncidentState::pending_approval, u.detected_at).ok());
  const auto due = db_->due("webhook http://127.0.0.1:8080/hook", 10);
  ASSERT_TRUE(due.ok() && due->size() == 2u);
  ASSERT_TRUE(db_->delivered({(*due)[0].id}, SystemClock().now()).ok());
  ASSERT_TRUE(db_->attempt_failed({(*due)[1].id}, "HTTP 422: no", true, SystemClock().now()).ok());
  ASSERT_TRUE(db_->attempt_failed({(*db_->due("alertmanager http://127.0.0.1:9093", 1))[0].id}, "connection refused",
                                  false, SystemClock().now())
                  .ok());

  const auto table = medic({"notify", "status", "--db", url()});
  ASSERT_EQ(table.code, 0) << table.err;
  const auto lines = lines_of(table.out);
  ASSERT_EQ(lines.size(), 3u) << table.out;
  EXPECT_THAT(lines[0], HasSubstr("RECEIVER"));
  EXPECT_THAT(lines[1], HasSubstr("alertmanager http://127.0.0.1:9093"));
  EXPECT_THAT(lines[1], HasSubstr("connection refused"));
  EXPECT_THAT(lines[2], HasSubstr("HTTP 422: no"));

  const json j = json::parse(medic({"notify", "status", "--json", "--db", url()}).out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["kind"], "alertmanager");
  EXPECT_EQ(j[0]["pending"], 2);
  EXPECT_EQ(j[0]["delivered"], 0);
  EXPECT_TRUE(j[0]["oldest_pending"].is_string());
  EXPECT_EQ(j[1]["pending"], 0);
  EXPECT_EQ(j[1]["delivered"], 1);
  EXPECT_EQ(j[1]["refused"], 1);
  EXPECT_TRUE(j[1]["oldest_pending"].is_null());
  EXPECT_EQ(j[1]["enabled"], true);
}

TEST_F(CliNotifyTest, BadArgumentsAreRefused) {
  const auto no_sub = medic({"notify"});
  EXPECT_NE(no_sub.code, 0);
  EXPECT_THAT(no_sub.err, HasSubstr("A subcommand is required"));
  const auto extra = medic({"notify", "status", "now", "--db", url()});
  EXPECT_NE(extra.code, 0);
  EXPECT_THAT(extra.err, HasSubstr("now"));
  const auto no_db = medic({"notify", "status", "--db", "postgresql://nobody@127.0.0.1:1/none"});
  EXPECT_NE(no_db.code, 0);
  EXPECT_THAT(no_db.err, HasSubstr("medic: "));
}

}  // namespace
}  // namespace medic::cli
