#include "remediation/workflow.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fabric/generator.h"
#include "tests/remediation/workflow_fakes.h"

namespace medic::remediation {
namespace {

using ::testing::HasSubstr;
using triage::IncidentClass;
using triage::IncidentState;
using namespace std::chrono_literals;
using fakes::FakeSignals;
using fakes::MemoryStore;
using fakes::SwitchDriver;

class WorkflowTest : public ::testing::Test {
 protected:
  WorkflowTest() {
    for (fabric::DeviceId d = 0; d < topo.devices().size(); ++d) {
      if (!topo.device(d).is_switch()) continue;
      auto drv = std::make_unique<SwitchDriver>();
      switches[topo.device(d).name] = drv.get();
      drivers.replace(d, std::move(drv));
    }
    policy.verify_window = 30s;
    policy.soak = 60s;
    policy.per_switch = {0, 1h};
    policy.fabric = {0, 10min};
  }

  Workflow& workflow() {
    if (!wf) {
      wf = std::make_unique<Workflow>(topo, capacity, switches_runner, store, signals, policy, clock, registry);
      const Status st = wf->start();
      EXPECT_TRUE(st.ok()) << st.error();
    }
    return *wf;
  }
  fabric::LinkId link(const char* end) { return *topo.find_link(end); }
  // Incidents 1-5 on five ToRs' uplinks at once: past the demo fabric's blast-radius cap.
  void five_uplinks_fail() {
    const char* ends[] = {"rtsw0001:eth5", "rtsw0002:eth5", "rtsw0003:eth5", "rtsw0004:eth5", "rtsw0005:eth5"};
    int64_t id = 1;
    for (const char* e : ends) store.add_incident(id++, link(e));
  }
  bool drained_at_switch(fabric::LinkId l) {
    const auto& lk = topo.link(l);
    const auto& a = topo.port(lk.a);
    const auto& b = topo.port(lk.b);
    return switches[topo.device(a.device).name]->drained[a.name] && switches[topo.device(b.device).name]->drained[b.name];
  }
  // The counters after a drain: nothing on the link, measured after it was applied.
  void traffic_gone(fabric::LinkId l) {
    signals.at(l).pps = 0;
    signals.at(l).from = clock.now();
  }
  // Open, drain and verify incident `id` on `l`: it ends repair_requested.
  void drain_and_verify(int64_t id, fabric::LinkId l) {
    store.add_incident(id, l);
    workflow().tick();
    clock.advance(1s);
    traffic_gone(l);
    workflow().tick();
    ASSERT_EQ(store.cases[id].state, IncidentState::repair_requested);
  }
  // Drained, repaired and soaked clean: the undrain is applied (action 2).
  void repair_and_undrain(int64_t id, fabric::LinkId l) {
    drain_and_verify(id, l);
    store.cases[id].state = IncidentState::repaired;
    workflow().tick();
    clock.advance(61s);
    workflow().tick();  // validated: undrain
    ASSERT_EQ(store.actions.size(), 2u);
    ASSERT_EQ(store.actions[1].rec.kind, ActionKind::undrain);
  }
  // The undrain's window ends with a fresh reading of no traffic (its peers carry 1000 pps).
  void no_traffic_returns(fabric::LinkId l) {
    clock.advance(31s);
    signals.at(l).from = clock.now();
    workflow().tick();
  }

  fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  CapacityModel capacity{topo};
  DriverSet drivers{topo, JsonRpcOptions{}};
  InlineSwitchRunner switches_runner{topo, drivers};
  metrics::Registry registry;
  std::map<std::string, SwitchDriver*> switches;
  MemoryStore store;
  FakeSignals signals;
  RemediationPolicy policy;
  SimulatedClock clock{from_unix_seconds(1'700'000'000)};
  std::unique_ptr<Workflow> wf;
};

TEST_F(WorkflowTest, AnAutomaticDrainIsWrittenFirstAppliedThenVerifiedByTheCounters) {
  const auto l = link("rtsw0001:eth5");
  store.add_incident(7, l);
  workflow().tick();
  ASSERT_EQ(store.actions.size(), 1u);
  EXPECT_EQ(store.actions[0].rec.state, "applied");
  EXPECT_EQ(store.actions[0].end, "");
  EXPECT_EQ(store.actions[0].rec.traffic_before, 1000);
  EXPECT_TRUE(drained_at_switch(l));
  EXPECT_TRUE(capacity.drained(l));
  EXPECT_EQ(store.cases[7].state, IncidentState::triaged);  // not mitigated before the counters say so

  // The counters still show the interval from before the drain: not verified yet.
  clock.advance(1s);
  signals.at(l).pps = 0;
  workflow().tick();
  EXPECT_EQ(store.actions[0].end, "");
  traffic_gone(l);
  workflow().tick();
  EXPECT_EQ(store.actions[0].end, "succeeded");
  EXPECT_TRUE(store.actions[0].drained_after);
  EXPECT_EQ(store.actions[0].steps.back(), "verify traffic: 1000 pps before, 0 pps after");
  EXPECT_EQ(store.history[7], (std::vector<std::string>{"mitigated", "repair_requested"}));
  EXPECT_EQ(workflow().metrics().drains_verified, 1u);
}

TEST_F(WorkflowTest, TrafficThatDoesNotMoveIsRolledBackAndEscalated) {
  const auto l = link("rtsw0001:eth5");
  store.add_incident(7, l);
  workflow().tick();
  clock.advance(29s);
  signals.at(l).from = clock.now();  // fresh, but the link still carries 1000 pps
  workflow().tick();
  EXPECT_EQ(store.actions[0].end, "");
  clock.advance(2s);
  workflow().tick();
  EXPECT_EQ(store.actions[0].end, "rolled_back");
  EXPECT_FALSE(store.actions[0].drained_after);
  EXPECT_THAT(store.actions[0].reason,
              HasSubstr("traffic did not move off the link within 30 s (1000 pps before, 1000 pps after); rolled back"));
  EXPECT_FALSE(drained_at_switch(l));
  EXPECT_FALSE(capacity.drained(l));
  EXPECT_EQ(store.cases[7].state, IncidentState::escalated);
  EXPECT_THAT(store.cases[7].blocked_reason, HasSubstr("drain not verified"));
}

TEST_F(WorkflowTest, AnIdleLinkHasNoTrafficToShowAndIsVerifiedByTheSwitchAlone) {
  const auto l = link("rtsw0001:eth5");
  signals.at(l).pps = 3;  // below verify_min_pps
  store.add_incident(7, l);
  workflow().tick();
  workflow().tick();
  EXPECT_EQ(store.actions[0].end, "succeeded");
  EXPECT_EQ(store.actions[0].steps.back(), "verify traffic: 3 pps before, nothing to show");
}

TEST_F(WorkflowTest, ASwitchThatFailsTheDrainEscalatesAndTheLinkStaysInService) {
  const auto l = link("rtsw0001:eth5");
  switches["ctsw001"]->fail = true;
  store.add_incident(7, l);
  workflow().tick();
  ASSERT_EQ(store.actions.size(), 1u);
  EXPECT_EQ(store.actions[0].end, "failed");
  EXPECT_THAT(store.actions[0].reason, HasSubstr("HTTP 409: busy"));
  EXPECT_FALSE(drained_at_switch(l));
  EXPECT_FALSE(switches["rtsw0001"]->drained["eth5"]);  // the end already drained was put back
  EXPECT_FALSE(capacity.drained(l));
  EXPECT_EQ(store.cases[7].state, IncidentState::escalated);
}

TEST_F(WorkflowTest, ClassesThatNeedApprovalWaitInTheQueueUntilApproved) {
  policy.modes[static_cast<size_t>(IncidentClass::corruption)] = Mode::approval;
  const auto l = link("rtsw0001:eth5");
  store.add_incident(7, l, IncidentClass::corruption, 1e-4);
  workflow().tick();
  workflow().tick();
  EXPECT_TRUE(store.actions.empty());
  EXPECT_EQ(store.cases[7].state, IncidentState::pending_approval);
  EXPECT_EQ(store.cases[7].blocked_reason, "corruption drains need approval (remediation policy)");
  EXPECT_EQ(store.history[7].size(), 1u);  // written once, not every tick

  store.cases[7].approved = true;
  workflow().tick();
  ASSERT_EQ(store.actions.size(), 1u);
  EXPECT_TRUE(drained_at_switch(l));
}

TEST_F(WorkflowTest, TheBreakerStopsAutomaticDrainsUntilAPersonResetsIt) {
  policy.breaker_incidents = 20;
  store.opened_recently = 21;
  const auto l = link("rtsw0001:eth5");
  store.add_incident(7, l);
  workflow().tick();
  EXPECT_TRUE(workflow().breaker_open());
  EXPECT_TRUE(store.breaker_state.open);
  EXPECT_EQ(store.breaker_state.reason, "circuit breaker open: 21 incidents opened in the last 300 s (limit 20)");
  EXPECT_TRUE(store.actions.empty());
  EXPECT_EQ(store.cases[7].state, IncidentState::pending_approval);
  EXPECT_EQ(store.cases[7].blocked_reason, store.breaker_state.reason);

  // The storm is over, but the breaker stays open until reset.
  store.opened_recently = 0;
  workflow().tick();
  EXPECT_TRUE(store.actions.empty());
  store.breaker_state.open = false;  // medic breaker reset
  workflow().tick();
  EXPECT_FALSE(workflow().breaker_open());
  ASSERT_EQ(store.actions.size(), 1u);
}

TEST_F(WorkflowTest, ARateLimitPerSwitchHoldsTheSecondDrainOnASpine) {
  policy.per_switch = {1, 1h};
  const auto a = link("rtsw0001:eth5");  // both to ctsw001
  const auto b = link("rtsw0002:eth5");
  store.add_incident(7, a);
  store.add_incident(8, b, IncidentClass::link_flap, 0.5);
  workflow().tick();
  ASSERT_EQ(store.actions.size(), 1u);
  EXPECT_EQ(store.actions[0].rec.link, a);  // the larger loss first
  EXPECT_EQ(store.cases[8].state, IncidentState::blocked);
  EXPECT_EQ(store.cases[8].blocked_reason, "rate limit: 1 drains on ctsw001 in the last 3600 s (limit 1)");
  clock.advance(3601s);
  traffic_gone(a);
  workflow().tick();
  EXPECT_EQ(store.actions.size(), 2u);
}

TEST_F(WorkflowTest, WhenOnlyOneOfTwoFitsTheFloorTheLossierLinkIsDrained) {
  const auto small = link("rtsw0001:eth5");
  const auto big = link("rtsw0001:eth6");  // same ToR: 4 uplinks, floor 75%, room for one
  store.add_incident(7, small, IncidentClass::corruption, 1e-5);
  store.add_incident(8, big, IncidentClass::corruption, 1e-3);
  workflow().tick();
  ASSERT_EQ(store.actions.size(), 1u);
  EXPECT_EQ(store.actions[0].rec.link, big);
  EXPECT_EQ(store.cases[7].state, IncidentState::blocked);
  EXPECT_EQ(store.cases[7].blocked_reason, "rtsw0001 uplinks would fall to 50.0% < floor 75.0%");
  EXPECT_EQ(store.refusals.size(), 1u);
  workflow().tick();
  EXPECT_EQ(store.refusals.size(), 1u);  // the same reason is not recorded again
}

TEST_F(WorkflowTest, ARepairedLinkThatSoaksCleanIsUndrainedVerifiedAndClosed) {
  const auto l = link("rtsw0001:eth5");
  drain_and_verify(7, l);
  store.cases[7].state = IncidentState::repaired;  // medic incidents repaired 7
  workflow().tick();
  EXPECT_EQ(store.cases[7].state, IncidentState::validating);
  clock.advance(30s);
  workflow().tick();
  EXPECT_EQ(store.cases[7].state, IncidentState::validating);
  // Still suppressed by flap damping at the end of the soak: wait.
  signals.at(l).suppressed = true;
  clock.advance(31s);
  workflow().tick();
  EXPECT_EQ(store.cases[7].state, IncidentState::validating);
  signals.at(l).suppressed = false;
  workflow().tick();
  ASSERT_EQ(store.actions.size(), 2u);
  EXPECT_EQ(store.actions[1].rec.kind, ActionKind::undrain);
  EXPECT_FALSE(drained_at_switch(l));
  // Counted out of service until the undrain is verified: its headroom goes to no other
  // drain while the undrain may still fail and be put back.
  EXPECT_TRUE(capacity.drained(l));
  clock.advance(1s);
  signals.at(l).pps = 900;
  signals.at(l).from = clock.now();
  const auto closed = workflow().tick();
  EXPECT_FALSE(capacity.drained(l));
  EXPECT_EQ(store.actions[1].end, "succeeded");
  EXPECT_EQ(closed, std::vector<int64_t>{7});
  EXPECT_EQ(store.cases[7].state, IncidentState::closed);
  EXPECT_EQ(workflow().open_cases(), 0u);
}

TEST_F(WorkflowTest, ARepairedLinkWhoseDrainWasUndoneIsClosedWithoutAnUndrain) {
  const auto l = link("rtsw0001:eth5");
  switches["ctsw001"]->fail = true;  // the drain fails at the second end and is undone
  store.add_incident(7, l);
  workflow().tick();
  ASSERT_EQ(store.cases[7].state, IncidentState::escalated);
  ASSERT_FALSE(capacity.drained(l));
  switches["ctsw001"]->fail = false;
  const int calls = switches["rtsw0001"]->calls + switches["ctsw001"]->calls;
  store.cases[7].state = IncidentState::repaired;  // a person fixed the optic anyway
  workflow().tick();
  ASSERT_EQ(store.cases[7].state, IncidentState::validating);
  clock.advance(61s);
  const auto closed = workflow().tick();
  EXPECT_EQ(closed, std::vector<int64_t>{7});
  EXPECT_EQ(store.cases[7].state, IncidentState::closed);
  EXPECT_EQ(store.actions.size(), 1u) << "no undrain of a link that never left service";
  EXPECT_EQ(switches["rtsw0001"]->calls + switches["ctsw001"]->calls, calls) << "no switch called";
  EXPECT_FALSE(drained_at_switch(l));
}

// A switch that carries the drain out and loses its answers (a timeout after sending): the
// end may be drained and cannot be known to be put back, so the link is counted as drained,
// owed back by its incident, which goes to a person; no other drain gets its headroom, and
// after the repair the undrain puts both ends back once the switch answers again.
TEST_F(WorkflowTest, ADrainWhoseAnswersAreLostCountsTheLinkDrainedUntilItIsUndrained) {
  const auto l = link("rtsw0001:eth5");
  switches["ctsw001"]->lost = true;
  store.add_incident(7, l);
  workflow().tick();
  ASSERT_EQ(store.actions.size(), 1u);
  EXPECT_EQ(store.actions[0].end, "failed");
  EXPECT_TRUE(store.actions[0].drained_after);
  EXPECT_EQ(store.actions[0].reason,
            "timeout (after 3 attempts); not known to be undrained: ctsw001:eth1 (counted as drained until undrained)");
  // The fake carried out the put-back as well, unseen: medicd cannot know it.
  EXPECT_FALSE(switches["ctsw001"]->drained["eth1"]);
  EXPECT_FALSE(switches["rtsw0001"]->drained["eth5"]) << "the end that answered was put back";
  EXPECT_TRUE(capacity.drained(l));
  EXPECT_EQ(store.cases[7].state, IncidentState::escalated);
  EXPECT_THAT(store.cases[7].blocked_reason, HasSubstr("not known to be undrained: ctsw001:eth1"));
  EXPECT_THAT(registry.render(), HasSubstr("\nmedic_drains_unknown_total 1\n"));

  // Repaired, with the switch answering again: soaked, undrained at both ends, closed.
  switches["ctsw001"]->lost = false;
  store.cases[7].state = IncidentState::repaired;
  workflow().tick();
  ASSERT_EQ(store.cases[7].state, IncidentState::validating);
  clock.advance(61s);
  workflow().tick();
  ASSERT_EQ(store.actions.size(), 2u);
  EXPECT_EQ(store.actions[1].rec.kind, ActionKind::undrain);
  EXPECT_FALSE(switches["ctsw001"]->drained["eth1"]);
  EXPECT_FALSE(switches["rtsw0001"]->drained["eth5"]);
  clock.advance(1s);
  signals.at(l).pps = 900;
  signals.at(l).from = clock.now();
  workflow().tick();
  EXPECT_EQ(store.actions[1].end, "succeeded");
  EXPECT_EQ(store.cases[7].state, IncidentState::closed);
  EXPECT_FALSE(capacity.drained(l));
}

// Dismissed while drained, on a switch whose undrain keeps failing: tried again after 30 s,
// then 60 s, ..., not drained and undrained every pass; once the switch answers, put back.
TEST_F(WorkflowTest, ADismissedLinksFailingUndrainBacksOff) {
  const auto l = link("rtsw0001:eth5");
  drain_and_verify(7, l);
  switches["rtsw0001"]->unreachable = true;  // the undrain's read-back fails: put back, failed
  store.cases[7].state = IncidentState::dismissed;
  workflow().tick();
  ASSERT_EQ(store.actions.size(), 2u);
  EXPECT_EQ(store.actions[1].end, "failed");
  for (int i = 0; i < 29; ++i) {
    clock.advance(1s);
    workflow().tick();
  }
  EXPECT_EQ(store.actions.size(), 2u) << "tried again within 30 s";
  clock.advance(2s);
  workflow().tick();
  ASSERT_EQ(store.actions.size(), 3u);
  clock.advance(31s);
  workflow().tick();
  EXPECT_EQ(store.actions.size(), 3u) << "the second wait is 60 s";
  switches["rtsw0001"]->unreachable = false;
  clock.advance(30s);
  workflow().tick();
  ASSERT_EQ(store.actions.size(), 4u);
  EXPECT_FALSE(switches["rtsw0001"]->drained["eth5"]);
  EXPECT_FALSE(switches["ctsw001"]->drained["eth1"]);
}

TEST_F(WorkflowTest, ALinkThatFailsValidationTwiceIsEscalatedAndStaysDrained) {
  const auto l = link("rtsw0001:eth5");
  drain_and_verify(7, l);
  for (int round = 1; round <= 2; ++round) {
    store.cases[7].state = IncidentState::repaired;
    workflow().tick();
    ASSERT_EQ(store.cases[7].state, IncidentState::validating);
    clock.advance(5s);
    signals.at(l).errors += 12;
    workflow().tick();
  }
  EXPECT_EQ(store.cases[7].state, IncidentState::escalated);
  EXPECT_EQ(store.cases[7].blocked_reason, "failed validation 2 times: error counters rose by 12 during the soak");
  EXPECT_EQ(store.cases[7].validation_failures, 2);
  EXPECT_TRUE(drained_at_switch(l));
  EXPECT_EQ(store.actions.size(), 1u);  // never undrained, never cycled
  const auto& h = store.history[7];
  EXPECT_EQ(std::count(h.begin(), h.end(), "repair_requested"), 2);
}

TEST_F(WorkflowTest, AFenceRefusalTouchesNoSwitch) {
  store.fence_error = "a no longer leads (epoch 3): switch not touched";
  const auto l = link("rtsw0001:eth5");
  store.add_incident(7, l);
  workflow().tick();
  EXPECT_TRUE(store.actions.empty());
  EXPECT_EQ(switches["rtsw0001"]->calls + switches["ctsw001"]->calls, 0);
  EXPECT_FALSE(capacity.drained(l));
  EXPECT_FALSE(capacity.reserved(l));
}

TEST_F(WorkflowTest, AnIncidentDismissedWhileDrainedPutsTheLinkBack) {
  const auto l = link("rtsw0001:eth5");
  drain_and_verify(7, l);
  store.cases[7].state = IncidentState::dismissed;  // medic incidents reject 7
  workflow().tick();
  ASSERT_EQ(store.actions.size(), 2u);
  EXPECT_EQ(store.actions[1].rec.kind, ActionKind::undrain);
  EXPECT_FALSE(drained_at_switch(l));
  clock.advance(1s);
  signals.at(l).pps = 950;  // traffic is back
  signals.at(l).from = clock.now();
  workflow().tick();
  EXPECT_EQ(store.actions[1].end, "succeeded");
  EXPECT_EQ(store.cases[7].state, IncidentState::dismissed);
  EXPECT_EQ(workflow().open_cases(), 0u);
}

TEST_F(WorkflowTest, AnUndrainWhoseTrafficDoesNotReturnIsEscalatedNotDrainedAgain) {
  const auto l = link("rtsw0001:eth5");
  repair_and_undrain(7, l);
  no_traffic_returns(l);
  EXPECT_EQ(store.actions[1].end, "failed");
  EXPECT_THAT(store.actions[1].reason, HasSubstr("traffic did not return within 30 s (0 pps, peers 1000 pps)"));
  EXPECT_FALSE(store.actions[1].drained_after) << "both ends read back undrained: in service";
  EXPECT_EQ(store.actions[1].steps.back(), "read back: 2 ends undrained");
  EXPECT_FALSE(capacity.drained(l));
  EXPECT_EQ(store.cases[7].state, IncidentState::escalated);
  EXPECT_FALSE(drained_at_switch(l));
  EXPECT_EQ(store.actions.size(), 2u);
}

// A drain whose answer was lost, carried out by the switch after the undrain that followed
// it: the counters show no traffic, the read-back shows the end drained, and the link stays
// counted as drained, owed back by its incident.
TEST_F(WorkflowTest, AnUndrainOvertakenByALateDrainIsReadBackAndStaysCountedDrained) {
  const auto l = link("rtsw0001:eth5");
  drain_and_verify(7, l);
  store.cases[7].state = IncidentState::dismissed;
  workflow().tick();
  ASSERT_EQ(store.actions.size(), 2u);
  ASSERT_FALSE(drained_at_switch(l));
  switches["ctsw001"]->drained["eth1"] = true;  // the late call lands
  no_traffic_returns(l);
  EXPECT_EQ(store.actions[1].end, "failed");
  EXPECT_TRUE(store.actions[1].drained_after);
  EXPECT_EQ(store.actions[1].reason,
            "traffic did not return within 30 s (0 pps, peers 1000 pps); drained at the switch: ctsw001:eth1 "
            "(counted as drained until undrained)");
  EXPECT_EQ(store.actions[1].steps.back(), "read back: drained ctsw001:eth1");
  EXPECT_TRUE(capacity.drained(l));
  EXPECT_EQ(store.cases[7].state, IncidentState::dismissed);
  EXPECT_EQ(workflow().open_cases(), 1u) << "the dismissed incident still owes its undrain";
  // Put back after the back-off, and verified this time.
  clock.advance(29s);
  workflow().tick();
  EXPECT_EQ(store.actions.size(), 2u) << "tried again within 30 s";
  clock.advance(2s);
  workflow().tick();
  ASSERT_EQ(store.actions.size(), 3u);
  EXPECT_FALSE(switches["ctsw001"]->drained["eth1"]);
  clock.advance(1s);
  signals.at(l).pps = 980;
  signals.at(l).from = clock.now();
  workflow().tick();
  EXPECT_EQ(store.actions[2].end, "succeeded");
  EXPECT_FALSE(capacity.drained(l));
  EXPECT_EQ(workflow().open_cases(), 0u);
}

// Not verified, and a switch that cannot be read: not known to be in service, so counted
// as drained (capacity never overstated) and escalated.
TEST_F(WorkflowTest, AnUndrainNotVerifiedWhoseEndsCannotBeReadStaysCountedDrained) {
  const auto l = link("rtsw0001:eth5");
  repair_and_undrain(7, l);
  switches["rtsw0001"]->unreachable = true;
  no_traffic_returns(l);
  EXPECT_EQ(store.actions[1].end, "failed");
  EXPECT_TRUE(store.actions[1].drained_after);
  EXPECT_THAT(store.actions[1].reason,
              HasSubstr("; ends not read back (rtsw0001:eth5: connection refused): counted as drained until undrained"));
  EXPECT_TRUE(capacity.drained(l));
  EXPECT_EQ(store.cases[7].state, IncidentState::escalated);
  EXPECT_THAT(store.cases[7].blocked_reason, HasSubstr("undrain not verified: traffic did not return"));
  EXPECT_THAT(registry.render(), HasSubstr("\nmedic_undrains_failed_total 1\n"));
}

TEST_F(WorkflowTest, AnIncidentDismissedWhileItsDrainIsVerifiedStaysDismissedAndTheLinkGoesBack) {
  const auto l = link("rtsw0001:eth5");
  store.add_incident(7, l);
  workflow().tick();
  store.cases[7].state = IncidentState::dismissed;  // medic incidents reject 7, mid-verification
  clock.advance(1s);
  traffic_gone(l);
  workflow().tick();
  EXPECT_EQ(store.actions[0].end, "succeeded");
  EXPECT_EQ(store.cases[7].state, IncidentState::dismissed);
  ASSERT_EQ(store.actions.size(), 2u);
  EXPECT_EQ(store.actions[1].rec.kind, ActionKind::undrain);
  EXPECT_FALSE(drained_at_switch(l));
}

TEST_F(WorkflowTest, AResultWrittenWithoutTheIncidentsNextStateIsNotActedOnTwice) {
  // A crash after the drain's result and before "mitigated": the link is drained, the
  // incident still says triaged. No second drain; the incident catches up.
  const auto l = link("rtsw0001:eth5");
  store.add_incident(7, l);
  capacity.set_drained(l, true);
  workflow().tick();
  EXPECT_TRUE(store.actions.empty());
  EXPECT_EQ(store.cases[7].state, IncidentState::repair_requested);
  // And after an undrain's result without "undrained": closed, no second undrain.
  store.cases[8] = store.cases[7];
  store.cases.erase(7);
  WorkflowTest::wf.reset();
  store.cases[8].incident_id = 8;
  store.cases[8].state = IncidentState::validated;
  capacity.set_drained(l, false);
  const auto closed = workflow().tick();
  EXPECT_TRUE(store.actions.empty());
  EXPECT_EQ(store.cases[8].state, IncidentState::closed);
  EXPECT_EQ(closed, std::vector<int64_t>{8});
}

// ---------------------------------------------------------------------------------------
// Reconciliation after a crash: the intent is in the store, the switch says what happened.

TEST_F(WorkflowTest, ADrainThatReachedBothEndsBeforeTheCrashIsVerifiedNotRepeated) {
  const auto l = link("rtsw0001:eth5");
  store.add_incident(7, l);
  (void)store.begin_action({7, l, ActionKind::drain, clock.now()}, 1000);
  switches["rtsw0001"]->drained["eth5"] = true;
  switches["ctsw001"]->drained["eth1"] = true;
  workflow();
  EXPECT_EQ(store.actions.size(), 1u);
  EXPECT_EQ(store.actions[0].rec.state, "applied");
  EXPECT_TRUE(capacity.drained(l));
  EXPECT_EQ(switches["rtsw0001"]->calls + switches["ctsw001"]->calls, 0);  // nothing done twice
  clock.advance(1s);
  traffic_gone(l);
  workflow().tick();
  EXPECT_EQ(store.actions[0].end, "succeeded");
  EXPECT_EQ(store.actions.size(), 1u);
  EXPECT_EQ(store.cases[7].state, IncidentState::repair_requested);
}

TEST_F(WorkflowTest, AHalfDoneDrainIsUndoneRecordedAsReconciledAndDecidedAgain) {
  const auto l = link("rtsw0001:eth5");
  store.add_incident(7, l);
  (void)store.begin_action({7, l, ActionKind::drain, clock.now()}, 1000);
  switches["rtsw0001"]->drained["eth5"] = true;  // the crash came between the two ends
  workflow();
  EXPECT_EQ(store.actions[0].end, "reconciled");
  EXPECT_FALSE(store.actions[0].drained_after);
  EXPECT_FALSE(switches["rtsw0001"]->drained["eth5"]);
  EXPECT_FALSE(capacity.drained(l));
  workflow().tick();  // the planner decides again: a new, whole drain
  ASSERT_EQ(store.actions.size(), 2u);
  EXPECT_TRUE(drained_at_switch(l));
}

TEST_F(WorkflowTest, AnUnreachableSwitchKeepsTheActionOpenAndTheLinkCountedDrained) {
  const auto l = link("rtsw0001:eth5");
  store.add_incident(7, l);
  (void)store.begin_action({7, l, ActionKind::drain, clock.now()}, 1000);
  switches["ctsw001"]->unreachable = true;
  workflow();
  EXPECT_EQ(store.actions[0].end, "");
  EXPECT_TRUE(capacity.reserved(l));
  EXPECT_FALSE(capacity.in_service(l));
  workflow().tick();
  EXPECT_EQ(store.actions.size(), 1u);  // no second action while the first is unresolved
  switches["ctsw001"]->unreachable = false;
  workflow().tick();
  EXPECT_EQ(store.actions[0].end, "reconciled");
}

TEST_F(WorkflowTest, AnInterruptedUndrainIsFinished) {
  const auto l = link("rtsw0001:eth5");
  store.add_incident(7, l);
  store.cases[7].state = IncidentState::validated;
  capacity.set_drained(l, true);
  switches["rtsw0001"]->drained["eth5"] = true;
  switches["ctsw001"]->drained["eth1"] = true;
  (void)store.begin_action({7, l, ActionKind::undrain, clock.now()}, 0);
  workflow();
  EXPECT_FALSE(drained_at_switch(l));
  EXPECT_TRUE(capacity.drained(l)) << "counted out of service until the undrain is verified";
  clock.advance(1s);
  signals.at(l).from = clock.now();
  const auto closed = workflow().tick();
  EXPECT_FALSE(capacity.drained(l));
  EXPECT_EQ(store.actions[0].end, "succeeded");
  EXPECT_EQ(closed, std::vector<int64_t>{7});
}


// ---------------------------------------------------------------------------------------
// The blast-radius cap: judged before a pass touches anything.

TEST_F(WorkflowTest, MoreDrainsInOnePassThanTheCapDrainNothingAndOpenTheBreaker) {
  // The demo fabric has 80 links: 5% is 4. Five uplinks of five ToRs at once.
  const char* ends[] = {"rtsw0001:eth5", "rtsw0002:eth5", "rtsw0003:eth5", "rtsw0004:eth5", "rtsw0005:eth5"};
  int64_t id = 1;
  for (const char* e : ends) store.add_incident(id++, link(e));
  workflow().tick();
  EXPECT_TRUE(store.actions.empty()) << "no switch touched";
  for (const char* e : ends) EXPECT_FALSE(drained_at_switch(link(e))) << e;
  EXPECT_TRUE(workflow().breaker_open());
  EXPECT_TRUE(store.breaker_state.open);
  EXPECT_EQ(store.breaker_state.reason,
            "blast radius: 5 automatic drains wanted in one pass (cap 8, and 4: 5.0% of 80 links)");
  for (int64_t i = 1; i <= 5; ++i) {
    EXPECT_EQ(store.cases[i].state, IncidentState::pending_approval) << i;
    EXPECT_EQ(store.cases[i].blocked_reason, store.breaker_state.reason) << i;
  }
  EXPECT_EQ(workflow().metrics().breaker_trips, 1u);
  EXPECT_EQ(workflow().metrics().queued_for_approval, 5u);
}

TEST_F(WorkflowTest, AWaveQueuedForApprovalIsOneWriteAndQueuedOnce) {
  five_uplinks_fail();
  workflow().tick();
  // The blast-radius cap queues all five: one write for them, each its history line once.
  EXPECT_EQ(store.set_states_calls, 1);
  for (int64_t i = 1; i <= 5; ++i) {
    EXPECT_EQ(store.history[i], std::vector<std::string>{"pending_approval"}) << i;
  }
  // The breaker opened with the cap's reason: the next passes find nothing new to write.
  for (int64_t i = 1; i <= 5; ++i) EXPECT_EQ(store.cases[i].blocked_reason, store.breaker_state.reason) << i;
  workflow().tick();
  workflow().tick();
  EXPECT_EQ(store.set_states_calls, 1);
  EXPECT_EQ(store.history[3].size(), 1u);
  // A new reason (the breaker's changes, say after a reset and a new trip) is written again.
  store.breaker_state.reason = "circuit breaker open: 30 incidents opened in the last 300 s (limit 20)";
  workflow().tick();
  EXPECT_EQ(store.set_states_calls, 2);
  EXPECT_EQ(store.history[3].size(), 2u);
  EXPECT_EQ(store.cases[3].blocked_reason, store.breaker_state.reason);
  EXPECT_EQ(workflow().metrics().queued_for_approval, 5u) << "a case is counted once, when it is first queued";
}

TEST_F(WorkflowTest, AWaveTheStoreRefusesTogetherIsQueuedOneAtATime) {
  store.set_states_error = "no incidents with ids 9";
  five_uplinks_fail();
  workflow().tick();
  EXPECT_EQ(store.set_states_calls, 1);
  for (int64_t i = 1; i <= 5; ++i) {
    EXPECT_EQ(store.cases[i].state, IncidentState::pending_approval) << i;
    EXPECT_EQ(store.history[i], std::vector<std::string>{"pending_approval"}) << i;
  }
  EXPECT_EQ(workflow().metrics().queued_for_approval, 5u);
}

TEST_F(WorkflowTest, AsManyDrainsAsTheCapAllowsGoAhead) {
  const char* ends[] = {"rtsw0001:eth5", "rtsw0002:eth5", "rtsw0003:eth5", "rtsw0004:eth5"};
  int64_t id = 1;
  for (const char* e : ends) store.add_incident(id++, link(e));
  workflow().tick();
  EXPECT_EQ(store.actions.size(), 4u);
  EXPECT_FALSE(workflow().breaker_open());
}

TEST_F(WorkflowTest, TheCountCapAppliesToo) {
  policy.blast_drains = 2;
  const char* ends[] = {"rtsw0001:eth5", "rtsw0002:eth5", "rtsw0003:eth5"};
  int64_t id = 1;
  for (const char* e : ends) store.add_incident(id++, link(e));
  workflow().tick();
  EXPECT_TRUE(store.actions.empty());
  EXPECT_EQ(store.breaker_state.reason,
            "blast radius: 3 automatic drains wanted in one pass (cap 2, and 4: 5.0% of 80 links)");
}

TEST_F(WorkflowTest, ApprovedDrainsAreNotAutomaticAndStillGoWhenTheCapTrips) {
  const char* ends[] = {"rtsw0001:eth5", "rtsw0002:eth5", "rtsw0003:eth5", "rtsw0004:eth5", "rtsw0005:eth5"};
  int64_t id = 1;
  for (const char* e : ends) store.add_incident(id++, link(e));
  store.cases[6 - 1].approved = true;  // incident 5: a person approved it
  // Five wanted, one of them approved: four automatic, within the cap.
  workflow().tick();
  EXPECT_EQ(store.actions.size(), 5u);
  EXPECT_FALSE(workflow().breaker_open());
}

TEST_F(WorkflowTest, RestartForgetsMemoryAndReconcilesWhatTheStoreHolds) {
  const auto l = link("rtsw0001:eth5");
  store.add_incident(7, l);
  workflow().tick();  // drained at the switch, being verified
  ASSERT_EQ(store.actions.size(), 1u);
  ASSERT_EQ(store.actions[0].end, "");
  // Leading again after the lock was lost: drain states come from the record, then the
  // workflow reloads and asks the switches about the unfinished action.
  capacity.clear_drains();
  capacity.set_drained(l, true);
  ASSERT_TRUE(workflow().restart().ok());
  EXPECT_EQ(workflow().metrics().reconciled, 1u);
  EXPECT_EQ(workflow().in_flight(), 1u);  // verifying again, not draining again
  clock.advance(1s);
  traffic_gone(l);
  workflow().tick();
  EXPECT_EQ(store.actions.size(), 1u);
  EXPECT_EQ(store.actions[0].end, "succeeded");
  EXPECT_EQ(store.cases[7].state, IncidentState::repair_requested);
}

// The wall clock stepped as NTP steps it (SimulatedClock::step: the monotonic reading stays):
// timers run on the monotonic clock, the readings of the counters are judged in the wall
// clock's current frame, and the fault-to-drain latency is the time that really passed.
TEST_F(WorkflowTest, AClockSteppedForwardDoesNotEndTheVerifyWindowAndOneSteppedBackDoesNotHoldIt) {
  const auto l = link("rtsw0001:eth5");
  store.add_incident(7, l);
  workflow().tick();
  ASSERT_EQ(store.actions[0].rec.state, "applied");
  clock.step(2h);  // 2 h "later" by the wall clock, no time at all by the monotonic one
  workflow().tick();
  EXPECT_EQ(store.actions[0].end, "") << store.actions[0].reason;  // not rolled back
  clock.step(-3h);  // an hour behind the true time
  clock.advance(1s);
  traffic_gone(l);  // a reading that began after the drain, stamped in the stepped-back frame
  workflow().tick();
  EXPECT_EQ(store.actions[0].end, "succeeded") << store.actions[0].reason;
  EXPECT_EQ(store.cases[7].state, IncidentState::repair_requested);
}

TEST_F(WorkflowTest, AReadingFromBeforeTheDrainIsNotNewWhateverTheClockSaysAndTheWindowStillEnds) {
  const auto l = link("rtsw0001:eth5");
  signals.at(l).from = clock.now() - 1s;  // the interval that ended before the drain
  store.add_incident(7, l);
  workflow().tick();
  clock.step(-1h);
  signals.at(l).pps = 0;  // looks drained, but it is the old reading
  clock.advance(10s);
  workflow().tick();
  EXPECT_EQ(store.actions[0].end, "");
  // 30 s of real time after the drain: the window ends (no timer held an hour by the step).
  signals.at(l).pps = 1000;
  signals.at(l).from = clock.now();
  clock.advance(21s);
  workflow().tick();
  EXPECT_EQ(store.actions[0].end, "rolled_back");
}

// The reading there when the undrain was applied, stamped at that same instant (as a
// simulated clock can): it was taken before the switch was called, so it shows nothing of
// the undrain however it looks; the next reading does.
TEST_F(WorkflowTest, AReadingStampedAtTheApplysInstantIsNotNew) {
  const auto l = link("rtsw0001:eth5");
  drain_and_verify(7, l);
  store.cases[7].state = IncidentState::dismissed;
  signals.at(l).pps = 1000;  // what the link carried before its drain, stamped now
  signals.at(l).from = clock.now();
  workflow().tick();
  ASSERT_EQ(store.actions.size(), 2u);
  ASSERT_EQ(store.actions[1].rec.state, "applied");
  workflow().tick();
  EXPECT_EQ(store.actions[1].end, "") << "verified by the reading from before the undrain";
  clock.advance(1s);
  signals.at(l).from = clock.now();
  workflow().tick();
  EXPECT_EQ(store.actions[1].end, "succeeded");
}

TEST_F(WorkflowTest, ASoakLastsItsLengthInRealTimeWhicheverWayTheClockSteps) {
  const auto l = link("rtsw0001:eth5");
  drain_and_verify(7, l);
  store.cases[7].state = IncidentState::repaired;  // medic incidents repaired 7
  workflow().tick();
  ASSERT_EQ(store.cases[7].state, IncidentState::validating);
  clock.step(-1h);
  clock.advance(20s);
  workflow().tick();
  EXPECT_EQ(store.cases[7].state, IncidentState::validating);
  clock.step(2h);  // the soak of 60 s seems long over: it is not
  workflow().tick();
  EXPECT_EQ(store.cases[7].state, IncidentState::validating);
  // A new finding during the soak fails it even when it is stamped before the soak began.
  clock.advance(20s);
  workflow().on_update(7, l, IncidentClass::link_flap, detectors::Severity::warning, 0, clock.now() - 3h);
  workflow().tick();
  EXPECT_EQ(store.cases[7].state, IncidentState::repair_requested);
  EXPECT_EQ(store.cases[7].blocked_reason, "validation failed: a new finding during the soak");

  clock.advance(1s);
  store.cases[7].state = IncidentState::repaired;  // repaired again
  workflow().tick();
  ASSERT_EQ(store.cases[7].state, IncidentState::validating);
  clock.step(-1h);  // back to the true time: the soak is not held for the hour
  clock.advance(59s);
  workflow().tick();
  EXPECT_EQ(store.cases[7].state, IncidentState::validating);
  clock.advance(1s);
  workflow().tick();
  ASSERT_EQ(store.actions.size(), 2u);
  EXPECT_EQ(store.actions[1].rec.kind, ActionKind::undrain);
}

TEST_F(WorkflowTest, FaultToDrainIsTheTimeThatPassedNotTheClocksStep) {
  const auto l = link("rtsw0001:eth5");
  store.add_incident(7, l);
  // Found at this poll; the fault began 2 s before.
  workflow().on_update(7, l, IncidentClass::link_flap, detectors::Severity::critical, 1.0, clock.now(),
                       clock.now() - 2s);
  workflow().tick();
  clock.step(-1h);
  clock.advance(1s);
  traffic_gone(l);
  workflow().tick();
  ASSERT_EQ(store.actions[0].end, "succeeded");
  EXPECT_EQ(workflow().metrics().fault_to_drain_seconds.count(), 1u);
  EXPECT_DOUBLE_EQ(workflow().metrics().fault_to_drain_seconds.sum(), 3.0);
}

}  // namespace
}  // namespace medic::remediation
