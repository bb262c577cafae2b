#include "cli/record.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>
#include <thread>

#include "fabric/loader.h"
#include "common/url.h"
#include "telemetry/collector.h"
#include "telemetry/snmp_collector.h"
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
  std::vector<telemetry::ScrapeTarget> targets, snmp_targets;
  for (fabric::DeviceId d = 0; d < topo.devices().size(); ++d) {
    const std::string& url = topo.device(d).telemetry_url;
    if (url.empty()) continue;
    (is_snmp_url(url) ? snmp_targets : targets).push_back({d, url});
  }
  telemetry::CollectorOptions copt;
  copt.timeout_s = o.timeout_s;
  telemetry::Collector collector(copt);
  std::unique_ptr<telemetry::SnmpCollector> snmp;
  if (!snmp_targets.empty()) {
    auto creds = o.snmp_credentials_path.empty() ? telemetry::SnmpCredentials::from_env()
                                                 : telemetry::SnmpCredentials::load_file(o.snmp_credentials_path);
    if (!creds.ok()) {
      err << "medic: " << snmp_targets.size() << " switch(es) are polled over SNMP: " << creds.error();
      if (o.snmp_credentials_path.empty()) err << " (or --snmp-credentials FILE)";
      err << '\n';
      return 2;
    }
    telemetry::SnmpOptions sopt;
    sopt.timeout_s = o.timeout_s;
    snmp = std::make_unique<telemetry::SnmpCollector>(*creds, sopt);
  }
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
    auto results = collector.scrape(targets, clock);
    if (snmp) {
      for (auto& r : snmp->scrape(snmp_targets, clock)) results.push_back(std::move(r));
    }
    for (const auto& r : results) {
      if (!r.ok) {
        ++failed;
        continue;  // a missing file is how a silent device is recorded
      }
      ++answered;
      const auto format = telemetry::detect_format(r.content_type, r.body);
      const char* ext = format == telemetry::PayloadFormat::openconfig ? ".json"
                        : format == telemetry::PayloadFormat::snmp     ? ".snmp"
                                                                       : ".prom";
      std::ofstream f(dir / (topo.device(r.device).name + ext), std::ios::binary);
      f << r.body;
      if (!f) {
        err << "medic: cannot write " << (dir / topo.device(r.device).name).string() << '\n';
        return 1;
      }
    }
  }
  out << "recorded " << o.polls << " polls of " << targets.size() + snmp_targets.size() << " devices into " << o.out_dir << " (" << answered
      << " answers, " << failed << " failures)\n";
  return 0;
}

}  // namespace medic::cli
