// The remediation workflow's records: open cases, the action journal with its fencing, the
// circuit breaker; and remediation::RemediationStore on top of them for medicd.
#include "db/remediation_store.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "db/internal.h"

namespace medic::db {

using nlohmann::json;
using namespace internal;

namespace {

std::optional<double> read_double(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<double>();
}

}  // namespace

Result<std::vector<CaseRow>> RemediationRecords::open_cases() {
  return c_.run("open_cases", [&](Pq& pq) -> Result<std::vector<CaseRow>> {
    pqxx::nontransaction n(pq.c);
    const auto r = n.exec(
        "SELECT id, class, severity, state, link, "
        "CASE WHEN state = 'pending_approval' THEN coalesce(approval_reason, '') ELSE coalesce(blocked_reason, '') END, "
        "coalesce(approved_by, ''), coalesce(loss_estimate, 0), validation_failures, " MEDIC_US("validating_since") ", "
        MEDIC_US("detected_at") ", " MEDIC_US("started_at") " FROM incidents "
        "WHERE link IS NOT NULL AND (state NOT IN ('closed', 'dismissed') OR (state = 'dismissed' AND EXISTS ("
        "SELECT 1 FROM links l WHERE l.name = incidents.link AND l.drain_state = 'drained' AND "
        "l.drain_incident_id = incidents.id))) ORDER BY id");
    std::vector<CaseRow> out;
    out.reserve(r.size());
    for (const auto& row : r) {
      CaseRow c;
      c.id = row[0].as<int64_t>();
      c.incident_class = read_text(row[1]);
      c.severity = read_text(row[2]);
      c.state = read_text(row[3]);
      c.link = read_text(row[4]);
      c.reason = read_text(row[5]);
      c.approved_by = read_text(row[6]);
      c.loss = row[7].as<double>();
      c.validation_failures = row[8].as<int>();
      c.validating_since = read_time(row[9]);
      c.detected_at = read_time(row[10]);
      c.started_at = read_time(row[11]);
      out.push_back(std::move(c));
    }
    return out;
  });
}

Result<std::vector<UnfinishedAction>> RemediationRecords::unfinished_actions() {
  return c_.run("unfinished_actions", [&](Pq& pq) -> Result<std::vector<UnfinishedAction>> {
    pqxx::nontransaction n(pq.c);
    const auto r = n.exec(
        "SELECT id, coalesce(incident_id, 0), link, kind, state, " MEDIC_US("intent_at") ", traffic_before "
        "FROM actions WHERE state IN ('intent', 'applied') ORDER BY id");
    std::vector<UnfinishedAction> out;
    for (const auto& row : r) {
      UnfinishedAction a;
      a.id = row[0].as<int64_t>();
      a.incident_id = row[1].as<int64_t>();
      a.link = read_text(row[2]);
      a.kind = read_text(row[3]);
      a.state = read_text(row[4]);
      a.intent_at = *read_time(row[5]);
      a.traffic_before = read_double(row[6]).value_or(-1);
      out.push_back(std::move(a));
    }
    return out;
  });
}

Result<std::vector<std::pair<std::string, Time>>> RemediationRecords::drains_since(Time since) {
  return c_.run("drains_since", [&](Pq& pq) -> Result<std::vector<std::pair<std::string, Time>>> {
    pqxx::nontransaction n(pq.c);
    const auto r = n.exec_params(
        "SELECT link, " MEDIC_US("intent_at") " FROM actions WHERE kind = 'drain' "
        "AND state NOT IN ('refused', 'reconciled') AND intent_at >= $1::timestamptz ORDER BY intent_at",
        ts(since));
    std::vector<std::pair<std::string, Time>> out;
    for (const auto& row : r) out.emplace_back(read_text(row[0]), *read_time(row[1]));
    return out;
  });
}

Status RemediationRecords::set_validation(int64_t incident, int failures, std::optional<Time> since) {
  return c_.run("set_validation", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    const std::string at = since ? ts(*since) : "";
    const auto r = w.exec_params(
        "UPDATE incidents SET validation_failures = $2, validating_since = $3::timestamptz, updated_at = now() "
        "WHERE id = $1",
        incident, failures, opt_text(at));
    if (r.affected_rows() != 1) return Error::not_found("no incident with id " + std::to_string(incident));
    w.commit();
    return Ok{};
  });
}

Status RemediationRecords::set_loss(int64_t incident, double loss) {
  return c_.run("set_loss", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    w.exec_params("UPDATE incidents SET loss_estimate = $2 WHERE id = $1", incident, loss);
    w.commit();
    return Ok{};
  });
}

Result<int64_t> RemediationRecords::begin_action(const remediation::ActionIntent& in, const std::string& link,
                                       double traffic_before, const std::string& daemon, int64_t epoch) {
  return c_.run("begin_action", [&](Pq& pq) -> Result<int64_t> {
    pqxx::work w(pq.c);
    if (!daemon.empty()) {
      // Fencing: the leader row is locked for the rest of this transaction, so a new leader
      // cannot take over between this check and the insert.
      const auto l = w.exec_params("SELECT 1 FROM leader WHERE id = 1 AND daemon = $1 AND epoch = $2 FOR SHARE",
                                   daemon, epoch);
      if (l.empty()) {
        return Error::conflict(daemon + " no longer leads (epoch " + std::to_string(epoch) + "): switch not touched");
      }
    }
    const std::string kind(remediation::to_string(in.kind));
    const std::string before = traffic_before >= 0 ? std::to_string(traffic_before) : "";
    const auto r = w.exec_params(
        "INSERT INTO actions (incident_id, link, kind, state, intent_at, daemon, traffic_before) "
        "VALUES (nullif($1, 0), $2, $3, 'intent', $4::timestamptz, $5, $6::double precision) RETURNING id",
        in.incident_id, link, kind, ts(in.at), daemon, opt_text(before));
    const auto u = w.exec_params(
        "UPDATE links SET drain_state = $2, drain_changed_at = $3::timestamptz, "
        "drain_incident_id = nullif($4, 0), updated_at = now() WHERE name = $1",
        link, std::string(in.kind == remediation::ActionKind::drain ? "draining" : "undraining"), ts(in.at),
        in.incident_id);
    if (u.affected_rows() != 1) return Error::not_found("begin_action: no link " + link + " in the inventory");
    const int64_t id = r[0][0].as<int64_t>();
    insert_audit(w, actor_, in.at, kind, in.incident_id, link, "",
                 "{\"action\": " + std::to_string(id) + ", \"phase\": \"intent\"}");
    w.commit();
    return id;
  });
}

Status RemediationRecords::action_applied(int64_t action, const std::vector<std::string>& steps) {
  return c_.run("action_applied", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    const json s = steps;
    const auto r = w.exec_params(
        "UPDATE actions SET state = 'applied', steps = $2::jsonb WHERE id = $1 AND state IN ('intent', 'applied')",
        action, s.dump());
    if (r.affected_rows() != 1) return Error::conflict("action " + std::to_string(action) + " is not unfinished");
    w.commit();
    return Ok{};
  });
}

Status RemediationRecords::finish_action(int64_t action, const remediation::ActionIntent& in, const std::string& end,
                               bool link_drained, const std::string& reason, const std::vector<std::string>& steps,
                               Time at, const std::string& link) {
  return c_.run("finish_action", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    const json s = steps;
    const auto r = w.exec_params(
        "UPDATE actions SET state = $2, reason = $3, steps = $4::jsonb, result_at = GREATEST($5::timestamptz, intent_at) "
        "WHERE id = $1 AND state IN ('intent', 'applied')",  // never before its intent (a clock stepped back)
        action, end, opt_text(reason), s.dump(), ts(at));
    if (r.affected_rows() != 1) return Error::conflict("action " + std::to_string(action) + " is not unfinished");
    w.exec_params(
        "UPDATE links SET drain_state = $2, drain_changed_at = $3::timestamptz, "
        "drain_incident_id = CASE WHEN $2 = 'drained' THEN nullif($4, 0) ELSE NULL END, "
        "updated_at = now() WHERE name = $1",
        link, std::string(link_drained ? "drained" : "undrained"), ts(at), in.incident_id);
    insert_audit(w, actor_, at, std::string(remediation::to_string(in.kind)) + "_" + end, in.incident_id, link, reason,
                 "{\"action\": " + std::to_string(action) + "}");
    w.commit();
    return Ok{};
  });
}

Result<int> RemediationRecords::incidents_opened_since(Time since) {
  return c_.run("incidents_opened_since", [&](Pq& pq) -> Result<int> {
    pqxx::nontransaction n(pq.c);
    const auto r = n.exec_params("SELECT count(*) FROM incidents WHERE detected_at >= $1::timestamptz", ts(since));
    return r[0][0].as<int>();
  });
}

Result<BreakerRow> RemediationRecords::breaker() {
  return c_.run("breaker", [&](Pq& pq) -> Result<BreakerRow> {
    pqxx::nontransaction n(pq.c);
    const auto r = n.exec("SELECT open, " MEDIC_US("opened_at") ", coalesce(reason, ''), " MEDIC_US("reset_at")
                          ", coalesce(reset_by, '') FROM breaker WHERE id = 1");
    BreakerRow b;
    if (r.empty()) return b;
    b.open = r[0][0].as<bool>();
    b.opened_at = read_time(r[0][1]);
    b.reason = read_text(r[0][2]);
    b.reset_at = read_time(r[0][3]);
    b.reset_by = read_text(r[0][4]);
    return b;
  });
}

Status RemediationRecords::open_breaker(Time at, const std::string& reason) {
  return c_.run("open_breaker", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    w.exec_params("UPDATE breaker SET open = true, opened_at = $1::timestamptz, reason = $2 WHERE id = 1", ts(at),
                  reason);
    insert_audit(w, actor_, at, "breaker_open", 0, "", reason);
    w.commit();
    return Ok{};
  });
}

Result<std::vector<ActionRow>> RemediationRecords::actions(std::optional<int64_t> incident_id) {
  return c_.run("actions", [&](Pq& pq) -> Result<std::vector<ActionRow>> {
    pqxx::nontransaction n(pq.c);
    const std::string id = incident_id ? std::to_string(*incident_id) : "";
    const auto r = n.exec_params(
        "SELECT id, coalesce(incident_id, 0), link, kind, state, coalesce(reason, ''), steps::text, "
        MEDIC_US("intent_at") ", " MEDIC_US("result_at") " FROM actions "
        "WHERE ($1::bigint IS NULL OR incident_id = $1::bigint) ORDER BY id",
        opt_text(id));
    std::vector<ActionRow> out;
    for (const auto& row : r) {
      ActionRow a;
      a.id = row[0].as<int64_t>();
      a.incident_id = row[1].as<int64_t>();
      a.link = read_text(row[2]);
      a.kind = read_text(row[3]);
      a.state = read_text(row[4]);
      a.reason = read_text(row[5]);
      a.steps_json = read_text(row[6]);
      a.intent_at = *read_time(row[7]);
      a.result_at = read_time(row[8]);
      out.push_back(std::move(a));
    }
    return out;
  });
}

Status RemediationRecords::write_refusal(const remediation::ActionIntent& in, const std::string& link,
                               const std::string& reason) {
  return c_.run("write_refusal", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    w.exec_params(
        "INSERT INTO actions (incident_id, link, kind, state, reason, intent_at, result_at) "
        "VALUES (nullif($1, 0), $2, $3, 'refused', $4, $5::timestamptz, $5::timestamptz)",
        in.incident_id, link, std::string(remediation::to_string(in.kind)), reason, ts(in.at));
    insert_audit(w, actor_, in.at, std::string(remediation::to_string(in.kind)) + "_refused", in.incident_id, link, reason);
    w.commit();
    return Ok{};
  });
}

Result<std::vector<remediation::CaseRecord>> DbRemediationStore::open_cases() {
  auto rows = db_.open_cases();
  if (!rows.ok()) return rows.failure();
  std::vector<remediation::CaseRecord> out;
  for (const auto& r : *rows) {
    const auto link = topology_.find_link(r.link);
    const auto cls = triage::parse_incident_class(r.incident_class);
    const auto sev = detectors::parse_severity(r.severity);
    const auto state = triage::parse_incident_state(r.state);
    if (!link || !cls || !sev || !state) continue;  // a link no longer in the topology: not ours to act on
    if (!remediation::drainable(*cls)) continue;
    remediation::CaseRecord c;
    c.incident_id = r.id;
    c.link = *link;
    c.cls = *cls;
    c.severity = *sev;
    c.state = *state;
    c.loss = r.loss;
    c.validation_failures = r.validation_failures;
    c.validating_since = r.validating_since;
    c.approved = !r.approved_by.empty();
    c.blocked_reason = r.reason;
    c.fault_at = r.started_at ? r.started_at : r.detected_at;
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::vector<remediation::ActionRecord>> DbRemediationStore::unfinished_actions() {
  auto rows = db_.unfinished_actions();
  if (!rows.ok()) return rows.failure();
  std::vector<remediation::ActionRecord> out;
  for (const auto& r : *rows) {
    const auto link = topology_.find_link(r.link);
    if (!link) {
      spdlog::error("unfinished action {} on {}: link not in the topology; left for a person", r.id, r.link);
      continue;
    }
    remediation::ActionRecord a;
    a.id = r.id;
    a.incident_id = r.incident_id;
    a.link = *link;
    a.kind = r.kind == "undrain" ? remediation::ActionKind::undrain : remediation::ActionKind::drain;
    a.state = r.state;
    a.intent_at = r.intent_at;
    a.traffic_before = r.traffic_before;
    out.push_back(a);
  }
  return out;
}

Result<std::vector<std::pair<fabric::LinkId, Time>>> DbRemediationStore::drains_since(Time since) {
  auto rows = db_.drains_since(since);
  if (!rows.ok()) return rows.failure();
  std::vector<std::pair<fabric::LinkId, Time>> out;
  for (const auto& [name, at] : *rows) {
    if (const auto link = topology_.find_link(name)) out.emplace_back(*link, at);
  }
  return out;
}

Status DbRemediationStore::set_state(int64_t incident, triage::IncidentState state, Time at,
                                     const std::string& reason) {
  return incidents_.set_incident_state(incident, state, at, reason);
}

Status DbRemediationStore::set_states(std::span<const int64_t> incidents, triage::IncidentState state, Time at,
                                      std::span<const std::string> reasons) {
  return incidents_.set_incident_states(incidents, state, at, reasons);
}

Status DbRemediationStore::set_validation(int64_t incident, int failures, std::optional<Time> since) {
  return db_.set_validation(incident, failures, since);
}

Result<int64_t> DbRemediationStore::begin_action(const remediation::ActionIntent& intent, double traffic_before) {
  return db_.begin_action(intent, topology_.link(intent.link).name, traffic_before, daemon_, epoch_);
}

Status DbRemediationStore::action_applied(int64_t action, const std::vector<std::string>& steps) {
  return db_.action_applied(action, steps);
}

Status DbRemediationStore::finish_action(int64_t action, const remediation::ActionIntent& intent,
                                         remediation::ActionEnd end, bool link_drained, const std::string& reason,
                                         const std::vector<std::string>& steps, Time at) {
  return db_.finish_action(action, intent, std::string(remediation::to_string(end)), link_drained, reason, steps, at,
                           topology_.link(intent.link).name);
}

Status DbRemediationStore::record_refusal(const remediation::ActionIntent& intent, const std::string& reason) {
  return db_.write_refusal(intent, topology_.link(intent.link).name, reason);
}

Result<remediation::BreakerState> DbRemediationStore::breaker() {
  auto b = db_.breaker();
  if (!b.ok()) return b.failure();
  remediation::BreakerState s;
  s.open = b->open;
  s.opened_at = b->opened_at;
  s.reason = b->reason;
  return s;
}

Status DbRemediationStore::open_breaker(Time at, const std::string& reason) { return db_.open_breaker(at, reason); }

Result<int> DbRemediationStore::incidents_opened_since(Time since) { return db_.incidents_opened_since(since); }

}  // namespace medic::db
