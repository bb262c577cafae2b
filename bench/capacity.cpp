// bench/capacity: the capacity model and the drain planner at zone32k scale, on one core.
// zone32k with every derived group (ToR uplinks, spine downlinks and uplinks, planes, floors
// and budget of data/capacity.json) in a realistic state: 0.5% of the switch-to-switch links
// down, 40 drained and 4 drains in flight.
//   build/bench/bench_capacity [--benchmark_filter=...]
// Pinned to CPU 0 by the program.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sched.h>

#include <array>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fabric/generator.h"
#include "remediation/capacity.h"
#include "remediation/capacity_config.h"
#include "remediation/planner.h"

using namespace medic;
using fabric::LinkId;

namespace {

const remediation::CapacityConfig& config() {
  static const remediation::CapacityConfig c;  // the defaults: what data/capacity.json says
  return c;
}

const fabric::Topology& zone32k() {
  static const fabric::Topology t =
      remediation::with_derived_groups(fabric::generate_clos(*fabric::preset("zone32k")), config());
  return t;
}

// Links in at least one capacity group: every switch-to-switch link.
const std::vector<LinkId>& fabric_links() {
  static const std::vector<LinkId> v = [] {
    std::vector<LinkId> out;
    for (LinkId l = 0; l < zone32k().links().size(); ++l) {
      if (!zone32k().groups_of(l).empty()) out.push_back(l);
    }
    return out;
  }();
  return v;
}

// The realistic state: some links down, some drained, some drains in flight.
void degrade(remediation::CapacityModel& m, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto& links = fabric_links();
  for (size_t i = 0; i < links.size() / 200; ++i) m.set_oper_up(links[rng() % links.size()], false);
  int drained = 0, reserved = 0;
  while (drained < 40 || reserved < 4) {
    const LinkId l = links[rng() % links.size()];
    if (!m.check_drain(l).allowed) continue;
    if (drained < 40) {
      m.set_drained(l, true);
      ++drained;
    } else {
      m.set_reserved(l, true);
      ++reserved;
    }
  }
}

std::unique_ptr<remediation::CapacityModel> degraded_model() {
  auto m = std::make_unique<remediation::CapacityModel>(zone32k(), config().budget());
  degrade(*m, 7);
  return m;
}

void BM_DeriveGroupsZone32k(benchmark::State& state) {
  const fabric::Topology base = fabric::generate_clos(*fabric::preset("zone32k"));
  for (auto _ : state) {
    auto t = remediation::with_derived_groups(base, config());
    benchmark::DoNotOptimize(t.groups().size());
  }
  state.counters["groups"] = static_cast<double>(zone32k().groups().size());
}
BENCHMARK(BM_DeriveGroupsZone32k)->Unit(benchmark::kMillisecond);

void BM_ModelConstruction(benchmark::State& state) {
  const auto& t = zone32k();
  const size_t heap_before = mallinfo2().uordblks;
  size_t model_bytes = 0;
  {
    remediation::CapacityModel probe(t, config().budget());
    model_bytes = mallinfo2().uordblks - heap_before;
    benchmark::DoNotOptimize(probe.budget_used());
  }
  for (auto _ : state) {
    remediation::CapacityModel m(t, config().budget());
    benchmark::DoNotOptimize(m.available_mbps(0));
  }
  state.counters["model_bytes"] = static_cast<double>(model_bytes);
  state.counters["links"] = static_cast<double>(t.links().size());
  state.counters["groups"] = static_cast<double>(t.groups().size());
}
BENCHMARK(BM_ModelConstruction)->Unit(benchmark::kMicrosecond);

// check_drain on random switch-to-switch links (the links in groups: one to three groups
// each), random order precomputed so the generator is not timed.
void BM_CheckDrain(benchmark::State& state) {
  const auto m = degraded_model();
  const auto& links = fabric_links();
  std::mt19937 rng(11);
  std::vector<LinkId> order(1 << 20);
  for (auto& l : order) l = links[rng() % links.size()];
  size_t i = 0, allowed = 0;
  for (auto _ : state) {
    const auto c = m->check_drain(order[i++ & (order.size() - 1)]);
    allowed += c.allowed;
    benchmark::DoNotOptimize(c);
  }
  state.counters["checks_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["allowed_share"] = static_cast<double>(allowed) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_CheckDrain);

// what_if of 8 random switch-to-switch links at once.
void BM_WhatIf8(benchmark::State& state) {
  const auto m = degraded_model();
  const auto& links = fabric_links();
  std::mt19937 rng(13);
  std::vector<std::array<LinkId, 8>> sets(4096);
  for (auto& s : sets) {
    for (auto& l : s) l = links[rng() % links.size()];
  }
  size_t i = 0, allowed = 0;
  for (auto _ : state) {
    const auto w = m->what_if(sets[i++ % sets.size()]);
    allowed += w.allowed;
    benchmark::DoNotOptimize(w);
  }
  state.counters["allowed_share"] = static_cast<double>(allowed) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_WhatIf8)->Unit(benchmark::kMicrosecond);

// 24 candidates contesting the per-switch budget (2): 8 ToRs with 3 faulty uplinks each,
// all to the same 3 spines, random losses. The exact search.
void BM_PlanExact24(benchmark::State& state) {
  const auto m = degraded_model();
  const auto& t = zone32k();
  std::mt19937 rng(17);
  std::vector<remediation::DrainCandidate> c;
  // ToRs 100..107 of zone 1, uplinks 1..3 (to ctsw001..003); skipping links already out.
  for (int tor = 100; c.size() < 24; ++tor) {
    char name[32];
    std::snprintf(name, sizeof name, "rtsw%04d", tor + 1);
    for (int up = 0; up < 3 && c.size() < 24; ++up) {
      const auto l = t.find_link(std::string(name) + ":eth" + std::to_string(17 + up));
      if (!l || !m->in_service(*l)) continue;
      c.push_back({static_cast<int64_t>(c.size() + 1), *l, std::uniform_real_distribution<>(1e-5, 1e-1)(rng)});
    }
  }
  remediation::DrainPlan plan;
  for (auto _ : state) {
    plan = remediation::plan_drains(*m, c);
    benchmark::DoNotOptimize(plan.loss_removed);
  }
  remediation::PlannerOptions greedy;
  greedy.exact_limit = 0;
  const auto g = remediation::plan_drains(*m, c, greedy);
  state.counters["candidates"] = static_cast<double>(c.size());
  state.counters["exact"] = plan.exact ? 1 : 0;
  state.counters["nodes"] = static_cast<double>(plan.nodes);
  state.counters["drained"] = static_cast<double>(plan.drain.size());
  state.counters["loss_vs_greedy"] = g.loss_removed > 0 ? plan.loss_removed / g.loss_removed : 1.0;
}
BENCHMARK(BM_PlanExact24)->Unit(benchmark::kMillisecond);

// 2,000 candidates anywhere in the fabric: greedy by loss.
void BM_PlanGreedy2000(benchmark::State& state) {
  const auto m = degraded_model();
  const auto& links = fabric_links();
  std::mt19937 rng(19);
  std::vector<remediation::DrainCandidate> c;
  for (int i = 0; i < 2000; ++i) {
    c.push_back({i + 1, links[rng() % links.size()], std::uniform_real_distribution<>(1e-6, 1.0)(rng)});
  }
  remediation::DrainPlan plan;
  for (auto _ : state) {
    plan = remediation::plan_drains(*m, c);
    benchmark::DoNotOptimize(plan.loss_removed);
  }
  state.counters["drained"] = static_cast<double>(plan.drain.size());
  state.counters["waiting"] = static_cast<double>(plan.wait.size());
}
BENCHMARK(BM_PlanGreedy2000)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  sched_setaffinity(0, sizeof one, &one);
  const auto m = degraded_model();
  int down = 0;
  for (LinkId l = 0; l < zone32k().links().size(); ++l) down += m->oper_up(l) ? 0 : 1;
  std::printf("zone32k: %zu links (%zu in capacity groups), %zu groups; state: %d links down, %d drained or draining "
              "(budget %d fabric-wide, %d per switch)\n",
              zone32k().links().size(), fabric_links().size(), zone32k().groups().size(), down, m->budget_used(),
              config().budget_fabric, config().budget_per_switch);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
