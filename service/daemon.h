// medicd's poll loop: telemetry -> pipeline (detectors, triage) -> records -> remediation.
// One call of cycle() is one poll of the fabric, done as the daemon's role allows
// (service/leadership.h):
//   leader:   polls, detects, records, acts;
//   degraded: polls and detects; what it finds waits in a bounded buffer (oldest dropped
//             first, counted) and is recorded, in order, once it leads again;
//   standby:  another daemon leads: nothing is polled, the buffer is dropped.
// Taking the lead (again) reloads everything the database holds first: drain states,
// open and recent incidents, the workflow's cases and unfinished actions (reconciled with
// the switches), since another daemon may have acted meanwhile.
//
// The path of one finding: the collector's answers go into Pipeline::poll, whose updates
// the daemon records (the stores give back incident ids as triage::Recorded, handed to the
// next poll) and hands to the workflow; the workflow's switch calls run on the switch
// runner's threads and come back in a later tick. Every part is built once, in main, and
// handed to the daemon in DaemonParts.
#pragma once

#include <atomic>
#include <deque>
#include <optional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/metrics.h"
#include "common/time.h"
#include "db/connection.h"
#include "db/incident_store.h"
#include "db/inventory_store.h"
#include "db/maintenance_store.h"
#include "db/remediation_store.h"
#include "db/snapshot_store.h"
#include "detectors/config.h"
#include "fabric/topology.h"
#include "pipeline/pipeline.h"
#include "probes/scheduler.h"
#include "remediation/capacity.h"
#include "remediation/workflow.h"
#include "service/config.h"
#include "service/leadership.h"
#include "service/snapshot_writer.h"
#include "telemetry/backoff.h"
#include "telemetry/collector.h"
#include "telemetry/snmp_collector.h"
#include "telemetry/snmp_traps.h"

namespace medic::service {

// The daemon's own metrics, declared once (the workflow declares its own in the same
// registry). What was detected is counted apart from what was enforced (STYLE 6).
struct DaemonMetrics {
  explicit DaemonMetrics(metrics::Registry& r);
  metrics::Counter cycles, scrapes_ok, scrapes_failed, scrapes_skipped, payloads_rejected;
  // SNMP (switches at snmp://): GETBULK requests sent, agents seen to restart (sysUpTime went
  // back) and agents whose ifIndex numbering changed (interfaces are matched by ifName).
  metrics::Counter snmp_requests, snmp_agent_restarts, snmp_renumbered;
  // SNMP notifications received, by what became of them (medic_snmp_notifications_total).
  metrics::Counter traps_link_down, traps_link_up, traps_other, traps_unknown_agent, traps_bad_credentials,
      traps_malformed, traps_unknown_interface, traps_duplicate, traps_before_poll;
  metrics::Counter samples, samples_mapped, samples_implausible, telemetry_outage_polls;
  metrics::Counter findings, findings_noted;
  metrics::Counter incidents_opened, incidents_reopened, incidents_resolved;
  metrics::Counter snapshots_skipped, db_errors, records_dropped;
  metrics::Counter probe_rounds, probes_sent, probes_received, probe_verdicts, probe_outage_rounds;
  metrics::Counter probe_measurement_verdicts, probe_verdicts_left_to_silence, probe_packets_sent,
      probe_rounds_left_to_down_links, probes_late;
  metrics::Gauge leading, role, db_up, pending_records, last_cycle_seconds, probe_links_judged, probe_links_slow;
  metrics::Histogram poll_cycle_seconds;
  // Where a cycle's time went (medic_poll_stage_seconds): waiting for the switches' answers,
  // judging them (the map workers' last answers, every detector, triage), recording; and
  // the last cycle's (medic_last_cycle_stage_seconds), set when the cycle ends, right before
  // medic_last_cycle_seconds, so that a reading of /metrics says where a slow poll's time went.
  struct Stage {
    metrics::Histogram all;
    metrics::Gauge last;
  };
  Stage stage_scrape, stage_judge, stage_record;
};

// Everything the daemon works with, built once in main.
struct DaemonParts {
  const fabric::Topology& topology;
  const fabric::Topology& capacity_topology;  // with the derived capacity groups
  const detectors::DetectorConfig& detectors;
  db::Connection& db;  // the poll loop's own connection
  db::InventoryStore& inventory;
  db::IncidentStore& incidents;
  db::MaintenanceStore& maintenance;
  db::SnapshotStore& snapshots;  // pruned here; stored by snapshot_writer
  SnapshotWriter& snapshot_writer;
  db::DbRemediationStore& remediation_store;
  telemetry::Collector& collector;
  telemetry::SnmpCollector* snmp;  // switches polled at snmp:// (nullptr: none is)
  telemetry::SnmpTrapReceiver* snmp_traps;  // --snmp-trap-listen (nullptr: off)
  telemetry::Backoff& backoff;
  pipeline::Pipeline& pipeline;
  remediation::CapacityModel& capacity;
  remediation::Workflow& workflow;
  metrics::Registry& registry;
};

class Daemon {
 public:
  // Touches no database (that happens when it first leads).
  Daemon(const DaemonConfig& config, DaemonParts parts, const Clock& clock);
  ~Daemon();

  void cycle(const LeadershipState& leadership);
  // Reads the SNMP notifications waiting (main calls it when the receiver's socket is
  // readable, on the poll loop's thread): linkDown/linkUp become link events for the flap
  // detector at once, recorded like a poll's findings; everything else is counted.
  void take_notifications();

  const DaemonMetrics& metrics() const { return metrics_; }
  // Steady-clock nanoseconds at the end of the last cycle (0 before the first), for /healthz.
  int64_t last_cycle_ns() const { return last_cycle_ns_.load(); }
  bool leading() const { return epoch_ != 0; }
  size_t pending() const {
    return pending_updates_.size() + pending_noted_.size() + pending_oper_.size() + (doubtful_ ? doubtful_->updates.size() : 0);
  }

 private:
  // Reloads what the database holds and fences actions by `epoch`; false when the
  // database failed (tried again next cycle).
  bool take_lead(int64_t epoch);
  void stand_by();
  bool can_record() const;
  // Records now, or keeps for later; false when it had to be kept. What the database gave
  // back (ids, closes) goes into `recorded`; `ids` holds the id of each update recorded so
  // far in this batch (for updates that follow an earlier one).
  bool record(triage::IncidentUpdate& u, Time now, std::vector<int64_t>& ids);
  void record_noted(std::vector<triage::NotedFinding> noted);
  // A poll's (or link events') triage: noted findings and incident updates, recorded or kept.
  void record_triage(triage::TriageResult& t, Time now);
  void record_oper(const std::vector<pipeline::LinkStateChange>& changes, Time now);
  void flush(Time now);
  void keep(triage::IncidentUpdate u);
  void refresh_maintenance(Time now);
  void to_workflow(int64_t id, const triage::IncidentUpdate& u, Time now);
  // What recording an update does, and what follows once it is recorded (ids and closes
  // for triage, metrics, the log, a snapshot, the workflow).
  enum class Recording { nothing, resolved, opened, reopened, added };
  static Recording recording(const triage::IncidentUpdate& u);
  void recorded(triage::IncidentUpdate& u, Recording what, Time now);
  // Two or more updates in one transaction (IncidentStore::record_updates); false when they
  // were not recorded together (fewer, the database down, or one refused): then one at a time.
  bool record_together(std::vector<triage::IncidentUpdate>& updates, Time now);
  // What follows once a batch is recorded, update by update (ids[i] for updates[i]).
  void apply_recorded(std::vector<triage::IncidentUpdate>& updates, const std::vector<int64_t>& ids, Time now);
  // Asks whether the batch in doubt committed, and acts on the answer; false while not known.
  bool settle_doubt(Time now);
  static double stored_loss(const triage::IncidentUpdate& u);
  std::string scope_of(const triage::IncidentUpdate& u) const;
  void take_snapshot(int64_t incident, int64_t action, fabric::LinkId link, const std::string& scope,
                     const std::string& why);

  const DaemonConfig& config_;
  DaemonParts p_;
  const Clock& clock_;
  std::unique_ptr<probes::ProbeScheduler> prober_;
  uint64_t probe_packets_seen_ = 0;  // the prober's packets already added to medic_probe_packets_sent_total
  uint64_t probes_late_seen_ = 0;    // and its late or foreign replies to medic_probes_late_total
  uint64_t probe_left_seen_ = 0;     // and its rounds left to links whose carrier changed
  bool can_probe_ = false;
  std::vector<telemetry::ScrapeTarget> targets_;  // HTTP and SNMP, told apart by is_snmp_url
  std::vector<triage::Maintenance> maintenance_;
  Time maintenance_loaded_{};
  Time snapshots_pruned_{};
  std::vector<std::string> last_scrape_error_;  // per device, to log a failure once, not every cycle
  bool in_outage_ = false;                       // the last poll was a telemetry outage
  Role role_ = Role::starting;                   // as the last cycle was told
  telemetry::SnmpTrapCounters traps_seen_{};     // the receiver's counters already in the metrics
  int64_t epoch_ = 0;                            // leading (and synced) under this epoch; 0: not
  bool db_up_ = false;                           // the leadership monitor's last word on the database
  bool ready_logged_ = false;
  // Snapshots of incidents opened in this cycle; past --incident-snapshots they are counted,
  // not taken (a flood of incidents must not hold the poll loop for minutes).
  int incident_snapshots_ = 0;
  int incident_snapshots_skipped_ = 0;
  // What recording gave back since the last poll: handed to the next one.
  triage::Recorded recorded_;
  // What was found while it could not be recorded, oldest first.
  std::deque<triage::IncidentUpdate> pending_updates_;
  // A batch whose COMMIT's answer the connection lost, until the server says whether it
  // committed; nothing else is recorded meanwhile.
  struct Doubtful {
    db::PendingCommit commit;
    std::vector<triage::IncidentUpdate> updates;
    std::vector<int64_t> ids;
  };
  std::optional<Doubtful> doubtful_;
  std::deque<triage::NotedFinding> pending_noted_;
  std::map<fabric::LinkId, std::pair<bool, Time>> pending_oper_;  // latest state per link
  std::atomic<int64_t> last_cycle_ns_{0};
  DaemonMetrics metrics_;
};

}  // namespace medic::service
