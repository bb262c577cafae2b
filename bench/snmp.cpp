// bench_snmp: fabric-medic's SNMP collector polling real agents, as medicd would: every
// agent walked at once (up to --concurrency), each answer mapped onto canonical counters
// the moment it is complete. Prints each poll's wall time and the CPU seconds per million
// samples after the first (warm-up) poll. bench/snmp runs it beside prometheus-snmp-exporter
// and Prometheus on the same agents.
//
//   bench_snmp --agents FILE --credentials FILE [--ports N] [--polls N] [--interval S]
//              [--concurrency N] [--timeout S]
//
// FILE lists one agent a line, "NAME snmp://HOST:PORT"; each is taken to be a switch whose
// ports are the agent's interfaces named d0 .. d(N-1) (--ports, default 64).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/measure.h"
#include "common/files.h"
#include "fabric/topology.h"
#include "telemetry/mapping.h"
#include "telemetry/snmp_collector.h"

using namespace medic;

int main(int argc, char** argv) {
  std::string agents_file, credentials_file;
  int ports = 64, polls = 10, concurrency = 256;
  double interval_s = 1.0, timeout_s = 2.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--agents") agents_file = v;
    else if (k == "--credentials") credentials_file = v;
    else if (k == "--ports") ports = std::stoi(v);
    else if (k == "--polls") polls = std::stoi(v);
    else if (k == "--interval") interval_s = std::stod(v);
    else if (k == "--concurrency") concurrency = std::stoi(v);
    else if (k == "--timeout") timeout_s = std::stod(v);
    else {
      std::fprintf(stderr, "bench_snmp: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (agents_file.empty() || credentials_file.empty() || polls < 2 || ports < 1) {
    std::fprintf(stderr, "usage: bench_snmp --agents FILE --credentials FILE [--ports N] [--polls N>=2] [--interval S]\n");
    return 2;
  }
  auto creds = telemetry::SnmpCredentials::load_file(credentials_file);
  if (!creds) {
    std::fprintf(stderr, "bench_snmp: %s\n", creds.error().c_str());
    return 2;
  }
  fabric::Topology::Builder b;
  std::vector<telemetry::ScrapeTarget> targets;
  {
    std::ifstream in(agents_file);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string name, url;
      if (!(ls >> name >> url)) continue;
      fabric::Device d;
      d.name = name;
      d.role = fabric::Role::rtsw;
      d.telemetry_url = url;
      if (auto e = b.add_device(d); !e.empty()) {
        std::fprintf(stderr, "bench_snmp: %s\n", e.c_str());
        return 2;
      }
      for (int p = 0; p < ports; ++p) b.add_port(name, "d" + std::to_string(p));
      targets.push_back({static_cast<fabric::DeviceId>(targets.size()), url});
    }
  }
  if (targets.empty()) {
    std::fprintf(stderr, "bench_snmp: no agent in %s\n", agents_file.c_str());
    return 2;
  }
  const fabric::Topology topo = std::move(b).build();
  const telemetry::CounterMap map = telemetry::CounterMap::load_file(data_dir() + "/counter_map.json");
  telemetry::ScrapeMapper mapper(topo, map);
  telemetry::SnmpOptions opt;
  opt.timeout_s = timeout_s;
  opt.max_in_flight = static_cast<size_t>(concurrency);
  telemetry::SnmpCollector collector(*creds, opt);
  SystemClock clock;

  std::vector<double> walls;
  size_t samples = 0, ports_mapped = 0, failed = 0;
  double cpu0 = 0;
  std::vector<telemetry::PortSample> out;
  auto next = bench::Steady::now();
  for (int poll = 0; poll < polls; ++poll) {
    std::this_thread::sleep_until(next);
    next += std::chrono::duration_cast<bench::Steady::duration>(std::chrono::duration<double>(interval_s));
    if (poll == 1) cpu0 = bench::process_cpu_s();
    const auto t0 = bench::Steady::now();
    size_t poll_samples = 0, poll_ports = 0;
    const auto results = collector.scrape(targets, clock, [&](telemetry::ScrapeResult& r) {
      if (!r.ok) return;
      out.clear();
      telemetry::MapStats st;
      if (mapper.map_snmp(r.device, r.body, r.time, out, &st).ok()) {
        poll_samples += st.samples;
        poll_ports += out.size();
      }
    });
    const double wall = bench::since(t0);
    size_t poll_failed = 0;
    for (const auto& r : results) poll_failed += r.ok ? 0 : 1;
    std::printf("poll %d: %zu agents, %zu failed, %zu values, %zu ports mapped, %.3f s\n", poll + 1, results.size(),
                poll_failed, poll_samples, poll_ports, wall);
    if (poll_failed > 0) {
      for (const auto& r : results) {
        if (!r.ok) {
          std::printf("  first failure: %s: %s\n", topo.device(r.device).name.c_str(), r.error.c_str());
          break;
        }
      }
    }
    if (poll >= 1) {
      walls.push_back(wall);
      samples += poll_samples;
      ports_mapped += poll_ports;
      failed += poll_failed;
    }
  }
  const double cpu = bench::process_cpu_s() - cpu0;
  std::sort(walls.begin(), walls.end());
  std::printf("medic SNMP collector: %zu agents x %d interfaces, %zu measured polls every %.1f s: wall per poll p50 %.3f s, "
              "max %.3f s; %zu values (%zu failed walks); %.4f CPU s = %.3f CPU s per M samples; %zu requests in all\n",
              targets.size(), ports, walls.size(), interval_s, walls[walls.size() / 2], walls.back(), samples, failed, cpu,
              samples > 0 ? cpu / (static_cast<double>(samples) / 1e6) : 0.0, collector.counters().requests);
  return 0;
}
