// `medic replay`: recorded scrapes through the same parsing, detectors and triage medicd
// runs, offline and as fast as possible, printing findings and incidents as JSON lines.
// DIR holds one folder per scrape time (Unix seconds) with one file per device named
// DEVICE.prom (Prometheus text) or DEVICE.json (OpenConfig JSON).
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "detectors/config.h"
#include "fabric/topology.h"
#include "telemetry/mapping.h"
#include "triage/triage.h"

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

// What a replay reads before the scrapes: the fabric, the counter map and the thresholds.
// Loaded once, it replays any number of scrape sets.
struct ReplayModel {
  fabric::Topology topology;
  telemetry::CounterMap counter_map;
  detectors::DetectorConfig detectors;
  triage::TriageConfig triage;
  double load_seconds = 0;  // what loading took (the summary's time counts it)
};

// Loads the files `options` names; on bad input prints what and where to `err` and returns
// nothing.
std::optional<ReplayModel> load_replay_model(const ReplayOptions& options, std::ostream& err);

// Exit status: 0 done, 1 a scrape file could not be read, 2 bad input (topology, map,
// thresholds, a folder or file name that is not a time or a device).
int replay(const ReplayOptions& options, std::ostream& out, std::ostream& err);
// The same over a model already loaded: options' files and triage settings are the model's
// (their paths only name them in messages); scrapes_dir and findings are read here.
int replay(const ReplayModel& model, const ReplayOptions& options, std::ostream& out, std::ostream& err);

}  // namespace medic::cli
