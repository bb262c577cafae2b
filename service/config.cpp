#include "service/config.h"

#include <stdexcept>

#include "common/files.h"
#include "common/strings.h"
#include "fabric/loader.h"

namespace medic::service {

DaemonConfig::DaemonConfig(DaemonSettings s) : s_(std::move(s)) {
  auto bad = [](const std::string& what) { throw std::invalid_argument(what); };
  if (s_.topology_path.empty()) bad("--topology is required");
  if (s_.db_url.empty()) bad("no database: pass --db URL or set MEDIC_DB_URL");
  if (s_.counter_map_path.empty()) s_.counter_map_path = data_dir() + "/counter_map.json";
  if (s_.detectors_path.empty()) s_.detectors_path = data_dir() + "/detectors.json";
  if (s_.capacity_path.empty()) s_.capacity_path = data_dir() + "/capacity.json";
  if (s_.policy_path.empty()) s_.policy_path = data_dir() + "/remediation.json";
  if (!(s_.snapshot_retention_days >= 0 && s_.snapshot_retention_days <= 3650)) {
    bad("--snapshot-retention must be within [0, 3650] days");
  }
  if (!(s_.poll_interval_s >= 0.05 && s_.poll_interval_s <= 3600)) bad("--poll-interval must be within [0.05, 3600] seconds");
  if (!(s_.scrape_timeout_s >= 0.05 && s_.scrape_timeout_s <= 600)) bad("--scrape-timeout must be within [0.05, 600] seconds");
  if (s_.scrape_concurrency < 1 || s_.scrape_concurrency > 4096) bad("--scrape-concurrency must be within [1, 4096]");
  if (s_.device_fault_links < 2 || s_.device_fault_links > 100000) bad("--device-fault-links must be within [2, 100000]");
  if (!(s_.reopen_window_s >= 0 && s_.reopen_window_s <= 90 * 86400)) bad("--reopen-window must be within [0, 7776000] seconds");
  if (!(s_.backoff_max_s >= s_.poll_interval_s && s_.backoff_max_s <= 3600)) bad("--backoff-max must be within [poll interval, 3600] seconds");
  if (s_.run_for_s < 0) bad("--run-for must not be negative");
  if (!s_.http_listen.empty() && !parse_host_port(s_.http_listen)) {
    bad("--http " + s_.http_listen + ": expected ADDR:PORT, e.g. 127.0.0.1:9400");
  }
  triage().validate();
  if (!(s_.probe_rate > 0 && s_.probe_rate <= 10'000'000)) bad("--probe-rate must be within (0, 10000000] probes per second");
  if (!(s_.probe_round_s >= 0.1 && s_.probe_round_s <= 3600)) bad("--probe-round must be within [0.1, 3600] seconds");
  if (s_.probe_per_round < 1 || s_.probe_per_round > 10000) bad("--probe-per-round must be within [1, 10000]");
  if (!(s_.probe_timeout_s >= 0.01 && s_.probe_timeout_s <= 60)) bad("--probe-timeout must be within [0.01, 60] seconds");
  prober().validate();
  if (!(s_.slo_refresh_s == 0 || (s_.slo_refresh_s >= 1 && s_.slo_refresh_s <= 86400))) {
    bad("--slo-refresh must be 0 (off) or within [1, 86400] seconds");
  }
  if (!(s_.slo_window_days >= 1 && s_.slo_window_days <= 366)) bad("--slo-window must be within [1, 366] days");
  if (!(s_.db_timeout_s >= 0.1 && s_.db_timeout_s <= 600)) bad("--db-timeout must be within [0.1, 600] seconds");
  if (!(s_.db_connect_timeout_s >= 2 && s_.db_connect_timeout_s <= 600)) bad("--db-connect-timeout must be within [2, 600] seconds");
  if (s_.pending_limit < 1 || s_.pending_limit > 10'000'000) bad("--pending-limit must be within [1, 10000000]");
  if (s_.switch_workers < 1 || s_.switch_workers > 256) bad("--switch-workers must be within [1, 256]");
}

db::DbOptions DaemonConfig::db() const {
  db::DbOptions o;
  o.call_timeout_s = s_.db_timeout_s;
  o.connect_timeout_s = s_.db_connect_timeout_s;
  return o;
}

LoadedFiles LoadedFiles::load(const DaemonSettings& s) {
  LoadedFiles f;
  f.topology = std::make_shared<const fabric::Topology>(fabric::load_topology_file(s.topology_path));
  f.counter_map = std::make_shared<const telemetry::CounterMap>(telemetry::CounterMap::load_file(s.counter_map_path));
  f.detectors = detectors::DetectorConfig::load_file(s.detectors_path);
  f.capacity = remediation::CapacityConfig::load_file(s.capacity_path);
  f.policy = remediation::RemediationPolicy::load_file(s.policy_path);
  return f;
}

probes::SchedulerConfig DaemonConfig::prober() const {
  probes::SchedulerConfig c;
  c.max_rate = s_.probe_rate;
  c.round_s = s_.probe_round_s;
  c.per_round = s_.probe_per_round;
  c.timeout_s = s_.probe_timeout_s;
  c.paths_known = !s_.probe_paths_unknown;
  return c;
}

triage::TriageConfig DaemonConfig::triage() const {
  triage::TriageConfig t;
  t.device_fault_links = s_.device_fault_links;
  t.reopen_window = from_seconds(s_.reopen_window_s);
  return t;
}

}  // namespace medic::service
