// `medic replay`: recorded scrapes through the same parsing, detectors and triage medicd
// runs, offline and as fast as possible, printing findings and incidents as JSON lines.
// DIR holds one folder per scrape time (Unix seconds) with one file per device named
// DEVICE.prom (Prometheus text) or DEVICE.json (OpenConfig JSON).
#pragma once

#include <iosfwd>
#include <string>

namespace medic::cli {

struct ReplayOptions {
  std::string topology_path;
  std::string scrapes_dir;
  std::string counter_map_path;  // default data/counter_map.json
  std::string detectors_path;    // default data/detectors.json
  int device_fault_links = 4;
  double reopen_window_s = 86400;
  bool findings = true;  // print finding and rejected lines (incident lines are always printed)
};

// Exit status: 0 done, 1 a scrape file could not be read, 2 bad input (topology, map,
// thresholds, a folder or file name that is not a time or a device).
int replay(const ReplayOptions& options, std::ostream& out, std::ostream& err);

}  // namespace medic::cli
