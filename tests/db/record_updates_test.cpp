// A poll's incident updates recorded in one transaction (IncidentStore::record_updates):
// the same rows as recording them one at a time, all or none, and a commit whose answer
// the connection lost is asked about instead of guessed. Also set_incident_state's one
// statement, safe to run twice.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>

#include "db/internal.h"
#include "tests/db/demo_db.h"
#include "tests/support/tcp_proxy.h"
#include "tests/support/testing.h"

namespace medic::db {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using triage::IncidentState;

detectors::Finding link_finding(const fabric::Topology& t, fabric::LinkId link, bool a_end, detectors::FindingKind kind,
                                detectors::Severity sev, Time first, Time seen, const std::string& summary) {
  detectors::Finding f;
  f.kind = kind;
  f.severity = sev;
  f.link = link;
  f.port = a_end ? t.link(link).a : t.link(link).b;
  f.device = t.port(f.port).device;
  f.first_seen = first;
  f.observed_at = seen;
  f.summary = summary;
  f.evidence = {{"rate", 0.25}, {"window_s", 60}};
  return f;
}

triage::IncidentUpdate link_update(const fabric::Topology& t, const std::string& ref, triage::IncidentClass cls,
                                   detectors::FindingKind kind, Time first, Time seen) {
  triage::IncidentUpdate u;
  u.cls = cls;
  u.link = *t.find_link(ref);
  u.severity = detectors::Severity::warning;
  u.previous_severity = detectors::Severity::warning;
  u.started_at = first;
  u.detected_at = seen;
  u.summary = std::string(triage::to_string(cls)) + " on " + ref;
  u.findings.push_back(link_finding(t, u.link, true, kind, u.severity, first, seen, u.summary));
  return u;
}

// A link_flap incident opened on `ref` at 10 s.
Result<int64_t> open_flap(AllStores& db, const fabric::Topology& t, const std::string& ref) {
  return db.open_incident(
      link_update(t, ref, triage::IncidentClass::link_flap, detectors::FindingKind::link_flap, at(9), at(10)), t, at(10));
}

// What an incident's records say, ids left out: its row, its findings in order, its history.
std::vector<std::string> records_of(const testing::TestDatabase& tdb, int64_t id) {
  const std::string where = " WHERE incident_id = " + std::to_string(id) + " ORDER BY id";
  std::vector<std::string> out = tdb.column(
      "SELECT concat_ws('|', class, state, severity, link, device, summary, started_at, detected_at, triaged_at, "
      "suspect, suspect_port, loss_estimate, reopen_count, closed_at) FROM incidents WHERE id = " + std::to_string(id));
  for (const auto& f : tdb.column("SELECT concat_ws('|', kind, severity, link, device, port, summary, evidence::text, "
                                  "first_seen, observed_at, note) FROM findings" + where)) {
    out.push_back("finding " + f);
  }
  for (const auto& e : tdb.column("SELECT concat_ws('|', at, state, note) FROM incident_events" + where)) {
    out.push_back("event " + e);
  }
  return out;
}

// Two incidents already there, as earlier polls left them: one open (link_a), one closed
// (link_b, its fault about to come back). Returns their ids.
std::pair<int64_t, int64_t> earlier_polls(DemoDb& d) {
  using triage::IncidentClass;
  using detectors::FindingKind;
  const auto open = d.db.open_incident(
      link_update(d.topo, "rtsw0001:eth5", IncidentClass::corruption, FindingKind::corruption, at(0), at(1)), d.topo,
      at(1));
  const auto closed = d.db.open_incident(
      link_update(d.topo, "rtsw0002:eth5", IncidentClass::link_flap, FindingKind::link_flap, at(0), at(1)), d.topo,
      at(1));
  if (!open.ok() || !closed.ok()) throw std::runtime_error("open_incident failed");
  if (!d.db.set_incident_state(*closed, IncidentState::closed, at(2)).ok()) throw std::runtime_error("close failed");
  return {*open, *closed};
}

// One poll's updates of every kind: two new incidents (the first with two findings), one
// following the first new one, the open incident escalated and corroborated, the closed one
// reopened, and a resolution with nothing open.
std::vector<triage::IncidentUpdate> a_poll(const DemoDb& d, int64_t open, int64_t closed) {
  using triage::IncidentClass;
  using detectors::FindingKind;
  using detectors::Severity;
  std::vector<triage::IncidentUpdate> u;
  u.push_back(link_update(d.topo, "rtsw0003:eth5", IncidentClass::link_flap, FindingKind::link_flap, at(9), at(10)));
  u[0].findings.push_back(link_finding(d.topo, u[0].link, false, FindingKind::link_flap, Severity::warning, at(9),
                                       at(10), "the other end"));
  u.push_back(link_update(d.topo, "rtsw0004:eth5", IncidentClass::fec, FindingKind::fec_ber, at(8), at(10)));
  u[1].suspect = "rtsw0004:eth5";
  u[1].suspect_port = d.topo.link(u[1].link).a;
  triage::IncidentUpdate follows = link_update(d.topo, "rtsw0003:eth5", IncidentClass::link_flap,
                                               FindingKind::link_flap, at(9), at(10));
  follows.follows = 0;
  follows.findings.front().summary = "a third finding";
  // Triage::resolve's join: worse than the incident so far, which it then raises.
  follows.severity = Severity::critical;
  follows.findings.front().severity = Severity::critical;
  u.push_back(follows);
  triage::IncidentUpdate escalate =
      link_update(d.topo, "rtsw0001:eth5", IncidentClass::corruption, FindingKind::corruption, at(0), at(10));
  escalate.incident_id = open;
  escalate.severity = Severity::critical;
  escalate.corroborated = true;
  u.push_back(escalate);
  triage::IncidentUpdate reopen =
      link_update(d.topo, "rtsw0002:eth5", IncidentClass::link_flap, FindingKind::link_flap, at(9), at(10));
  reopen.incident_id = closed;
  reopen.reopened = true;
  u.push_back(reopen);
  triage::IncidentUpdate nothing;
  nothing.cls = IncidentClass::telemetry_outage;
  nothing.resolved = true;
  u.push_back(nothing);
  // A measurement incident opened and, by a later poll kept with it, resolved.
  triage::IncidentUpdate outage;
  outage.cls = IncidentClass::telemetry_outage;
  outage.severity = Severity::warning;
  outage.started_at = at(8);
  outage.detected_at = at(9);
  outage.summary = "most devices did not answer";
  u.push_back(outage);
  triage::IncidentUpdate back = outage;
  back.resolved = true;
  back.follows = 6;
  back.summary = "devices answer again";
  u.push_back(back);
  return u;
}

TEST(RecordUpdates, APollsUpdatesAreRecordedTogetherAsOneAtATimeWould) {
  DemoDb one, together;
  const auto [open1, closed1] = earlier_polls(one);
  const auto [open2, closed2] = earlier_polls(together);
  ASSERT_EQ(open1, open2);
  ASSERT_EQ(closed1, closed2);
  std::vector<triage::IncidentUpdate> updates = a_poll(one, open1, closed1);
  const std::vector<double> loss = {0.5, 0.125, 0, 0.75, 0.25, 0, 0, 0};

  // One at a time, as medicd did before: the new incident's id handed to the one following it.
  std::vector<int64_t> ids;
  for (size_t i = 0; i < updates.size(); ++i) {
    triage::IncidentUpdate u = updates[i];
    if (u.follows >= 0) u.incident_id = ids[static_cast<size_t>(u.follows)];
    if (u.resolved) {
      if (u.incident_id != 0) {
        ASSERT_TRUE(one.db.resolve_incident(u, one.topo, at(11)).ok());
      }
      ids.push_back(u.incident_id);
      continue;
    }
    if (u.is_new()) {
      const auto id = one.db.open_incident(u, one.topo, at(11), loss[i]);
      ASSERT_TRUE(id.ok()) << id.error();
      ids.push_back(*id);
    } else if (u.reopened) {
      ASSERT_TRUE(one.db.reopen_incident(u, one.topo, at(11), loss[i]).ok());
      ids.push_back(u.incident_id);
    } else {
      ASSERT_TRUE(one.db.add_findings(u, one.topo, loss[i]).ok());
      ids.push_back(u.incident_id);
    }
  }

  const auto r = together.db.record_updates(updates, loss, together.topo, at(11));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_FALSE(r->in_doubt);
  EXPECT_EQ(r->ids, ids);
  ASSERT_EQ(r->ids.size(), 8u);
  EXPECT_EQ(r->ids[2], r->ids[0]) << "the update that follows the first gets its incident";
  EXPECT_EQ(r->ids[5], 0) << "a resolution with nothing open records nothing";
  EXPECT_EQ(r->ids[7], r->ids[6]);
  for (const int64_t id : {open1, closed1, ids[0], ids[1], ids[6]}) {
    EXPECT_EQ(records_of(together.tdb, id), records_of(one.tdb, id)) << "incident " << id;
  }
  // What the batch wrote, spelled out for the new incident: its findings in order, one loss.
  EXPECT_EQ(together.tdb.scalar("SELECT loss_estimate FROM incidents WHERE id = " + std::to_string(ids[0])), "0.5");
  EXPECT_THAT(together.tdb.column("SELECT summary FROM findings WHERE incident_id = " + std::to_string(ids[0]) +
                                  " ORDER BY id"),
              ElementsAre("link_flap on rtsw0003:eth5", "the other end", "a third finding"));
  EXPECT_THAT(together.tdb.column("SELECT state FROM incident_events WHERE incident_id = " + std::to_string(open1) +
                                  " ORDER BY id"),
              ElementsAre("detected", "triaged", "escalated_severity", "corroborated"));
  EXPECT_EQ(together.tdb.scalar("SELECT severity || ' ' || reopen_count FROM incidents WHERE id = " +
                                std::to_string(open1)),
            "critical 0");
  EXPECT_EQ(together.tdb.scalar("SELECT state || ' ' || reopen_count FROM incidents WHERE id = " +
                                std::to_string(closed1)),
            "triaged 1");
  EXPECT_EQ(together.tdb.scalar("SELECT suspect_port FROM incidents WHERE id = " + std::to_string(ids[1])),
            "rtsw0004:eth5");
  // The update that follows the new incident raised it, as one at a time would have.
  EXPECT_EQ(together.tdb.scalar("SELECT severity FROM incidents WHERE id = " + std::to_string(ids[0])), "critical");
  EXPECT_THAT(together.tdb.column("SELECT state FROM incident_events WHERE incident_id = " + std::to_string(ids[0]) +
                                  " ORDER BY id"),
              ElementsAre("detected", "triaged", "escalated_severity"));
  // The measurement incident opened and resolved in the one batch.
  EXPECT_THAT(together.tdb.column("SELECT state FROM incident_events WHERE incident_id = " + std::to_string(ids[6]) +
                                  " ORDER BY id"),
              ElementsAre("detected", "triaged", "closed"));
  EXPECT_EQ(together.tdb.scalar("SELECT state FROM incidents WHERE id = " + std::to_string(ids[6])), "closed");
}

TEST(RecordUpdates, OneRefusedUpdateRecordsNoneAndSaysWhich) {
  DemoDb d;
  const auto [open, closed] = earlier_polls(d);
  std::vector<triage::IncidentUpdate> updates = a_poll(d, open, closed);
  updates[4].incident_id = open;  // "reopen" an incident that is still open
  const std::string incidents = d.tdb.scalar("SELECT count(*) FROM incidents");
  const std::string findings = d.tdb.scalar("SELECT count(*) FROM findings");
  const std::string events = d.tdb.scalar("SELECT count(*) FROM incident_events");
  const auto r = d.db.record_updates(updates, {}, d.topo, at(11));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error(), HasSubstr("update 5 of 8: no closed incident with id " + std::to_string(open)));
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM incidents"), incidents);
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM findings"), findings);
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM incident_events"), events);
  EXPECT_TRUE(d.db.available()) << "a refusal is not the database failing";
}

TEST(RecordUpdates, TextThatIsNotUtf8IsRecordedWithItsBadBytesReplaced) {
  DemoDb d;
  std::vector<triage::IncidentUpdate> updates;
  updates.push_back(link_update(d.topo, "rtsw0003:eth5", triage::IncidentClass::link_flap,
                                detectors::FindingKind::link_flap, at(9), at(10)));
  updates.push_back(updates.front());
  updates[1].link = d.link("rtsw0004:eth5");
  updates[1].findings.front().link = updates[1].link;
  updates[0].findings.front().summary = "port eth5 \xff\xfe says";
  const auto r = d.db.record_updates(updates, {}, d.topo, at(11));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(d.tdb.scalar("SELECT summary FROM findings WHERE incident_id = " + std::to_string(r->ids[0])),
            "port eth5 \xef\xbf\xbd\xef\xbf\xbd says");
}

// The database behind a proxy that can cut the connection at a statement.
struct ProxiedDemo {
  testing::TestDatabase tdb;
  testing::TcpProxy proxy{testing::TcpProxy::url_host_port(tdb.url()).first,
                          testing::TcpProxy::url_host_port(tdb.url()).second};
  fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  AllStores db{testing::TcpProxy::rewrite_url(tdb.url(), proxy.port())};
  ProxiedDemo() {
    db.migrate();
    if (const auto st = db.sync_inventory(topo); !st.ok()) throw std::runtime_error(st.error());
  }
};

std::vector<triage::IncidentUpdate> two_new(const fabric::Topology& t) {
  return {link_update(t, "rtsw0003:eth5", triage::IncidentClass::link_flap, detectors::FindingKind::link_flap, at(9),
                      at(10)),
          link_update(t, "rtsw0004:eth5", triage::IncidentClass::fec, detectors::FindingKind::fec_ber, at(9), at(10))};
}

TEST(RecordUpdates, ACommitWhoseAnswerWasLostIsAskedAboutAndCountsAsRecorded) {
  ProxiedDemo d;
  d.proxy.cut_at("COMMIT", /*forward=*/true);  // the server commits; the answer never comes back
  const auto r = d.db.record_updates(two_new(d.topo), {}, d.topo, at(11));
  ASSERT_EQ(d.proxy.cut_at_count(), 1);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_FALSE(r->in_doubt);
  ASSERT_EQ(r->ids.size(), 2u);
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM incidents"), "2");
  EXPECT_EQ(d.tdb.scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM incidents"),
            std::to_string(r->ids[0]) + "," + std::to_string(r->ids[1]));
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM findings"), "2");
}

TEST(RecordUpdates, ACommitThatNeverArrivedIsNotRecordedAndCanBeRecordedAgain) {
  ProxiedDemo d;
  d.proxy.cut_at("COMMIT", /*forward=*/false);  // the server never gets it: it rolls back
  const auto lost = d.db.record_updates(two_new(d.topo), {}, d.topo, at(11));
  ASSERT_EQ(d.proxy.cut_at_count(), 1);
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.kind(), ErrorKind::unavailable);
  EXPECT_THAT(lost.error(), HasSubstr("connection was lost during COMMIT, and the transaction did not commit"));
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM incidents"), "0");
  const auto again = d.db.record_updates(two_new(d.topo), {}, d.topo, at(12));
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM incidents"), "2");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM findings"), "2");
}

TEST(RecordUpdates, AConnectionCutBeforeTheCommitIsRetriedOnAFreshOne) {
  ProxiedDemo d;
  d.proxy.cut_at("INSERT INTO incidents", /*forward=*/false);
  const auto r = d.db.record_updates(two_new(d.topo), {}, d.topo, at(11));
  ASSERT_EQ(d.proxy.cut_at_count(), 1);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM incidents"), "2");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM findings"), "2");
}

TEST(SetIncidentState, RunTwiceItWritesOneHistoryLineAndTheSameRow) {
  DemoDb d;
  const auto id = open_flap(d.db, d.topo, "rtsw0003:eth5");
  ASSERT_TRUE(id.ok()) << id.error();
  const std::string why = "past the blast-radius cap";
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::pending_approval, at(11), why).ok());
  const std::string row = d.tdb.scalar("SELECT concat_ws('|', state, approval_reason) FROM incidents WHERE id = " +
                                       std::to_string(*id));
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::pending_approval, at(11), why).ok());
  EXPECT_EQ(d.tdb.scalar("SELECT concat_ws('|', state, approval_reason) FROM incidents WHERE id = " +
                         std::to_string(*id)),
            row);
  EXPECT_EQ(row, "pending_approval|" + why);
  EXPECT_THAT(d.tdb.column("SELECT state FROM incident_events WHERE incident_id = " + std::to_string(*id) +
                           " ORDER BY id"),
              ElementsAre("detected", "triaged", "pending_approval"));
  // A later change of the same state is news again.
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::pending_approval, at(12), "another reason").ok());
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM incident_events WHERE state = 'pending_approval'"), "2");
  const auto missing = d.db.set_incident_state(*id + 100, IncidentState::mitigated, at(13));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), "no incident with id " + std::to_string(*id + 100));
}

TEST(SetIncidentState, SeveralAtOnceEachWithItsReasonAndTheMissingNamed) {
  DemoDb d;
  std::vector<int64_t> ids;
  for (const char* ref : {"rtsw0003:eth5", "rtsw0004:eth5", "rtsw0005:eth5"}) {
    const auto id = open_flap(d.db, d.topo, ref);
    ASSERT_TRUE(id.ok()) << id.error();
    ids.push_back(*id);
  }
  const std::vector<std::string> reasons = {"blast radius: 3 wanted", "", "link_flap drains need approval"};
  ASSERT_TRUE(d.db.set_incident_states(ids, IncidentState::pending_approval, at(11), reasons).ok());
  EXPECT_THAT(d.tdb.column("SELECT concat_ws('|', state, coalesce(approval_reason, '(none)')) FROM incidents ORDER BY id"),
              ElementsAre("pending_approval|blast radius: 3 wanted", "pending_approval|(none)",
                          "pending_approval|link_flap drains need approval"));
  EXPECT_THAT(d.tdb.column("SELECT note FROM incident_events WHERE state = 'pending_approval' ORDER BY incident_id"),
              ElementsAre("blast radius: 3 wanted", "", "link_flap drains need approval"));
  // All or none: with ids it does not find, none moves, and the error names them.
  const std::vector<int64_t> with_missing = {ids[0], ids[2] + 7, ids[1], ids[2] + 9};
  const auto st = d.db.set_incident_states(with_missing, IncidentState::mitigated, at(12), {});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error(), "no incidents with ids " + std::to_string(ids[2] + 7) + ", " + std::to_string(ids[2] + 9));
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM incidents WHERE state = 'mitigated'"), "0");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM incident_events WHERE state = 'mitigated'"), "0");
  // Stage times for several at once.
  const std::vector<int64_t> two = {ids[0], ids[1]};
  ASSERT_TRUE(d.db.set_incident_states(two, IncidentState::mitigated, at(12), {}).ok());
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM incidents WHERE state = 'mitigated' AND mitigated_at = '" +
                         format_iso8601(at(12)) + "'"),
            "2");
}

TEST(SetIncidentState, BackToAStateWithinTheSameMomentIsNewsAgain) {
  DemoDb d;
  const auto id = open_flap(d.db, d.topo, "rtsw0003:eth5");
  ASSERT_TRUE(id.ok()) << id.error();
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::pending_approval, at(11), "why").ok());
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::blocked, at(11), "floor").ok());
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::pending_approval, at(11), "why").ok());
  EXPECT_THAT(d.tdb.column("SELECT state FROM incident_events WHERE incident_id = " + std::to_string(*id) +
                           " ORDER BY id"),
              ElementsAre("detected", "triaged", "pending_approval", "blocked", "pending_approval"));
}

TEST(SetIncidentState, ARetryAfterTheAnswerWasLostWritesOneHistoryLine) {
  ProxiedDemo d;
  const auto id = open_flap(d.db, d.topo, "rtsw0003:eth5");
  ASSERT_TRUE(id.ok()) << id.error();
  // The server runs the statement; its answer never comes back, and the connection is gone
  // before COMMIT; run() retries it on a new connection, while the first may still run.
  d.proxy.cut_at("missing AS", /*forward=*/true);
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::pending_approval, at(11), "past the cap").ok());
  ASSERT_EQ(d.proxy.cut_at_count(), 1);
  EXPECT_THAT(d.tdb.column("SELECT state FROM incident_events WHERE incident_id = " + std::to_string(*id) +
                           " ORDER BY id"),
              ElementsAre("detected", "triaged", "pending_approval"));
  // Its COMMIT reaches the server and the answer is lost: an error, though it committed;
  // the workflow then writes it again, and the same change writes no second line.
  d.proxy.cut_at("COMMIT", /*forward=*/true);
  EXPECT_FALSE(d.db.set_incident_state(*id, IncidentState::blocked, at(12), "floor").ok());
  ASSERT_EQ(d.proxy.cut_at_count(), 2);
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::blocked, at(12), "floor").ok());
  EXPECT_THAT(d.tdb.column("SELECT state FROM incident_events WHERE incident_id = " + std::to_string(*id) +
                           " ORDER BY id"),
              ElementsAre("detected", "triaged", "pending_approval", "blocked"));
}

// The first try's transaction still open on the server when the second comes (its COMMIT on
// the way, as after a lost answer): the second waits for it, then sees its history line
// and writes none of its own. Here the first try is held open by hand, for certain.
TEST(SetIncidentState, ASecondTryWhileTheFirstIsStillOpenWaitsForItAndWritesNoSecondLine) {
  ProxiedDemo d;
  const auto id = open_flap(d.db, d.topo, "rtsw0003:eth5");
  ASSERT_TRUE(id.ok()) << id.error();
  pqxx::connection first(d.tdb.url());
  pqxx::work w(first);
  w.exec_params("UPDATE incidents SET state = 'blocked', blocked_reason = 'floor' WHERE id = $1", *id);
  w.exec_params("INSERT INTO incident_events (incident_id, at, state, note) VALUES ($1, $2::timestamptz, 'blocked', 'floor')",
                *id, format_iso8601(at(12)));
  auto second = std::async(std::launch::async, [&] {
    return d.db.set_incident_state(*id, IncidentState::blocked, at(12), "floor");
  });
  // Until the second waits on the first's lock (bounded: 10 s).
  bool waiting = false;
  for (int i = 0; i < 200 && !waiting; ++i) {
    waiting = d.tdb.scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
                           "wait_event_type = 'Lock'") != "0";
    if (!waiting) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(waiting) << "the second try never waited on the first";
  w.commit();
  const Status st = second.get();
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_THAT(d.tdb.column("SELECT state FROM incident_events WHERE incident_id = " + std::to_string(*id) +
                           " ORDER BY id"),
              ElementsAre("detected", "triaged", "blocked"));
  EXPECT_EQ(d.tdb.scalar("SELECT state FROM incidents WHERE id = " + std::to_string(*id)), "blocked");
}

// Waits (10 s at most) until some session of the test database waits on a lock.
bool a_session_waits_on_a_lock(const testing::TestDatabase& tdb) {
  for (int i = 0; i < 200; ++i) {
    if (tdb.scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
                   "wait_event_type = 'Lock'") != "0") {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// A poll's updates name incidents in the order triage found them, here the later one
// first; an engineer's several changes at once (set_incident_states) lock theirs in id
// order. The poll's transaction takes its incidents in id order too, before it writes: held
// on the first by someone else, it has taken none, so the other can take the second and
// finish. Taken in the batch's order, each would hold a row the other waits for.
TEST(RecordUpdates, ItsIncidentsAreTakenInIdOrderSoSeveralChangesAtOnceCannotDeadlockIt) {
  DemoDb d;
  const auto first = open_flap(d.db, d.topo, "rtsw0003:eth5");
  const auto second = open_flap(d.db, d.topo, "rtsw0004:eth5");
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_LT(*first, *second);
  std::vector<triage::IncidentUpdate> poll;
  for (const auto& [ref, id] : {std::pair{"rtsw0004:eth5", *second}, std::pair{"rtsw0003:eth5", *first}}) {
    triage::IncidentUpdate u =
        link_update(d.topo, ref, triage::IncidentClass::link_flap, detectors::FindingKind::link_flap, at(9), at(20));
    u.incident_id = id;
    u.findings.front().summary = "flapped again";
    poll.push_back(u);
  }
  pqxx::connection engineer(d.tdb.url());
  pqxx::work w(engineer);
  w.exec_params("SELECT id FROM incidents WHERE id = $1 FOR NO KEY UPDATE", *first);
  auto recorded = std::async(std::launch::async, [&] { return d.db.record_updates(poll, {}, d.topo, at(20)); });
  const bool waited = a_session_waits_on_a_lock(d.tdb);
  if (!waited) w.abort();  // the poll's transaction goes on: the test ends now, not at its deadline
  ASSERT_TRUE(waited) << "the poll's transaction never waited for the first incident";
  // The second incident is free: the poll's transaction holds nothing while it waits.
  std::string second_taken;
  try {
    w.exec_params("SELECT id FROM incidents WHERE id = $1 FOR NO KEY UPDATE NOWAIT", *second);
    w.commit();
  } catch (const std::exception& e) {
    second_taken = e.what();
    w.abort();  // so that the poll's transaction can go on, and the test end
  }
  const auto r = recorded.get();
  EXPECT_EQ(second_taken, "") << "the poll's transaction held the second incident while it waited for the first";
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_THAT(r->ids, ElementsAre(*second, *first));
  for (const int64_t id : {*first, *second}) {
    EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM findings WHERE summary = 'flapped again' AND incident_id = " +
                           std::to_string(id)),
              "1");
  }
}

// A deadlock between two transactions: the server ends one of them, rolled back whole;
// run() runs the call again, once, and it succeeds when the other has finished. Nothing of
// the first try stays. The call closes the cycle itself (its first try takes the second
// incident, waits until the other waits for it, then asks for the first, which the other
// holds), and its session has the shorter deadlock_timeout: it is the one ended, for certain.
TEST(RecordUpdates, ACallTheServerRolledBackToEndADeadlockIsRunAgain) {
  DemoDb d;
  const auto first = open_flap(d.db, d.topo, "rtsw0003:eth5");
  const auto second = open_flap(d.db, d.topo, "rtsw0004:eth5");
  ASSERT_TRUE(first.ok() && second.ok());
  pqxx::connection other(d.tdb.url());
  pqxx::work ow(other);
  ow.exec("SET LOCAL deadlock_timeout = '30s'");
  ow.exec_params("SELECT id FROM incidents WHERE id = $1 FOR NO KEY UPDATE", *first);
  Connection c(d.tdb.url());
  std::promise<void> holding_second;
  int tries = 0;
  bool other_waited = true;
  auto call = std::async(std::launch::async, [&] {
    return c.run("two rows", [&](Pq& pq) -> Status {
      ++tries;
      pqxx::work w(pq.c);
      w.exec("SET LOCAL deadlock_timeout = '200ms'");
      w.exec_params("UPDATE incidents SET summary = summary || ' (seen)' WHERE id = $1", *second);
      if (tries == 1) {
        holding_second.set_value();
        other_waited = a_session_waits_on_a_lock(d.tdb);
      }
      w.exec_params("UPDATE incidents SET summary = summary || ' (seen)' WHERE id = $1", *first);
      w.commit();
      return Ok{};
    });
  });
  holding_second.get_future().wait();
  // Waits for the row the call holds until the server ends the call's transaction.
  ow.exec_params("UPDATE incidents SET summary = summary || ' (other)' WHERE id = $1", *second);
  ow.commit();
  const Status st = call.get();
  ASSERT_TRUE(other_waited) << "the other transaction never waited for the second incident";
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_EQ(tries, 2);
  EXPECT_THAT(d.tdb.scalar("SELECT summary FROM incidents WHERE id = " + std::to_string(*second)),
              ::testing::EndsWith(" (other) (seen)"));
  EXPECT_THAT(d.tdb.scalar("SELECT summary FROM incidents WHERE id = " + std::to_string(*first)),
              ::testing::EndsWith("rtsw0003:eth5 (seen)"));
}

}  // namespace
}  // namespace medic::db
