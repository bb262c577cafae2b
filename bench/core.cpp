// bench/core: the walking skeleton's core at zone32k scale on one core: loading the
// topology, the safe-capacity drain check and the flap detector.
//   build/bench/bench_core [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>
#include <random>

#include "detectors/flap.h"
#include "fabric/generator.h"
#include "fabric/loader.h"
#include "remediation/capacity.h"

using namespace medic;

namespace {

const fabric::Topology& zone32k() {
  static const fabric::Topology t = fabric::generate_clos(*fabric::preset("zone32k"));
  return t;
}

void BM_GenerateZone32k(benchmark::State& state) {
  for (auto _ : state) {
    auto t = fabric::generate_clos(*fabric::preset("zone32k"));
    benchmark::DoNotOptimize(t.links().size());
  }
  state.counters["links"] = static_cast<double>(zone32k().links().size());
}
BENCHMARK(BM_GenerateZone32k)->Unit(benchmark::kMillisecond);

void BM_ParseZone32kFile(benchmark::State& state) {
  const std::string text = fabric::topology_to_json(zone32k()).dump();
  for (auto _ : state) {
    auto t = fabric::parse_topology(text, "zone32k.json");
    benchmark::DoNotOptimize(t.links().size());
  }
  state.counters["bytes"] = static_cast<double>(text.size());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_ParseZone32kFile)->Unit(benchmark::kMillisecond);

// A drain check on a random ToR uplink with some of the fabric already down or drained.
void BM_DrainCheckZone32k(benchmark::State& state) {
  const auto& t = zone32k();
  remediation::CapacityModel cap(t);
  std::mt19937 rng(7);
  std::vector<fabric::LinkId> uplinks;
  for (const auto& g : t.groups()) uplinks.insert(uplinks.end(), g.links.begin(), g.links.end());
  for (int i = 0; i < 2000; ++i) cap.set_oper_up(uplinks[rng() % uplinks.size()], false);
  for (int i = 0; i < 500; ++i) cap.set_drained(uplinks[rng() % uplinks.size()], true);
  size_t i = 0, allowed = 0;
  for (auto _ : state) {
    const auto c = cap.check_drain(uplinks[(i++ * 7919) % uplinks.size()]);
    allowed += c.allowed;
    benchmark::DoNotOptimize(c);
  }
  state.counters["checks_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["allowed_share"] = static_cast<double>(allowed) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_DrainCheckZone32k);

// One poll of every port of zone32k through the flap detector.
void BM_FlapDetectorZone32k(benchmark::State& state) {
  const auto& t = zone32k();
  detectors::FlapDetector flap(t, {});
  std::vector<detectors::Finding> out;
  Time now = from_unix_seconds(1.8e9);
  for (auto _ : state) {
    now += std::chrono::seconds(1);
    for (fabric::PortId p = 0; p < t.ports().size(); ++p) {
      telemetry::PortDelta d;
      d.port = p;
      d.time = now;
      d.present = telemetry::bit(telemetry::Counter::carrier_changes) | telemetry::bit(telemetry::Counter::oper_up);
      d.v[static_cast<size_t>(telemetry::Counter::oper_up)] = 1;
      d.v[static_cast<size_t>(telemetry::Counter::carrier_changes)] = (p % 997 == 0) ? 2 : 0;
      flap.observe(d, out);
    }
    out.clear();
  }
  state.counters["ports_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * t.ports().size()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FlapDetectorZone32k)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
