#include "cli/record.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <thread>

#include "fabric/loader.h"
#include "telemetry/collector.h"
#include "telemetry/mapping.h"

namespace medic::cli {

namespace fs = std::filesystem;

int record(const RecordOptions& o, std::ostream& out, std::ostream& err) {
  fabric::Topology topo;
  try {
    topo = fabric::load_topology_file(o.topology_path);
  } catch (const fabric::TopologyError& e) {
    for (const auto& p : e.problems()) err << p << '\n';
    return 2;
  }
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) {
    err << "medic: " << o.out_dir << ": " << ec.message() << '\n';
    return 1;
  }
  std::vector<telemetry::ScrapeTarget> targets;
  for (fabric::DeviceId d = 0; d < topo.devices().size(); ++d) {
    if (!topo.device(d).telemetry_url.empty()) targets.push_back({d, topo.device(d).telemetry_url});
  }
  telemetry::CollectorOptions copt;
  copt.timeout_s = o.timeout_s;
  telemetry::Collector collector(copt);
  SystemClock clock;
  size_t answered = 0, failed = 0;
  auto next = std::chrono::steady_clock::now();
  for (int i = 0; i < o.polls; ++i) {
    std::this_thread::sleep_until(next);
    next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(o.interval_s));
    const Time when = clock.now();
    char name[64];
    std::snprintf(name, sizeof name, "%.3f", to_unix_seconds(when));
    const fs::path dir = fs::path(o.out_dir) / name;
    fs::create_directories(dir, ec);
    for (const auto& r : collector.scrape(targets, clock)) {
      if (!r.ok) {
        ++failed;
        continue;  // a missing file is how a silent device is recorded
      }
      ++answered;
      const bool oc = telemetry::detect_format(r.content_type, r.body) == telemetry::PayloadFormat::openconfig;
      std::ofstream f(dir / (topo.device(r.device).name + (oc ? ".json" : ".prom")), std::ios::binary);
      f << r.body;
      if (!f) {
        err << "medic: cannot write " << (dir / topo.device(r.device).name).string() << '\n';
        return 1;
      }
    }
  }
  out << "recorded " << o.polls << " polls of " << targets.size() << " devices into " << o.out_dir << " (" << answered
      << " answers, " << failed << " failures)\n";
  return 0;
}

}  // namespace medic::cli
