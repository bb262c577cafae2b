// Incidents, their findings and their history.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "db/connection.h"
#include "detectors/finding.h"
#include "fabric/topology.h"
#include "triage/triage.h"

namespace medic::db {

struct IncidentRow {
  int64_t id = 0;
  std::string incident_class, state, severity, link, device, summary, blocked_reason, suspect, suspect_port;
  std::string approval_reason;   // why its drain waits for a person (pending_approval)
  std::string link_drain_state;  // its link's: undrained, draining, drained, undraining ("" without a link)
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

struct IncidentEventRow {
  int64_t id = 0;
  Time at{};
  std::string state, note;
};

// A transaction whose COMMIT went and whose answer the connection lost: which it was, and
// which server process ran it (its id and start: ids are reused).
struct PendingCommit {
  std::string xid;
  int64_t backend_pid = 0;
  std::string backend_start;
};
enum class CommitOutcome { committed, aborted, unknown };  // unknown: the server no longer knows

// What record_updates did: each update's incident id (0 for a resolution with nothing
// open), valid once it committed; in_doubt when whether it did is not known yet.
struct RecordedUpdates {
  std::vector<int64_t> ids;
  std::optional<PendingCommit> in_doubt;
};

class IncidentStore {
 public:
  explicit IncidentStore(Connection& c) : c_(c) {}

  Result<std::vector<IncidentRow>> incidents(const IncidentFilter& filter);
  // One incident; not_found "no incident with id N".
  Result<IncidentRow> incident(int64_t id);
  // `loss` (above 0) is stored as the incident's loss estimate (remediation::loss_estimate);
  // 0 leaves it as it is.
  // Inserts a new incident (state triaged) with its findings; returns its id.
  Result<int64_t> open_incident(const triage::IncidentUpdate& u, const fabric::Topology& topology, Time now,
                                double loss = 0);
  // A closed incident whose fault came back: triaged again, its later stages cleared (the
  // earlier ones stay in incident_events), reopen_count raised, the findings attached.
  Status reopen_incident(const triage::IncidentUpdate& u, const fabric::Topology& topology, Time now, double loss = 0);
  // Attaches findings to an open incident; raises its severity (and summary) if the update did.
  Status add_findings(const triage::IncidentUpdate& u, const fabric::Topology& topology, double loss = 0);
  // A poll's updates in one transaction, all or none, each as the calls above and
  // resolve_incident would record it (`loss[i]` for update i; an update that `follows` an
  // earlier one gets its incident). A wave of faults opens dozens of incidents in one poll,
  // and a transaction each held the poll. An error: nothing was recorded (the database
  // failed, or one update was refused: recorded one at a time, the others still can be).
  // If the connection is lost during COMMIT, the server is asked whether it committed
  // (commit_outcome); while that cannot be learned, `in_doubt` says what to ask later.
  Result<RecordedUpdates> record_updates(std::span<const triage::IncidentUpdate> updates, std::span<const double> loss,
                                         const fabric::Topology& topology, Time now);
  // Whether that transaction committed; a session the server still runs it in is ended
  // first (it then rolls back, or finishes the commit it began). An error: not known yet.
  Result<CommitOutcome> commit_outcome(const PendingCommit& commit);
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
  // Moves an incident to a state and stamps that stage's timestamp (first time only).
  Status set_incident_state(int64_t id, triage::IncidentState state, Time at, const std::string& reason = "");
  // Several incidents to one state, each with its reason (reasons[i] for ids[i]), in one
  // statement, all or none: an error names the ids it did not find (and none is moved).
  Status set_incident_states(std::span<const int64_t> ids, triage::IncidentState state, Time at,
                             std::span<const std::string> reasons);

 private:
  Connection& c_;
};

}  // namespace medic::db
