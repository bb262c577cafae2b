// medicd's one place of wiring: telemetry -> detectors -> triage -> remediation, with the
// database recording every step. One call of cycle() is one poll of the fabric.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/time.h"
#include "db/database.h"
#include "detectors/config.h"
#include "fabric/topology.h"
#include "remediation/capacity.h"
#include "remediation/driver.h"
#include "db/remediation_store.h"
#include "remediation/executor.h"
#include "remediation/policy.h"
#include "remediation/workflow.h"
#include "service/config.h"
#include "service/pipeline.h"
#include "telemetry/backoff.h"
#include "telemetry/collector.h"
#include "telemetry/mapping.h"

namespace medic::service {

// Counters declared once; tests and /metrics read them. What was detected is counted apart
// from what was enforced (STYLE 6).
struct DaemonMetrics {
  std::atomic<uint64_t> cycles{0};
  std::atomic<uint64_t> scrapes_ok{0};
  std::atomic<uint64_t> scrapes_failed{0};
  std::atomic<uint64_t> scrapes_skipped{0};  // devices in backoff
  std::atomic<uint64_t> payloads_rejected{0};
  std::atomic<uint64_t> samples{0};         // every sample parsed (metric line or OpenConfig leaf)
  std::atomic<uint64_t> samples_mapped{0};
  std::atomic<uint64_t> findings{0};
  std::atomic<uint64_t> findings_noted{0};   // recorded without an incident (info, maintenance)
  std::atomic<uint64_t> incidents_opened{0};
  std::atomic<uint64_t> incidents_reopened{0};
  std::atomic<uint64_t> drains_succeeded{0};   // drained and verified
  std::atomic<uint64_t> drains_refused{0};     // waits for capacity, budget or a rate limit
  std::atomic<uint64_t> drains_failed{0};      // failed at the switch or rolled back
  std::atomic<uint64_t> undrains_succeeded{0};
  std::atomic<uint64_t> undrains_failed{0};
  std::atomic<uint64_t> queued_for_approval{0};
  std::atomic<uint64_t> validations_failed{0};
  std::atomic<uint64_t> actions_reconciled{0};
  std::atomic<uint64_t> breaker_trips{0};
  std::atomic<uint64_t> snapshots_taken{0};
  std::atomic<uint64_t> db_errors{0};
  std::atomic<uint64_t> probe_rounds{0};
  std::atomic<uint64_t> probes_sent{0};
  std::atomic<uint64_t> probes_received{0};
  std::atomic<uint64_t> probe_verdicts{0};  // links localization found lossy (summed over rounds)

  std::string render_prometheus() const;
};

class Daemon {
 public:
  // Loads the topology, counter map, detector thresholds, capacity floors and remediation
  // policy, migrates the database, syncs the inventory, reloads drain state and open
  // incidents and reconciles unfinished actions. Throws on any start-up problem. With a
  // leader epoch, every action is fenced by it (db::Database::begin_action).
  Daemon(const DaemonConfig& config, const Clock& clock, int64_t leader_epoch = 0);
  ~Daemon();

  void cycle();

  const DaemonMetrics& metrics() const { return metrics_; }
  const fabric::Topology& topology() const { return *topology_; }
  remediation::DriverSet& drivers() { return *drivers_; }
  const remediation::Workflow& workflow() const { return *workflow_; }

 private:
  void handle(triage::IncidentUpdate& u, Time now);
  void refresh_maintenance(Time now);
  void to_workflow(int64_t id, const triage::IncidentUpdate& u, Time now);
  void take_snapshot(int64_t incident, int64_t action, fabric::LinkId link, const std::string& scope,
                     const std::string& why);
  void sync_metrics();
  class Signals;

  const DaemonConfig& config_;
  const Clock& clock_;
  std::unique_ptr<fabric::Topology> topology_;
  std::unique_ptr<telemetry::CounterMap> counter_map_;
  detectors::DetectorConfig detector_config_;
  std::unique_ptr<db::Database> db_;
  std::unique_ptr<db::DbRemediationStore> store_;
  std::unique_ptr<telemetry::Collector> collector_;
  std::unique_ptr<telemetry::Backoff> backoff_;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<remediation::CapacityModel> capacity_;
  std::unique_ptr<remediation::DriverSet> drivers_;
  std::unique_ptr<fabric::Topology> capacity_topology_;  // the topology with derived capacity groups
  std::unique_ptr<Signals> signals_;
  std::unique_ptr<remediation::Workflow> workflow_;
  Time snapshots_pruned_{};
  std::unique_ptr<probes::ProbeScheduler> prober_;
  std::vector<telemetry::ScrapeTarget> targets_;
  std::vector<triage::Maintenance> maintenance_;
  Time maintenance_loaded_{};
  std::vector<std::string> last_scrape_error_;  // per device, to log a failure once, not every cycle
  DaemonMetrics metrics_;
};

}  // namespace medic::service
