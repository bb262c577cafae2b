// bench/ingest: parsing, mapping and the detectors (the whole poll pipeline, triage
// included) over a generated scrape set of the zone32k fabric, on one core, or with
// --map-workers N mapping the answers on N threads as medicd does (all cores then).
//
//   build/bench/bench_ingest [--polls N] [--format prometheus|openconfig] [--map-workers N] [--interval S]
//
// The scrape set is rendered by fabsim's model (every switch and every host, as their
// exporters answer) before timing starts; the timed part is exactly what medicd does with
// the answers of one poll. Prints samples per second (one sample = one metric line or one
// OpenConfig leaf) and CPU time per million samples. --interval S spaces the polls S
// seconds apart on the scrapes' clock (default 10; medicd polls every second by default,
// and then the detectors' windows hold ten times as many intervals).
#include <sched.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/measure.h"
#include "common/files.h"
#include "detectors/config.h"
#include "fabric/generator.h"
#include "common/files.h"
#include "pipeline/pipeline.h"
#include "sim/fabric_sim.h"
#include "telemetry/mapping.h"

using namespace medic;

using namespace medic::bench;

int main(int argc, char** argv) {
  int polls = 4;
  int workers = 0;
  double interval = 10;  // seconds between polls, on the scrapes' clock
  std::string format = "prometheus";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--polls") && i + 1 < argc) {
      polls = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--format") && i + 1 < argc) {
      format = argv[++i];
    } else if (!std::strcmp(argv[i], "--map-workers") && i + 1 < argc) {
      workers = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--interval") && i + 1 < argc) {
      interval = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: bench_ingest [--polls N] [--format prometheus|openconfig] [--map-workers N] [--interval S]\n");
      return 2;
    }
  }
  if (polls < 2 || (format != "prometheus" && format != "openconfig") || workers < 0 || workers > 64 ||
      !(interval >= 0.05 && interval <= 3600)) {
    std::fprintf(stderr,
                 "bench_ingest: --polls must be at least 2, --format prometheus or openconfig, --map-workers 0 to 64, "
                 "--interval 0.05 to 3600 seconds\n");
    return 2;
  }
  if (workers == 0) {
    // One core, as the target is stated.
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    sched_setaffinity(0, sizeof one, &one);
  }

  auto shape = *fabric::preset("zone32k");
  shape.telemetry_format = format;
  const fabric::Topology topo = fabric::generate_clos(shape);
  const auto map = telemetry::CounterMap::load_file(data_dir() + "/counter_map.json");
  const auto dconf = detectors::DetectorConfig::load_file(data_dir() + "/detectors.json");
  sim::FabricSim fabsim(topo, 7);
  pipeline::Pipeline pipeline(topo, map, dconf, {}, static_cast<size_t>(workers));

  std::printf("bench_ingest: zone32k, %zu switches + hosts answering, %zu ports, switches in %s\n",
              topo.devices().size(), topo.ports().size(), format.c_str());
  double total_samples = 0, total_cpu = 0, total_wall = 0, total_bytes = 0;
  size_t findings = 0;
  for (int p = 0; p < polls; ++p) {
    const double t = interval * (p + 1);
    std::vector<std::string> bodies(topo.devices().size());
    std::vector<pipeline::DeviceAnswer> answers;
    for (fabric::DeviceId d = 0; d < topo.devices().size(); ++d) {
      const auto& dev = topo.device(d);
      pipeline::DeviceAnswer a;
      a.device = d;
      a.time = from_unix_seconds(1.8e9 + t);
      a.answered = true;
      if (!dev.is_switch()) {
        bodies[d] = fabsim.render_host(d, t);
      } else if (format == "openconfig") {
        bodies[d] = fabsim.render_openconfig(d, t);
        a.format = telemetry::PayloadFormat::openconfig;
      } else {
        bodies[d] = fabsim.render_prometheus(d, t);
      }
      a.body = bodies[d];
      total_bytes += p > 0 ? bodies[d].size() : 0;
      answers.push_back(a);
    }
    const double c0 = process_cpu_s();
    const auto w0 = std::chrono::steady_clock::now();
    if (workers > 0) {
      // As medicd: each answer's bytes handed to the map workers, the poll judging them.
      for (auto& a : answers) {
        pipeline.map_ahead(a, std::move(bodies[a.device]));
        a.body = {};
      }
    }
    auto out = pipeline.poll(answers, from_unix_seconds(1.8e9 + t));
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    const double cpu = process_cpu_s() - c0;
    std::printf("  poll %d: %zu samples (%zu mapped), %zu port samples, %zu findings in %.3f s wall, %.3f s CPU\n", p + 1,
                out.stats.samples, out.stats.mapped, out.samples, out.findings.size(), wall, cpu);
    if (p == 0) continue;  // the first poll only sets the baselines (no deltas)
    total_samples += static_cast<double>(out.stats.samples);
    total_cpu += cpu;
    total_wall += wall;
    findings += out.findings.size();
  }
  const std::string on = workers == 0 ? "on one core" : "with " + std::to_string(workers) + (workers == 1 ? " map worker" : " map workers");
  std::printf("bench_ingest: %.2f M samples/s %s (%.3f CPU s per million samples, %.0f MB/s of payload, %.3f s a poll); "
              "target >= 3 M samples/s; %zu findings on a healthy fabric\n",
              total_samples / total_wall / 1e6, on.c_str(), total_cpu / (total_samples / 1e6), total_bytes / total_wall / 1e6,
              total_wall / (polls - 1), findings);
  return 0;
}
