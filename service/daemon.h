// medicd's poll loop: telemetry -> detectors -> triage -> remediation, with the database
// recording every step. One call of cycle() is one poll of the fabric, done as the
// daemon's role allows (service/leadership.h):
//   leader:   polls, detects, records, acts;
//   degraded: polls and detects; what it finds waits in a bounded buffer (oldest dropped
//             first, counted) and is recorded, in order, once it leads again;
//   standby:  another daemon leads: nothing is polled, the buffer is dropped.
// Taking the lead (again) reloads everything the database holds first: drain states,
// open and recent incidents, the workflow's cases and unfinished actions (reconciled with
// the switches), since another daemon may have acted meanwhile.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/time.h"
#include "db/database.h"
#include "db/remediation_store.h"
#include "detectors/config.h"
#include "fabric/topology.h"
#include "remediation/capacity.h"
#include "remediation/driver.h"
#include "remediation/executor.h"
#include "remediation/policy.h"
#include "remediation/workflow.h"
#include "service/config.h"
#include "service/leadership.h"
#include "service/pipeline.h"
#include "telemetry/backoff.h"
#include "telemetry/collector.h"
#include "telemetry/mapping.h"

namespace medic::service {

// Counters and gauges declared once; tests and /metrics read them. What was detected is
// counted apart from what was enforced (STYLE 6).
struct DaemonMetrics {
  std::atomic<uint64_t> cycles{0};
  std::atomic<uint64_t> scrapes_ok{0};
  std::atomic<uint64_t> scrapes_failed{0};
  std::atomic<uint64_t> scrapes_skipped{0};  // devices in backoff
  std::atomic<uint64_t> payloads_rejected{0};
  std::atomic<uint64_t> samples{0};         // every sample parsed (metric line or OpenConfig leaf)
  std::atomic<uint64_t> samples_mapped{0};
  std::atomic<uint64_t> samples_implausible{0};  // counter values no port can produce, left out
  std::atomic<uint64_t> telemetry_outage_polls{0};
  std::atomic<uint64_t> findings{0};
  std::atomic<uint64_t> findings_noted{0};   // recorded without an incident (info, maintenance)
  std::atomic<uint64_t> incidents_opened{0};
  std::atomic<uint64_t> incidents_reopened{0};
  std::atomic<uint64_t> incidents_resolved{0};  // measurement incidents closed by themselves
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
  std::atomic<uint64_t> records_dropped{0};   // found while unrecordable, dropped from a full buffer
  std::atomic<uint64_t> probe_rounds{0};
  std::atomic<uint64_t> probes_sent{0};
  std::atomic<uint64_t> probes_received{0};
  std::atomic<uint64_t> probe_verdicts{0};  // links localization found lossy (summed over rounds)
  std::atomic<uint64_t> probe_outage_rounds{0};   // prober rounds left out as measurement outages
  std::atomic<uint64_t> probe_measurement_verdicts{0};  // probers and reflectors localization blamed
  std::atomic<uint64_t> probe_verdicts_left_to_silence{0};
  // Gauges.
  std::atomic<int64_t> leading{0};            // 1 while this daemon leads and has synced
  std::atomic<int64_t> role{0};               // service::Role
  std::atomic<int64_t> db_up{0};
  std::atomic<int64_t> pending_records{0};    // waiting to be recorded
  std::atomic<int64_t> last_cycle_ns{0};      // steady clock, end of the last cycle
  std::atomic<double> last_cycle_seconds{0};  // how long it took

  std::string render_prometheus() const;
};

class Daemon {
 public:
  // Builds every module from the files loaded once in main; touches no database (that
  // happens when it first leads).
  Daemon(const DaemonConfig& config, const LoadedFiles& files, const Clock& clock);
  ~Daemon();

  void cycle(const LeadershipState& leadership);

  const DaemonMetrics& metrics() const { return metrics_; }
  const fabric::Topology& topology() const { return *topology_; }
  remediation::DriverSet& drivers() { return *drivers_; }
  const remediation::Workflow& workflow() const { return *workflow_; }
  bool leading() const { return epoch_ != 0; }
  size_t pending() const { return pending_updates_.size() + pending_noted_.size() + pending_oper_.size(); }

 private:
  // Reloads what the database holds and fences actions by `epoch`; false when the
  // database failed (tried again next cycle).
  bool take_lead(int64_t epoch);
  void stand_by();
  bool can_record() const;
  // Records now, or keeps for later; false when it had to be kept.
  bool record(triage::IncidentUpdate& u, Time now);
  void record_noted(std::vector<triage::NotedFinding> noted);
  void record_oper(const std::vector<LinkStateChange>& changes, Time now);
  void flush(Time now);
  void keep(triage::IncidentUpdate u);
  void refresh_maintenance(Time now);
  void to_workflow(int64_t id, const triage::IncidentUpdate& u, Time now);
  void take_snapshot(int64_t incident, int64_t action, fabric::LinkId link, const std::string& scope,
                     const std::string& why);
  void sync_metrics();
  class Signals;

  const DaemonConfig& config_;
  const Clock& clock_;
  std::shared_ptr<const fabric::Topology> topology_;
  std::shared_ptr<const telemetry::CounterMap> counter_map_;
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
  bool can_probe_ = false;
  std::vector<telemetry::ScrapeTarget> targets_;
  std::vector<triage::Maintenance> maintenance_;
  Time maintenance_loaded_{};
  std::vector<std::string> last_scrape_error_;  // per device, to log a failure once, not every cycle
  bool in_outage_ = false;                       // the last poll was a telemetry outage
  int64_t epoch_ = 0;                            // leading (and synced) under this epoch; 0: not
  bool db_up_ = false;                           // the leadership monitor's last word on the database
  bool ready_logged_ = false;
  // What was found while it could not be recorded, oldest first.
  std::deque<triage::IncidentUpdate> pending_updates_;
  std::deque<triage::NotedFinding> pending_noted_;
  std::map<fabric::LinkId, std::pair<bool, Time>> pending_oper_;  // latest state per link
  DaemonMetrics metrics_;
};

}  // namespace medic::service
