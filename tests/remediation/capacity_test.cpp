#include "remediation/capacity.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "fabric/generator.h"

namespace medic::remediation {
namespace {

using fabric::GroupId;
using fabric::LinkId;

fabric::Topology demo() { return fabric::generate_clos(*fabric::preset("demo")); }

LinkId link(const fabric::Topology& t, const std::string& ref) {
  const auto id = t.find_link(ref);
  EXPECT_TRUE(id.has_value()) << ref;
  return *id;
}

GroupId group(const fabric::Topology& t, const std::string& name) {
  const auto id = t.find_group(name);
  EXPECT_TRUE(id.has_value()) << name;
  return *id;
}

class DemoCapacity : public ::testing::Test {
 protected:
  fabric::Topology topo = demo();
  CapacityModel cap{topo};
  GroupId g3 = group(topo, "rtsw0003 uplinks");
  LinkId up5 = link(topo, "rtsw0003:eth5");
  LinkId up6 = link(topo, "rtsw0003:eth6");
  LinkId up7 = link(topo, "rtsw0003:eth7");
  LinkId up8 = link(topo, "rtsw0003:eth8");
};

TEST_F(DemoCapacity, DemoGroupHasFourUplinksAtFloorThreeQuarters) {
  const auto& g = topo.group(g3);
  EXPECT_EQ(g.links.size(), 4u);
  EXPECT_DOUBLE_EQ(g.floor, 0.75);
  EXPECT_DOUBLE_EQ(g.total_gbps, 1600);
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(g3), 1.0);
  EXPECT_DOUBLE_EQ(cap.available_gbps(g3), 1600);
  EXPECT_TRUE(cap.in_service(up5));
  EXPECT_TRUE(cap.oper_up(up5));
  EXPECT_FALSE(cap.drained(up5));
}

TEST_F(DemoCapacity, DrainAllowedWhenGroupStaysExactlyAtFloor) {
  const DrainCheck c = cap.check_drain(up5);
  EXPECT_TRUE(c.allowed);
  EXPECT_EQ(c.reason, "");
  ASSERT_EQ(c.impacts.size(), 1u);
  EXPECT_EQ(c.impacts[0].group, g3);
  EXPECT_DOUBLE_EQ(c.impacts[0].before, 1.0);
  EXPECT_DOUBLE_EQ(c.impacts[0].after, 0.75);
  EXPECT_DOUBLE_EQ(c.impacts[0].floor, 0.75);
  EXPECT_FALSE(c.impacts[0].breaks_floor);
}

TEST_F(DemoCapacity, DrainRefusedBelowFloorWithExactReason) {
  cap.set_drained(up5, true);
  const DrainCheck c = cap.check_drain(up6);
  EXPECT_FALSE(c.allowed);
  EXPECT_EQ(c.reason, "rtsw0003 uplinks would fall to 50.0% < floor 75.0%");
  ASSERT_EQ(c.impacts.size(), 1u);
  EXPECT_DOUBLE_EQ(c.impacts[0].before, 0.75);
  EXPECT_DOUBLE_EQ(c.impacts[0].after, 0.5);
  EXPECT_TRUE(c.impacts[0].breaks_floor);
}

TEST_F(DemoCapacity, LinkDownReducesCapacity) {
  cap.set_oper_up(up8, false);
  EXPECT_FALSE(cap.in_service(up8));
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(g3), 0.75);
  EXPECT_DOUBLE_EQ(cap.available_gbps(g3), 1200);
  const DrainCheck c = cap.check_drain(up5);
  EXPECT_FALSE(c.allowed);
  EXPECT_EQ(c.reason, "rtsw0003 uplinks would fall to 50.0% < floor 75.0%");
}

TEST_F(DemoCapacity, DrainedLinkReducesCapacity) {
  cap.set_drained(up7, true);
  EXPECT_FALSE(cap.in_service(up7));
  EXPECT_TRUE(cap.oper_up(up7));
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(g3), 0.75);
  EXPECT_FALSE(cap.check_drain(up8).allowed);
}

TEST_F(DemoCapacity, OtherGroupsAreUnaffected) {
  cap.set_drained(up5, true);
  cap.set_oper_up(up6, false);
  const GroupId g1 = group(topo, "rtsw0001 uplinks");
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(g1), 1.0);
  EXPECT_TRUE(cap.check_drain(link(topo, "rtsw0001:eth5")).allowed);
}

TEST_F(DemoCapacity, FlappingLinkThatIsDownNowStillCountsAsLost) {
  // Alone, a link that is down at this instant may be drained: the group already runs
  // without it and stays at 75%.
  cap.set_oper_up(up5, false);
  DrainCheck c = cap.check_drain(up5);
  EXPECT_TRUE(c.allowed);
  ASSERT_EQ(c.impacts.size(), 1u);
  EXPECT_DOUBLE_EQ(c.impacts[0].before, 0.75);
  EXPECT_DOUBLE_EQ(c.impacts[0].after, 0.75);

  // With another uplink drained, the flapping link is lost whether it is down (now) or up
  // (between flaps): both checks refuse at 50%.
  cap.set_drained(up6, true);
  c = cap.check_drain(up5);
  EXPECT_FALSE(c.allowed);
  EXPECT_DOUBLE_EQ(c.impacts[0].after, 0.5);
  EXPECT_EQ(c.reason, "rtsw0003 uplinks would fall to 50.0% < floor 75.0%");
  cap.set_oper_up(up5, true);
  c = cap.check_drain(up5);
  EXPECT_FALSE(c.allowed);
  EXPECT_DOUBLE_EQ(c.impacts[0].before, 0.75);
  EXPECT_DOUBLE_EQ(c.impacts[0].after, 0.5);
  EXPECT_EQ(c.reason, "rtsw0003 uplinks would fall to 50.0% < floor 75.0%");
}

TEST_F(DemoCapacity, ReservationHoldsCapacityUntilReleased) {
  cap.set_reserved(up5, true);
  EXPECT_FALSE(cap.in_service(up5));
  EXPECT_FALSE(cap.drained(up5));
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(g3), 0.75);
  // A second, concurrent check on the same group sees the held capacity.
  DrainCheck c = cap.check_drain(up6);
  EXPECT_FALSE(c.allowed);
  EXPECT_EQ(c.reason, "rtsw0003 uplinks would fall to 50.0% < floor 75.0%");
  cap.set_reserved(up5, false);
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(g3), 1.0);
  EXPECT_TRUE(cap.check_drain(up6).allowed);
}

TEST_F(DemoCapacity, ReservationTurnedIntoDrainKeepsCapacityOut) {
  cap.set_reserved(up5, true);
  cap.set_drained(up5, true);
  cap.set_reserved(up5, false);
  EXPECT_FALSE(cap.in_service(up5));
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(g3), 0.75);
}

TEST_F(DemoCapacity, AlreadyDrainedLinkChangesNothing) {
  cap.set_drained(up5, true);
  const DrainCheck c = cap.check_drain(up5);
  EXPECT_TRUE(c.allowed);
  ASSERT_EQ(c.impacts.size(), 1u);
  EXPECT_DOUBLE_EQ(c.impacts[0].before, 0.75);
  EXPECT_DOUBLE_EQ(c.impacts[0].after, 0.75);
  EXPECT_FALSE(c.impacts[0].breaks_floor);
}

TEST_F(DemoCapacity, LinkInNoGroupIsAlwaysAllowed) {
  const LinkId host_link = link(topo, "rtsw0003:eth1");
  EXPECT_TRUE(topo.groups_of(host_link).empty());
  const DrainCheck c = cap.check_drain(host_link);
  EXPECT_TRUE(c.allowed);
  EXPECT_TRUE(c.impacts.empty());
  EXPECT_EQ(c.reason, "");
}

TEST_F(DemoCapacity, SettersAreIdempotent) {
  cap.set_drained(up5, true);
  cap.set_drained(up5, true);
  cap.set_drained(up5, true);
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(g3), 0.75);
  cap.set_oper_up(up5, false);  // already out of service: no second subtraction
  cap.set_oper_up(up5, false);
  cap.set_reserved(up5, true);
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(g3), 0.75);
  cap.set_drained(up5, false);  // still down and reserved
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(g3), 0.75);
  cap.set_reserved(up5, false);  // still down
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(g3), 0.75);
  cap.set_oper_up(up5, true);
  cap.set_oper_up(up5, true);
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(g3), 1.0);
  EXPECT_DOUBLE_EQ(cap.available_gbps(g3), 1600);
  cap.set_drained(up5, false);
  cap.set_reserved(up5, false);
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(g3), 1.0);
}

TEST_F(DemoCapacity, BookkeepingMatchesRecountAfterManyChanges) {
  std::mt19937 rng(42);
  const auto links = topo.links().size();
  std::vector<bool> up(links, true), drained(links, false), reserved(links, false);
  for (int step = 0; step < 20000; ++step) {
    const LinkId l = static_cast<LinkId>(rng() % links);
    const bool v = rng() % 2;
    switch (rng() % 3) {
      case 0: cap.set_oper_up(l, v); up[l] = v; break;
      case 1: cap.set_drained(l, v); drained[l] = v; break;
      default: cap.set_reserved(l, v); reserved[l] = v; break;
    }
  }
  for (GroupId g = 0; g < topo.groups().size(); ++g) {
    double in = 0;
    for (const LinkId l : topo.group(g).links) {
      if (up[l] && !drained[l] && !reserved[l]) in += topo.link(l).speed_gbps;
    }
    EXPECT_DOUBLE_EQ(cap.available_gbps(g), in) << topo.group(g).name;
    EXPECT_DOUBLE_EQ(cap.fraction_in_service(g), in / topo.group(g).total_gbps) << topo.group(g).name;
  }
  for (LinkId l = 0; l < links; ++l) {
    EXPECT_EQ(cap.in_service(l), up[l] && !drained[l] && !reserved[l]);
    EXPECT_EQ(cap.oper_up(l), static_cast<bool>(up[l]));
    EXPECT_EQ(cap.drained(l), static_cast<bool>(drained[l]));
  }
}

// One ToR with four uplinks (L0..L3) in three overlapping groups:
//   "pair"   {L0, L1}      floor 0.5
//   "spine"  {L0, L2, L3}  floor 0.75
//   "plane"  {L0, L1, L2}  floor 0.7
// plus a mixed-speed group for the gbps arithmetic.
class MultiGroup : public ::testing::Test {
 protected:
  static fabric::Topology build() {
    fabric::Topology::Builder b;
    auto sw = [&](const char* name, fabric::Role role) {
      fabric::Device d;
      d.name = name;
      d.role = role;
      EXPECT_EQ(b.add_device(d), "");
    };
    sw("tor", fabric::Role::rtsw);
    sw("s1", fabric::Role::ctsw);
    sw("s2", fabric::Role::ctsw);
    sw("s3", fabric::Role::ctsw);
    EXPECT_EQ(b.add_link("tor", "e1", "s1", "e1", 400, "L0"), "");
    EXPECT_EQ(b.add_link("tor", "e2", "s2", "e1", 400, "L1"), "");
    EXPECT_EQ(b.add_link("tor", "e3", "s3", "e1", 400, "L2"), "");
    EXPECT_EQ(b.add_link("tor", "e4", "s1", "e2", 400, "L3"), "");
    EXPECT_EQ(b.add_link("tor", "e5", "s2", "e2", 100, "M0"), "");
    EXPECT_EQ(b.add_link("tor", "e6", "s3", "e2", 100, "M1"), "");
    EXPECT_EQ(b.add_group("pair", "custom", 0.5, {0, 1}), "");
    EXPECT_EQ(b.add_group("spine", "custom", 0.75, {0, 2, 3}), "");
    EXPECT_EQ(b.add_group("plane", "plane", 0.7, {0, 1, 2}), "");
    EXPECT_EQ(b.add_group("mixed", "custom", 0.5, {1, 2, 4, 5}), "");
    return std::move(b).build();
  }
  fabric::Topology topo = build();
  CapacityModel cap{topo};
};

TEST_F(MultiGroup, ReportsEveryImpactAndFirstBreakingGroupsReason) {
  ASSERT_EQ(topo.groups_of(0).size(), 3u);
  const DrainCheck c = cap.check_drain(0);
  EXPECT_FALSE(c.allowed);
  ASSERT_EQ(c.impacts.size(), 3u);
  EXPECT_EQ(topo.group(c.impacts[0].group).name, "pair");
  EXPECT_EQ(topo.group(c.impacts[1].group).name, "spine");
  EXPECT_EQ(topo.group(c.impacts[2].group).name, "plane");
  EXPECT_DOUBLE_EQ(c.impacts[0].after, 0.5);
  EXPECT_FALSE(c.impacts[0].breaks_floor);  // exactly at its floor
  EXPECT_DOUBLE_EQ(c.impacts[1].after, 2.0 / 3.0);
  EXPECT_TRUE(c.impacts[1].breaks_floor);
  EXPECT_DOUBLE_EQ(c.impacts[2].after, 2.0 / 3.0);
  EXPECT_TRUE(c.impacts[2].breaks_floor);
  EXPECT_DOUBLE_EQ(c.impacts[2].floor, 0.7);
  EXPECT_EQ(c.reason, "spine would fall to 66.7% < floor 75.0%");
}

TEST_F(MultiGroup, ChangeOnSharedLinkMovesEveryGroup) {
  cap.set_oper_up(0, false);
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(0), 0.5);
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(1), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(2), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(3), 1.0);
  // L1 is in "pair" (would go to 0%), "plane" and "mixed": pair breaks first.
  const DrainCheck c = cap.check_drain(1);
  EXPECT_FALSE(c.allowed);
  ASSERT_EQ(c.impacts.size(), 3u);
  EXPECT_EQ(c.reason, "pair would fall to 0.0% < floor 50.0%");
  EXPECT_FALSE(c.impacts[2].breaks_floor);  // mixed: 600 of 1000 -> 60%
  EXPECT_DOUBLE_EQ(c.impacts[2].after, 0.6);
}

TEST_F(MultiGroup, MixedSpeedsAreWeightedByGbps) {
  const GroupId mixed = *topo.find_group("mixed");
  EXPECT_DOUBLE_EQ(topo.group(mixed).total_gbps, 1000);
  cap.set_drained(4, true);  // 100G
  EXPECT_DOUBLE_EQ(cap.available_gbps(mixed), 900);
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(mixed), 0.9);
  cap.set_drained(1, true);  // 400G
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(mixed), 0.5);
  const DrainCheck c = cap.check_drain(5);  // 100G more: 40%
  EXPECT_FALSE(c.allowed);
  EXPECT_EQ(c.reason, "mixed would fall to 40.0% < floor 50.0%");
}

// ---------------------------------------------------------------------------------------
// Budgets, reservations, down links and what-if on the demo fabric.

class DemoBudget : public ::testing::Test {
 protected:
  fabric::Topology topo = demo();
  LinkId l(const std::string& ref) const { return link(topo, ref); }
  fabric::DeviceId dev(const std::string& name) const { return *topo.find_device(name); }
};

TEST_F(DemoBudget, FabricBudgetCountsDrainedAndReservedLinks) {
  CapacityModel cap(topo, {2, 0});
  EXPECT_EQ(cap.budget_used(), 0);
  cap.set_drained(l("rtsw0001:eth5"), true);
  cap.set_reserved(l("rtsw0002:eth6"), true);
  EXPECT_EQ(cap.budget_used(), 2);
  const DrainCheck c = cap.check_drain(l("rtsw0003:eth7"));
  EXPECT_FALSE(c.allowed);
  EXPECT_EQ(c.refusal, Refusal::budget_fabric);
  EXPECT_EQ(c.reason, "drain budget spent: 2 links drained or draining fabric-wide (limit 2)");
  // The floors were fine: the impacts are still there, none breaking.
  ASSERT_EQ(c.impacts.size(), 1u);
  EXPECT_FALSE(c.impacts[0].breaks_floor);
  // A link already drained or held takes no new place in the budget.
  EXPECT_TRUE(cap.check_drain(l("rtsw0001:eth5")).allowed);
  EXPECT_TRUE(cap.check_drain(l("rtsw0002:eth6")).allowed);
  // The reservation released (the drain failed): there is room again.
  cap.set_reserved(l("rtsw0002:eth6"), false);
  EXPECT_EQ(cap.budget_used(), 1);
  EXPECT_TRUE(cap.check_drain(l("rtsw0003:eth7")).allowed);
}

TEST_F(DemoBudget, ReservationTurnedIntoDrainKeepsOnePlace) {
  CapacityModel cap(topo, {1, 0});
  cap.set_reserved(l("rtsw0001:eth5"), true);
  cap.set_drained(l("rtsw0001:eth5"), true);
  cap.set_reserved(l("rtsw0001:eth5"), false);
  EXPECT_EQ(cap.budget_used(), 1);
  EXPECT_EQ(cap.check_drain(l("rtsw0002:eth5")).refusal, Refusal::budget_fabric);
  cap.set_drained(l("rtsw0001:eth5"), false);
  EXPECT_EQ(cap.budget_used(), 0);
  EXPECT_TRUE(cap.check_drain(l("rtsw0002:eth5")).allowed);
}

TEST_F(DemoBudget, PerSwitchBudgetCountsBothEnds) {
  CapacityModel cap(topo, {0, 1});
  // rtsw0001:eth5 goes to ctsw001, and so does rtsw0002:eth5.
  cap.set_drained(l("rtsw0001:eth5"), true);
  EXPECT_EQ(cap.budget_used(dev("rtsw0001")), 1);
  EXPECT_EQ(cap.budget_used(dev("ctsw001")), 1);
  // A GPU link of rtsw0001 (in no group, so no floor in the way).
  DrainCheck c = cap.check_drain(l("host0001:nic0"));
  EXPECT_FALSE(c.allowed);
  EXPECT_EQ(c.refusal, Refusal::budget_switch);
  EXPECT_EQ(c.reason, "drain budget spent on rtsw0001: 1 link drained or draining (limit 1 per switch)");
  c = cap.check_drain(l("rtsw0002:eth5"));
  EXPECT_FALSE(c.allowed);
  EXPECT_EQ(c.refusal, Refusal::budget_switch);
  EXPECT_EQ(c.reason, "drain budget spent on ctsw001: 1 link drained or draining (limit 1 per switch)");
  // A link touching neither switch is fine.
  EXPECT_TRUE(cap.check_drain(l("rtsw0002:eth6")).allowed);
}

TEST_F(DemoBudget, HostsTakeNoPerSwitchBudget) {
  CapacityModel cap(topo, {0, 2});
  // Two NICs of one host to one ToR: the ToR has room for two, the host is not a switch.
  const LinkId nic0 = l("host0001:nic0"), nic1 = l("host0001:nic1"), nic2 = l("host0001:nic2");
  cap.set_drained(nic0, true);
  EXPECT_TRUE(cap.check_drain(nic1).allowed);
  cap.set_drained(nic1, true);
  EXPECT_EQ(cap.budget_used(dev("host0001")), 2);
  const DrainCheck c = cap.check_drain(nic2);
  EXPECT_FALSE(c.allowed);
  EXPECT_EQ(c.reason, "drain budget spent on rtsw0001: 2 links drained or draining (limit 2 per switch)");
}

TEST_F(DemoBudget, FloorIsJudgedBeforeTheBudget) {
  CapacityModel cap(topo, {1, 1});
  cap.set_drained(l("rtsw0003:eth5"), true);
  const DrainCheck c = cap.check_drain(l("rtsw0003:eth6"));
  EXPECT_EQ(c.refusal, Refusal::floor);
  EXPECT_EQ(c.reason, "rtsw0003 uplinks would fall to 50.0% < floor 75.0%");
}

TEST_F(DemoBudget, DownLinksReduceCapacityButTakeNoBudget) {
  CapacityModel cap(topo, {1, 1});
  cap.set_oper_up(l("rtsw0003:eth8"), false);
  EXPECT_EQ(cap.budget_used(), 0);
  const GroupId g = *topo.find_group("rtsw0003 uplinks");
  EXPECT_EQ(cap.links_in_service(g), 3);
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(g), 0.75);
  // Draining the down link itself: the group already runs without it.
  const DrainCheck self = cap.check_drain(l("rtsw0003:eth8"));
  EXPECT_TRUE(self.allowed);
  EXPECT_DOUBLE_EQ(self.impacts[0].after, 0.75);
  // Another uplink would take it to 50%.
  EXPECT_EQ(cap.check_drain(l("rtsw0003:eth5")).reason, "rtsw0003 uplinks would fall to 50.0% < floor 75.0%");
  // A drained link that goes down still holds its place in the budget.
  cap.set_drained(l("rtsw0001:eth5"), true);
  cap.set_oper_up(l("rtsw0001:eth5"), false);
  EXPECT_EQ(cap.budget_used(), 1);
}

TEST_F(DemoBudget, AlreadyDrainedLinkIsAllowedEvenBelowFloorAndOverBudget) {
  CapacityModel cap(topo, {1, 1});
  cap.set_drained(l("rtsw0003:eth5"), true);
  cap.set_oper_up(l("rtsw0003:eth6"), false);
  cap.set_oper_up(l("rtsw0003:eth7"), false);
  const DrainCheck c = cap.check_drain(l("rtsw0003:eth5"));
  EXPECT_TRUE(c.allowed);
  EXPECT_EQ(c.refusal, Refusal::none);
  ASSERT_EQ(c.impacts.size(), 1u);
  EXPECT_DOUBLE_EQ(c.impacts[0].before, 0.25);
  EXPECT_DOUBLE_EQ(c.impacts[0].after, 0.25);
  EXPECT_FALSE(c.impacts[0].breaks_floor);
}

TEST_F(DemoBudget, WhatIfListsEveryProblem) {
  CapacityModel cap(topo, {2, 1});
  cap.set_drained(l("rtsw0005:eth5"), true);  // zone 2: 1 of 2 in the fabric budget
  const std::vector<LinkId> links = {l("rtsw0003:eth5"), l("rtsw0003:eth6"), l("rtsw0001:eth5")};
  const WhatIf w = cap.what_if(links);
  EXPECT_FALSE(w.allowed);
  EXPECT_EQ(w.drained_before, 1);
  EXPECT_EQ(w.drained_after, 4);
  EXPECT_EQ(w.problems, (std::vector<std::string>{
                            "rtsw0003 uplinks would fall to 50.0% < floor 75.0%",
                            "drain budget: 4 links drained or draining fabric-wide > limit 2",
                            "drain budget on rtsw0003: 2 links drained or draining > limit 1 per switch",
                            "drain budget on ctsw001: 2 links drained or draining > limit 1 per switch",
                        }));
  // Every group touched, by id, before and after.
  ASSERT_EQ(w.impacts.size(), 2u);
  EXPECT_EQ(topo.group(w.impacts[0].group).name, "rtsw0001 uplinks");
  EXPECT_DOUBLE_EQ(w.impacts[0].before, 1.0);
  EXPECT_DOUBLE_EQ(w.impacts[0].after, 0.75);
  EXPECT_FALSE(w.impacts[0].breaks_floor);
  EXPECT_EQ(topo.group(w.impacts[1].group).name, "rtsw0003 uplinks");
  EXPECT_DOUBLE_EQ(w.impacts[1].after, 0.5);
  EXPECT_TRUE(w.impacts[1].breaks_floor);
  // Every switch at an end of a changing link, by id, with its count before and after.
  std::vector<std::tuple<std::string, int, int>> sw;
  for (const auto& s : w.switches) sw.emplace_back(topo.device(s.device).name, s.before, s.after);
  EXPECT_EQ(sw, (std::vector<std::tuple<std::string, int, int>>{
                    {"rtsw0001", 0, 1}, {"rtsw0003", 0, 2}, {"ctsw001", 0, 2}, {"ctsw002", 0, 1}}));
  // Nothing changed in the model.
  EXPECT_EQ(cap.budget_used(), 1);
  EXPECT_DOUBLE_EQ(cap.fraction_in_service(*topo.find_group("rtsw0003 uplinks")), 1.0);
}

TEST_F(DemoBudget, WhatIfCountsDuplicatesOnceAndHeldLinksAsNoChange) {
  CapacityModel cap(topo, {2, 2});
  cap.set_drained(l("rtsw0003:eth5"), true);
  const std::vector<LinkId> links = {l("rtsw0003:eth5"), l("rtsw0003:eth6"), l("rtsw0003:eth6--ctsw002:eth3")};
  const WhatIf w = cap.what_if(links);
  // The second uplink breaks the floor; within the budget (2 fabric-wide, 2 on rtsw0003).
  EXPECT_FALSE(w.allowed);
  EXPECT_EQ(w.problems, std::vector<std::string>{"rtsw0003 uplinks would fall to 50.0% < floor 75.0%"});
  EXPECT_EQ(w.drained_before, 1);
  EXPECT_EQ(w.drained_after, 2);
  ASSERT_EQ(w.impacts.size(), 1u);
  EXPECT_DOUBLE_EQ(w.impacts[0].before, 0.75);
  EXPECT_DOUBLE_EQ(w.impacts[0].after, 0.5);
  EXPECT_TRUE(w.impacts[0].breaks_floor);
  ASSERT_EQ(w.switches.size(), 2u);
  EXPECT_EQ(w.switches[0].before + w.switches[1].before, 1);  // rtsw0003 1 -> 2, ctsw002 0 -> 1
}

TEST_F(DemoBudget, WhatIfOfHeldLinksOnlyChangesNothing) {
  CapacityModel cap(topo, {1, 1});
  cap.set_drained(l("rtsw0003:eth5"), true);
  cap.set_reserved(l("rtsw0003:eth6"), true);
  const std::vector<LinkId> links = {l("rtsw0003:eth5"), l("rtsw0003:eth6")};
  const WhatIf w = cap.what_if(links);
  EXPECT_TRUE(w.allowed) << ::testing::PrintToString(w.problems);
  EXPECT_EQ(w.drained_before, 2);
  EXPECT_EQ(w.drained_after, 2);
  EXPECT_TRUE(w.switches.empty());
  ASSERT_EQ(w.impacts.size(), 1u);
  EXPECT_FALSE(w.impacts[0].breaks_floor);
  EXPECT_TRUE(cap.what_if({}).allowed);
  EXPECT_TRUE(cap.what_if({}).impacts.empty());
}

TEST_F(DemoBudget, WhatIfOfOneLinkAgreesWithTheCheck) {
  CapacityModel cap(topo, {3, 1});
  std::mt19937 rng(5);
  for (int step = 0; step < 3000; ++step) {
    const LinkId x = static_cast<LinkId>(rng() % topo.links().size());
    switch (rng() % 4) {
      case 0: cap.set_oper_up(x, !cap.oper_up(x)); break;
      case 1: cap.set_drained(x, !cap.drained(x)); break;
      case 2: cap.set_reserved(x, !cap.reserved(x)); break;
      default: {
        const DrainCheck c = cap.check_drain(x);
        const LinkId one[] = {x};
        const WhatIf w = cap.what_if(one);
        ASSERT_EQ(c.allowed, w.allowed) << topo.link(x).name << " at step " << step;
        ASSERT_EQ(c.impacts.size(), w.impacts.size());
        if (!c.allowed) {
          ASSERT_FALSE(w.problems.empty());
        }
      }
    }
  }
}

// Capacity is counted in whole Mb/s: speeds that are not binary fractions (0.1, 2.5, 25.6)
// add and take away exactly, however many changes.
TEST(CapacityExact, IncrementalSumsEqualARecountExactly) {
  fabric::Topology::Builder b;
  for (const char* n : {"a", "b"}) {
    fabric::Device d;
    d.name = n;
    d.role = fabric::Role::rtsw;
    ASSERT_EQ(b.add_device(d), "");
  }
  const double speeds[] = {0.1, 2.5, 25.6, 0.3, 400, 0.7};
  std::vector<LinkId> all;
  for (size_t i = 0; i < std::size(speeds); ++i) {
    ASSERT_EQ(b.add_link("a", "p" + std::to_string(i), "b", "p" + std::to_string(i), speeds[i]), "");
    all.push_back(static_cast<LinkId>(i));
  }
  ASSERT_EQ(b.add_group("g", "custom", 0.5, all), "");
  const fabric::Topology t = std::move(b).build();
  CapacityModel cap(t);
  EXPECT_EQ(cap.total_mbps(0), 100 + 2500 + 25600 + 300 + 400000 + 700);
  std::mt19937 rng(9);
  for (int i = 0; i < 100000; ++i) cap.set_oper_up(static_cast<LinkId>(rng() % all.size()), rng() % 2);
  int64_t in = 0;
  int n = 0;
  for (const LinkId x : all) {
    if (cap.in_service(x)) {
      in += cap.speed_mbps(x);
      ++n;
    }
  }
  EXPECT_EQ(cap.available_mbps(0), in);
  EXPECT_EQ(cap.links_in_service(0), n);
  for (const LinkId x : all) cap.set_oper_up(x, true);
  EXPECT_EQ(cap.available_mbps(0), cap.total_mbps(0));
  EXPECT_EQ(cap.fraction_in_service(0), 1.0);
}

}  // namespace
}  // namespace medic::remediation
