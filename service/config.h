// medicd's configuration: parsed once, validated in full, immutable afterwards.
#pragma once

#include <string>

#include "common/time.h"
#include "detectors/flap.h"

namespace medic::service {

struct DaemonSettings {
  std::string topology_path;
  std::string db_url;
  std::string counter_map_path;
  double poll_interval_s = 1.0;
  double scrape_timeout_s = 2.0;
  int scrape_concurrency = 256;
  double flap_window_s = 60.0;
  int flap_transitions = 6;
  double run_for_s = 0;       // 0: until SIGINT/SIGTERM
  bool dry_run = false;       // use the dry-run driver for every switch
  std::string http_listen;    // "" or ADDR:PORT for /healthz and /metrics
  std::string driver_token;   // bearer token for JSON-RPC drivers
};

class DaemonConfig {
 public:
  // Throws std::invalid_argument naming the setting and the problem.
  explicit DaemonConfig(DaemonSettings s);

  const DaemonSettings& settings() const { return s_; }
  Duration poll_interval() const { return from_seconds(s_.poll_interval_s); }
  detectors::FlapConfig flap() const;

 private:
  DaemonSettings s_;
};

// The data directory of this source tree (for data/counter_map.json).
std::string default_data_dir();

}  // namespace medic::service
