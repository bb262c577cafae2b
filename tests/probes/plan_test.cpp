#include "probes/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "fabric/generator.h"
#include "tests/probes/demo_fabric.h"

namespace medic::probes {
namespace {

using testing::demo;
using testing::link;

using fabric::LinkId;
using fabric::Topology;

std::vector<uint32_t> coverage(const Topology& t, const EcmpModel& m, const ProbePlan& plan) {
  std::vector<uint32_t> cover(t.links().size(), 0);
  for (const Flow& f : plan.flows) {
    for (LinkId l : m.path_of(f)) ++cover[l];
  }
  return cover;
}

bool same_flows(const ProbePlan& a, const ProbePlan& b) {
  return a.flows.size() == b.flows.size() &&
         std::equal(a.flows.begin(), a.flows.end(), b.flows.begin(), [](const Flow& x, const Flow& y) {
           return x.src == y.src && x.dst == y.dst && x.sport == y.sport && x.dport == y.dport;
         });
}

TEST(Plan, DemoCoversEveryLinkAtLeastMinCover) {
  const Topology& t = demo();
  EcmpModel m(t, 1);
  PlanConfig c;
  const ProbePlan plan = make_plan(t, m, c);
  ASSERT_EQ(plan.pinned.size(), t.links().size());  // every link, each once
  EXPECT_EQ(std::set<LinkId>(plan.pinned.begin(), plan.pinned.end()).size(), t.links().size());
  const size_t nics = 2 * 4 * 4;
  EXPECT_GE(plan.flows.size(), nics * c.flows_per_nic);
  const auto cover = coverage(t, m, plan);
  for (LinkId l = 0; l < t.links().size(); ++l) {
    EXPECT_GE(cover[l], static_cast<uint32_t>(c.min_cover)) << t.link(l).name;
  }
}

TEST(Plan, FlowsGoFromHostNicsToNicsOnOtherTorsInBothZones) {
  const Topology& t = demo();
  EcmpModel m(t, 1);
  PlanConfig c;
  c.min_cover = 0;  // the sweep alone
  const ProbePlan plan = make_plan(t, m, c);
  EXPECT_EQ(plan.flows.size(), 32u * c.flows_per_nic);
  int same_zone = 0, other_zone = 0;
  std::vector<int> sent(t.ports().size(), 0), received(t.ports().size(), 0);
  for (const Flow& f : plan.flows) {
    const auto& src = t.device(t.port(f.src).device);
    const auto& dst = t.device(t.port(f.dst).device);
    ASSERT_FALSE(src.is_switch());
    ASSERT_FALSE(dst.is_switch());
    EXPECT_NE(t.port(t.peer(f.src)).device, t.port(t.peer(f.dst)).device) << "same ToR";
    EXPECT_GE(f.sport, c.sport_base);
    EXPECT_LT(f.sport, c.sport_base + c.sport_count);
    EXPECT_EQ(f.dport, 862);
    (src.zone == dst.zone ? same_zone : other_zone)++;
    ++sent[f.src];
    ++received[f.dst];
  }
  EXPECT_EQ(same_zone, 64);
  EXPECT_EQ(other_zone, 64);
  for (uint32_t p = 0; p < t.ports().size(); ++p) {
    if (t.device(t.port(p).device).is_switch()) continue;
    EXPECT_EQ(sent[p], c.flows_per_nic);
    EXPECT_GE(received[p], 1) << t.endpoint_name(p);
  }
}

TEST(Plan, DeterministicForASeed) {
  const Topology& t = demo();
  EcmpModel m(t, 1);
  PlanConfig c;
  const ProbePlan a = make_plan(t, m, c), b = make_plan(t, m, c);
  EXPECT_TRUE(same_flows(a, b));
  EXPECT_EQ(a.pinned, b.pinned);
  c.seed = 2;
  EXPECT_FALSE(same_flows(a, make_plan(t, m, c)));
}

TEST(Plan, TopsUpToAHigherCover) {
  const Topology& t = demo();
  EcmpModel m(t, 1);
  PlanConfig c;
  c.flows_per_nic = 1;
  c.min_cover = 6;
  const ProbePlan plan = make_plan(t, m, c);
  EXPECT_GT(plan.flows.size(), 32u);
  const auto cover = coverage(t, m, plan);
  for (LinkId l = 0; l < t.links().size(); ++l) EXPECT_GE(cover[l], 6u) << t.link(l).name;
}

TEST(Plan, Zone32kCoversEveryLink) {
  const Topology t = fabric::generate_clos(*fabric::preset("zone32k"));
  EcmpModel m(t, 1);
  const ProbePlan plan = make_plan(t, m);
  EXPECT_EQ(plan.pinned.size(), t.links().size());
  EXPECT_GE(plan.flows.size(), 32256u * 4);
  EXPECT_LT(plan.flows.size(), 32256u * 4 + 20000);  // the top-up is a small share
  const auto cover = coverage(t, m, plan);
  EXPECT_GE(*std::min_element(cover.begin(), cover.end()), 3u);
}

}  // namespace
}  // namespace medic::probes
