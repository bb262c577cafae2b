// Snapshots in a real PostgreSQL: incident and action snapshots as one JSONB row, fabric
// snapshots with their ports written by COPY; read back field by field (NULLs included),
// listed with filters, pruned with their port rows.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "remediation/capacity.h"
#include "remediation/capacity_config.h"
#include "snapshot/snapshot.h"
#include "tests/db/demo_db.h"
#include "tests/snapshot/snapshot_fixture.h"
#include "tests/support/epoch.h"
#include "tests/support/testing.h"

namespace medic::db {
namespace {

using ::testing::ElementsAre;
using nlohmann::json;
using snapshot::Snapshot;
using telemetry::Counter;

const Time kT0 = from_unix_seconds(1'800'000'000);  // 2027-01-15T08:00:00Z

// The demo database, a capacity model of its topology with the derived groups, readings.
struct SnapDb : DemoDb {
  fabric::Topology groups_topo = remediation::with_derived_groups(topo, remediation::CapacityConfig{});
  remediation::CapacityModel model{groups_topo};
  std::vector<telemetry::PortSample> samples = std::vector<telemetry::PortSample>(groups_topo.ports().size());
  std::vector<int> oper = std::vector<int>(groups_topo.ports().size(), 1);
  std::vector<snapshot::IncidentReading> open;

  snapshot::FabricState state(Time now) const {
    return {groups_topo,
            model,
            [this](fabric::PortId p) -> const telemetry::PortSample& { return samples[p]; },
            [this](fabric::PortId p) { return oper[p]; },
            open,
            now};
  }
  // Realistic readings on every port but a few that never answered.
  void read_all(Time when) {
    for (fabric::PortId p = 0; p < groups_topo.ports().size(); ++p) {
      if (p % 17 == 5) continue;  // never answered
      telemetry::PortSample s;
      s.port = p;
      s.time = when - Duration(1000 * (p % 700));
      for (size_t c = 0; c < telemetry::kCounterCount; ++c) {
        const auto counter = static_cast<Counter>(c);
        if ((p + c) % 11 == 3) continue;  // this exporter does not report it
        s.set(counter, telemetry::is_gauge(counter) ? -3.0 + 0.0137 * static_cast<double>(p % 300)
                                                    : 1.0e12 + 98765.4321 * static_cast<double>(p * 31 + c));
      }
      s.set(Counter::pre_fec_ber, 1.7e-9 * static_cast<double>(p % 5 + 1));
      samples[p] = s;
    }
  }
  // An incident and an action row for snapshots to refer to.
  int64_t incident(const std::string& link_ref, const std::string& state = "triaged") {
    return std::stoll(tdb.scalar("INSERT INTO incidents (class, state, severity, link, device, detected_at) VALUES "
                                 "('link_flap', '" + state + "', 'critical', '" + link_name(link_ref) +
                                 "', 'rtsw0001', '2027-01-15T08:00:00Z') RETURNING id"));
  }
  int64_t action(int64_t incident_id, const std::string& link_ref) {
    return std::stoll(tdb.scalar("INSERT INTO actions (incident_id, link, kind, state, intent_at) VALUES (" +
                                 std::to_string(incident_id) + ", '" + link_name(link_ref) +
                                 "', 'drain', 'succeeded', '2027-01-15T08:00:01Z') RETURNING id"));
  }
  int64_t write(const Snapshot& s) {
    const auto id = db.write_snapshot(s);
    if (!id.ok()) throw std::runtime_error(id.error());
    return *id;
  }
  Snapshot read(int64_t id) {
    auto s = db.snapshot(id);
    if (!s.ok()) throw std::runtime_error(s.error());
    if (!s->has_value()) throw std::runtime_error("no snapshot " + std::to_string(id));
    return std::move(**s);
  }
};

TEST(DbSnapshots, AnIncidentSnapshotReadsBackFieldByField) {
  SnapDb d;
  const int64_t inc = d.incident("rtsw0001:eth5");
  d.read_all(at(0));
  d.model.set_drained(d.link("rtsw0001:eth6"), true);
  d.oper[d.port("rtsw0001", "eth7")] = 0;
  d.samples[d.port("rtsw0001", "eth5")].set(Counter::rx_errors, std::numeric_limits<double>::quiet_NaN());
  d.open = {{inc, "link_flap", "triaged", "critical", d.link_name("rtsw0001:eth5"), "rtsw0001"},
            {99, "switch_fault", "triaged", "warning", "", "ctsw001"}};
  Snapshot s = snapshot::capture_link(d.state(at(0.25)), d.link("rtsw0001:eth5"), "incident", "incident opened");
  s.incident_id = inc;
  ASSERT_GT(s.ports.size(), 0u);
  s.ports[1].link.clear();  // a port without a link is stored as NULL

  const int64_t id = d.write(s);
  EXPECT_GT(id, 0);
  Snapshot expected = s;
  expected.id = id;
  const Snapshot back = d.read(id);
  snapshot::expect_same(expected, back);
  for (const auto& p : back.ports) {
    if (p.device == "rtsw0001" && p.port == "eth5") {
      EXPECT_FALSE(p.has(Counter::rx_errors));  // NaN is no reading
      EXPECT_TRUE(p.has(Counter::rx_crc_errors));
    }
  }
  EXPECT_EQ(back.ports[1].link, "");
  // One row with everything in data; no port rows; the ids as columns.
  EXPECT_EQ(d.tdb.scalar("SELECT scope || ' ' || coalesce(incident_id::text, 'null') || ' ' || "
                         "coalesce(action_id::text, 'null') || ' ' || port_count FROM snapshots WHERE id = " +
                         std::to_string(id)),
            "incident " + std::to_string(inc) + " null " + std::to_string(s.ports.size()));
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM snapshot_ports"), "0");
  EXPECT_EQ(d.tdb.scalar("SELECT jsonb_array_length(data->'ports') FROM snapshots"), std::to_string(s.ports.size()));
  EXPECT_EQ(d.tdb.scalar("SELECT data ? 'id' FROM snapshots"), "f");
}

TEST(DbSnapshots, AnActionSnapshotKeepsItsActionAndIncident) {
  SnapDb d;
  const int64_t inc = d.incident("rtsw0001:eth5", "mitigated");
  const int64_t act = d.action(inc, "rtsw0001:eth5");
  Snapshot s = snapshot::capture_link(d.state(at(1)), d.link("rtsw0001:eth5"), "action", "after drain");
  s.incident_id = inc;
  s.action_id = act;
  const int64_t id = d.write(s);
  const Snapshot back = d.read(id);
  EXPECT_EQ(back.incident_id, inc);
  EXPECT_EQ(back.action_id, act);
  EXPECT_EQ(back.scope, "action");
  EXPECT_EQ(back.link, d.link_name("rtsw0001:eth5"));
  // No readings at all: every port unread.
  for (const auto& p : back.ports) {
    EXPECT_EQ(p.sampled_at, std::nullopt);
    EXPECT_EQ(p.present, 0u);
  }
  s.id = id;
  snapshot::expect_same(s, back);
}

TEST(DbSnapshots, AFabricSnapshotOfTheDemoFabricGoesToRows) {
  SnapDb d;
  const int64_t inc = d.incident("rtsw0003:eth7");
  d.read_all(at(0));
  d.model.set_drained(d.link("rtsw0003:eth7"), true);
  d.model.set_oper_up(d.link("rtsw0003:eth6"), false);
  d.oper[d.port("rtsw0003", "eth6")] = 0;
  d.oper[d.port("ctsw003", "eth3")] = -1;
  d.open = {{inc, "link_flap", "mitigated", "critical", d.link_name("rtsw0003:eth7"), "rtsw0003"}};
  Snapshot s = snapshot::capture_fabric(d.state(at(0.5)), "nightly");
  ASSERT_EQ(s.ports.size(), d.topo.ports().size());
  s.ports[3].link.clear();

  const int64_t id = d.write(s);
  const std::string sid = std::to_string(id);
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM snapshot_ports WHERE snapshot_id = " + sid),
            std::to_string(s.ports.size()));
  EXPECT_EQ(d.tdb.scalar("SELECT port_count FROM snapshots WHERE id = " + sid), std::to_string(s.ports.size()));
  EXPECT_EQ(d.tdb.scalar("SELECT data ? 'ports' FROM snapshots WHERE id = " + sid), "f");
  EXPECT_EQ(d.tdb.scalar("SELECT jsonb_array_length(data->'groups') FROM snapshots WHERE id = " + sid),
            std::to_string(d.groups_topo.groups().size()));
  // NULLs where nothing was read, typed values where something was.
  size_t unread = 0, missing_crc = 0;
  for (const auto& p : s.ports) {
    unread += p.sampled_at ? 0 : 1;
    missing_crc += p.has(Counter::rx_crc_errors) ? 0 : 1;
  }
  EXPECT_GT(unread, 0u);
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM snapshot_ports WHERE sampled_at IS NULL"), std::to_string(unread));
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM snapshot_ports WHERE rx_crc_errors IS NULL"), std::to_string(missing_crc));
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM snapshot_ports WHERE link IS NULL"), "1");
  EXPECT_EQ(d.tdb.scalar("SELECT device || ':' || port || ' ' || oper FROM snapshot_ports WHERE oper = 0"),
            "rtsw0003:eth6 0");
  EXPECT_EQ(d.tdb.scalar("SELECT string_agg(device || ':' || port, ',' ORDER BY device) FROM snapshot_ports "
                         "WHERE drained"),
            "ctsw003:eth3,rtsw0003:eth7");
  EXPECT_EQ(d.tdb.scalar("SELECT min(seq) || '-' || max(seq) FROM snapshot_ports"),
            "0-" + std::to_string(s.ports.size() - 1));

  const Snapshot back = d.read(id);
  s.id = id;
  snapshot::expect_same(s, back);
}

TEST(DbSnapshots, ReadsBackTheSameInAnyTimeZone) {
  SnapDb d;
  d.tdb.exec("ALTER DATABASE " + d.tdb.scalar("SELECT current_database()") + " SET timezone TO 'America/St_Johns'");
  AllStores other(d.tdb.url());  // a session that starts in that zone
  ASSERT_EQ(d.tdb.scalar("SHOW timezone"), "America/St_Johns");
  d.read_all(at(0));
  const Snapshot s = snapshot::capture_fabric(d.state(at(0.123456)), "zone");
  const auto id = other.write_snapshot(s);
  ASSERT_TRUE(id.ok()) << id.error();
  const auto back = d.db.snapshot(*id);
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ((*back)->taken_at, at(0.123456));
  EXPECT_EQ(d.tdb.scalar("SELECT to_char(taken_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') FROM snapshots"),
            "2027-01-15 08:00:00.123456");
  const auto again = other.snapshot(*id);
  ASSERT_TRUE(again.ok() && again->has_value());
  Snapshot expected = s;
  expected.id = *id;
  snapshot::expect_same(expected, **again);
}

TEST(DbSnapshots, ListNewestFirstWithFilters) {
  SnapDb d;
  const int64_t a = d.incident("rtsw0001:eth5");
  const int64_t b = d.incident("rtsw0002:eth6");
  const int64_t act = d.action(a, "rtsw0001:eth5");
  d.open = {{a, "link_flap", "triaged", "critical", d.link_name("rtsw0001:eth5"), "rtsw0001"}};
  auto link_snap = [&](int64_t inc, int64_t action, const char* scope, const std::string& ref, double t) {
    Snapshot s = snapshot::capture_link(d.state(at(t)), d.link(ref), scope, std::string(scope) + " snapshot");
    s.incident_id = inc;
    s.action_id = action;
    return d.write(s);
  };
  const int64_t s1 = link_snap(a, 0, "incident", "rtsw0001:eth5", 0);
  const int64_t s2 = link_snap(a, act, "action", "rtsw0001:eth5", 1);
  const int64_t s3 = link_snap(b, 0, "incident", "rtsw0002:eth6", 0.5);
  const int64_t s4 = d.write(snapshot::capture_fabric(d.state(at(2)), "nightly"));

  auto ids = [&](SnapshotFilter f) {
    const auto rows = d.db.snapshots(f);
    if (!rows.ok()) throw std::runtime_error(rows.error());
    std::vector<int64_t> out;
    for (const auto& r : *rows) out.push_back(r.id);
    return out;
  };
  EXPECT_THAT(ids({}), ElementsAre(s4, s2, s3, s1));
  EXPECT_THAT(ids({a, std::nullopt, 100}), ElementsAre(s2, s1));
  EXPECT_THAT(ids({b, std::nullopt, 100}), ElementsAre(s3));
  EXPECT_THAT(ids({std::nullopt, "incident", 100}), ElementsAre(s3, s1));
  EXPECT_THAT(ids({std::nullopt, "fabric", 100}), ElementsAre(s4));
  EXPECT_THAT(ids({a, "action", 100}), ElementsAre(s2));
  EXPECT_THAT(ids({int64_t{12345}, std::nullopt, 100}), ElementsAre());
  EXPECT_THAT(ids({std::nullopt, std::nullopt, 2}), ElementsAre(s4, s2));

  const auto rows = d.db.snapshots({});
  ASSERT_TRUE(rows.ok()) << rows.error();
  const SnapshotRow& fab = (*rows)[0];
  EXPECT_EQ(fab.scope, "fabric");
  EXPECT_EQ(fab.reason, "nightly");
  EXPECT_EQ(fab.link, "");
  EXPECT_EQ(fab.incident_id, 0);
  EXPECT_EQ(fab.action_id, 0);
  EXPECT_EQ(fab.taken_at, at(2));
  EXPECT_EQ(fab.port_count, static_cast<int>(d.topo.ports().size()));
  EXPECT_EQ(fab.group_count, static_cast<int>(d.groups_topo.groups().size()));
  EXPECT_EQ(fab.incident_count, 1);
  const SnapshotRow& action = (*rows)[1];
  EXPECT_EQ(action.scope, "action");
  EXPECT_EQ(action.reason, "action snapshot");
  EXPECT_EQ(action.link, d.link_name("rtsw0001:eth5"));
  EXPECT_EQ(action.incident_id, a);
  EXPECT_EQ(action.action_id, act);
  EXPECT_EQ(action.port_count, 14);
  EXPECT_EQ(action.incident_count, 1);
}

TEST(DbSnapshots, PruneDeletesOldSnapshotsAndTheirPortRows) {
  SnapDb d;
  d.read_all(at(0));
  const int64_t old_fabric = d.write(snapshot::capture_fabric(d.state(at(-40 * 86400)), "old"));
  const int64_t old_link = d.write(snapshot::capture_link(d.state(at(-31 * 86400)), d.link("rtsw0001:eth5"), "incident", ""));
  const int64_t young = d.write(snapshot::capture_fabric(d.state(at(-29 * 86400)), "young"));
  const std::string ports = std::to_string(d.topo.ports().size());
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM snapshot_ports"), std::to_string(2 * d.topo.ports().size()));

  const auto n = d.db.prune_snapshots(at(-30 * 86400));
  ASSERT_TRUE(n.ok()) << n.error();
  EXPECT_EQ(*n, 2);
  EXPECT_EQ(d.tdb.scalar("SELECT string_agg(id::text, ',') FROM snapshots"), std::to_string(young));
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM snapshot_ports WHERE snapshot_id = " + std::to_string(old_fabric)), "0");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM snapshot_ports"), ports);
  for (const int64_t gone : {old_fabric, old_link}) {
    const auto s = d.db.snapshot(gone);
    ASSERT_TRUE(s.ok()) << s.error();
    EXPECT_FALSE(s->has_value());
  }
  // Nothing older left: nothing to do.
  const auto again = d.db.prune_snapshots(at(-30 * 86400));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0);
}

TEST(DbSnapshots, DeletingASnapshotRowTakesItsPortsWhoeverDeletesIt) {
  SnapDb d;
  d.read_all(at(0));
  const int64_t a = d.write(snapshot::capture_fabric(d.state(at(0)), "a"));
  const int64_t b = d.write(snapshot::capture_fabric(d.state(at(1)), "b"));
  const int64_t c = d.write(snapshot::capture_fabric(d.state(at(2)), "c"));
  const std::string ports = std::to_string(d.topo.ports().size());
  d.tdb.exec("DELETE FROM snapshots WHERE id IN (" + std::to_string(a) + ", " + std::to_string(c) + ")");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM snapshot_ports"), ports);
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM snapshot_ports WHERE snapshot_id = " + std::to_string(b)), ports);
  // A deletion that is rolled back keeps them.
  d.tdb.exec("BEGIN; DELETE FROM snapshots; ROLLBACK");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM snapshot_ports"), ports);
  d.tdb.exec("DELETE FROM snapshots");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM snapshot_ports"), "0");
}

TEST(DbSnapshots, UnknownIdIsNotAnError) {
  SnapDb d;
  const auto s = d.db.snapshot(424242);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_FALSE(s->has_value());
}

TEST(DbSnapshots, BadSnapshotsAreRefusedWholeAndWriteNothing) {
  SnapDb d;
  d.read_all(at(0));
  Snapshot s = snapshot::capture_fabric(d.state(at(0)), "x");
  s.scope = "zone";
  const auto bad_scope = d.db.write_snapshot(s);
  ASSERT_FALSE(bad_scope.ok());
  EXPECT_EQ(bad_scope.error(), "write_snapshot: scope \"zone\" is not incident, action or fabric");

  s.scope = "fabric";
  s.incident_id = 777;  // no such incident
  const auto no_incident = d.db.write_snapshot(s);
  ASSERT_FALSE(no_incident.ok());
  EXPECT_THAT(no_incident.error(), ::testing::StartsWith("write_snapshot: ERROR:  insert or update on table \"snapshots\" "
                                                         "violates foreign key constraint"));

  s.incident_id = 0;
  s.ports[7].device = "bad\xff";  // not UTF-8: PostgreSQL refuses the row in the middle of the COPY
  const auto bad_port = d.db.write_snapshot(s);
  ASSERT_FALSE(bad_port.ok());
  EXPECT_THAT(bad_port.error(), ::testing::StartsWith("write_snapshot: "));
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM snapshots"), "0");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM snapshot_ports"), "0");
}

TEST(DbSnapshots, ADamagedSnapshotSaysWhatIsWrong) {
  SnapDb d;
  d.read_all(at(0));
  const int64_t fabric = d.write(snapshot::capture_fabric(d.state(at(0)), "x"));
  const int64_t link = d.write(snapshot::capture_link(d.state(at(0)), d.link("rtsw0001:eth5"), "incident", "y"));
  d.tdb.exec("DELETE FROM snapshot_ports WHERE snapshot_id = " + std::to_string(fabric) + " AND seq = 4");
  const auto short_rows = d.db.snapshot(fabric);
  ASSERT_FALSE(short_rows.ok());
  EXPECT_EQ(short_rows.error(), "snapshot " + std::to_string(fabric) + ": " +
                                    std::to_string(d.topo.ports().size() - 1) + " port rows, expected " +
                                    std::to_string(d.topo.ports().size()));
  d.tdb.exec("UPDATE snapshots SET data = data #- '{ports,2,oper}' WHERE id = " + std::to_string(link));
  const auto no_oper = d.db.snapshot(link);
  ASSERT_FALSE(no_oper.ok());
  EXPECT_EQ(no_oper.error(), "snapshot " + std::to_string(link) + ": $.ports[2]: missing required key \"oper\"");
}

}  // namespace
}  // namespace medic::db
