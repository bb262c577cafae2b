// The remediation workflow's SQL against the real PostgreSQL: fencing, one unfinished action
// per link, the action's life, engineers' decisions with their refusals, the breaker, the
// leader row and lock, and the workflow run on the database store.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "db/leader.h"
#include "db/remediation_store.h"
#include "tests/db/demo_db.h"
#include "tests/support/epoch.h"

namespace medic::db {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using triage::IncidentState;

// A link_flap incident on `ref`, opened at t=0.
int64_t open_flap(DemoDb& d, const std::string& ref) {
  triage::IncidentUpdate u;
  u.cls = triage::IncidentClass::link_flap;
  u.link = d.link(ref);
  u.severity = detectors::Severity::critical;
  u.started_at = at(0);
  u.detected_at = at(0);
  u.summary = "flapping " + ref;
  const auto id = d.db.open_incident(u, d.topo, at(0));
  if (!id.ok()) throw std::runtime_error(id.error());
  return *id;
}

remediation::ActionIntent drain_of(DemoDb& d, int64_t incident, const std::string& ref, double s) {
  return {incident, d.link(ref), remediation::ActionKind::drain, at(s)};
}

TEST(Remediation, BeginActionIsFencedByTheLeaderEpoch) {
  DemoDb d;
  const int64_t inc = open_flap(d, "rtsw0001:eth5");
  const std::string link = d.link_name("rtsw0001:eth5");
  // Nobody has claimed leadership: a fenced begin is refused and nothing is written.
  auto refused = d.db.begin_action(drain_of(d, inc, "rtsw0001:eth5", 1), link, 1000, "a", 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(), "a no longer leads (epoch 1): switch not touched");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM actions"), "0");
  EXPECT_EQ(d.tdb.scalar("SELECT drain_state FROM links WHERE name = '" + link + "'"), "undrained");

  const auto ea = d.db.claim_leadership("a", at(1));
  ASSERT_TRUE(ea.ok()) << ea.error();
  EXPECT_EQ(*ea, 1);
  auto ok = d.db.begin_action(drain_of(d, inc, "rtsw0001:eth5", 2), link, 1000, "a", *ea);
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(d.tdb.scalar("SELECT state || ' ' || daemon || ' ' || traffic_before FROM actions"), "intent a 1000");
  EXPECT_EQ(d.tdb.scalar("SELECT drain_state FROM links WHERE name = '" + link + "'"), "draining");

  // b takes over: a's epoch is stale at once.
  const auto eb = d.db.claim_leadership("b", at(3));
  ASSERT_TRUE(eb.ok());
  EXPECT_EQ(*eb, 2);
  const int64_t inc2 = open_flap(d, "rtsw0002:eth5");
  auto stale = d.db.begin_action(drain_of(d, inc2, "rtsw0002:eth5", 4), d.link_name("rtsw0002:eth5"), 5, "a", *ea);
  ASSERT_FALSE(stale.ok());
  EXPECT_THAT(stale.error(), HasSubstr("a no longer leads (epoch 1)"));
  EXPECT_FALSE(d.db.leader_heartbeat("a", *ea, at(4)).ok());
  EXPECT_TRUE(d.db.leader_heartbeat("b", *eb, at(4)).ok());
  const auto l = d.db.leader();
  ASSERT_TRUE(l.ok() && l->has_value());
  EXPECT_EQ((*l)->daemon, "b");
  EXPECT_EQ((*l)->epoch, 2);
  EXPECT_EQ((*l)->heartbeat, at(4));
}

TEST(Remediation, OneUnfinishedActionPerLinkAndItsLife) {
  DemoDb d;
  const int64_t inc = open_flap(d, "rtsw0001:eth5");
  const std::string link = d.link_name("rtsw0001:eth5");
  const auto intent = drain_of(d, inc, "rtsw0001:eth5", 1);
  const auto id = d.db.begin_action(intent, link, -1, "", 0);
  ASSERT_TRUE(id.ok()) << id.error();
  EXPECT_EQ(d.tdb.scalar("SELECT coalesce(traffic_before::text, 'null') FROM actions"), "null");
  // A second drain of the same link while the first is unfinished: refused by the index.
  auto again = d.db.begin_action(intent, link, 10, "", 0);
  ASSERT_FALSE(again.ok());
  EXPECT_THAT(again.error(), HasSubstr("actions_one_intent_per_link"));

  ASSERT_TRUE(d.db.action_applied(*id, {"drain rtsw0001:eth5 -> drained"}).ok());
  EXPECT_FALSE(d.db.begin_action(intent, link, 10, "", 0).ok());  // applied is still unfinished
  const auto open = d.db.unfinished_actions();
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open->size(), 1u);
  EXPECT_EQ(open->front().state, "applied");
  EXPECT_EQ(open->front().traffic_before, -1);

  ASSERT_TRUE(d.db.finish_action(*id, intent, "succeeded", true, "", {"a", "b"}, at(5), link).ok());
  EXPECT_EQ(d.tdb.scalar("SELECT state || ' ' || steps::text FROM actions"), "succeeded [\"a\", \"b\"]");
  EXPECT_EQ(d.tdb.scalar("SELECT drain_state || ' ' || drain_incident_id FROM links WHERE name = '" + link + "'"),
            "drained " + std::to_string(inc));
  // Finishing twice is an error, not a silent overwrite.
  const auto twice = d.db.finish_action(*id, intent, "failed", false, "x", {}, at(6), link);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error(), "action " + std::to_string(*id) + " is not unfinished");
  EXPECT_TRUE(d.db.unfinished_actions()->empty());
  const auto drains = d.db.drains_since(at(0));
  ASSERT_TRUE(drains.ok());
  ASSERT_EQ(drains->size(), 1u);
  EXPECT_EQ(drains->front().first, link);
}

TEST(Remediation, DecisionsCheckTheStateAndSayWhy) {
  DemoDb d;
  const int64_t inc = open_flap(d, "rtsw0001:eth5");
  EXPECT_EQ(d.db.approve_incident(999, person("ana"), 1, "", at(1)).error(), "no incident with id 999");
  // Not drained yet: nothing to mark repaired.
  const auto early = d.db.mark_repaired(inc, person("ana"), "", at(1));
  ASSERT_FALSE(early.ok());
  EXPECT_THAT(early.error(), HasSubstr("is triaged: only a drained link waiting for repair (repair_requested, escalated)"));

  ASSERT_TRUE(d.db.set_incident_state(inc, IncidentState::pending_approval, at(1), "corruption drains need approval").ok());
  ASSERT_TRUE(d.db.approve_incident(inc, person("ana"), 1, "", at(2)).ok());
  const auto cases = d.db.open_cases();
  ASSERT_TRUE(cases.ok());
  ASSERT_EQ(cases->size(), 1u);
  EXPECT_EQ(cases->front().approved_by, "ana");
  EXPECT_EQ(cases->front().reason, "corruption drains need approval");
  EXPECT_EQ(d.tdb.scalar("SELECT note FROM incident_events WHERE incident_id = " + std::to_string(inc) +
                         " ORDER BY id DESC LIMIT 1"),
            "drain approved by ana");

  // repair_requested but the link is not drained (a hand-edited row): refused.
  ASSERT_TRUE(d.db.set_incident_state(inc, IncidentState::repair_requested, at(3)).ok());
  EXPECT_THAT(d.db.mark_repaired(inc, person("ana"), "", at(4)).error(), HasSubstr("its link is not drained"));
  d.tdb.exec("UPDATE links SET drain_state = 'drained' WHERE name = '" + d.link_name("rtsw0001:eth5") + "'");
  ASSERT_TRUE(d.db.mark_repaired(inc, person("ana"), "", at(4)).ok());
  EXPECT_EQ(d.tdb.scalar("SELECT state FROM incidents WHERE id = " + std::to_string(inc)), "repaired");
  EXPECT_THAT(d.db.approve_incident(inc, person("ana"), 1, "", at(5)).error(), HasSubstr("is repaired: only an incident waiting"));

  ASSERT_TRUE(d.db.dismiss_incident(inc, person("bo"), "dismiss", "false alarm", at(6)).ok());
  EXPECT_EQ(d.tdb.scalar("SELECT state || ' ' || blocked_reason FROM incidents WHERE id = " + std::to_string(inc)),
            "dismissed dismissed by bo: false alarm");
  EXPECT_EQ(d.db.dismiss_incident(inc, person("bo"), "dismiss", "again", at(7)).error(),
            "incident " + std::to_string(inc) + " is already dismissed");
}

TEST(Remediation, TheBreakerOpensAndOnlyAnOpenOneResets) {
  DemoDb d;
  EXPECT_EQ(d.db.reset_breaker(at(1), person("ana", "admin"), "checked the fabric").error(), "the circuit breaker is not open");
  ASSERT_TRUE(d.db.open_breaker(at(2), "circuit breaker open: 21 incidents").ok());
  auto b = d.db.breaker();
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->open);
  EXPECT_EQ(b->opened_at, at(2));
  EXPECT_EQ(b->reason, "circuit breaker open: 21 incidents");
  ASSERT_TRUE(d.db.reset_breaker(at(3), person("ana", "admin"), "checked the fabric").ok());
  b = d.db.breaker();
  EXPECT_FALSE(b->open);
  EXPECT_EQ(b->reset_by, "ana");
  open_flap(d, "rtsw0001:eth5");
  open_flap(d, "rtsw0002:eth5");
  EXPECT_EQ(*d.db.incidents_opened_since(at(0)), 2);
  EXPECT_EQ(*d.db.incidents_opened_since(at(1)), 0);
}

TEST(Remediation, OnlyOneLeaderLockAtATimeAndItIsFreedWithItsConnection) {
  DemoDb d;
  auto a = std::make_unique<LeaderLock>(d.tdb.url());
  LeaderLock b(d.tdb.url());
  ASSERT_TRUE(*a->try_acquire());
  EXPECT_TRUE(a->held());
  EXPECT_FALSE(*b.try_acquire());
  EXPECT_FALSE(b.held());
  a.reset();  // the connection closes, as when a daemon dies
  bool took = false;
  for (int i = 0; i < 100 && !took; ++i) {
    took = *b.try_acquire();
    if (!took) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(took);
  EXPECT_TRUE(b.held());
}

// The workflow on the database store: a drain, its verification, and the rows it leaves.
class StoreSignals final : public remediation::LinkSignals {
 public:
  double tx_pps(fabric::LinkId) const override { return pps; }
  Time measured_from(fabric::LinkId) const override { return from; }
  double peer_pps(fabric::LinkId) const override { return -1; }
  int oper(fabric::LinkId) const override { return 1; }
  double error_events(fabric::LinkId) const override { return 0; }
  bool flap_suppressed(fabric::LinkId, Time) const override { return false; }
  double pps = 5000;
  Time from{};
};

// The workflow on the database store, with dry-run switches that log what they are asked.
struct WorkflowRig {
  DemoDb d;
  SimulatedClock clock{at(1)};
  remediation::CapacityModel capacity{d.topo};
  remediation::DriverSet drivers{d.topo, {}};
  std::map<std::string, remediation::DryRunDriver*> dry;  // by switch name
  remediation::InlineSwitchRunner switches{d.topo, drivers};
  DbRemediationStore store{d.db, d.db, d.topo};
  StoreSignals signals;
  metrics::Registry registry;
  std::unique_ptr<remediation::Workflow> wf;
  WorkflowRig() {
    for (fabric::DeviceId dev = 0; dev < d.topo.devices().size(); ++dev) {
      if (!d.topo.device(dev).is_switch()) continue;
      auto drv = std::make_unique<remediation::DryRunDriver>(d.topo.device(dev).name);
      dry[d.topo.device(dev).name] = drv.get();
      drivers.replace(dev, std::move(drv));
    }
  }
  remediation::Workflow& workflow() {
    if (!wf) {
      wf = std::make_unique<remediation::Workflow>(d.topo, capacity, switches, store, signals,
                                                   remediation::RemediationPolicy{}, clock, registry);
      const Status st = wf->start();
      EXPECT_TRUE(st.ok()) << st.error();
    }
    return *wf;
  }
  size_t driver_calls() const {
    size_t n = 0;
    for (const auto& [name, drv] : dry) n += drv->log().size();
    return n;
  }
};

TEST(Remediation, TheWorkflowOnTheDatabaseDrainsVerifiesAndRecords) {
  WorkflowRig r;
  DemoDb& d = r.d;
  const int64_t inc = open_flap(d, "rtsw0001:eth5");
  ASSERT_TRUE(d.db.set_loss(inc, 1.0).ok());
  const auto epoch = d.db.claim_leadership("t", at(0));
  ASSERT_TRUE(epoch.ok());
  r.store.set_fence("t", *epoch);
  remediation::Workflow& wf = r.workflow();
  wf.tick();
  EXPECT_EQ(d.tdb.scalar("SELECT state || ' ' || daemon || ' ' || traffic_before FROM actions"), "applied t 5000");
  r.clock.advance(std::chrono::seconds(2));
  r.signals.pps = 0;
  r.signals.from = r.clock.now();
  wf.tick();
  EXPECT_EQ(d.tdb.scalar("SELECT state FROM actions"), "succeeded");
  EXPECT_EQ(d.tdb.scalar("SELECT state FROM incidents WHERE id = " + std::to_string(inc)), "repair_requested");
  EXPECT_EQ(d.tdb.scalar("SELECT drain_state FROM links WHERE name = '" + d.link_name("rtsw0001:eth5") + "'"),
            "drained");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM incident_events WHERE incident_id = " + std::to_string(inc) +
                         " AND state IN ('mitigated', 'repair_requested')"),
            "2");
  EXPECT_EQ(wf.metrics().drains_verified.value(), 1u);
  EXPECT_EQ(wf.metrics().fault_to_drain_seconds.count(), 1u);
}

// A dry-run driver that, before it touches anything, looks at what the database holds.
class WitnessDriver final : public remediation::Driver {
 public:
  WitnessDriver(const std::string& device, std::function<void()> before_drain)
      : inner_(device), before_drain_(std::move(before_drain)) {}
  std::string kind() const override { return "witness"; }
  Result<remediation::InterfaceState> drain(const std::string& i) override {
    before_drain_();
    return inner_.drain(i);
  }
  Result<remediation::InterfaceState> undrain(const std::string& i) override { return inner_.undrain(i); }
  Result<remediation::InterfaceState> get_state(const std::string& i) override { return inner_.get_state(i); }
  remediation::DryRunDriver* inner() { return &inner_; }

 private:
  remediation::DryRunDriver inner_;
  std::function<void()> before_drain_;
};

TEST(Remediation, TheIntentIsCommittedBeforeAnySwitchIsTouched) {
  WorkflowRig r;
  // What another session sees at the moment the first switch is asked to drain.
  std::string seen_at_drain;
  auto witness = std::make_unique<WitnessDriver>("rtsw0001", [&] {
    seen_at_drain = r.d.tdb.scalar(
        "SELECT string_agg(a.state || ' ' || l.drain_state, ',') FROM actions a JOIN links l ON l.name = a.link");
  });
  r.dry["rtsw0001"] = witness->inner();
  r.drivers.replace(*r.d.topo.find_device("rtsw0001"), std::move(witness));
  const int64_t inc = open_flap(r.d, "rtsw0001:eth5");
  ASSERT_TRUE(r.d.db.set_loss(inc, 1.0).ok());
  r.workflow().tick();
  EXPECT_EQ(seen_at_drain, "intent draining") << "the intent is committed before any switch is touched";
  const auto acts = r.d.db.actions(inc);
  ASSERT_TRUE(acts.ok()) << acts.error();
  ASSERT_EQ(acts->size(), 1u);
  EXPECT_EQ(acts->front().state, "applied");
  EXPECT_EQ(json::parse(acts->front().steps_json),
            json({"drain rtsw0001:eth5 -> drained", "drain ctsw001:eth1 -> drained",
                  "verify rtsw0001:eth5 -> drained", "verify ctsw001:eth1 -> drained"}));
  EXPECT_THAT(r.dry.at("rtsw0001")->log(), ::testing::ElementsAre("drain rtsw0001:eth5"));
  EXPECT_THAT(r.dry.at("ctsw001")->log(), ::testing::ElementsAre("drain ctsw001:eth1"));
  // Ticking again while it verifies touches no switch again.
  r.workflow().tick();
  EXPECT_EQ(r.driver_calls(), 2u);
  EXPECT_EQ(r.d.tdb.scalar("SELECT count(*) FROM actions"), "1");
}

TEST(Remediation, ARefusedDrainIsRecordedAndTouchesNothing) {
  WorkflowRig r;
  // rtsw0003 has lost one of its four uplinks; draining a second would leave 50%.
  r.capacity.set_oper_up(r.d.link("rtsw0003:eth6"), false);
  const int64_t inc = open_flap(r.d, "rtsw0003:eth7");
  ASSERT_TRUE(r.d.db.set_loss(inc, 1.0).ok());
  r.workflow().tick();
  const auto acts = r.d.db.actions(inc);
  ASSERT_TRUE(acts.ok()) << acts.error();
  ASSERT_EQ(acts->size(), 1u);
  EXPECT_EQ(acts->front().state, "refused");
  EXPECT_EQ(acts->front().reason, "rtsw0003 uplinks would fall to 50.0% < floor 75.0%");
  EXPECT_EQ(r.d.tdb.scalar("SELECT state || ': ' || blocked_reason FROM incidents WHERE id = " + std::to_string(inc)),
            "blocked: rtsw0003 uplinks would fall to 50.0% < floor 75.0%");
  EXPECT_EQ(r.d.tdb.scalar("SELECT count(*) FROM links WHERE drain_state <> 'undrained'"), "0");
  EXPECT_EQ(r.driver_calls(), 0u);
}

TEST(Remediation, NoDrainWithoutADurableIntent) {
  WorkflowRig r;
  const int64_t inc = open_flap(r.d, "rtsw0001:eth5");
  ASSERT_TRUE(r.d.db.set_loss(inc, 1.0).ok());
  // The database refuses the intent row: the switch must not be touched.
  r.d.tdb.exec(
      "CREATE FUNCTION refuse_action() RETURNS trigger LANGUAGE plpgsql AS "
      "$$ BEGIN RAISE EXCEPTION 'actions table unavailable'; END $$");
  r.d.tdb.exec("CREATE TRIGGER actions_ro BEFORE INSERT ON actions FOR EACH ROW EXECUTE FUNCTION refuse_action()");
  const fabric::LinkId link = r.d.link("rtsw0001:eth5");
  r.workflow().tick();
  EXPECT_EQ(r.driver_calls(), 0u);
  EXPECT_FALSE(r.capacity.drained(link));
  EXPECT_TRUE(r.capacity.in_service(link)) << "the reservation is released";
  EXPECT_EQ(r.workflow().metrics().store_errors.value(), 1u);
  EXPECT_EQ(r.d.tdb.scalar("SELECT drain_state FROM links WHERE name = '" + r.d.link_name("rtsw0001:eth5") + "'"),
            "undrained");
  EXPECT_EQ(r.d.tdb.scalar("SELECT state FROM incidents WHERE id = " + std::to_string(inc)), "triaged");
}

}  // namespace
}  // namespace medic::db
