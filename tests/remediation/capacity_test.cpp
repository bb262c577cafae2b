#include "remediation/capacity.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
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

}  // namespace
}  // namespace medic::remediation
