// People, tokens, the append-only audit trail and the two-person rule, on the real PostgreSQL.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/token.h"
#include "tests/db/demo_db.h"
#include "tests/support/epoch.h"

namespace medic::db {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

int64_t open_corruption(DemoDb& d, const std::string& ref, triage::IncidentState st) {
  triage::IncidentUpdate u;
  u.cls = triage::IncidentClass::corruption;
  u.link = d.link(ref);
  u.severity = detectors::Severity::critical;
  u.detected_at = u.started_at = at(0);
  u.summary = "fcs errors";
  const auto id = d.db.open_incident(u, d.topo, at(0));
  EXPECT_TRUE(id.ok()) << id.error();
  EXPECT_TRUE(d.db.set_incident_state(*id, st, at(0), "needs approval").ok());
  return *id;
}

TEST(People, ATokenIsShownOnceAndOnlyItsSaltedHashIsKept) {
  DemoDb d;
  const auto token = d.db.add_user("ana", "operator", person("root", "admin"), at(1));
  ASSERT_TRUE(token.ok()) << token.error();
  const auto parts = parse_token(*token);
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->secret.size(), 43u);
  // The secret is nowhere in the table, in any encoding.
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM users WHERE position(convert_to('" + parts->secret +
                         "', 'UTF8') in token_hash || token_salt) > 0 OR name || role = '" + *token + "'"),
            "0");
  EXPECT_EQ(d.tdb.scalar("SELECT length(token_hash) || ' ' || length(token_salt) FROM users"), "32 16");
  const auto who = d.db.authenticate(*token);
  ASSERT_TRUE(who.ok() && who->has_value());
  EXPECT_EQ((*who)->name, "ana");
  EXPECT_EQ((*who)->role, "operator");
  EXPECT_FALSE((*who)->disabled);
  // A wrong secret, an unknown id, or something that is not a token stands for nobody.
  std::string wrong = *token;
  wrong.back() = wrong.back() == 'A' ? 'B' : 'A';
  for (const std::string& t : {wrong, std::string("mdk_999_") + parts->secret, std::string("hello"), std::string("")}) {
    const auto r = d.db.authenticate(t);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->has_value()) << t;
  }
}

TEST(People, NamesRolesRotationAndDisablingAreCheckedAndAudited) {
  DemoDb d;
  EXPECT_EQ(d.db.add_user("x y", "viewer", person("root", "admin"), at(1)).kind(), ErrorKind::invalid);
  EXPECT_EQ(d.db.add_user("bo", "root", person("root", "admin"), at(1)).error(),
            "role \"root\": expected viewer, operator or admin");
  const auto first = d.db.add_user("bo", "viewer", person("root", "admin"), at(1));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(d.db.add_user("bo", "admin", person("root", "admin"), at(2)).error(), "user \"bo\" exists already");
  const auto second = d.db.rotate_token("bo", person("root", "admin"), at(3));
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(d.db.authenticate(*first)->has_value()) << "the old token stops working at once";
  EXPECT_TRUE(d.db.authenticate(*second)->has_value());
  ASSERT_TRUE(d.db.disable_user("bo", person("root", "admin"), at(4)).ok());
  EXPECT_TRUE((*d.db.authenticate(*second))->disabled);
  EXPECT_EQ(d.db.disable_user("bo", person("root", "admin"), at(5)).kind(), ErrorKind::conflict);
  EXPECT_EQ(d.db.disable_user("nobody", person("root", "admin"), at(5)).kind(), ErrorKind::not_found);
  EXPECT_EQ(d.db.rotate_token("bo", person("root", "admin"), at(5)).kind(), ErrorKind::conflict);
  AuditFilter f;
  f.who = "root";
  const auto rows = d.db.audit(f);
  ASSERT_TRUE(rows.ok());
  std::vector<std::string> what;
  for (const auto& r : *rows) what.push_back(r.what + " " + r.detail_json);
  EXPECT_THAT(what, ElementsAre("user_add {\"role\": \"viewer\", \"user\": \"bo\"}", "user_rotate {\"user\": \"bo\"}",
                                "user_disable {\"user\": \"bo\"}"));
}

TEST(Audit, TheTrailRefusesUpdateDeleteAndTruncate) {
  DemoDb d;
  ASSERT_TRUE(d.db.add_user("ana", "operator", person("root", "admin"), at(1)).ok());
  for (const std::string sql : {"UPDATE audit SET who = 'mallory'", "DELETE FROM audit", "TRUNCATE audit"}) {
    try {
      d.tdb.exec(sql);
      ADD_FAILURE() << sql << " was allowed";
    } catch (const std::exception& e) {
      EXPECT_THAT(e.what(), HasSubstr("the audit trail is append-only")) << sql;
    }
  }
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) || ' ' || min(who) FROM audit"), "1 root");
}

TEST(Audit, EveryDecisionAndEveryActionOfMedicdIsInIt) {
  DemoDb d;
  const int64_t inc = open_corruption(d, "rtsw0001:eth5", triage::IncidentState::pending_approval);
  // Two people for this class: one approval does not approve the drain.
  const auto one = d.db.approve_incident(inc, person("ana"), 2, "fcs on both ends", at(2));
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(one->approved);
  EXPECT_EQ(d.tdb.scalar("SELECT coalesce(approved_by, '-') FROM incidents"), "-");
  const auto again = d.db.approve_incident(inc, person("ana"), 2, "", at(3));
  EXPECT_EQ(again.kind(), ErrorKind::conflict);
  EXPECT_EQ(again.error(), "incident " + std::to_string(inc) + ": ana approved it already; another person must approve it");
  const auto two = d.db.approve_incident(inc, person("bo"), 2, "", at(4));
  ASSERT_TRUE(two.ok());
  EXPECT_TRUE(two->approved);
  EXPECT_THAT(two->by, ElementsAre("ana", "bo"));
  EXPECT_EQ(d.tdb.scalar("SELECT approved_by FROM incidents"), "ana, bo");

  // medicd's drain, under its own name.
  d.db.set_actor({"medicd", "daemon", "medicd-a"});
  remediation::ActionIntent intent;
  intent.incident_id = inc;
  intent.link = d.link("rtsw0001:eth5");
  intent.kind = remediation::ActionKind::drain;
  intent.at = at(5);
  const auto action = d.db.begin_action(intent, d.link_name("rtsw0001:eth5"), 1e9, "", 0);
  ASSERT_TRUE(action.ok()) << action.error();
  ASSERT_TRUE(d.db.finish_action(*action, intent, "succeeded", true, "", {}, at(6), d.link_name("rtsw0001:eth5")).ok());
  ASSERT_TRUE(d.db.set_incident_state(inc, triage::IncidentState::repair_requested, at(6)).ok());
  ASSERT_TRUE(d.db.open_breaker(at(7), "circuit breaker open: 30 incidents").ok());
  EXPECT_EQ(d.db.reset_breaker(at(8), person("cy", "admin"), "").error(), "resetting the circuit breaker needs a reason");
  ASSERT_TRUE(d.db.reset_breaker(at(8), person("cy", "admin"), "a real zone outage, now over").ok());
  EXPECT_EQ(d.db.dismiss_incident(inc, person("bo"), "dismiss", "", at(9)).error(), "dismiss needs a reason");
  EXPECT_EQ(d.db.dismiss_incident(inc, person("bo"), "reject", "x", at(9)).kind(), ErrorKind::conflict)
      << "a drain done cannot be rejected, only dismissed";
  ASSERT_TRUE(d.db.dismiss_incident(inc, person("bo"), "dismiss", "optic cleaned", at(9)).ok());

  // Dismissed, its approvals are gone with it (the audit trail keeps them): a fault that
  // comes back needs them again.
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) || ' ' || coalesce((SELECT approved_by FROM incidents), '-') FROM approvals"), "0 -");

  const auto all = d.db.audit({});
  ASSERT_TRUE(all.ok());
  std::vector<std::string> got;
  for (const auto& r : *all) got.push_back(r.who + "/" + r.role + " " + r.what + " #" + std::to_string(r.incident_id) + " " + r.reason);
  const std::string n = std::to_string(inc);
  EXPECT_THAT(got, ElementsAre("ana/operator approve #" + n + " fcs on both ends", "bo/operator approve #" + n + " ",
                               "medicd/daemon drain #" + n + " ", "medicd/daemon drain_succeeded #" + n + " ",
                               "medicd/daemon breaker_open #0 circuit breaker open: 30 incidents",
                               "cy/admin breaker_reset #0 a real zone outage, now over",
                               "bo/operator dismiss #" + n + " optic cleaned"));
  // Filters: by incident, by who, since a time, the newest N.
  AuditFilter f;
  f.incident_id = inc;
  f.who = "bo";
  EXPECT_EQ(d.db.audit(f)->size(), 2u);
  AuditFilter since;
  since.since = at(8);
  EXPECT_EQ(d.db.audit(since)->size(), 2u);
  AuditFilter newest;
  newest.limit = 1;
  ASSERT_EQ(d.db.audit(newest)->size(), 1u);
  EXPECT_EQ(d.db.audit(newest)->front().what, "dismiss");
}

}  // namespace
}  // namespace medic::db
