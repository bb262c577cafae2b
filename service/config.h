// medicd's configuration: parsed once, validated in full, immutable afterwards.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/time.h"
#include "db/deadline.h"
#include "detectors/config.h"
#include "fabric/topology.h"
#include "probes/scheduler.h"
#include "remediation/capacity_config.h"
#include "remediation/policy.h"
#include "telemetry/mapping.h"
#include "telemetry/snmp.h"

#include <optional>
#include "triage/triage.h"

namespace medic::service {

struct DaemonSettings {
  std::string topology_path;
  std::string db_url;
  std::string counter_map_path;
  std::string detectors_path;       // detector thresholds (default data/detectors.json)
  double poll_interval_s = 1.0;
  double scrape_timeout_s = 2.0;
  int scrape_concurrency = 256;
  int map_workers = -1;             // threads parsing and mapping answers (-1: half the cores, 1 to 8; 0: the poll thread)
  int device_fault_links = 4;       // failing links of one device that make a switch_fault
  double reopen_window_s = 86400;   // a closed incident whose fault returns within this reopens
  double backoff_max_s = 60;        // longest wait before retrying a failing device
  double run_for_s = 0;       // 0: until SIGINT/SIGTERM
  bool dry_run = false;       // use the dry-run driver for every switch
  std::string http_listen;    // "" or ADDR:PORT for /healthz and /metrics
  std::string driver_token;   // bearer token for JSON-RPC drivers
  std::string driver_ca;      // PEM CA bundle that signed the switches' https:// drain API certificates
  std::string capacity_path;  // floors per group kind and the drain budget (default data/capacity.json)
  std::string policy_path;    // remediation policy (default data/remediation.json)
  // SNMP credentials (telemetry/snmp.h) for switches polled at snmp://; without a file, the
  // environment's MEDIC_SNMP_* variables.
  std::string snmp_credentials_path;
  // ADDR:PORT to receive SNMP notifications (linkDown/linkUp) on ("": none are received).
  std::string snmp_trap_listen;
  std::string name;           // this daemon's name in the leader row and the actions (default host:pid)
  double snapshot_retention_days = 30;  // snapshots older than this are pruned (0: kept forever)
  int incident_snapshots = 32;  // snapshots of incidents opened in one poll cycle, at most (the rest counted)
  bool standby = true;        // wait for the leader lock (false: exit when another daemon leads)
  // Active probing (STAMP): on when the topology gives devices a probe source and reflector.
  bool probe = true;
  double probe_rate = 20000;       // probes per second, all sessions together
  double probe_round_s = 10;       // every session gets probe_per_round probes per round
  int probe_per_round = 10;
  double probe_timeout_s = 1.0;
  bool probe_paths_unknown = false;  // the fabric's ECMP hash is not the model's: weigh every path
  // The database: every call under a deadline, so a hung server never holds a thread.
  double db_timeout_s = 5;           // one call (a transaction), from start to answer
  double db_connect_timeout_s = 5;
  // What medicd keeps of what it found while it cannot record it (database down, lock lost).
  size_t pending_limit = 10000;
  // Threads calling the switches' drain APIs (one call per switch at a time).
  int switch_workers = 8;
  // The SLO figures on /metrics: refreshed this often (0: not exported), over this window.
  double slo_refresh_s = 60;
  double slo_window_days = 28;
  // Notifications (the notifier delivers them; here they are only read and checked).
  std::vector<std::string> alertmanager_urls;  // Alertmanager base URLs, http(s), no trailing slash
  std::vector<std::string> webhook_urls;       // http(s) URLs notifications are POSTed to
  std::string webhook_secret;                  // the webhooks' shared secret; required with any webhook
  std::string external_url;                    // medicd's page as browsers reach it, for alerts' links
                                               // (default: http://ADDR:PORT of --http; "" without it)
  double alert_repeat_s = 60;       // open incidents are re-sent to Alertmanager this often
  double notify_retry_max_s = 30;   // longest wait between delivery retries
  double notify_timeout_s = 5;      // one delivery's HTTP timeout

  bool operator==(const DaemonSettings&) const = default;
};

// A setting DaemonConfig refuses. what() names it as the command line does
// ("--poll-interval must be within [0.05, 3600] seconds", "--http x: expected ADDR:PORT"),
// and flag(), value() and reason() let a config file's reader say the same of the line the
// setting came from ("medicd.toml:3: poll-interval = 0.001: must be within ...").
class SettingError : public std::invalid_argument {
 public:
  // value: the one value refused, "" when it is the setting as a whole.
  SettingError(std::string flag, std::string value, std::string reason);
  const std::string& flag() const { return flag_; }
  const std::string& value() const { return value_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string flag_, value_, reason_;
};

class DaemonConfig {
 public:
  // Throws SettingError (or, for what no one setting is to blame for, std::invalid_argument)
  // naming the setting and the problem.
  explicit DaemonConfig(DaemonSettings s);

  const DaemonSettings& settings() const { return s_; }
  Duration poll_interval() const { return from_seconds(s_.poll_interval_s); }
  triage::TriageConfig triage() const;
  // Threads mapping the answers (--map-workers; its default resolved for this machine).
  size_t map_workers() const;
  probes::SchedulerConfig prober() const;
  db::DbOptions db() const;

 private:
  DaemonSettings s_;
};

// Every file medicd reads, parsed and validated once at start-up, before it connects to
// the database or waits for the leader lock: a bad file stops it at once (exit 2), never
// later at a takeover. Throws the loaders' errors, each naming the file and the problem.
struct LoadedFiles {
  std::shared_ptr<const fabric::Topology> topology;
  std::shared_ptr<const telemetry::CounterMap> counter_map;
  detectors::DetectorConfig detectors;
  remediation::CapacityConfig capacity;
  remediation::RemediationPolicy policy;
  // Set when the topology polls a switch over SNMP (from --snmp-credentials or MEDIC_SNMP_*).
  std::optional<telemetry::SnmpCredentials> snmp;

  static LoadedFiles load(const DaemonSettings& s);
};

}  // namespace medic::service
