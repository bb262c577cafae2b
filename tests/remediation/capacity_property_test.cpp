// Property test: thousands of random fault sequences on generated fabrics (links failing,
// flapping, corrupting, bursts of faults against a short budget, drains in flight that
// finish or fail, repairs), with the planner's decisions applied to the capacity model
// after every step. After every step:
//   - every drain the planner chose passes the model's own check when it is applied;
//   - no group that met its floor is below it because of a drain, and a drain never takes
//     capacity from a group already below its floor (failures may; drains may not);
//   - the budget is never exceeded, fabric-wide or on any switch;
//   - nothing the planner left waiting could have gone;
//   - the incremental model equals a recount from scratch of every link's state.
// Seeded (MEDIC_TEST_SEED picks another master seed); a failure names the seed, the
// sequence and the step.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "fabric/generator.h"
#include "remediation/capacity.h"
#include "remediation/capacity_config.h"
#include "remediation/planner.h"

namespace medic::remediation {
namespace {

using fabric::DeviceId;
using fabric::GroupId;
using fabric::LinkId;

uint32_t master_seed() {
  const char* env = std::getenv("MEDIC_TEST_SEED");
  return env ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10)) : 5150u;
}

struct Truth {
  bool up = true;
  bool drained = false;
  bool reserved = false;        // a drain in flight
  std::optional<double> fault;  // an open incident asking for a drain, with its loss
};

struct Stats {
  size_t steps = 0, drains = 0, waits = 0, floor_waits = 0, fabric_waits = 0, switch_waits = 0, repairs = 0,
         below_floor_by_failure = 0, greedy_plans = 0;
};

class Sequence {
 public:
  Sequence(const fabric::Topology& t, uint32_t seed, Stats& stats)
      : t_(t), rng_(seed), stats_(stats), truth_(t.links().size()) {
    for (LinkId l = 0; l < t.links().size(); ++l) {
      if (!t.groups_of(l).empty()) fabric_links_.push_back(l);
    }
    budget_ = {1 + static_cast<int>(rng_() % 10), 1 + static_cast<int>(rng_() % 3)};
    model_.emplace(t_, budget_);
  }

  // Runs `steps` steps; stops at the first broken property (a gtest failure).
  void run(int steps) {
    for (step_ = 0; step_ < steps; ++step_) {
      SCOPED_TRACE("step " + std::to_string(step_));
      event();
      plan_and_apply();
      if (::testing::Test::HasFatalFailure()) return;
      check_recount();
      if (::testing::Test::HasFatalFailure()) return;
      ++stats_.steps;
    }
  }

 private:
  LinkId any_link() {
    // Mostly links in capacity groups; now and then a GPU link.
    return rng_() % 10 == 0 ? static_cast<LinkId>(rng_() % t_.links().size()) : fabric_links_[rng_() % fabric_links_.size()];
  }
  double corruption_loss() { return std::pow(10.0, -6.0 + 5.0 * std::uniform_real_distribution<>(0, 1)(rng_)); }

  void set_up(LinkId l, bool up) {
    truth_[l].up = up;
    model_->set_oper_up(l, up);
  }

  void event() {
    const int kind = static_cast<int>(rng_() % 100);
    if (kind < 15) {  // a link fails; sometimes it was flapping before and wants a drain
      const LinkId l = any_link();
      set_up(l, false);
      if (rng_() % 3 == 0) truth_[l].fault = 1.0;
    } else if (kind < 30) {  // a link flaps a few times and ends up or down
      const LinkId l = any_link();
      for (int i = static_cast<int>(rng_() % 6); i > 0; --i) set_up(l, !truth_[l].up);
      truth_[l].fault = 1.0;
    } else if (kind < 45) {  // corruption
      truth_[any_link()].fault = corruption_loss();
    } else if (kind < 50) {  // budget pressure: a burst of faults at once
      for (int i = 5 + static_cast<int>(rng_() % 25); i > 0; --i) truth_[any_link()].fault = corruption_loss();
    } else if (kind < 62) {  // drains in flight finish, or fail and let their link go
      for (LinkId l = 0; l < truth_.size(); ++l) {
        if (!truth_[l].reserved) continue;
        if (rng_() % 5 != 0) {
          truth_[l].drained = true;
          model_->set_drained(l, true);
        }
        truth_[l].reserved = false;
        model_->set_reserved(l, false);
      }
    } else if (kind < 80) {  // a drained link comes back from repair: undrained, up, healthy
      std::vector<LinkId> drained;
      for (LinkId l = 0; l < truth_.size(); ++l) {
        if (truth_[l].drained) drained.push_back(l);
      }
      if (drained.empty()) return;
      const LinkId l = drained[rng_() % drained.size()];
      truth_[l].drained = false;
      truth_[l].fault.reset();
      model_->set_drained(l, false);
      set_up(l, true);
      ++stats_.repairs;
    } else if (kind < 92) {  // a down link comes back by itself
      std::vector<LinkId> down;
      for (LinkId l = 0; l < truth_.size(); ++l) {
        if (!truth_[l].up && !truth_[l].drained) down.push_back(l);
      }
      if (!down.empty()) set_up(down[rng_() % down.size()], true);
    } else {  // an incident on a link not drained is dismissed
      for (LinkId l = 0; l < truth_.size(); ++l) {
        if (truth_[l].fault && !truth_[l].drained && !truth_[l].reserved && rng_() % 2 == 0) truth_[l].fault.reset();
      }
    }
  }

  void plan_and_apply() {
    std::vector<DrainCandidate> candidates;
    int64_t id = 0;
    for (LinkId l = 0; l < truth_.size(); ++l) {
      ++id;
      if (!truth_[l].fault || truth_[l].drained || truth_[l].reserved) continue;
      candidates.push_back({id, l, *truth_[l].fault});
      // Now and then a second incident on the same link.
      if (rng_() % 8 == 0) candidates.push_back({id + 100000, l, *truth_[l].fault / 2});
    }
    PlannerOptions options;
    options.node_limit = 20000;
    const DrainPlan plan = plan_drains(*model_, candidates, options);
    if (!plan.exact) ++stats_.greedy_plans;

    std::vector<double> before(t_.groups().size());
    for (GroupId g = 0; g < before.size(); ++g) before[g] = model_->fraction_in_service(g);
    for (const auto& d : plan.drain) {
      const DrainCheck c = model_->check_drain(d.link);
      ASSERT_TRUE(c.allowed) << "the planner chose " << t_.link(d.link).name << ": " << c.reason;
      truth_[d.link].reserved = true;
      model_->set_reserved(d.link, true);
      // Some drains finish at once.
      if (rng_() % 2 == 0) {
        truth_[d.link].drained = true;
        truth_[d.link].reserved = false;
        model_->set_drained(d.link, true);
        model_->set_reserved(d.link, false);
      }
      ++stats_.drains;
    }
    for (GroupId g = 0; g < before.size(); ++g) {
      const auto& grp = t_.group(g);
      const double after = model_->fraction_in_service(g);
      if (!below_floor(before[g], grp.floor)) {
        ASSERT_FALSE(below_floor(after, grp.floor)) << grp.name << " went below its floor by a drain";
      } else {
        ASSERT_EQ(after, before[g]) << grp.name << " was below its floor and a drain took more";
        ++stats_.below_floor_by_failure;
      }
    }
    ASSERT_LE(model_->budget_used(), budget_.fabric);
    for (DeviceId d = 0; d < t_.devices().size(); ++d) {
      if (t_.device(d).is_switch()) {
        ASSERT_LE(model_->budget_used(d), budget_.per_switch) << t_.device(d).name;
      }
    }
    for (const auto& w : plan.wait) {
      const DrainCheck c = model_->check_drain(w.candidate.link);
      ASSERT_FALSE(c.allowed) << t_.link(w.candidate.link).name << " waits but could go";
      ASSERT_EQ(c.refusal, w.refusal) << t_.link(w.candidate.link).name;
      ASSERT_EQ(c.reason, w.reason);
      ++stats_.waits;
      if (w.refusal == Refusal::floor) ++stats_.floor_waits;
      if (w.refusal == Refusal::budget_fabric) ++stats_.fabric_waits;
      if (w.refusal == Refusal::budget_switch) ++stats_.switch_waits;
    }
  }

  // Every figure of the model recounted from the links' states.
  void check_recount() {
    for (GroupId g = 0; g < t_.groups().size(); ++g) {
      int64_t mbps = 0;
      int n = 0;
      for (const LinkId l : t_.group(g).links) {
        const Truth& s = truth_[l];
        if (s.up && !s.drained && !s.reserved) {
          mbps += std::llround(t_.link(l).speed_gbps * 1000);
          ++n;
        }
      }
      ASSERT_EQ(model_->available_mbps(g), mbps) << t_.group(g).name;
      ASSERT_EQ(model_->links_in_service(g), n) << t_.group(g).name;
    }
    int fabric = 0;
    std::vector<int> per(t_.devices().size(), 0);
    for (LinkId l = 0; l < truth_.size(); ++l) {
      const Truth& s = truth_[l];
      ASSERT_EQ(model_->oper_up(l), s.up);
      ASSERT_EQ(model_->drained(l), s.drained);
      ASSERT_EQ(model_->reserved(l), s.reserved);
      if (!s.drained && !s.reserved) continue;
      ++fabric;
      ++per[t_.port(t_.link(l).a).device];
      ++per[t_.port(t_.link(l).b).device];
    }
    ASSERT_EQ(model_->budget_used(), fabric);
    for (DeviceId d = 0; d < per.size(); ++d) ASSERT_EQ(model_->budget_used(d), per[d]) << t_.device(d).name;
  }

  const fabric::Topology& t_;
  std::mt19937 rng_;
  Stats& stats_;
  std::vector<Truth> truth_;
  std::vector<LinkId> fabric_links_;
  DrainBudget budget_;
  std::optional<CapacityModel> model_;
  int step_ = 0;
};

void run_sequences(const fabric::Topology& topo, int sequences, int steps, Stats& stats) {
  const uint32_t master = master_seed();
  for (int i = 0; i < sequences; ++i) {
    const uint32_t seed = master + static_cast<uint32_t>(i);
    SCOPED_TRACE("seed " + std::to_string(seed) + " (MEDIC_TEST_SEED=" + std::to_string(master) + ", sequence " +
                 std::to_string(i) + ")");
    Sequence s(topo, seed, stats);
    s.run(steps);
    if (::testing::Test::HasFailure()) return;
  }
}

// The demo fabric with every derived group.
TEST(CapacityProperty, DemoFabric) {
  const fabric::Topology topo = with_derived_groups(fabric::generate_clos(*fabric::preset("demo")), CapacityConfig{});
  Stats stats;
  run_sequences(topo, 2000, 40, stats);
  EXPECT_EQ(stats.steps, 2000u * 40u);
  // The sequences reach every kind of refusal, repairs and greedy plans.
  EXPECT_GT(stats.drains, 1000u);
  EXPECT_GT(stats.floor_waits, 100u);
  EXPECT_GT(stats.fabric_waits, 100u);
  EXPECT_GT(stats.switch_waits, 100u);
  EXPECT_GT(stats.repairs, 1000u);
  EXPECT_GT(stats.below_floor_by_failure, 100u);
  EXPECT_GT(stats.greedy_plans, 10u);
}

// A mid-size generated fabric: 2 zones of 16 ToRs and 8 spines, 2 aggregation switches per
// plane, 4 uplinks per spine.
TEST(CapacityProperty, MidSizeFabric) {
  fabric::ClosShape s;
  s.zones = 2;
  s.rtsw_per_zone = 16;
  s.ctsw_per_zone = 8;
  s.gpus_per_rtsw = 4;
  s.gpus_per_host = 4;
  s.atsw_per_plane = 2;
  s.ctsw_uplinks = 4;
  const fabric::Topology topo = with_derived_groups(fabric::generate_clos(s), CapacityConfig{});
  Stats stats;
  run_sequences(topo, 500, 60, stats);
  EXPECT_EQ(stats.steps, 500u * 60u);
  EXPECT_GT(stats.drains, 1000u);
  EXPECT_GT(stats.waits, 100u);
}

}  // namespace
}  // namespace medic::remediation
