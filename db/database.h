// The only code that speaks SQL. Every statement is parameterized; every failure of the
// server comes back as an Error value (and the connection is re-established once per call
// when it was lost). Every call has a deadline (db/deadline.h); after the server failed to
// answer, calls fail at once until the retry backoff has passed, so a caller is never held
// by a database that is gone or hung.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "db/deadline.h"
#include "detectors/finding.h"
#include "fabric/topology.h"
#include "remediation/executor.h"
#include "slo/slo.h"
#include "snapshot/snapshot.h"
#include "triage/triage.h"

namespace medic::db {

class DbError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "postgresql://user:secret@host/db" -> "postgresql://user:***@host/db"
std::string redact_url(const std::string& url);

struct IncidentRow {
  int64_t id = 0;
  std::string incident_class, state, severity, link, device, summary, blocked_reason, suspect, suspect_port;
  int reopen_count = 0;
  std::optional<Time> reopened_at;
  std::optional<Time> started_at, detected_at, triaged_at, mitigated_at, repair_requested_at,
      repaired_at, validated_at, undrained_at, closed_at, dismissed_at, escalated_at;
};

struct IncidentFilter {
  bool open_only = false;
  std::optional<int64_t> id;
  std::optional<std::string> incident_class;
  int limit = 1000;
};

struct FindingRow {
  int64_t id = 0;
  int64_t incident_id = 0;
  std::string kind, severity, link, device, port, summary, evidence_json, note;
  Time first_seen{}, observed_at{};
};

struct MaintenanceRow {
  int64_t id = 0;
  std::string link;    // a link's name, or
  std::string device;  // a device's name
  Time starts_at{}, ends_at{};
  std::string reason, created_by;
};

struct IncidentEventRow {
  int64_t id = 0;
  Time at{};
  std::string state, note;
};

struct ActionRow {
  int64_t id = 0;
  int64_t incident_id = 0;
  std::string link, kind, state, reason, steps_json;
  Time intent_at{};
  std::optional<Time> result_at;
};

struct LinkDrainRow {
  std::string link;
  std::string drain_state;  // undrained, draining, drained, undraining
  int64_t incident_id = 0;
};

// ---------------------------------------------------------------------------------------
// Snapshots (db/snapshots.cpp)

struct SnapshotFilter {
  std::optional<int64_t> incident_id;
  std::optional<std::string> scope;  // incident, action or fabric
  int limit = 100;
};

// A stored snapshot as lists show it: no ports, groups or incidents, only their counts.
struct SnapshotRow {
  int64_t id = 0;
  std::string scope, reason, link;
  int64_t incident_id = 0, action_id = 0;  // 0: none
  Time taken_at{};
  int port_count = 0, group_count = 0, incident_count = 0;
};

// An incident as snapshots record it (FabricState::open_incidents).
snapshot::IncidentReading incident_reading(const IncidentRow& r);

// ---------------------------------------------------------------------------------------
// The remediation workflow (db/remediation.cpp)

// An open link incident as the workflow and the repair queue see it.
struct CaseRow {
  int64_t id = 0;
  std::string incident_class, severity, state, link, reason, approved_by;
  double loss = 0;
  int validation_failures = 0;
  std::optional<Time> validating_since, detected_at;
};

struct UnfinishedAction {
  int64_t id = 0, incident_id = 0;
  std::string link, kind, state;
  Time intent_at{};
  double traffic_before = -1;
};

struct BreakerRow {
  bool open = false;
  std::optional<Time> opened_at, reset_at;
  std::string reason, reset_by;
};

struct LeaderRow {
  std::string daemon;
  int64_t epoch = 0;
  Time since{}, heartbeat{};
};

// ---------------------------------------------------------------------------------------

class Database {
 public:
  // Connects; throws DbError naming the (redacted) URL and the server's answer.
  explicit Database(std::string url, DbOptions options = {});
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& url() const { return url_; }
  // False while calls fail at once after the server failed (until the backoff passes).
  bool available() const;
  // Why the last call failed on the connection ("" after a success).
  const std::string& last_failure() const { return last_failure_; }

  // Applies every embedded migration not yet recorded, in order, under an advisory lock so
  // several daemons starting at once do not race. Returns the names applied now. Throws
  // DbError (start-up path) on failure or when an applied migration was edited.
  std::vector<std::string> migrate();
  Result<int> schema_version();

  // Inventory: upsert switches and links from the topology (drain state is kept).
  Status sync_inventory(const fabric::Topology& topology);
  Result<std::vector<LinkDrainRow>> drain_states();

  // Incidents.
  Result<std::vector<IncidentRow>> incidents(const IncidentFilter& filter);
  // Inserts a new incident (state triaged) with its findings; returns its id.
  Result<int64_t> open_incident(const triage::IncidentUpdate& u, const fabric::Topology& topology, Time now);
  // A closed incident whose fault came back: triaged again, its later stages cleared (the
  // earlier ones stay in incident_events), reopen_count raised, the findings attached.
  Status reopen_incident(const triage::IncidentUpdate& u, const fabric::Topology& topology, Time now);
  // Attaches findings to an open incident; raises its severity (and summary) if the update did.
  Status add_findings(const triage::IncidentUpdate& u, const fabric::Topology& topology);
  Status add_findings(int64_t incident_id, const std::vector<detectors::Finding>& findings,
                      const fabric::Topology& topology);
  // A measurement incident whose measurement works again: its findings attached and the
  // incident closed, in one transaction (a retry never records the findings twice).
  Status resolve_incident(const triage::IncidentUpdate& u, const fabric::Topology& topology, Time now);
  // Findings that open no incident, with the reason (noted, maintenance).
  Status record_noted(const std::vector<triage::NotedFinding>& noted, const fabric::Topology& topology);
  Result<std::vector<FindingRow>> findings(int64_t incident_id);
  Result<std::vector<IncidentEventRow>> incident_events(int64_t incident_id);
  // Incidents closed or dismissed since `since`, for triage's reopen rule.
  Result<std::vector<IncidentRow>> closed_since(Time since);

  // The full name of a link given by its name or either endpoint "device:port"; "" if none.
  Result<std::string> resolve_link(const std::string& ref);
  // Whether a switch or host of that name is in the inventory.
  Result<bool> device_known(const std::string& name);

  // Maintenance windows.
  Result<int64_t> add_maintenance(const MaintenanceRow& m);
  // Windows not yet over at `at` (all of them when nullopt).
  Result<std::vector<MaintenanceRow>> maintenance(std::optional<Time> active_or_future_at);
  Status end_maintenance(int64_t id, Time at);
  // Moves an incident to a state and stamps that stage's timestamp (first time only).
  Status set_incident_state(int64_t id, triage::IncidentState state, Time at,
                            const std::string& reason = "");

  // The action journal (remediation::ActionJournal is implemented on top of these).
  Result<int64_t> write_intent(const remediation::ActionIntent& intent, const std::string& link_name);
  Status write_result(int64_t action_id, const remediation::ActionIntent& intent,
                      const remediation::ActionOutcome& outcome, const std::string& link_name);
  Status write_refusal(const remediation::ActionIntent& intent, const std::string& link_name,
                       const std::string& reason);
  Result<std::vector<ActionRow>> actions(std::optional<int64_t> incident_id);

  // SLOs.
  Result<std::vector<slo::Target>> slo_targets();
  Status set_slo_target(const slo::Target& t);
  Result<std::vector<slo::IncidentTimes>> incident_times(std::optional<Time> since);

  // --- The remediation workflow (db/remediation.cpp) ---
  // Open link incidents, and dismissed ones whose link is still drained for them.
  Result<std::vector<CaseRow>> open_cases();
  Result<std::vector<UnfinishedAction>> unfinished_actions();
  Result<std::vector<std::pair<std::string, Time>>> drains_since(Time since);
  Status set_validation(int64_t incident, int failures, std::optional<Time> since);
  Status set_loss(int64_t incident, double loss);
  // Links' oper states as medicd last saw them (for capacity views outside medicd).
  Status set_link_oper(const std::vector<std::pair<std::string, bool>>& links, Time at);
  // The intent row and the link's drain state in one transaction. With `daemon` set, only
  // while that daemon holds leader epoch `epoch` (fencing); and never while another action
  // on the link is unfinished (unique index).
  Result<int64_t> begin_action(const remediation::ActionIntent& intent, const std::string& link,
                               double traffic_before, const std::string& daemon, int64_t epoch);
  Status action_applied(int64_t action, const std::vector<std::string>& steps);
  Status finish_action(int64_t action, const remediation::ActionIntent& intent, const std::string& end,
                       bool link_drained, const std::string& reason, const std::vector<std::string>& steps,
                       Time at, const std::string& link);
  Result<int> incidents_opened_since(Time since);
  Result<BreakerRow> breaker();
  Status open_breaker(Time at, const std::string& reason);
  // Errors when the breaker is not open.
  Status reset_breaker(Time at, const std::string& by);
  // Engineers' decisions; each checks the incident's state and says exactly why it refuses.
  Status approve_incident(int64_t id, const std::string& by, Time at);
  Status mark_repaired(int64_t id, const std::string& by, Time at);
  Status dismiss_incident(int64_t id, const std::string& by, const std::string& reason, Time at);
  // Leadership: a new epoch for `daemon`, a heartbeat, and who leads.
  Result<int64_t> claim_leadership(const std::string& daemon, Time at);
  Status leader_heartbeat(const std::string& daemon, int64_t epoch, Time at);
  Result<std::optional<LeaderRow>> leader();

  // --- Snapshots (db/snapshots.cpp) ---
  // Stores a snapshot in one transaction and returns its id. Incident and action snapshots
  // are one row with everything in `data`; a fabric snapshot writes its ports to
  // snapshot_ports with COPY. incident_id/action_id, when set, must name existing rows.
  Result<int64_t> write_snapshot(const snapshot::Snapshot& s);
  // Either form, ports in the order they were captured; nullopt for an unknown id.
  Result<std::optional<snapshot::Snapshot>> snapshot(int64_t id);
  // Newest first.
  Result<std::vector<SnapshotRow>> snapshots(const SnapshotFilter& filter);
  // Deletes the snapshots taken before `older_than` (their port rows go with them);
  // returns how many.
  Result<int64_t> prune_snapshots(Time older_than);

 private:
  template <class F>
  auto run(const char* what, F&& f) -> decltype(f());
  void connect();

  void failed(const std::string& why);
  void succeeded();

  std::string url_;
  DbOptions options_;
  struct Connection;  // wraps pqxx::connection (a typedef in libpqxx 6, so not forward-declarable)
  std::unique_ptr<Connection> conn_;
  std::chrono::steady_clock::time_point retry_at_{};
  double backoff_s_ = 0;
  std::string last_failure_;
};

// remediation::ActionJournal backed by the database.
class DbJournal final : public remediation::ActionJournal {
 public:
  DbJournal(Database& db, const fabric::Topology& topology) : db_(db), topology_(topology) {}
  Result<int64_t> write_intent(const remediation::ActionIntent& intent) override;
  Status write_result(int64_t action_id, const remediation::ActionIntent& intent,
                      const remediation::ActionOutcome& outcome) override;
  Status write_refusal(const remediation::ActionIntent& intent, const std::string& reason) override;

 private:
  Database& db_;
  const fabric::Topology& topology_;
};

}  // namespace medic::db
