// Incidents and their findings and history.
#include "db/incident_store.h"

#include <nlohmann/json.hpp>

#include "db/internal.h"

namespace medic::db {

using nlohmann::json;
using namespace internal;

namespace {

const char* kIncidentColumns =
    "id, class, state, severity, coalesce(link, ''), coalesce(device, ''), summary, "
    "coalesce(blocked_reason, ''), " MEDIC_US("started_at") ", " MEDIC_US("detected_at") ", "
    MEDIC_US("triaged_at") ", " MEDIC_US("mitigated_at") ", " MEDIC_US("repair_requested_at") ", "
    MEDIC_US("repaired_at") ", " MEDIC_US("validated_at") ", " MEDIC_US("undrained_at") ", "
    MEDIC_US("closed_at") ", " MEDIC_US("dismissed_at") ", " MEDIC_US("escalated_at") ", "
    "coalesce(suspect, ''), coalesce(suspect_port, ''), reopen_count, " MEDIC_US("reopened_at") ", "
    "coalesce(approval_reason, ''), "
    "coalesce((SELECT l.drain_state FROM links l WHERE l.name = incidents.link), '')";

IncidentRow read_incident(const pqxx::row& r) {
  IncidentRow i;
  i.id = r[0].as<int64_t>();
  i.incident_class = read_text(r[1]);
  i.state = read_text(r[2]);
  i.severity = read_text(r[3]);
  i.link = read_text(r[4]);
  i.device = read_text(r[5]);
  i.summary = read_text(r[6]);
  i.blocked_reason = read_text(r[7]);
  i.started_at = read_time(r[8]);
  i.detected_at = read_time(r[9]);
  i.triaged_at = read_time(r[10]);
  i.mitigated_at = read_time(r[11]);
  i.repair_requested_at = read_time(r[12]);
  i.repaired_at = read_time(r[13]);
  i.validated_at = read_time(r[14]);
  i.undrained_at = read_time(r[15]);
  i.closed_at = read_time(r[16]);
  i.dismissed_at = read_time(r[17]);
  i.escalated_at = read_time(r[18]);
  i.suspect = read_text(r[19]);
  i.suspect_port = read_text(r[20]);
  i.reopen_count = r[21].as<int>();
  i.reopened_at = read_time(r[22]);
  i.approval_reason = read_text(r[23]);
  i.link_drain_state = read_text(r[24]);
  return i;
}

std::string evidence_json(const detectors::Finding& f) {
  json e = json::object();
  for (const auto& [k, v] : f.evidence) e[k] = v;
  return e.dump();
}

void insert_finding(pqxx::work& w, int64_t incident_id, const detectors::Finding& f, const fabric::Topology& t,
                    const std::string& note) {
  const std::string link = f.link != fabric::kNone ? t.link(f.link).name : "";
  const std::string device = f.device != fabric::kNone ? t.device(f.device).name : "";
  // The reporting port, written "device:port": it may be on another device than the one
  // at fault (a ToR port reporting a host's pause frames).
  const std::string port = f.port != fabric::kNone ? t.endpoint_name(f.port) : "";
  const std::string id = incident_id != 0 ? std::to_string(incident_id) : "";
  w.exec_params(
      "INSERT INTO findings (incident_id, kind, severity, link, device, port, summary, evidence, "
      "first_seen, observed_at, note) VALUES ($1::bigint, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::timestamptz, "
      "$10::timestamptz, $11)",
      opt_text(id), std::string(detectors::to_string(f.kind)), std::string(detectors::to_string(f.severity)),
      opt_text(link), opt_text(device), opt_text(port), f.summary, evidence_json(f), ts(f.first_seen),
      ts(f.observed_at), opt_text(note));
}

void insert_findings(pqxx::work& w, int64_t incident_id, const std::vector<detectors::Finding>& findings,
                     const fabric::Topology& t) {
  for (const auto& f : findings) insert_finding(w, incident_id, f, t, "");
}

// The device an incident is about: the device of a device incident, else the device that
// reported its first finding.
std::string incident_device(const triage::IncidentUpdate& u, const fabric::Topology& t) {
  if (u.device != fabric::kNone) return t.device(u.device).name;
  // Measurement incidents of medicd's own side name that side.
  if (u.cls == triage::IncidentClass::prober_fault) return "prober";
  if (u.cls == triage::IncidentClass::telemetry_outage) return "telemetry collector";
  if (!u.findings.empty() && u.findings.front().device != fabric::kNone) return t.device(u.findings.front().device).name;
  return "";
}

}  // namespace

Result<std::vector<IncidentRow>> IncidentStore::incidents(const IncidentFilter& f) {
  return c_.run("incidents", [&](Pq& pq) -> Result<std::vector<IncidentRow>> {
    pqxx::nontransaction n(pq.c);
    const std::string sql = std::string("SELECT ") + kIncidentColumns +
                            " FROM incidents WHERE ($1 = false OR state NOT IN ('closed', 'dismissed'))"
                            " AND ($2::bigint IS NULL OR id = $2::bigint)"
                            " AND ($3::text IS NULL OR class = $3::text)"
                            " ORDER BY id LIMIT $4";
    const std::string id = f.id ? std::to_string(*f.id) : "";
    const std::string cls = f.incident_class.value_or("");
    const auto r = n.exec_params(sql, f.open_only, opt_text(id), opt_text(cls), f.limit);
    std::vector<IncidentRow> out;
    for (const auto& row : r) out.push_back(read_incident(row));
    return out;
  });
}

Result<IncidentRow> IncidentStore::incident(int64_t id) {
  IncidentFilter f;
  f.id = id;
  auto rows = incidents(f);
  if (!rows.ok()) return rows.failure();
  if (rows->empty()) return Error::not_found("no incident with id " + std::to_string(id));
  return std::move(rows->front());
}

Result<int64_t> IncidentStore::open_incident(const triage::IncidentUpdate& u, const fabric::Topology& t, Time now) {
  return c_.run("open_incident", [&](Pq& pq) -> Result<int64_t> {
    pqxx::work w(pq.c);
    const std::string link = u.link != fabric::kNone ? t.link(u.link).name : "";
    const std::string device = incident_device(u, t);
    const std::string suspect_port = u.suspect_port != fabric::kNone ? t.endpoint_name(u.suspect_port) : "";
    const auto r = w.exec_params(
        "INSERT INTO incidents (class, state, severity, link, device, summary, started_at, "
        "detected_at, triaged_at, suspect, suspect_port) VALUES ($1, 'triaged', $2, $3, $4, $5, $6::timestamptz, "
        "$7::timestamptz, $8::timestamptz, $9, $10) RETURNING id",
        std::string(triage::to_string(u.cls)), std::string(detectors::to_string(u.severity)),
        opt_text(link), opt_text(device), u.summary, ts(u.started_at), ts(u.detected_at), ts(now),
        opt_text(u.suspect), opt_text(suspect_port));
    const int64_t id = r[0][0].as<int64_t>();
    insert_findings(w, id, u.findings, t);
    insert_event(w, id, u.detected_at, "detected", u.summary);
    insert_event(w, id, now, "triaged", "");
    w.commit();
    return id;
  });
}

Status IncidentStore::reopen_incident(const triage::IncidentUpdate& u, const fabric::Topology& t, Time now) {
  return c_.run("reopen_incident", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    const std::string suspect_port = u.suspect_port != fabric::kNone ? t.endpoint_name(u.suspect_port) : "";
    const auto r = w.exec_params(
        "UPDATE incidents SET state = 'triaged', severity = $2, summary = $3, started_at = $4::timestamptz, "
        "detected_at = $5::timestamptz, triaged_at = $6::timestamptz, mitigated_at = NULL, "
        "repair_requested_at = NULL, repaired_at = NULL, validated_at = NULL, undrained_at = NULL, "
        "closed_at = NULL, dismissed_at = NULL, escalated_at = NULL, blocked_reason = NULL, "
        "approved_by = NULL, approved_at = NULL, "
        "suspect = coalesce($7, suspect), suspect_port = coalesce($8, suspect_port), "
        "reopen_count = reopen_count + 1, reopened_at = $6::timestamptz, updated_at = now() "
        "WHERE id = $1 AND state IN ('closed', 'dismissed')",
        u.incident_id, std::string(detectors::to_string(u.severity)), u.summary, ts(u.started_at),
        ts(u.detected_at), ts(now), opt_text(u.suspect), opt_text(suspect_port));
    if (r.affected_rows() != 1) return Error{"no closed incident with id " + std::to_string(u.incident_id)};
    // A fault that comes back needs its approvals again (the audit trail keeps the old ones).
    w.exec_params("DELETE FROM approvals WHERE incident_id = $1", u.incident_id);
    insert_findings(w, u.incident_id, u.findings, t);
    insert_event(w, u.incident_id, now, "reopened", u.summary);
    w.commit();
    return Ok{};
  });
}

Status IncidentStore::add_findings(const triage::IncidentUpdate& u, const fabric::Topology& t) {
  return c_.run("add_findings", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    insert_findings(w, u.incident_id, u.findings, t);
    const std::string suspect_port = u.suspect_port != fabric::kNone ? t.endpoint_name(u.suspect_port) : "";
    // Severity only rises, whatever the update believed the stored one to be: the row is
    // raised (and the event written) only when the new severity is above the stored one.
    bool raised = false;
    if (u.escalated()) {
      const auto r = w.exec_params(
          "UPDATE incidents SET severity = $2, summary = $3, suspect = coalesce(suspect, $4), "
          "suspect_port = coalesce(suspect_port, $5), updated_at = now() WHERE id = $1 AND "
          "array_position(ARRAY['info', 'warning', 'critical'], severity) < "
          "array_position(ARRAY['info', 'warning', 'critical'], $2::text)",
          u.incident_id, std::string(detectors::to_string(u.severity)), u.summary, opt_text(u.suspect),
          opt_text(suspect_port));
      raised = r.affected_rows() == 1;
    }
    if (raised) {
      insert_event(w, u.incident_id, u.detected_at, "escalated_severity",
                   std::string(detectors::to_string(u.previous_severity)) + " -> " +
                       std::string(detectors::to_string(u.severity)) + ": " + u.summary);
    } else {
      w.exec_params(
          "UPDATE incidents SET suspect = coalesce(suspect, $2), suspect_port = coalesce(suspect_port, $3), "
          "updated_at = now() WHERE id = $1",
          u.incident_id, opt_text(u.suspect), opt_text(suspect_port));
    }
    if (u.corroborated) {
      // Once per incident: the first time counters and probes agree is the news.
      w.exec_params(
          "INSERT INTO incident_events (incident_id, at, state, note) SELECT $1, $2::timestamptz, 'corroborated', "
          "'counters and active probes agree' WHERE NOT EXISTS (SELECT 1 FROM incident_events WHERE incident_id = $1 "
          "AND state = 'corroborated')",
          u.incident_id, ts(u.detected_at));
    }
    w.commit();
    return Ok{};
  });
}

Status IncidentStore::add_findings(int64_t incident_id, const std::vector<detectors::Finding>& findings,
                              const fabric::Topology& t) {
  return c_.run("add_findings", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    insert_findings(w, incident_id, findings, t);
    w.exec_params("UPDATE incidents SET updated_at = now() WHERE id = $1", incident_id);
    w.commit();
    return Ok{};
  });
}

Status IncidentStore::resolve_incident(const triage::IncidentUpdate& u, const fabric::Topology& t, Time now) {
  return c_.run("resolve_incident", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    const auto r = w.exec_params(
        "UPDATE incidents SET state = 'closed', closed_at = coalesce(closed_at, GREATEST($2::timestamptz, started_at, "
        "detected_at, triaged_at, mitigated_at)), updated_at = now() "
        "WHERE id = $1 AND state NOT IN ('closed', 'dismissed')",
        u.incident_id, ts(now));
    if (r.affected_rows() != 1) return Ok{};  // closed or dismissed already: nothing to do
    insert_findings(w, u.incident_id, u.findings, t);
    insert_event(w, u.incident_id, now, "closed", u.summary);
    w.commit();
    return Ok{};
  });
}

Status IncidentStore::record_noted(const std::vector<triage::NotedFinding>& noted, const fabric::Topology& t) {
  if (noted.empty()) return Ok{};
  return c_.run("record_noted", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    for (const auto& n : noted) insert_finding(w, 0, n.finding, t, n.note);
    w.commit();
    return Ok{};
  });
}

Result<std::vector<FindingRow>> IncidentStore::findings(int64_t incident_id) {
  return c_.run("findings", [&](Pq& pq) -> Result<std::vector<FindingRow>> {
    pqxx::nontransaction n(pq.c);
    const auto r = n.exec_params(
        "SELECT id, coalesce(incident_id, 0), kind, severity, coalesce(link, ''), "
        "coalesce(device, ''), coalesce(port, ''), summary, evidence::text, " MEDIC_US("first_seen") ", "
        MEDIC_US("observed_at") ", coalesce(note, '') FROM findings WHERE incident_id = $1 ORDER BY id",
        incident_id);
    std::vector<FindingRow> out;
    for (const auto& row : r) {
      FindingRow f;
      f.id = row[0].as<int64_t>();
      f.incident_id = row[1].as<int64_t>();
      f.kind = read_text(row[2]);
      f.severity = read_text(row[3]);
      f.link = read_text(row[4]);
      f.device = read_text(row[5]);
      f.port = read_text(row[6]);
      f.summary = read_text(row[7]);
      f.evidence_json = read_text(row[8]);
      f.first_seen = *read_time(row[9]);
      f.observed_at = *read_time(row[10]);
      f.note = read_text(row[11]);
      out.push_back(std::move(f));
    }
    return out;
  });
}

Result<std::vector<IncidentEventRow>> IncidentStore::incident_events(int64_t incident_id) {
  return c_.run("incident_events", [&](Pq& pq) -> Result<std::vector<IncidentEventRow>> {
    pqxx::nontransaction n(pq.c);
    const auto r = n.exec_params("SELECT id, " MEDIC_US("at") ", state, note FROM incident_events "
                                 "WHERE incident_id = $1 ORDER BY id",
                                 incident_id);
    std::vector<IncidentEventRow> out;
    for (const auto& row : r) out.push_back({row[0].as<int64_t>(), *read_time(row[1]), read_text(row[2]), read_text(row[3])});
    return out;
  });
}

Result<std::vector<IncidentRow>> IncidentStore::closed_since(Time since) {
  return c_.run("closed_since", [&](Pq& pq) -> Result<std::vector<IncidentRow>> {
    pqxx::nontransaction n(pq.c);
    const auto r = n.exec_params(std::string("SELECT ") + kIncidentColumns +
                                     " FROM incidents WHERE state IN ('closed', 'dismissed') AND "
                                     "coalesce(closed_at, dismissed_at) >= $1::timestamptz ORDER BY id",
                                 ts(since));
    std::vector<IncidentRow> out;
    for (const auto& row : r) out.push_back(read_incident(row));
    return out;
  });
}

Status IncidentStore::set_incident_state(int64_t id, triage::IncidentState state, Time at, const std::string& reason) {
  using S = triage::IncidentState;
  // One fixed statement per state: the stage column is never spliced from input. A stage
  // time is never before one already recorded (MEDIC_AFTER_STAGES): the times come from
  // different clocks (each daemon's, the command line's) and a wall clock may be stepped
  // back, and a stage that seemed to end before it began would be a negative stage time.
#define MEDIC_AFTER_STAGES                                                                                      \
  "GREATEST($2::timestamptz, started_at, detected_at, triaged_at, mitigated_at, repair_requested_at, repaired_at, " \
  "validating_since, validated_at, undrained_at)"
  const char* sql = nullptr;
  switch (state) {
    case S::detected: sql = "UPDATE incidents SET state = 'detected', updated_at = now() WHERE id = $1 AND $2::timestamptz IS NOT NULL"; break;
    case S::triaged: sql = "UPDATE incidents SET state = 'triaged', triaged_at = coalesce(triaged_at, " MEDIC_AFTER_STAGES "), updated_at = now() WHERE id = $1"; break;
    case S::blocked: sql = "UPDATE incidents SET state = 'blocked', blocked_reason = $3, updated_at = now() WHERE id = $1 AND $2::timestamptz IS NOT NULL"; break;
    case S::mitigated: sql = "UPDATE incidents SET state = 'mitigated', blocked_reason = NULL, mitigated_at = coalesce(mitigated_at, " MEDIC_AFTER_STAGES "), updated_at = now() WHERE id = $1"; break;
    case S::repair_requested: sql = "UPDATE incidents SET state = 'repair_requested', repair_requested_at = coalesce(repair_requested_at, " MEDIC_AFTER_STAGES "), updated_at = now() WHERE id = $1"; break;
    case S::repaired: sql = "UPDATE incidents SET state = 'repaired', repaired_at = coalesce(repaired_at, " MEDIC_AFTER_STAGES "), updated_at = now() WHERE id = $1"; break;
    case S::validated: sql = "UPDATE incidents SET state = 'validated', validated_at = coalesce(validated_at, " MEDIC_AFTER_STAGES "), updated_at = now() WHERE id = $1"; break;
    case S::undrained: sql = "UPDATE incidents SET state = 'undrained', undrained_at = coalesce(undrained_at, " MEDIC_AFTER_STAGES "), updated_at = now() WHERE id = $1"; break;
    case S::closed: sql = "UPDATE incidents SET state = 'closed', closed_at = coalesce(closed_at, " MEDIC_AFTER_STAGES "), updated_at = now() WHERE id = $1"; break;
    case S::dismissed: sql = "UPDATE incidents SET state = 'dismissed', dismissed_at = coalesce(dismissed_at, " MEDIC_AFTER_STAGES "), blocked_reason = coalesce($3, blocked_reason), updated_at = now() WHERE id = $1"; break;
    case S::escalated: sql = "UPDATE incidents SET state = 'escalated', escalated_at = coalesce(escalated_at, " MEDIC_AFTER_STAGES "), blocked_reason = coalesce($3, blocked_reason), updated_at = now() WHERE id = $1"; break;
    case S::pending_approval: sql = "UPDATE incidents SET state = 'pending_approval', approval_reason = $3, updated_at = now() WHERE id = $1 AND $2::timestamptz IS NOT NULL"; break;
    case S::validating: sql = "UPDATE incidents SET state = 'validating', validating_since = " MEDIC_AFTER_STAGES ", updated_at = now() WHERE id = $1"; break;
    case S::kCount: return Error{"set_incident_state: no such state"};
  }
#undef MEDIC_AFTER_STAGES
  return c_.run("set_incident_state", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    pqxx::result r;
    if (state == S::blocked || state == S::dismissed || state == S::escalated || state == S::pending_approval) {
      r = w.exec_params(sql, id, ts(at), opt_text(reason));
    } else {
      r = w.exec_params(sql, id, ts(at));
    }
    if (r.affected_rows() != 1) return Error{"no incident with id " + std::to_string(id)};
    insert_event(w, id, at, std::string(triage::to_string(state)), reason);
    w.commit();
    return Ok{};
  });
}

}  // namespace medic::db
