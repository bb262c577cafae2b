// Incidents and their findings and history.
#include "db/incident_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/json.h"
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

namespace {

// An update's findings as one JSON array, for one INSERT ... SELECT over
// jsonb_array_elements (in their order): a finding a round trip had been most of an opened
// incident's statements. Text that is not UTF-8 has its bad bytes replaced (json_text).
std::string findings_array(std::span<const detectors::Finding> findings, const fabric::Topology& t,
                           std::span<const std::string> notes = {}) {
  json a = json::array();
  for (size_t i = 0; i < findings.size(); ++i) {
    const detectors::Finding& f = findings[i];
    json e = json::object();
    for (const auto& [k, v] : f.evidence) e[k] = v;
    // The reporting port, written "device:port": it may be on another device than the one
    // at fault (a ToR port reporting a host's pause frames).
    a.push_back({{"kind", detectors::to_string(f.kind)},
                 {"severity", detectors::to_string(f.severity)},
                 {"link", f.link != fabric::kNone ? json(t.link(f.link).name) : json(nullptr)},
                 {"device", f.device != fabric::kNone ? json(t.device(f.device).name) : json(nullptr)},
                 {"port", f.port != fabric::kNone ? json(t.endpoint_name(f.port)) : json(nullptr)},
                 {"summary", f.summary},
                 {"evidence", std::move(e)},
                 {"first_seen", ts(f.first_seen)},
                 {"observed_at", ts(f.observed_at)},
                 {"note", i < notes.size() && !notes[i].empty() ? json(notes[i]) : json(nullptr)}});
  }
  return json_text(a);
}

// The INSERT of the findings in JSON parameter $param, for the incident the CTE `from`
// names (nullptr: findings of no incident).
std::string insert_findings_from(const char* from, int param) {
  const std::string incident = from != nullptr ? std::string(from) + ".id" : "NULL::bigint";
  const std::string source = from != nullptr ? std::string(from) + ", " : "";
  return "INSERT INTO findings (incident_id, kind, severity, link, device, port, summary, evidence, first_seen, "
         "observed_at, note) SELECT " + incident + ", x.f->>'kind', x.f->>'severity', x.f->>'link', x.f->>'device', "
         "x.f->>'port', x.f->>'summary', x.f->'evidence', (x.f->>'first_seen')::timestamptz, "
         "(x.f->>'observed_at')::timestamptz, x.f->>'note' FROM " + source + "jsonb_array_elements($" +
         std::to_string(param) + "::jsonb) WITH ORDINALITY AS x(f, n) ORDER BY x.n";
}

// A loss estimate for the incident's row ("" leaves it as it is: none, or not a drainable link's).
std::string loss_text(double loss) { return loss > 0 ? fmt::format("{}", loss) : ""; }

// Each kind of update is one statement (the incident's row, its findings and its history
// together), run in the caller's transaction. `id` is the incident's (ignored for a new one).

int64_t exec_open(pqxx::work& w, const triage::IncidentUpdate& u, const fabric::Topology& t, Time now, double loss) {
  static const std::string sql =
      "WITH i AS (INSERT INTO incidents (class, state, severity, link, device, summary, started_at, detected_at, "
      "triaged_at, suspect, suspect_port, loss_estimate) VALUES ($1, 'triaged', $2, $3, $4, $5, $6::timestamptz, "
      "$7::timestamptz, $8::timestamptz, $9, $10, $11::double precision) RETURNING id), "
      "f AS (" + insert_findings_from("i", 12) + "), "
      "e AS (INSERT INTO incident_events (incident_id, at, state, note) SELECT i.id, v.at, v.state, v.note FROM i, "
      "(VALUES (1, $7::timestamptz, 'detected', $5::text), (2, $8::timestamptz, 'triaged', '')) AS v(n, at, state, note) "
      "ORDER BY v.n) "
      "SELECT id FROM i";
  const std::string link = u.link != fabric::kNone ? t.link(u.link).name : "";
  const std::string device = incident_device(u, t);
  const std::string suspect_port = u.suspect_port != fabric::kNone ? t.endpoint_name(u.suspect_port) : "";
  const std::string l = loss_text(loss);
  const auto r = w.exec_params(sql, std::string(triage::to_string(u.cls)), std::string(detectors::to_string(u.severity)),
                               opt_text(link), opt_text(device), u.summary, ts(u.started_at), ts(u.detected_at), ts(now),
                               opt_text(u.suspect), opt_text(suspect_port), opt_text(l), findings_array(u.findings, t));
  return r[0][0].as<int64_t>();
}

Status exec_reopen(pqxx::work& w, int64_t id, const triage::IncidentUpdate& u, const fabric::Topology& t, Time now,
                   double loss) {
  // A fault that comes back needs its approvals again (the audit trail keeps the old ones).
  static const std::string sql =
      "WITH u AS (UPDATE incidents SET state = 'triaged', severity = $2, summary = $3, started_at = $4::timestamptz, "
      "detected_at = $5::timestamptz, triaged_at = $6::timestamptz, mitigated_at = NULL, "
      "repair_requested_at = NULL, repaired_at = NULL, validated_at = NULL, undrained_at = NULL, "
      "closed_at = NULL, dismissed_at = NULL, escalated_at = NULL, blocked_reason = NULL, "
      "approved_by = NULL, approved_at = NULL, "
      "suspect = coalesce($7, suspect), suspect_port = coalesce($8, suspect_port), "
      "loss_estimate = coalesce($9::double precision, loss_estimate), "
      "reopen_count = reopen_count + 1, reopened_at = $6::timestamptz, updated_at = now() "
      "WHERE id = $1 AND state IN ('closed', 'dismissed') RETURNING id), "
      "a AS (DELETE FROM approvals WHERE incident_id IN (SELECT id FROM u)), "
      "f AS (" + insert_findings_from("u", 10) + "), "
      "e AS (INSERT INTO incident_events (incident_id, at, state, note) SELECT id, $6::timestamptz, 'reopened', $3 FROM u) "
      "SELECT count(*) FROM u";
  const std::string suspect_port = u.suspect_port != fabric::kNone ? t.endpoint_name(u.suspect_port) : "";
  const std::string l = loss_text(loss);
  const auto r = w.exec_params(sql, id, std::string(detectors::to_string(u.severity)), u.summary, ts(u.started_at),
                               ts(u.detected_at), ts(now), opt_text(u.suspect), opt_text(suspect_port), opt_text(l),
                               findings_array(u.findings, t));
  if (r[0][0].as<int64_t>() != 1) return Error{"no closed incident with id " + std::to_string(id)};
  return Ok{};
}

Status exec_add(pqxx::work& w, int64_t id, const triage::IncidentUpdate& u, const fabric::Topology& t, bool escalated,
                double loss) {
  // Severity only rises, whatever the update believed the stored one to be: the row is
  // raised (and the event written) only when the new severity is above the stored one
  // (`o`, the row as the statement found it). Corroboration is news once per incident: the
  // first time counters and probes agree.
  static const std::string sql =
      "WITH o AS (SELECT id, ($6::boolean AND array_position(ARRAY['info', 'warning', 'critical'], severity) < "
      "array_position(ARRAY['info', 'warning', 'critical'], $2::text)) AS raise FROM incidents WHERE id = $1), "
      "u AS (UPDATE incidents i SET severity = CASE WHEN o.raise THEN $2 ELSE i.severity END, "
      "summary = CASE WHEN o.raise THEN $3 ELSE i.summary END, suspect = coalesce(i.suspect, $4), "
      "suspect_port = coalesce(i.suspect_port, $5), loss_estimate = coalesce($7::double precision, i.loss_estimate), "
      "updated_at = now() FROM o WHERE i.id = o.id RETURNING i.id, o.raise), "
      "f AS (" + insert_findings_from("u", 11) + "), "
      "e AS (INSERT INTO incident_events (incident_id, at, state, note) SELECT u.id, $8::timestamptz, v.state, v.note "
      "FROM u, (VALUES (1, 'escalated_severity', $9::text), (2, 'corroborated', 'counters and active probes agree')) "
      "AS v(n, state, note) WHERE (v.n = 1 AND u.raise) OR (v.n = 2 AND $10::boolean AND NOT EXISTS "
      "(SELECT 1 FROM incident_events WHERE incident_id = $1 AND state = 'corroborated')) ORDER BY v.n) "
      "SELECT count(*) FROM u";
  const std::string suspect_port = u.suspect_port != fabric::kNone ? t.endpoint_name(u.suspect_port) : "";
  const std::string l = loss_text(loss);
  const std::string raised_note = std::string(detectors::to_string(u.previous_severity)) + " -> " +
                                  std::string(detectors::to_string(u.severity)) + ": " + u.summary;
  const auto r = w.exec_params(sql, id, std::string(detectors::to_string(u.severity)), u.summary, opt_text(u.suspect),
                               opt_text(suspect_port), escalated, opt_text(l), ts(u.detected_at), raised_note,
                               u.corroborated, findings_array(u.findings, t));
  if (r[0][0].as<int64_t>() != 1) return Error::not_found("no incident with id " + std::to_string(id));
  return Ok{};
}

void exec_resolve(pqxx::work& w, int64_t id, const triage::IncidentUpdate& u, const fabric::Topology& t, Time now) {
  // Closed or dismissed already: nothing to do.
  static const std::string sql =
      "WITH u AS (UPDATE incidents SET state = 'closed', closed_at = coalesce(closed_at, GREATEST($2::timestamptz, "
      "started_at, detected_at, triaged_at, mitigated_at)), updated_at = now() "
      "WHERE id = $1 AND state NOT IN ('closed', 'dismissed') RETURNING id), "
      "f AS (" + insert_findings_from("u", 4) + "), "
      "e AS (INSERT INTO incident_events (incident_id, at, state, note) SELECT id, $2::timestamptz, 'closed', $3 FROM u) "
      "SELECT count(*) FROM u";
  w.exec_params(sql, id, ts(now), u.summary, findings_array(u.findings, t));
}

}  // namespace

Result<int64_t> IncidentStore::open_incident(const triage::IncidentUpdate& u, const fabric::Topology& t, Time now,
                                             double loss) {
  return c_.run("open_incident", [&](Pq& pq) -> Result<int64_t> {
    pqxx::work w(pq.c);
    const int64_t id = exec_open(w, u, t, now, loss);
    w.commit();
    return id;
  });
}

Status IncidentStore::reopen_incident(const triage::IncidentUpdate& u, const fabric::Topology& t, Time now, double loss) {
  return c_.run("reopen_incident", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    if (auto st = exec_reopen(w, u.incident_id, u, t, now, loss); !st.ok()) return st;
    w.commit();
    return Ok{};
  });
}

Status IncidentStore::add_findings(const triage::IncidentUpdate& u, const fabric::Topology& t, double loss) {
  return c_.run("add_findings", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    if (auto st = exec_add(w, u.incident_id, u, t, u.escalated(), loss); !st.ok()) return st;
    w.commit();
    return Ok{};
  });
}

Result<RecordedUpdates> IncidentStore::record_updates(std::span<const triage::IncidentUpdate> updates,
                                                      std::span<const double> loss, const fabric::Topology& t,
                                                      Time now) {
  std::vector<int64_t> ids;
  PendingCommit commit;
  bool committing = false;
  auto r = c_.run("record_updates", [&](Pq& pq) -> Status {
    // run() retries a call whose connection broke: never once COMMIT was sent, which may
    // have committed (asked below instead).
    if (committing) return Error::unavailable("record_updates: the connection was lost during COMMIT");
    ids.assign(updates.size(), 0);
    pqxx::work w(pq.c);
    // Which transaction and which server process this is: what is asked if COMMIT's answer
    // is lost (the process named by its start too, as process ids are reused).
    const auto who = w.exec("SELECT pg_current_xact_id()::text, pg_backend_pid(), "
                            "(SELECT backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid())")[0];
    commit = {who[0].as<std::string>(), who[1].as<int64_t>(), read_text(who[2])};
    // The incidents already there are locked first, in id order, as set_incident_states
    // locks its own: taken in the batch's order instead, a poll's updates and an engineer's
    // several changes at once could each hold a row the other waits for.
    std::vector<int64_t> existing;
    for (size_t i = 0; i < updates.size(); ++i) {
      const auto& u = updates[i];
      const bool follows = u.follows >= 0 && static_cast<size_t>(u.follows) < i;
      if (!follows && u.incident_id != 0) existing.push_back(u.incident_id);
    }
    if (!existing.empty()) {
      std::sort(existing.begin(), existing.end());
      existing.erase(std::unique(existing.begin(), existing.end()), existing.end());
      w.exec_params("SELECT id FROM incidents WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY UPDATE",
                    id_array(existing));
    }
    for (size_t i = 0; i < updates.size(); ++i) {
      const triage::IncidentUpdate& u = updates[i];
      const double l = i < loss.size() ? loss[i] : 0;
      // Its incident is the one an earlier update of the batch opened.
      int64_t id = u.incident_id;
      if (u.follows >= 0 && static_cast<size_t>(u.follows) < i) id = ids[static_cast<size_t>(u.follows)];
      const std::string which = "update " + std::to_string(i + 1) + " of " + std::to_string(updates.size()) + ": ";
      if (u.resolved) {
        if (id != 0) exec_resolve(w, id, u, t, now);
      } else if (id == 0) {
        id = exec_open(w, u, t, now, l);
      } else if (u.reopened) {
        if (auto st = exec_reopen(w, id, u, t, now, l); !st.ok()) return Error{which + st.error(), st.kind()};
      } else {
        // As IncidentUpdate::escalated(), for an update whose incident the batch opened.
        const bool escalated = u.severity > u.previous_severity;
        if (auto st = exec_add(w, id, u, t, escalated, l); !st.ok()) return Error{which + st.error(), st.kind()};
      }
      ids[i] = id;
    }
    committing = true;
    try {
      w.commit();
    } catch (const pqxx::transaction_rollback&) {
      // Refused, so certainly not committed (a serialization failure under a SERIALIZABLE
      // default): run() runs the batch again.
      committing = false;
      throw;
    }
    committing = false;
    return Ok{};
  });
  if (r.ok()) return RecordedUpdates{std::move(ids), std::nullopt};
  if (!committing) return r.failure();
  // COMMIT went and its answer did not come back: ask the server what became of it.
  const auto outcome = commit_outcome(commit);
  if (outcome.ok() && *outcome == CommitOutcome::committed) return RecordedUpdates{std::move(ids), std::nullopt};
  if (outcome.ok() && *outcome == CommitOutcome::aborted) {
    return Error::unavailable("record_updates: the connection was lost during COMMIT, and the transaction did not commit");
  }
  spdlog::warn("record_updates: the connection was lost during COMMIT of transaction {}; whether it committed is not "
               "known yet ({})", commit.xid, outcome.ok() ? "the server no longer knows" : outcome.error());
  return RecordedUpdates{std::move(ids), commit};
}

Result<CommitOutcome> IncidentStore::commit_outcome(const PendingCommit& commit) {
  bool ended = false;
  for (int ask = 0; ask < 10; ++ask) {
    if (ask > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto status = c_.run("commit_outcome", [&](Pq& pq) -> Result<std::string> {
      pqxx::nontransaction n(pq.c);
      return n.exec_params("SELECT coalesce(pg_xact_status($1::xid8), 'unknown')", commit.xid)[0][0].as<std::string>();
    });
    if (!status.ok()) return status.failure();
    if (*status == "committed") return CommitOutcome::committed;
    if (*status == "aborted") return CommitOutcome::aborted;
    if (*status == "unknown") return CommitOutcome::unknown;
    // In progress: its server process has not noticed that its client went (a network
    // that dropped the connection without a word, or a COMMIT still being written). Ended
    // now, it rolls back what did not commit, or finishes the commit it had begun.
    if (!ended) {
      ended = true;
      const auto st = c_.run("commit_outcome: ending the lost session", [&](Pq& pq) -> Status {
        pqxx::nontransaction n(pq.c);
        n.exec_params("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1 AND "
                      "backend_start = $2::timestamptz",
                      commit.backend_pid, commit.backend_start);
        return Ok{};
      });
      if (!st.ok()) return st.failure();
    }
  }
  return Error::unavailable("commit_outcome: transaction " + commit.xid + " is still in progress");
}

Status IncidentStore::add_findings(int64_t incident_id, const std::vector<detectors::Finding>& findings,
                                  const fabric::Topology& t) {
  static const std::string sql = "WITH u AS (UPDATE incidents SET updated_at = now() WHERE id = $1 RETURNING id), "
                                 "f AS (" + insert_findings_from("u", 2) + ") SELECT count(*) FROM u";
  return c_.run("add_findings", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    if (w.exec_params(sql, incident_id, findings_array(findings, t))[0][0].as<int64_t>() != 1) {
      return Error::not_found("no incident with id " + std::to_string(incident_id));
    }
    w.commit();
    return Ok{};
  });
}

Status IncidentStore::resolve_incident(const triage::IncidentUpdate& u, const fabric::Topology& t, Time now) {
  return c_.run("resolve_incident", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    exec_resolve(w, u.incident_id, u, t, now);
    w.commit();
    return Ok{};
  });
}

Status IncidentStore::record_noted(const std::vector<triage::NotedFinding>& noted, const fabric::Topology& t) {
  if (noted.empty()) return Ok{};
  static const std::string sql = insert_findings_from(nullptr, 1);
  std::vector<detectors::Finding> findings;
  std::vector<std::string> notes;
  findings.reserve(noted.size());
  notes.reserve(noted.size());
  for (const auto& n : noted) {
    findings.push_back(n.finding);
    notes.push_back(n.note);
  }
  return c_.run("record_noted", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    w.exec_params(sql, findings_array(findings, t, notes));
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
  const int64_t ids[] = {id};
  const std::string reasons[] = {reason};
  return set_incident_states(ids, state, at, reasons);
}

Status IncidentStore::set_incident_states(std::span<const int64_t> ids, triage::IncidentState state, Time at,
                                          std::span<const std::string> reasons) {
  using S = triage::IncidentState;
  if (ids.empty()) return Ok{};
  // One fixed SET clause per state: the stage column is never spliced from input. A stage
  // time is never before one already recorded (MEDIC_AFTER_STAGES): the times come from
  // different clocks (each daemon's, the command line's) and a wall clock may be stepped
  // back, and a stage that seemed to end before it began would be a negative stage time.
  // x.reason is the incident's reason (NULL for none).
#define MEDIC_AFTER_STAGES                                                                                      \
  "GREATEST($2::timestamptz, started_at, detected_at, triaged_at, mitigated_at, repair_requested_at, repaired_at, " \
  "validating_since, validated_at, undrained_at)"
  const char* set = nullptr;
  switch (state) {
    case S::detected: set = "state = 'detected'"; break;
    case S::triaged: set = "state = 'triaged', triaged_at = coalesce(triaged_at, " MEDIC_AFTER_STAGES ")"; break;
    case S::blocked: set = "state = 'blocked', blocked_reason = x.reason"; break;
    case S::mitigated: set = "state = 'mitigated', blocked_reason = NULL, mitigated_at = coalesce(mitigated_at, " MEDIC_AFTER_STAGES ")"; break;
    case S::repair_requested: set = "state = 'repair_requested', repair_requested_at = coalesce(repair_requested_at, " MEDIC_AFTER_STAGES ")"; break;
    case S::repaired: set = "state = 'repaired', repaired_at = coalesce(repaired_at, " MEDIC_AFTER_STAGES ")"; break;
    case S::validated: set = "state = 'validated', validated_at = coalesce(validated_at, " MEDIC_AFTER_STAGES ")"; break;
    case S::undrained: set = "state = 'undrained', undrained_at = coalesce(undrained_at, " MEDIC_AFTER_STAGES ")"; break;
    case S::closed: set = "state = 'closed', closed_at = coalesce(closed_at, " MEDIC_AFTER_STAGES ")"; break;
    case S::dismissed: set = "state = 'dismissed', dismissed_at = coalesce(dismissed_at, " MEDIC_AFTER_STAGES "), blocked_reason = coalesce(x.reason, blocked_reason)"; break;
    case S::escalated: set = "state = 'escalated', escalated_at = coalesce(escalated_at, " MEDIC_AFTER_STAGES "), blocked_reason = coalesce(x.reason, blocked_reason)"; break;
    case S::pending_approval: set = "state = 'pending_approval', approval_reason = x.reason"; break;
    case S::validating: set = "state = 'validating', validating_since = " MEDIC_AFTER_STAGES; break;
    case S::kCount: return Error{"set_incident_state: no such state"};
  }
#undef MEDIC_AFTER_STAGES
  const bool with_reason = state == S::blocked || state == S::dismissed || state == S::escalated || state == S::pending_approval;
  // One statement for every incident named (their rows and history lines), in a
  // transaction of its own: a wave's dozens of incidents queued for approval had taken four
  // round trips each. All or none: if one is not found, none moves and the error names it.
  // Run again (a retry after a lost connection, or the workflow's after a COMMIT whose answer
  // was lost), the states and their stage times come out the same, and a history line the
  // same as the incident's last is not written again. For that the rows are locked first,
  // in a statement of their own: the first try's transaction may still be open on the
  // server (its COMMIT on the way, or its connection not yet noticed gone), and the
  // statement below, had it waited on those rows itself, would have judged the history
  // from before that transaction ended and written its line a second time.
  const std::string stmt =
      std::string("WITH x AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(id bigint, reason text, note text)), "
                  "missing AS (SELECT x.id FROM x LEFT JOIN incidents i ON i.id = x.id WHERE i.id IS NULL), "
                  "u AS (UPDATE incidents SET ") + set + ", updated_at = now() FROM x WHERE incidents.id = x.id "
      "AND NOT EXISTS (SELECT 1 FROM missing) RETURNING incidents.id, coalesce(x.note, '') AS note), "
      "e AS (INSERT INTO incident_events (incident_id, at, state, note) SELECT u.id, $2::timestamptz, $3, u.note FROM u "
      "WHERE NOT EXISTS (SELECT 1 FROM (SELECT v.at, v.state, v.note FROM incident_events v WHERE v.incident_id = u.id "
      "ORDER BY v.id DESC LIMIT 1) last WHERE last.at = $2::timestamptz AND last.state = $3 AND last.note = u.note)) "
      "SELECT coalesce(string_agg(id::text, ', ' ORDER BY id), '') FROM missing";
  json rows = json::array();
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string& why = i < reasons.size() ? reasons[i] : std::string();
    // reason: what the state's column takes (NULL: none, or kept where the state keeps the
    // old one); note: the history line's, as given.
    rows.push_back({{"id", ids[i]}, {"reason", with_reason && !why.empty() ? json(why) : json(nullptr)}, {"note", why}});
  }
  const std::string name(triage::to_string(state));
  return c_.run("set_incident_state", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    const std::string rows_text = json_text(rows);
    w.exec_params("SELECT i.id FROM incidents i JOIN jsonb_to_recordset($1::jsonb) AS x(id bigint) ON i.id = x.id "
                  "ORDER BY i.id FOR NO KEY UPDATE OF i",
                  rows_text);
    const std::string missing = w.exec_params(stmt, rows_text, ts(at), name)[0][0].as<std::string>();
    if (!missing.empty()) {
      const bool one = missing.find(',') == std::string::npos;
      return Error{std::string(one ? "no incident with id " : "no incidents with ids ") + missing};
    }
    w.commit();
    return Ok{};
  });
}

}  // namespace medic::db
