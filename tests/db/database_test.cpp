#include "tests/db/all_stores.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <set>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <thread>

#include "db/migrations.h"
#include "fabric/generator.h"
#include "remediation/capacity.h"
#include "remediation/driver.h"
#include "remediation/actions.h"
#include "common/files.h"
#include "common/strings.h"
#include "slo/targets_file.h"
#include "tests/db/demo_db.h"
#include "tests/support/epoch.h"
#include "tests/support/testing.h"

namespace medic::db {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;
using triage::IncidentState;

std::string us(Time t) { return std::to_string(t.time_since_epoch().count()); }

// The time stored in a timestamptz column, in microseconds since the epoch.
std::string column_us(const testing::TestDatabase& tdb, const std::string& table, const std::string& col,
                      const std::string& where) {
  return tdb.scalar("SELECT (extract(epoch from " + col + ") * 1000000)::bigint FROM " + table + " WHERE " + where);
}

// A link_flap incident on `link_ref` as triage would hand it over, reported by the A end.
triage::IncidentUpdate flap_update(const fabric::Topology& t, const std::string& link_ref, Time started,
                                   Time detected) {
  triage::IncidentUpdate u;
  u.cls = triage::IncidentClass::link_flap;
  u.link = *t.find_link(link_ref);
  u.severity = detectors::Severity::critical;
  u.started_at = started;
  u.detected_at = detected;
  u.summary = "8 carrier transitions in 1m00s on " + link_ref;
  detectors::Finding f;
  f.kind = detectors::FindingKind::link_flap;
  f.severity = detectors::Severity::critical;
  f.link = u.link;
  f.port = t.link(u.link).a;
  f.device = t.port(f.port).device;
  f.first_seen = started;
  f.observed_at = detected;
  f.summary = u.summary;
  f.evidence = {{"transitions", 8}, {"window_s", 60}, {"threshold", 6}};
  u.findings.push_back(f);
  return u;
}

// A 127.0.0.1 port nobody listens on: bound, read, then released.
using medic::testing::closed_port;

// ---------------------------------------------------------------------------------------
// Migrations

TEST(Migrations, ApplyOnceThenNothing) {
  testing::TestDatabase tdb;
  AllStores db(tdb.url());
  const auto first = db.migrate();
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first.front(), "001_initial");
  EXPECT_TRUE(db.migrate().empty());
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM schema_migrations"), std::to_string(first.size()));
}

TEST(Migrations, RecordsOneRowPerMigrationWithChecksum) {
  testing::TestDatabase tdb;
  AllStores db(tdb.url());
  const auto applied = db.migrate();
  const auto& all = embedded_migrations();
  ASSERT_EQ(applied.size(), all.size());
  const auto versions = tdb.column("SELECT version FROM schema_migrations ORDER BY version");
  const auto names = tdb.column("SELECT name FROM schema_migrations ORDER BY version");
  const auto sums = tdb.column("SELECT checksum FROM schema_migrations ORDER BY version");
  ASSERT_EQ(versions.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(versions[i], std::to_string(all[i].version));
    EXPECT_EQ(names[i], all[i].name);
    EXPECT_EQ(applied[i], all[i].name);
    EXPECT_THAT(sums[i], ::testing::MatchesRegex("[0-9a-f]{16}"));
  }
  const auto v = db.schema_version();
  ASSERT_TRUE(v.ok()) << v.error();
  EXPECT_EQ(*v, all.back().version);
  // A second run changes nothing, not even the recorded checksums.
  EXPECT_TRUE(db.migrate().empty());
  EXPECT_EQ(tdb.column("SELECT checksum FROM schema_migrations ORDER BY version"), sums);
}

TEST(Migrations, SchemaVersionBeforeMigrateIsAnError) {
  testing::TestDatabase tdb;
  AllStores db(tdb.url());
  const auto v = db.schema_version();
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.error(), HasSubstr("schema_migrations"));
}

TEST(Migrations, EditedMigrationIsCaught) {
  testing::TestDatabase tdb;
  AllStores db(tdb.url());
  db.migrate();
  tdb.exec("UPDATE schema_migrations SET checksum = 'x' WHERE name = '001_initial'");
  try {
    db.migrate();
    FAIL() << "migrate() accepted an edited migration";
  } catch (const DbError& e) {
    EXPECT_THAT(e.what(), HasSubstr("001_initial"));
    EXPECT_THAT(e.what(), HasSubstr("changed"));
    EXPECT_THAT(e.what(), HasSubstr("checksum x in the database"));
  }
  // Nothing was re-applied or re-recorded.
  EXPECT_EQ(tdb.scalar("SELECT checksum FROM schema_migrations WHERE name = '001_initial'"), "x");
}

TEST(Migrations, ConcurrentMigrateAppliesEachOnce) {
  testing::TestDatabase tdb;
  std::vector<std::string> a, b;
  std::string err_a, err_b;
  auto run = [&](std::vector<std::string>& out, std::string& err) {
    try {
      AllStores db(tdb.url());
      out = db.migrate();
    } catch (const std::exception& e) {
      err = e.what();
    }
  };
  std::thread ta(run, std::ref(a), std::ref(err_a));
  std::thread tb(run, std::ref(b), std::ref(err_b));
  ta.join();
  tb.join();
  EXPECT_EQ(err_a, "");
  EXPECT_EQ(err_b, "");
  EXPECT_EQ(a.size() + b.size(), embedded_migrations().size());
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM schema_migrations"), std::to_string(embedded_migrations().size()));
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM slo_targets WHERE incident_class = 'link_flap'"), "4");
}

// ---------------------------------------------------------------------------------------
// Connecting and redaction

TEST(Database, ClosedPortThrowsWithRedactedUrl) {
  const std::string url =
      "postgresql://medic:s3cret-pw@127.0.0.1:" + std::to_string(closed_port()) + "/medic?connect_timeout=3";
  try {
    AllStores db(url);
    FAIL() << "connected to a closed port";
  } catch (const DbError& e) {
    const std::string msg = e.what();
    EXPECT_THAT(msg, HasSubstr("cannot connect to PostgreSQL at postgresql://medic:***@127.0.0.1:"));
    EXPECT_THAT(msg, Not(HasSubstr("s3cret-pw")));
  }
}

TEST(Database, RedactUrl) {
  EXPECT_EQ(redact_url("postgresql://user:secret@host/db"), "postgresql://user:***@host/db");
  EXPECT_EQ(redact_url("postgresql://user:secret@127.0.0.1:5432/db?sslmode=require"),
            "postgresql://user:***@127.0.0.1:5432/db?sslmode=require");
  // No password: the port's colon is not mistaken for one.
  EXPECT_EQ(redact_url("postgresql://user@host:5432/db"), "postgresql://user@host:5432/db");
  EXPECT_EQ(redact_url("postgresql://host:5432/db"), "postgresql://host:5432/db");
  // Key/value and query-parameter forms.
  EXPECT_EQ(redact_url("host=db1 user=medic password=hunter2 dbname=medic"),
            "host=db1 user=medic password=*** dbname=medic");
  EXPECT_EQ(redact_url("postgresql://u@h/db?password=hunter2&sslmode=require"),
            "postgresql://u@h/db?password=***&sslmode=require");
  EXPECT_EQ(redact_url("postgresql://u@h/db?password=hunter2"), "postgresql://u@h/db?password=***");
  // libpq allows spaces around '=' and quoted values with spaces: none of it may show.
  EXPECT_EQ(redact_url("host=db1 password = hunter2 dbname=medic"), "host=db1 password = *** dbname=medic");
  EXPECT_EQ(redact_url("host=db1 password='correct horse battery' dbname=medic"),
            "host=db1 password=*** dbname=medic");
  EXPECT_EQ(redact_url("host=db1 password='it\\'s secret' dbname=medic"), "host=db1 password=*** dbname=medic");
  // An '@' after the host (in the query) is not the end of a user:password.
  EXPECT_EQ(redact_url("postgresql://db1:5432/medic?application_name=medicd@node1"),
            "postgresql://db1:5432/medic?application_name=medicd@node1");
  EXPECT_EQ(redact_url("postgresql://u:secret@db1:5432/medic?application_name=medicd@node1"),
            "postgresql://u:***@db1:5432/medic?application_name=medicd@node1");
  // Characters a password should have had percent-encoded still do not leak.
  EXPECT_EQ(redact_url("postgresql://u:p@ss?w#rd@db1/medic"), "postgresql://u:***@db1/medic");
}

// Ends every other session on the test database, as a server restart or a failover would.
void kill_other_sessions(const testing::TestDatabase& tdb) {
  tdb.exec(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
      "WHERE datname = current_database() AND pid <> pg_backend_pid()");
}

TEST(Database, ReconnectsWhenTheConnectionWasLost) {
  DemoDb d;
  ASSERT_TRUE(d.db.open_incident(flap_update(d.topo, "rtsw0001:eth5", at(0), at(3)), d.topo, at(3)).ok());
  kill_other_sessions(d.tdb);
  const auto rows = d.db.incidents({});
  ASSERT_TRUE(rows.ok()) << rows.error();
  EXPECT_EQ(rows->size(), 1u);
  kill_other_sessions(d.tdb);
  const auto st = d.db.set_incident_state(rows->front().id, IncidentState::mitigated, at(4));
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_EQ(d.tdb.scalar("SELECT state FROM incidents"), "mitigated");
}

TEST(Database, UnreachableServerIsAnErrorValue) {
  DemoDb d;
  const std::string dbname = d.tdb.scalar("SELECT current_database()");
  testing::TestDatabase other;  // a connection from outside to lock the test's database
  {
    pqxx::connection c(other.url());
    pqxx::nontransaction n(c);
    n.exec("ALTER DATABASE " + n.quote_name(dbname) + " ALLOW_CONNECTIONS false");
    n.exec_params("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", dbname);
  }
  const auto rows = d.db.incidents({});
  const auto intent = d.db.begin_action({0, d.link("rtsw0001:eth5"), remediation::ActionKind::drain, at(1)},
                                        d.link_name("rtsw0001:eth5"), -1, "", 0);
  {
    pqxx::connection c(other.url());
    pqxx::nontransaction n(c);
    n.exec("ALTER DATABASE " + n.quote_name(dbname) + " ALLOW_CONNECTIONS true");
  }
  ASSERT_FALSE(rows.ok());
  EXPECT_THAT(rows.error(), HasSubstr("incidents: "));
  ASSERT_FALSE(intent.ok());
  EXPECT_THAT(intent.error(), HasSubstr("begin_action: "));
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM actions"), "0");
  // Until its retry backoff passes, a call fails at once, saying why, instead of waiting
  // on the server again.
  EXPECT_FALSE(d.db.available());
  const auto soon = d.db.incidents({});
  ASSERT_FALSE(soon.ok());
  EXPECT_THAT(soon.error(), HasSubstr("incidents: database unavailable (cannot connect to PostgreSQL"));
  // And the same object works again once the server takes connections.
  ASSERT_TRUE(testing::eventually([&] { return d.db.available(); }, std::chrono::seconds(5)));
  const auto again = d.db.incidents({});
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->size(), 0u);
  EXPECT_TRUE(d.db.last_failure().empty());
}

// ---------------------------------------------------------------------------------------
// Inventory

TEST(Database, SyncInventoryInsertsDemoFabric) {
  DemoDb d;
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM switches"), "20");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM links"), "80");
  EXPECT_EQ(d.tdb.column("SELECT role || ' ' || count(*) FROM switches GROUP BY role ORDER BY role"),
            (std::vector<std::string>{"atsw 4", "ctsw 8", "rtsw 8"}));
  // zone and plane are NULL where the model has none.
  EXPECT_EQ(d.tdb.scalar("SELECT coalesce(zone::text, 'null') || '/' || coalesce(plane::text, 'null') "
                         "FROM switches WHERE name = 'rtsw0005'"),
            "2/null");
  EXPECT_EQ(d.tdb.scalar("SELECT coalesce(zone::text, 'null') || '/' || coalesce(plane::text, 'null') "
                         "FROM switches WHERE name = 'atsw03'"),
            "null/3");
  EXPECT_EQ(d.tdb.scalar("SELECT telemetry_url || ' ' || driver_kind || ' ' || driver_url FROM switches "
                         "WHERE name = 'ctsw002'"),
            "http://127.0.0.1:18080/s/ctsw002/gnmi jsonrpc http://127.0.0.1:18080/s/ctsw002/rpc");
  // With the default "mixed" telemetry, ToRs are scraped as Prometheus text and spines and
  // aggregation switches as OpenConfig JSON.
  EXPECT_EQ(d.tdb.scalar("SELECT telemetry_url FROM switches WHERE name = 'rtsw0002'"),
            "http://127.0.0.1:18080/s/rtsw0002/metrics");
  EXPECT_EQ(d.tdb.scalar("SELECT telemetry_url FROM switches WHERE name = 'atsw01'"),
            "http://127.0.0.1:18080/s/atsw01/gnmi");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM switches WHERE telemetry_url LIKE '%/gnmi'"), "12");
  const std::string name = d.link_name("rtsw0003:eth7");
  EXPECT_EQ(name, "rtsw0003:eth7--ctsw003:eth3");
  EXPECT_EQ(d.tdb.scalar("SELECT a_device || ':' || a_port || ' ' || b_device || ':' || b_port || ' ' || "
                         "speed_gbps || ' ' || drain_state FROM links WHERE name = '" + name + "'"),
            "rtsw0003:eth7 ctsw003:eth3 400 undrained");
  // Host-facing links are part of the inventory too.
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM links WHERE a_device LIKE 'host%'"), "32");
}

TEST(Database, SyncInventoryIsIdempotentAndKeepsDrainState) {
  DemoDb d;
  const std::string name = d.link_name("rtsw0001:eth5");
  auto intent = remediation::ActionIntent{0, d.link("rtsw0001:eth5"), remediation::ActionKind::drain, at(1)};
  const auto id = d.db.begin_action(intent, name, -1, "", 0);
  ASSERT_TRUE(id.ok()) << id.error();
  ASSERT_TRUE(d.db.finish_action(*id, intent, "succeeded", true, "", {"drain rtsw0001:eth5 -> drained"}, at(2), name).ok());

  const auto again = d.db.sync_inventory(d.topo);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM switches"), "20");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM links"), "80");
  EXPECT_EQ(d.tdb.scalar("SELECT drain_state FROM links WHERE name = '" + name + "'"), "drained");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM links WHERE drain_state <> 'undrained'"), "1");

  // A changed speed is taken; the drain state still is not touched.
  auto shape = *fabric::preset("demo");
  shape.speed_gbps = 800;
  const auto faster = fabric::generate_clos(shape);
  ASSERT_TRUE(d.db.sync_inventory(faster).ok());
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM links WHERE speed_gbps = 800"), "80");
  EXPECT_EQ(d.tdb.scalar("SELECT drain_state FROM links WHERE name = '" + name + "'"), "drained");
  const auto drains = d.db.drain_states();
  ASSERT_TRUE(drains.ok()) << drains.error();
  ASSERT_EQ(drains->size(), 1u);
  EXPECT_EQ(drains->front().link, name);
  EXPECT_EQ(drains->front().drain_state, "drained");
}

TEST(Database, SyncInventoryUpdatesSwitchUrls) {
  DemoDb d;
  auto shape = *fabric::preset("demo");
  shape.base_url = "http://127.0.0.1:29999";
  ASSERT_TRUE(d.db.sync_inventory(fabric::generate_clos(shape)).ok());
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM switches WHERE telemetry_url LIKE 'http://127.0.0.1:29999/%'"), "20");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM switches"), "20");
}

TEST(Database, SyncInventoryAtZoneScale) {
  testing::TestDatabase tdb;
  AllStores db(tdb.url());
  db.migrate();
  const auto topo = fabric::generate_clos(*fabric::preset("zone32k"));
  ASSERT_EQ(topo.links().size(), 73728u);
  const auto st = db.sync_inventory(topo);
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM links"), "73728");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM switches"), "2232");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM switches WHERE role = 'rtsw'"), "2016");
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM links WHERE a_device LIKE 'rtsw%' AND b_device LIKE 'ctsw%'"),
            "36288");
  // Re-syncing the same fabric adds nothing.
  ASSERT_TRUE(db.sync_inventory(topo).ok());
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM links"), "73728");
}

// ---------------------------------------------------------------------------------------
// Incidents

TEST(Database, OpenIncidentRecordsTriagedIncidentWithFindings) {
  DemoDb d;
  const auto u = flap_update(d.topo, "rtsw0001:eth5", at(0.25), at(3.5));
  const auto id = d.db.open_incident(u, d.topo, at(3.75));
  ASSERT_TRUE(id.ok()) << id.error();

  db::IncidentFilter f;
  f.id = *id;
  const auto rows = d.db.incidents(f);
  ASSERT_TRUE(rows.ok()) << rows.error();
  ASSERT_EQ(rows->size(), 1u);
  const IncidentRow& r = rows->front();
  EXPECT_EQ(r.id, *id);
  EXPECT_EQ(r.incident_class, "link_flap");
  EXPECT_EQ(r.state, "triaged");
  EXPECT_EQ(r.severity, "critical");
  EXPECT_EQ(r.link, "rtsw0001:eth5--ctsw001:eth1");
  EXPECT_EQ(r.device, "rtsw0001");
  EXPECT_EQ(r.summary, u.summary);
  EXPECT_EQ(r.blocked_reason, "");
  EXPECT_EQ(r.started_at, at(0.25));
  EXPECT_EQ(r.detected_at, at(3.5));
  EXPECT_EQ(r.triaged_at, at(3.75));
  EXPECT_FALSE(r.mitigated_at);
  EXPECT_FALSE(r.closed_at);
  EXPECT_EQ(column_us(d.tdb, "incidents", "detected_at", "id = " + std::to_string(*id)), us(at(3.5)));

  const auto fs = d.db.findings(*id);
  ASSERT_TRUE(fs.ok()) << fs.error();
  ASSERT_EQ(fs->size(), 1u);
  const FindingRow& fr = fs->front();
  EXPECT_EQ(fr.incident_id, *id);
  EXPECT_EQ(fr.kind, "link_flap");
  EXPECT_EQ(fr.severity, "critical");
  EXPECT_EQ(fr.link, r.link);
  EXPECT_EQ(fr.device, "rtsw0001");
  EXPECT_EQ(fr.port, "rtsw0001:eth5");  // the reporting port, device:port
  EXPECT_EQ(fr.first_seen, at(0.25));
  EXPECT_EQ(fr.observed_at, at(3.5));
  const json ev = json::parse(fr.evidence_json);
  EXPECT_EQ(ev, (json{{"threshold", 6.0}, {"transitions", 8.0}, {"window_s", 60.0}}));
  // Evidence is a JSONB object, queryable by key.
  EXPECT_EQ(d.tdb.scalar("SELECT jsonb_typeof(evidence) FROM findings"), "object");
  EXPECT_EQ(d.tdb.scalar("SELECT (evidence->>'transitions')::numeric::int FROM findings"), "8");
}

TEST(Database, AddFindingsAppendsToAnIncident) {
  DemoDb d;
  auto u = flap_update(d.topo, "rtsw0001:eth5", at(0), at(3));
  const auto id = d.db.open_incident(u, d.topo, at(3));
  ASSERT_TRUE(id.ok()) << id.error();
  // The other end reports the same link.
  detectors::Finding other = u.findings.front();
  other.port = d.topo.link(u.link).b;
  other.device = d.topo.port(other.port).device;
  other.observed_at = at(3.2);
  ASSERT_TRUE(d.db.add_findings(*id, {other}, d.topo).ok());
  const auto fs = d.db.findings(*id);
  ASSERT_TRUE(fs.ok()) << fs.error();
  ASSERT_EQ(fs->size(), 2u);
  EXPECT_EQ((*fs)[0].device, "rtsw0001");
  EXPECT_EQ((*fs)[1].device, "ctsw001");
  EXPECT_EQ((*fs)[1].port, "ctsw001:eth1");
  EXPECT_EQ((*fs)[1].observed_at, at(3.2));
}

TEST(Database, OneOpenIncidentPerClassAndLink) {
  DemoDb d;
  const auto u = flap_update(d.topo, "rtsw0001:eth5", at(0), at(3));
  const auto first = d.db.open_incident(u, d.topo, at(3));
  ASSERT_TRUE(first.ok()) << first.error();
  const auto second = d.db.open_incident(u, d.topo, at(4));
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.error(), HasSubstr("open_incident"));
  EXPECT_THAT(second.error(), HasSubstr("incidents_one_open_per_link"));
  // The failed insert left nothing behind: no incident, no orphan findings.
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM incidents"), "1");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM findings"), "1");
  // Another link is fine; and once the first is closed the link may have a new one.
  EXPECT_TRUE(d.db.open_incident(flap_update(d.topo, "rtsw0002:eth5", at(0), at(3)), d.topo, at(3)).ok());
  ASSERT_TRUE(d.db.set_incident_state(*first, IncidentState::closed, at(10)).ok());
  const auto third = d.db.open_incident(u, d.topo, at(20));
  ASSERT_TRUE(third.ok()) << third.error();
  EXPECT_NE(*third, *first);
}

TEST(Database, SetIncidentStateStampsEachStageOnce) {
  DemoDb d;
  const auto id = d.db.open_incident(flap_update(d.topo, "rtsw0001:eth5", at(0), at(3)), d.topo, at(3));
  ASSERT_TRUE(id.ok()) << id.error();
  IncidentFilter f;
  f.id = *id;
  auto get = [&] {
    auto rows = d.db.incidents(f);
    if (!rows.ok() || rows->size() != 1) throw std::runtime_error("incident not found");
    return rows->front();
  };

  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::blocked, at(4), "rtsw0001 uplinks would fall").ok());
  EXPECT_EQ(get().state, "blocked");
  EXPECT_EQ(get().blocked_reason, "rtsw0001 uplinks would fall");

  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::mitigated, at(5)).ok());
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::mitigated, at(50)).ok());
  auto r = get();
  EXPECT_EQ(r.state, "mitigated");
  EXPECT_EQ(r.mitigated_at, at(5));
  EXPECT_EQ(r.blocked_reason, "") << "mitigation clears the reason it was blocked";

  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::repair_requested, at(6)).ok());
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::repaired, at(7)).ok());
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::validated, at(8)).ok());
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::undrained, at(9)).ok());
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::triaged, at(99)).ok());
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::repaired, at(99)).ok());
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::closed, at(10)).ok());
  ASSERT_TRUE(d.db.set_incident_state(*id, IncidentState::closed, at(100)).ok());
  r = get();
  EXPECT_EQ(r.state, "closed");
  EXPECT_EQ(r.started_at, at(0));
  EXPECT_EQ(r.detected_at, at(3));
  EXPECT_EQ(r.triaged_at, at(3));
  EXPECT_EQ(r.mitigated_at, at(5));
  EXPECT_EQ(r.repair_requested_at, at(6));
  EXPECT_EQ(r.repaired_at, at(7));
  EXPECT_EQ(r.validated_at, at(8));
  EXPECT_EQ(r.undrained_at, at(9));
  EXPECT_EQ(r.closed_at, at(10));
  EXPECT_FALSE(r.dismissed_at);
  EXPECT_FALSE(r.escalated_at);
}

TEST(Database, EscalateAndDismissKeepTheirReason) {
  DemoDb d;
  const auto a = d.db.open_incident(flap_update(d.topo, "rtsw0001:eth5", at(0), at(3)), d.topo, at(3));
  const auto b = d.db.open_incident(flap_update(d.topo, "rtsw0002:eth5", at(0), at(3)), d.topo, at(3));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(d.db.set_incident_state(*a, IncidentState::escalated, at(4), "drain failed: timeout").ok());
  ASSERT_TRUE(d.db.set_incident_state(*b, IncidentState::dismissed, at(5), "known maintenance").ok());
  ASSERT_TRUE(d.db.set_incident_state(*b, IncidentState::dismissed, at(6)).ok());
  EXPECT_EQ(d.tdb.scalar("SELECT state || ' ' || blocked_reason FROM incidents WHERE id = " + std::to_string(*a)),
            "escalated drain failed: timeout");
  EXPECT_EQ(d.tdb.scalar("SELECT state || ' ' || blocked_reason FROM incidents WHERE id = " + std::to_string(*b)),
            "dismissed known maintenance");
  EXPECT_EQ(column_us(d.tdb, "incidents", "escalated_at", "id = " + std::to_string(*a)), us(at(4)));
  EXPECT_EQ(column_us(d.tdb, "incidents", "dismissed_at", "id = " + std::to_string(*b)), us(at(5)));
}

TEST(Database, SetIncidentStateForUnknownIdIsAnError) {
  DemoDb d;
  for (const auto st : {IncidentState::mitigated, IncidentState::blocked, IncidentState::closed,
                        IncidentState::detected}) {
    const auto s = d.db.set_incident_state(424242, st, at(1), "x");
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.error(), HasSubstr("no incident with id 424242"));
  }
}

TEST(Database, IncidentFilters) {
  DemoDb d;
  std::vector<int64_t> ids;
  for (const char* l : {"rtsw0001:eth5", "rtsw0002:eth5", "rtsw0003:eth5", "rtsw0004:eth5"}) {
    const auto id = d.db.open_incident(flap_update(d.topo, l, at(0), at(3)), d.topo, at(3));
    ASSERT_TRUE(id.ok()) << id.error();
    ids.push_back(*id);
  }
  ASSERT_TRUE(d.db.set_incident_state(ids[1], IncidentState::closed, at(9)).ok());
  ASSERT_TRUE(d.db.set_incident_state(ids[2], IncidentState::dismissed, at(9)).ok());
  ASSERT_TRUE(d.db.set_incident_state(ids[3], IncidentState::escalated, at(9)).ok());
  auto ids_of = [&](const IncidentFilter& f) {
    std::vector<int64_t> out;
    const auto rows = d.db.incidents(f);
    if (!rows.ok()) throw std::runtime_error(rows.error());
    for (const auto& r : *rows) out.push_back(r.id);
    return out;
  };
  EXPECT_EQ(ids_of({}), ids);
  IncidentFilter open;
  open.open_only = true;
  EXPECT_THAT(ids_of(open), ElementsAre(ids[0], ids[3]));
  IncidentFilter limited;
  limited.limit = 2;
  EXPECT_THAT(ids_of(limited), ElementsAre(ids[0], ids[1]));
  IncidentFilter cls;
  cls.incident_class = "link_flap";
  EXPECT_EQ(ids_of(cls).size(), 4u);
  cls.incident_class = "optics";
  EXPECT_TRUE(ids_of(cls).empty());
  IncidentFilter one;
  one.id = ids[2];
  EXPECT_THAT(ids_of(one), ElementsAre(ids[2]));
}

// ---------------------------------------------------------------------------------------
// The action journal

TEST(Database, BeginActionRecordsIntentAndDraining) {
  DemoDb d;
  const auto inc = d.db.open_incident(flap_update(d.topo, "rtsw0001:eth5", at(0), at(3)), d.topo, at(3));
  ASSERT_TRUE(inc.ok()) << inc.error();
  const std::string name = d.link_name("rtsw0001:eth5");
  const remediation::ActionIntent intent{*inc, d.link("rtsw0001:eth5"), remediation::ActionKind::drain, at(4)};
  const auto id = d.db.begin_action(intent, name, -1, "", 0);
  ASSERT_TRUE(id.ok()) << id.error();

  const auto acts = d.db.actions(*inc);
  ASSERT_TRUE(acts.ok()) << acts.error();
  ASSERT_EQ(acts->size(), 1u);
  const ActionRow& a = acts->front();
  EXPECT_EQ(a.id, *id);
  EXPECT_EQ(a.incident_id, *inc);
  EXPECT_EQ(a.link, name);
  EXPECT_EQ(a.kind, "drain");
  EXPECT_EQ(a.state, "intent");
  EXPECT_EQ(a.steps_json, "[]");
  EXPECT_EQ(a.intent_at, at(4));
  EXPECT_FALSE(a.result_at);
  EXPECT_EQ(d.tdb.scalar("SELECT drain_state || ' ' || drain_incident_id FROM links WHERE name = '" + name + "'"),
            "draining " + std::to_string(*inc));
  EXPECT_EQ(column_us(d.tdb, "links", "drain_changed_at", "name = '" + name + "'"), us(at(4)));

  // While the drain is in flight, no second intent for the link is accepted.
  const remediation::ActionIntent undrain{0, d.link("rtsw0001:eth5"), remediation::ActionKind::undrain, at(5)};
  const auto second = d.db.begin_action(undrain, name, -1, "", 0);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.error(), HasSubstr("actions_one_intent_per_link"));
  EXPECT_EQ(d.tdb.scalar("SELECT drain_state FROM links WHERE name = '" + name + "'"), "draining");

  // Once the drain has its result, an undrain intent marks the link undraining; incident 0
  // is stored as NULL.
  ASSERT_TRUE(d.db.finish_action(*id, intent, "succeeded", true, "", {"drain rtsw0001:eth5 -> drained"}, at(5), name).ok());
  ASSERT_TRUE(d.db.begin_action(undrain, name, -1, "", 0).ok());
  EXPECT_EQ(d.tdb.scalar("SELECT drain_state FROM links WHERE name = '" + name + "'"), "undraining");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM actions WHERE incident_id IS NULL AND kind = 'undrain'"), "1");
}

TEST(Database, BeginActionIsOneTransaction) {
  DemoDb d;
  // The second statement of begin_action (the link's drain state) fails: the intent row
  // must not stay behind without it.
  d.tdb.exec(
      "CREATE FUNCTION refuse_link_update() RETURNS trigger LANGUAGE plpgsql AS "
      "$$ BEGIN RAISE EXCEPTION 'links are read-only in this test'; END $$");
  d.tdb.exec("CREATE TRIGGER links_ro BEFORE UPDATE ON links FOR EACH ROW EXECUTE FUNCTION refuse_link_update()");
  const std::string name = d.link_name("rtsw0001:eth5");
  const remediation::ActionIntent intent{0, d.link("rtsw0001:eth5"), remediation::ActionKind::drain, at(4)};
  const auto id = d.db.begin_action(intent, name, -1, "", 0);
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(id.error(), HasSubstr("begin_action"));
  EXPECT_THAT(id.error(), HasSubstr("links are read-only in this test"));
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM actions"), "0");
  EXPECT_EQ(d.tdb.scalar("SELECT drain_state FROM links WHERE name = '" + name + "'"), "undrained");
}

TEST(Database, BeginActionForUnknownLinkIsAnError) {
  DemoDb d;
  const remediation::ActionIntent intent{0, d.link("rtsw0001:eth5"), remediation::ActionKind::drain, at(4)};
  const auto id = d.db.begin_action(intent, "no-such-link", -1, "", 0);
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(id.error(), HasSubstr("begin_action"));
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM actions"), "0");
}

TEST(Database, FinishActionSucceeded) {
  DemoDb d;
  const auto inc = d.db.open_incident(flap_update(d.topo, "rtsw0001:eth5", at(0), at(3)), d.topo, at(3));
  ASSERT_TRUE(inc.ok()) << inc.error();
  const std::string name = d.link_name("rtsw0001:eth5");
  const remediation::ActionIntent intent{*inc, d.link("rtsw0001:eth5"), remediation::ActionKind::drain, at(4)};
  const auto id = d.db.begin_action(intent, name, -1, "", 0);
  ASSERT_TRUE(id.ok()) << id.error();
  const std::vector<std::string> steps{"drain rtsw0001:eth5 -> drained", "drain ctsw001:eth1 -> drained",
                                       "verify rtsw0001:eth5 -> drained"};
  const auto st = d.db.finish_action(*id, intent, "succeeded", true, "", steps, at(4.5), name);
  ASSERT_TRUE(st.ok()) << st.error();

  const auto acts = d.db.actions(std::nullopt);
  ASSERT_TRUE(acts.ok()) << acts.error();
  ASSERT_EQ(acts->size(), 1u);
  EXPECT_EQ(acts->front().state, "succeeded");
  EXPECT_EQ(acts->front().reason, "");
  EXPECT_EQ(json::parse(acts->front().steps_json), json(steps));
  EXPECT_EQ(acts->front().intent_at, at(4));
  EXPECT_EQ(acts->front().result_at, at(4.5));
  EXPECT_EQ(d.tdb.scalar("SELECT jsonb_array_length(steps) FROM actions"), "3");
  EXPECT_EQ(d.tdb.scalar("SELECT drain_state || ' ' || drain_incident_id FROM links WHERE name = '" + name + "'"),
            "drained " + std::to_string(*inc));
  EXPECT_EQ(column_us(d.tdb, "links", "drain_changed_at", "name = '" + name + "'"), us(at(4.5)));
}

TEST(Database, FinishActionFailed) {
  DemoDb d;
  const auto inc = d.db.open_incident(flap_update(d.topo, "rtsw0001:eth5", at(0), at(3)), d.topo, at(3));
  ASSERT_TRUE(inc.ok()) << inc.error();
  const std::string name = d.link_name("rtsw0001:eth5");
  const remediation::ActionIntent intent{*inc, d.link("rtsw0001:eth5"), remediation::ActionKind::drain, at(4)};
  const auto id = d.db.begin_action(intent, name, -1, "", 0);
  ASSERT_TRUE(id.ok()) << id.error();
  ASSERT_TRUE(d.db.finish_action(*id, intent, "failed", false, "rtsw0001: connection refused",
                                 {"drain rtsw0001:eth5 -> error: rtsw0001: connection refused"}, at(6), name)
                  .ok());
  const auto acts = d.db.actions(*inc);
  ASSERT_TRUE(acts.ok()) << acts.error();
  ASSERT_EQ(acts->size(), 1u);
  EXPECT_EQ(acts->front().state, "failed");
  EXPECT_EQ(acts->front().reason, "rtsw0001: connection refused");
  EXPECT_EQ(json::parse(acts->front().steps_json).size(), 1u);
  EXPECT_EQ(acts->front().result_at, at(6));
  EXPECT_EQ(d.tdb.scalar("SELECT drain_state || ' ' || coalesce(drain_incident_id::text, 'null') FROM links "
                         "WHERE name = '" + name + "'"),
            "undrained null");
  const auto drains = d.db.drain_states();
  ASSERT_TRUE(drains.ok());
  EXPECT_TRUE(drains->empty());
}

TEST(Database, WriteRefusalRecordsReasonAndLeavesLink) {
  DemoDb d;
  const auto inc = d.db.open_incident(flap_update(d.topo, "rtsw0003:eth7", at(0), at(3)), d.topo, at(3));
  ASSERT_TRUE(inc.ok()) << inc.error();
  const std::string name = d.link_name("rtsw0003:eth7");
  const remediation::ActionIntent intent{*inc, d.link("rtsw0003:eth7"), remediation::ActionKind::drain, at(4)};
  const std::string reason = "rtsw0003 uplinks would fall to 50.0% < floor 75.0%";
  ASSERT_TRUE(d.db.write_refusal(intent, name, reason).ok());
  const auto acts = d.db.actions(*inc);
  ASSERT_TRUE(acts.ok()) << acts.error();
  ASSERT_EQ(acts->size(), 1u);
  EXPECT_EQ(acts->front().kind, "drain");
  EXPECT_EQ(acts->front().state, "refused");
  EXPECT_EQ(acts->front().reason, reason);
  EXPECT_EQ(acts->front().link, name);
  EXPECT_EQ(acts->front().intent_at, at(4));
  EXPECT_EQ(acts->front().result_at, at(4));
  EXPECT_EQ(d.tdb.scalar("SELECT drain_state FROM links WHERE name = '" + name + "'"), "undrained");
}

TEST(Database, DrainStatesListsLinksNotUndrained) {
  DemoDb d;
  auto intent_on = [&](const std::string& ref, remediation::ActionKind kind) {
    const remediation::ActionIntent in{0, d.link(ref), kind, at(1)};
    const auto id = d.db.begin_action(in, d.link_name(ref), -1, "", 0);
    if (!id.ok()) throw std::runtime_error(id.error());
    return std::make_pair(*id, in);
  };
  intent_on("rtsw0002:eth6", remediation::ActionKind::drain);  // stays draining
  auto [id1, in1] = intent_on("rtsw0001:eth5", remediation::ActionKind::drain);
  ASSERT_TRUE(d.db.finish_action(id1, in1, "succeeded", true, "", std::vector<std::string>{}, at(2), d.link_name("rtsw0001:eth5")).ok());
  auto [id2, in2] = intent_on("rtsw0004:eth8", remediation::ActionKind::drain);
  ASSERT_TRUE(d.db.finish_action(id2, in2, "succeeded", true, "", std::vector<std::string>{}, at(2), d.link_name("rtsw0004:eth8")).ok());
  intent_on("rtsw0004:eth8", remediation::ActionKind::undrain);  // undraining
  auto [id4, in4] = intent_on("rtsw0005:eth5", remediation::ActionKind::drain);
  ASSERT_TRUE(d.db.finish_action(id4, in4, "failed", false, "boom", std::vector<std::string>{}, at(2), d.link_name("rtsw0005:eth5")).ok());

  const auto drains = d.db.drain_states();
  ASSERT_TRUE(drains.ok()) << drains.error();
  std::vector<std::string> got;
  for (const auto& r : *drains) got.push_back(r.link + " " + r.drain_state);
  EXPECT_THAT(got, ElementsAre("rtsw0001:eth5--ctsw001:eth1 drained", "rtsw0002:eth6--ctsw002:eth2 draining",
                               "rtsw0004:eth8--ctsw004:eth4 undraining"));
}

// ---------------------------------------------------------------------------------------
// SLOs

TEST(Database, SeededSloTargetsInStageOrder) {
  DemoDb d;
  const auto t = d.db.slo_targets();
  ASSERT_TRUE(t.ok()) << t.error();
  std::vector<std::string> got;
  for (const auto& x : *t) {
    if (x.incident_class != "link_flap") continue;
    got.push_back(x.incident_class + " " + std::string(slo::to_string(x.stage)) + " " +
                  std::to_string(static_cast<int64_t>(seconds(x.target))) + " " + std::to_string(x.objective).substr(0, 4));
  }
  EXPECT_THAT(got, ElementsAre("link_flap detect 60 0.99", "link_flap mitigate 120 0.99",
                               "link_flap repair 172800 0.95", "link_flap restore 3600 0.99"));
}

TEST(Database, SetSloTargetUpserts) {
  DemoDb d;
  ASSERT_TRUE(d.db.set_slo_target({"link_flap", slo::Stage::detect, from_seconds(30), 0.9}, person("ana", "admin"), SystemClock().now()).ok());
  ASSERT_TRUE(d.db.set_slo_target({"optics", slo::Stage::mitigate, from_seconds(600), 0.95}, person("ana", "admin"), SystemClock().now()).ok());
  ASSERT_TRUE(d.db.set_slo_target({"optics", slo::Stage::detect, from_seconds(300), 0.95}, person("ana", "admin"), SystemClock().now()).ok());
  const auto all = d.db.slo_targets();
  ASSERT_TRUE(all.ok()) << all.error();
  std::vector<slo::Target> picked;
  for (const auto& x : *all) {
    if (x.incident_class == "link_flap" || x.incident_class == "optics") picked.push_back(x);
  }
  const auto* t = &picked;
  ASSERT_EQ(t->size(), 6u);
  EXPECT_EQ((*t)[0].incident_class, "link_flap");
  EXPECT_EQ((*t)[0].stage, slo::Stage::detect);
  EXPECT_EQ((*t)[0].target, from_seconds(30));
  EXPECT_DOUBLE_EQ((*t)[0].objective, 0.9);
  EXPECT_EQ((*t)[1].target, from_seconds(120));
  // Another class follows, its stages in lifecycle order whatever order they were set in.
  EXPECT_EQ((*t)[4].incident_class, "optics");
  EXPECT_EQ((*t)[4].stage, slo::Stage::detect);
  EXPECT_EQ((*t)[5].stage, slo::Stage::mitigate);
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM slo_targets WHERE incident_class = 'link_flap'"), "4");
  // The table's checks still hold.
  const auto bad = d.db.set_slo_target({"link_flap", slo::Stage::detect, from_seconds(0), 0.9}, person("ana", "admin"), SystemClock().now());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error(), HasSubstr("set_slo_target"));
}

TEST(Database, LinkOperStatesOfAWholeFabricAreOneCall) {
  DemoDb d;
  std::vector<std::pair<std::string, bool>> all;
  for (fabric::LinkId l = 0; l < d.topo.links().size(); ++l) all.emplace_back(d.topo.link(l).name, l % 10 != 3);
  ASSERT_TRUE(d.db.set_link_oper(all, at(1)).ok());
  EXPECT_EQ(d.tdb.scalar("SELECT string_agg(oper_state || ' ' || n, ', ' ORDER BY oper_state) FROM "
                         "(SELECT oper_state, count(*) n FROM links GROUP BY oper_state) s"),
            "down 8, up 72");
  // Only links whose state changes are touched: their change time stays.
  ASSERT_TRUE(d.db.set_link_oper({{all[3].first, true}, {all[0].first, true}}, at(2)).ok());
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM links WHERE oper_changed_at = '" + format_iso8601(at(2)) + "'"), "1");
  EXPECT_EQ(d.tdb.scalar("SELECT oper_state FROM links WHERE name = '" + all[3].first + "'"), "up");
}

TEST(Database, TheDefaultTargetsFileIsWhatTheSchemaSeeds) {
  DemoDb d;
  std::vector<std::string> classes;
  for (size_t c = 0; c < triage::kIncidentClassCount; ++c) {
    classes.emplace_back(triage::to_string(static_cast<triage::IncidentClass>(c)));
  }
  const auto text = read_data_file(std::string(MEDIC_SOURCE_DIR) + "/data/slo.json");
  ASSERT_TRUE(text.ok()) << text.error();
  const auto file = slo::parse_targets(*text, "data/slo.json", classes);
  ASSERT_TRUE(file.ok()) << file.error();
  const auto seeded = d.db.slo_targets();
  ASSERT_TRUE(seeded.ok());
  std::set<std::string> a, b;
  for (const auto& t : *file) {
    a.insert(t.incident_class + " " + std::string(slo::to_string(t.stage)) + " " + format_number(seconds(t.target)) + " " +
             format_number(t.objective));
  }
  for (const auto& t : *seeded) {
    b.insert(t.incident_class + " " + std::string(slo::to_string(t.stage)) + " " + format_number(seconds(t.target)) + " " +
             format_number(t.objective));
  }
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 17u);
}

}  // namespace
}  // namespace medic::db
