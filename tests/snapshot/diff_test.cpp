// diff, render_text and diff_to_json: what changed between two snapshots, and nothing when
// they are equal.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/snapshot/snapshot_fixture.h"

namespace medic::snapshot {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;
using telemetry::Counter;

// Two captures of the same link, one poll apart, on a fabric where every port answered.
struct Pair {
  DemoFabric f;
  Snapshot a, b;
  explicit Pair() {
    for (fabric::PortId p = 0; p < f.topo.ports().size(); ++p) f.read(p, f.now - from_seconds(1));
    a = take(1);
  }
  Snapshot take(int64_t id) {
    Snapshot s = capture_link(f.state(), f.link("rtsw0001:eth5"), "action", id == 1 ? "before drain" : "after drain");
    s.id = id;
    s.incident_id = 4;
    s.action_id = 7;
    return s;
  }
  void later(double seconds) { f.now += from_seconds(seconds); }
  telemetry::PortSample& sample(const std::string& d, const std::string& p) { return f.samples[f.port(d, p)]; }
};

const PortChange* change_of(const SnapshotDiff& d, const std::string& device, const std::string& port) {
  for (const auto& p : d.ports) {
    if (p.device == device && p.port == port) return &p;
  }
  return nullptr;
}

const CounterChange* counter_of(const PortChange& p, Counter c) {
  for (const auto& ch : p.counters) {
    if (ch.counter == c) return &ch;
  }
  return nullptr;
}

TEST(Diff, EqualSnapshotsHaveNoChanges) {
  Pair t;
  const Snapshot b = t.take(2);
  const SnapshotDiff d = diff(t.a, b, {});
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(d.ports_compared, t.a.ports.size());
  EXPECT_EQ(d.ports_only_in_a, 0u);
  EXPECT_EQ(d.ports_only_in_b, 0u);
  EXPECT_EQ(d.groups_compared, t.a.groups.size());
  EXPECT_EQ(d.a.id, 1);
  EXPECT_EQ(d.b.id, 2);
  const std::string text = render_text(d);
  EXPECT_THAT(text, HasSubstr("\nno changes\n"));
  EXPECT_THAT(text, HasSubstr("0ms later; 14 ports and "));
  const json j = diff_to_json(d);
  EXPECT_EQ(j["ports"], json::array());
  EXPECT_EQ(j["groups"], json::array());
  EXPECT_EQ(j["incidents"], json::array());
  EXPECT_EQ(j["ports_compared"], 14);
}

TEST(Diff, ASnapshotWithItself) {
  Pair t;
  EXPECT_TRUE(diff(t.a, t.a, {}).empty());
}

TEST(Diff, FaultCountersRiseAndTrafficMoves) {
  Pair t;
  t.later(30);
  t.sample("rtsw0001", "eth5").set(Counter::rx_crc_errors, 5000);
  t.sample("rtsw0001", "eth5").set(Counter::rx_bytes, 1.7e15 + 3e12);
  t.sample("ctsw001", "eth2").set(Counter::tx_bytes, 1.6e15 + 1e12);  // traffic only
  const SnapshotDiff d = diff(t.a, t.take(2), {});
  ASSERT_EQ(d.ports.size(), 2u);
  const PortChange* crc = change_of(d, "rtsw0001", "eth5");
  ASSERT_NE(crc, nullptr);
  EXPECT_EQ(crc->importance, Importance::fault);
  EXPECT_EQ(crc->link, "rtsw0001:eth5--ctsw001:eth1");
  ASSERT_EQ(crc->counters.size(), 2u);  // canonical order: rx_bytes before rx_crc_errors
  EXPECT_EQ(crc->counters[0].counter, Counter::rx_bytes);
  EXPECT_FALSE(crc->counters[0].notable);
  EXPECT_EQ(crc->counters[1].counter, Counter::rx_crc_errors);
  EXPECT_EQ(crc->counters[1].before, 0);
  EXPECT_EQ(crc->counters[1].after, 5000);
  EXPECT_EQ(crc->counters[1].delta(), 5000);
  EXPECT_TRUE(crc->counters[1].notable);
  EXPECT_FALSE(crc->counters[1].reset());
  const PortChange* traffic = change_of(d, "ctsw001", "eth2");
  ASSERT_NE(traffic, nullptr);
  EXPECT_EQ(traffic->importance, Importance::minor);
  EXPECT_EQ(d.ports[0].device + ":" + d.ports[0].port, "rtsw0001:eth5");  // most important first

  const std::string text = render_text(d);
  EXPECT_THAT(text, HasSubstr("30.0s later"));
  EXPECT_THAT(text, HasSubstr("ports (1 changed; 1 with traffic or minor changes only):\n"
                              "  rtsw0001:eth5 [rtsw0001:eth5--ctsw001:eth1]\n"
                              "      rx_crc_errors +5,000\n"));
  EXPECT_THAT(text, Not(HasSubstr("ctsw001:eth2")));
  const json j = diff_to_json(d);
  EXPECT_EQ(j["interval_s"], 30.0);
  EXPECT_EQ(j["ports"][0]["importance"], "fault");
  EXPECT_EQ(j["ports"][0]["counters"]["rx_crc_errors"],
            (json{{"before", 0.0}, {"after", 5000.0}, {"delta", 5000.0}, {"notable", true}}));
  EXPECT_EQ(j["ports"][1]["importance"], "minor");
}

TEST(Diff, OperAndDrainChangesComeFirst) {
  Pair t;
  t.sample("rtsw0001", "eth5").set(Counter::rx_crc_errors, 10);
  t.f.oper[t.f.port("rtsw0001", "eth6")] = 0;
  t.sample("rtsw0001", "eth6").set(Counter::oper_up, 0);
  t.f.model.set_drained(t.f.link("rtsw0001:eth5"), true);
  const SnapshotDiff d = diff(t.a, t.take(2), {});
  std::vector<std::string> order;
  for (const auto& p : d.ports) order.push_back(p.device + ":" + p.port + " " + std::string(to_string(p.importance)));
  // Ports with a state change in b's order, then the rest.
  EXPECT_THAT(order, ElementsAre("rtsw0001:eth5 state", "rtsw0001:eth6 state", "ctsw001:eth1 state"));
  const PortChange* down = change_of(d, "rtsw0001", "eth6");
  EXPECT_EQ(down->oper_before, 1);
  EXPECT_EQ(down->oper_after, 0);
  const PortChange* drained = change_of(d, "ctsw001", "eth1");
  EXPECT_FALSE(drained->drained_before);
  EXPECT_TRUE(drained->drained_after);
  EXPECT_TRUE(drained->counters.empty());
  const std::string text = render_text(d);
  EXPECT_THAT(text, HasSubstr("  rtsw0001:eth6 [rtsw0001:eth6--ctsw002:eth1]: oper up -> down\n"
                              "      oper_up 1 -> 0\n"));
  EXPECT_THAT(text, HasSubstr("  ctsw001:eth1 [rtsw0001:eth5--ctsw001:eth1]: drained no -> yes\n"));
  EXPECT_THAT(text, HasSubstr("  rtsw0001:eth5 [rtsw0001:eth5--ctsw001:eth1]: drained no -> yes\n"
                              "      rx_crc_errors +10\n"));
}

TEST(Diff, GroupsThatChangeWithTheirFloors) {
  Pair t;
  t.f.model.set_drained(t.f.link("rtsw0001:eth5"), true);
  t.f.model.set_oper_up(t.f.link("rtsw0001:eth6"), false);
  const SnapshotDiff d = diff(t.a, t.take(2), {});
  ASSERT_FALSE(d.groups.empty());
  const GroupChange& g = d.groups.front();  // the floor newly broken comes first
  EXPECT_EQ(g.name, "rtsw0001 uplinks");
  EXPECT_EQ(g.kind, "tor_uplinks");
  EXPECT_EQ(g.before, 1.0);
  EXPECT_EQ(g.after, 0.5);
  EXPECT_EQ(g.in_service_before, 4);
  EXPECT_EQ(g.in_service_after, 2);
  EXPECT_EQ(g.links, 4);
  EXPECT_FALSE(g.below_floor_before);
  EXPECT_TRUE(g.below_floor_after);
  for (size_t i = 1; i < d.groups.size(); ++i) EXPECT_FALSE(d.groups[i].below_floor_after) << d.groups[i].name;
  const std::string text = render_text(d);
  EXPECT_THAT(text, HasSubstr("below floor):\n  BELOW FLOOR  rtsw0001 uplinks (tor_uplinks): 100.0% -> 50.0% in service "
                              "(4 -> 2 of 4 links), floor 75.0%\n"));
  const json j = diff_to_json(d);
  EXPECT_EQ(j["groups"][0]["name"], "rtsw0001 uplinks");
  EXPECT_EQ(j["groups"][0]["below_floor_after"], true);
  EXPECT_EQ(j["groups"][0]["links_in_service_after"], 2);

  // And back: the group recovers.
  const SnapshotDiff back = diff(t.take(2), t.a, {});
  ASSERT_FALSE(back.groups.empty());
  EXPECT_THAT(render_text(back), HasSubstr("  recovered    rtsw0001 uplinks (tor_uplinks): 50.0% -> 100.0%"));
}

TEST(Diff, IncidentsOpenedChangedAndClosed) {
  Pair t;
  t.f.incidents = {{5, "link_flap", "triaged", "warning", t.f.link_name("rtsw0001:eth5"), "rtsw0001"},
                   {6, "optics", "triaged", "warning", t.f.link_name("rtsw0001:eth6"), "rtsw0001"},
                   {8, "switch_fault", "triaged", "critical", "", "ctsw001"}};
  const Snapshot a = t.take(1);
  t.f.incidents = {{5, "link_flap", "mitigated", "critical", t.f.link_name("rtsw0001:eth5"), "rtsw0001"},
                   {8, "switch_fault", "triaged", "critical", "", "ctsw001"},
                   {9, "corruption", "triaged", "critical", t.f.link_name("rtsw0001:eth7"), "rtsw0001"},
                   {2, "fec", "triaged", "warning", t.f.link_name("rtsw0001:eth8"), "rtsw0001"}};
  const SnapshotDiff d = diff(a, t.take(2), {});
  ASSERT_EQ(d.incidents.size(), 4u);
  std::vector<std::string> got;
  for (const auto& i : d.incidents) got.push_back(std::string(to_string(i.kind)) + " " + std::to_string(i.id));
  EXPECT_THAT(got, ElementsAre("opened 2", "opened 9", "changed 5", "closed 6"));
  EXPECT_EQ(d.incidents[2].state_before, "triaged");
  EXPECT_EQ(d.incidents[2].state_after, "mitigated");
  EXPECT_EQ(d.incidents[2].severity_before, "warning");
  EXPECT_EQ(d.incidents[2].severity_after, "critical");
  EXPECT_EQ(d.incidents[3].state_after, "");
  const std::string text = render_text(d);
  EXPECT_THAT(text, HasSubstr("incidents (2 opened, 1 changed, 1 no longer open):\n"
                              "  opened   #2 fec on rtsw0001:eth8--ctsw004:eth1: triaged, warning\n"
                              "  opened   #9 corruption on rtsw0001:eth7--ctsw003:eth1: triaged, critical\n"
                              "  changed  #5 link_flap on rtsw0001:eth5--ctsw001:eth1: triaged -> mitigated, "
                              "warning -> critical\n"
                              "  closed   #6 optics on rtsw0001:eth6--ctsw002:eth1: was triaged\n"));
  const json j = diff_to_json(d);
  EXPECT_EQ(j["incidents"][3]["change"], "closed");
  EXPECT_EQ(j["incidents"][3]["state_after"], nullptr);
  EXPECT_EQ(j["incidents"][0]["state_before"], nullptr);
}

TEST(Diff, ResetsOpticsAndCountersThatAppearOrVanish) {
  Pair t;
  auto& s = t.sample("rtsw0001", "eth5");
  s.set(Counter::rx_packets, 1000);                // lower than before: a reset
  s.set(Counter::rx_power_dbm, -1.93 - 0.6);        // beyond the 0.5 dB noise
  s.set(Counter::tx_power_dbm, 0.41 + 0.3);         // within it
  s.set(Counter::pre_fec_ber, 2.4e-7);              // 100 times worse
  s.set(Counter::laser_bias_ma, 6.5);               // now read
  s.present &= ~telemetry::bit(Counter::temperature_c);  // no longer read
  const SnapshotDiff d = diff(t.a, t.take(2), {});
  const PortChange* p = change_of(d, "rtsw0001", "eth5");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->importance, Importance::fault);  // the reset
  EXPECT_TRUE(counter_of(*p, Counter::rx_packets)->reset());
  EXPECT_TRUE(counter_of(*p, Counter::rx_power_dbm)->notable);
  EXPECT_FALSE(counter_of(*p, Counter::tx_power_dbm)->notable);
  EXPECT_TRUE(counter_of(*p, Counter::pre_fec_ber)->notable);
  EXPECT_EQ(counter_of(*p, Counter::laser_bias_ma)->before, std::nullopt);
  EXPECT_EQ(counter_of(*p, Counter::laser_bias_ma)->after, 6.5);
  EXPECT_FALSE(counter_of(*p, Counter::laser_bias_ma)->notable);
  EXPECT_EQ(counter_of(*p, Counter::temperature_c)->after, std::nullopt);
  EXPECT_EQ(counter_of(*p, Counter::temperature_c)->before, 47.5);
  const std::string text = render_text(d);
  EXPECT_THAT(text, HasSubstr("      rx_packets reset (420,000,000,000 -> 1,000); rx_power_dbm -0.60 dB (-1.93 -> -2.53); "
                              "pre_fec_ber 2.40e-09 -> 2.40e-07\n"));

  // Only optics moved: optics importance.
  Pair o;
  o.sample("ctsw001", "eth1").set(Counter::temperature_c, 47.5 + 4);
  const SnapshotDiff od = diff(o.a, o.take(2), {});
  ASSERT_EQ(od.ports.size(), 1u);
  EXPECT_EQ(od.ports[0].importance, Importance::optics);
  EXPECT_THAT(render_text(od), HasSubstr("temperature_c +4.00 C (47.50 -> 51.50)"));
}

TEST(Diff, DiscardsAndPauseFramesAreJudgedAgainstTheLoad) {
  Pair t;
  t.later(30);
  auto reread = [&](const std::string& d, const std::string& p) -> telemetry::PortSample& {
    auto& s = t.sample(d, p);
    s.time += from_seconds(30);
    return s;
  };
  // A discard among 300 million packets: what a healthy port does.
  auto& few = reread("rtsw0001", "eth5");
  few.set(Counter::rx_packets, 4.2e11 + 3e8);
  few.set(Counter::rx_discards, 1);
  // A thousand among a million: trouble.
  auto& many = reread("rtsw0001", "eth6");
  many.set(Counter::tx_packets, 4.1e11 + 1e6);
  many.set(Counter::tx_discards, 1000);
  // Discards while the packet counters are unknown: counted as trouble.
  auto& unknown = reread("rtsw0001", "eth7");
  unknown.present &= ~telemetry::bit(Counter::rx_packets);
  unknown.set(Counter::rx_discards, 2);
  // Pause frames: 3,000 in 30 s is congestion (100/s); 30,000 (1,000/s) a storm.
  reread("ctsw001", "eth1").set(Counter::rx_pause, 3000);
  reread("ctsw001", "eth2").set(Counter::tx_pause, 30000);
  const SnapshotDiff d = diff(t.a, t.take(2), {});
  auto importance = [&](const std::string& dev, const std::string& port) {
    const PortChange* p = change_of(d, dev, port);
    return p ? std::string(to_string(p->importance)) : "unchanged";
  };
  EXPECT_EQ(importance("rtsw0001", "eth5"), "minor");
  EXPECT_EQ(importance("rtsw0001", "eth6"), "fault");
  EXPECT_EQ(importance("rtsw0001", "eth7"), "fault");
  EXPECT_EQ(importance("ctsw001", "eth1"), "minor");
  EXPECT_EQ(importance("ctsw001", "eth2"), "fault");
  const CounterChange* c = counter_of(*change_of(d, "rtsw0001", "eth5"), Counter::rx_discards);
  EXPECT_EQ(c->packets, 3e8);
  EXPECT_EQ(c->interval_s, 30.0);
  EXPECT_EQ(counter_of(*change_of(d, "rtsw0001", "eth7"), Counter::rx_discards)->packets, std::nullopt);
  const std::string text = render_text(d);
  EXPECT_THAT(text, HasSubstr("      tx_discards +1,000\n"));
  EXPECT_THAT(text, HasSubstr("      tx_pause +30,000\n"));
  EXPECT_THAT(text, Not(HasSubstr("rx_pause")));
  EXPECT_EQ(diff_to_json(d)["ports"].size(), 5u);
  // The thresholds are the detectors': a configuration that counts 50 pause frames a
  // second as pausing and any discard as worth reporting makes both notable.
  detectors::DetectorConfig strict;
  strict.pfc.pause_rate = 50;
  strict.corruption.discard_rate = 1e-9;
  const DiffThresholds st = diff_thresholds(strict);
  EXPECT_EQ(st.pause_rate, 50);
  EXPECT_EQ(st.discard_share, 1e-9);
  const SnapshotDiff sd = diff(t.a, t.take(2), st);
  const PortChange* pe = change_of(sd, "ctsw001", "eth1");
  ASSERT_NE(pe, nullptr);
  EXPECT_EQ(to_string(pe->importance), "fault");
  EXPECT_EQ(to_string(change_of(sd, "rtsw0001", "eth5")->importance), "fault");
}

TEST(Diff, PortsInOnlyOneSnapshot) {
  Pair t;
  DemoFabric& f = t.f;
  Snapshot b = capture_link(f.state(), f.link("rtsw0002:eth5"), "action", "");  // rtsw0002 and ctsw001
  b.id = 2;
  const SnapshotDiff d = diff(t.a, b, {});
  EXPECT_EQ(d.ports_compared, 6u);    // ctsw001's
  EXPECT_EQ(d.ports_only_in_a, 8u);   // rtsw0001's
  EXPECT_EQ(d.ports_only_in_b, 8u);   // rtsw0002's
  EXPECT_THAT(render_text(d), HasSubstr("\nno changes (8 ports only in the first, 8 only in the second: not compared)\n"));
  // With a change, the ports line counts them too.
  f.samples[f.port("ctsw001", "eth1")].set(Counter::rx_crc_errors, 3);
  Snapshot c = capture_link(f.state(), f.link("rtsw0002:eth5"), "action", "");
  EXPECT_THAT(render_text(diff(t.a, c, {})), HasSubstr("ports (1 changed; 8 only in the first; 8 only in the second):\n"));
}

TEST(Diff, AnEarlierSecondSnapshotSaysEarlier) {
  Pair t;
  t.f.now -= from_seconds(90);
  const SnapshotDiff d = diff(t.a, t.take(2), {});
  EXPECT_THAT(render_text(d), HasSubstr("\n1m30s earlier; "));
  EXPECT_EQ(diff_to_json(d)["interval_s"], -90.0);
}

TEST(Diff, HeadLinesNameBothSnapshots) {
  Pair t;
  t.later(2.5);
  const std::string text = render_text(diff(t.a, t.take(2), {}));
  EXPECT_THAT(text, HasSubstr("from snapshot 1 (action on rtsw0001:eth5--ctsw001:eth1, incident 4, action 7) taken "
                              "2027-01-15T08:00:00.000000Z: before drain\n"
                              "to   snapshot 2 (action on rtsw0001:eth5--ctsw001:eth1, incident 4, action 7) taken "
                              "2027-01-15T08:00:02.500000Z: after drain\n"
                              "2.5s later; 14 ports and "));
}

}  // namespace
}  // namespace medic::snapshot
