// The repair queue's decisions: what people decide about incidents, and the breaker reset.
#include "db/queue_store.h"

#include <algorithm>

#include "common/strings.h"
#include "db/internal.h"

namespace medic::db {

using namespace internal;

namespace {

// The incident's state, or an error naming the id.
Result<std::string> locked_state(pqxx::work& w, int64_t id) {
  const auto r = w.exec_params("SELECT state FROM incidents WHERE id = $1 FOR UPDATE", id);
  if (r.empty()) return Error::not_found("no incident with id " + std::to_string(id));
  return r[0][0].as<std::string>();
}

// The incident's link ("" for a device incident), for the audit row.
std::string link_of(pqxx::work& w, int64_t id) {
  const auto r = w.exec_params("SELECT coalesce(link, '') FROM incidents WHERE id = $1", id);
  return r.empty() ? "" : r[0][0].as<std::string>();
}

}  // namespace

Result<Approval> QueueStore::approve_incident(int64_t id, const Actor& by, int required, const std::string& reason,
                                              Time at) {
  return c_.run("approve_incident", [&](Pq& pq) -> Result<Approval> {
    pqxx::work w(pq.c);
    auto st = locked_state(w, id);
    if (!st.ok()) return st.failure();
    if (*st != "pending_approval" && *st != "blocked" && *st != "triaged" && *st != "detected") {
      return Error::conflict("incident " + std::to_string(id) + " is " + *st +
                             ": only an incident waiting for its drain (pending_approval, blocked, triaged) can be approved");
    }
    const auto mine = w.exec_params("SELECT 1 FROM approvals WHERE incident_id = $1 AND who = $2", id, by.name);
    if (!mine.empty()) {
      return Error::conflict("incident " + std::to_string(id) + ": " + by.name +
                             " approved it already; another person must approve it");
    }
    w.exec_params("INSERT INTO approvals (incident_id, who, at) VALUES ($1, $2, $3::timestamptz)", id, by.name, ts(at));
    Approval a;
    a.required = std::max(1, required);
    for (const auto& row : w.exec_params("SELECT who FROM approvals WHERE incident_id = $1 ORDER BY at, who", id)) {
      a.by.push_back(row[0].as<std::string>());
    }
    a.given = static_cast<int>(a.by.size());
    a.approved = a.given >= a.required;
    const std::string names = join(a.by, ", ");
    if (a.approved) {
      w.exec_params(
          "UPDATE incidents SET approved_by = $2, approved_at = $3::timestamptz, updated_at = now() WHERE id = $1", id,
          names, ts(at));
    }
    insert_event(w, id, at, *st,
                 "drain approved by " + by.name +
                     (a.required > 1 ? " (" + std::to_string(a.given) + " of " + std::to_string(a.required) + ")" : ""));
    insert_audit(w, by, at, "approve", id, link_of(w, id), reason,
                 "{\"approvals\": " + std::to_string(a.given) + ", \"required\": " + std::to_string(a.required) + "}");
    w.commit();
    return a;
  });
}

Status QueueStore::mark_repaired(int64_t id, const Actor& by, const std::string& reason, Time at) {
  return c_.run("mark_repaired", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    auto st = locked_state(w, id);
    if (!st.ok()) return st.failure();
    if (*st != "repair_requested" && *st != "escalated") {
      return Error::conflict("incident " + std::to_string(id) + " is " + *st +
                             ": only a drained link waiting for repair (repair_requested, escalated) can be marked repaired");
    }
    const auto d = w.exec_params(
        "SELECT l.drain_state FROM incidents i JOIN links l ON l.name = i.link WHERE i.id = $1", id);
    if (d.empty() || d[0][0].as<std::string>() != "drained") {
      return Error::conflict("incident " + std::to_string(id) +
                             ": its link is not drained, so there is nothing to put back; dismiss it instead");
    }
    w.exec_params(
        "UPDATE incidents SET state = 'repaired', repaired_at = $2::timestamptz, updated_at = now() WHERE id = $1", id,
        ts(at));
    insert_event(w, id, at, "repaired", "marked repaired by " + by.name + (reason.empty() ? "" : ": " + reason));
    insert_audit(w, by, at, "repaired", id, link_of(w, id), reason);
    w.commit();
    return Ok{};
  });
}

Status QueueStore::dismiss_incident(int64_t id, const Actor& by, const std::string& what, const std::string& reason,
                                    Time at) {
  if (what != "reject" && what != "dismiss") return Error::invalid("dismiss_incident: " + quote(what) + " is not reject or dismiss");
  if (reason.empty()) return Error::invalid(what + " needs a reason");
  return c_.run("dismiss_incident", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    auto st = locked_state(w, id);
    if (!st.ok()) return st.failure();
    if (*st == "closed" || *st == "dismissed") {
      return Error::conflict("incident " + std::to_string(id) + " is already " + *st);
    }
    if (what == "reject" && *st != "pending_approval" && *st != "blocked" && *st != "triaged" && *st != "detected") {
      return Error::conflict("incident " + std::to_string(id) + " is " + *st +
                             ": only a drain not yet done (pending_approval, blocked, triaged) can be rejected; "
                             "dismiss it instead");
    }
    const std::string verb = what == "reject" ? "rejected" : "dismissed";
    w.exec_params(
        "UPDATE incidents SET state = 'dismissed', dismissed_at = $2::timestamptz, blocked_reason = $3, "
        "approved_by = NULL, approved_at = NULL, updated_at = now() WHERE id = $1",
        id, ts(at), verb + " by " + by.name + ": " + reason);
    w.exec_params("DELETE FROM approvals WHERE incident_id = $1", id);
    insert_event(w, id, at, "dismissed", verb + " by " + by.name + ": " + reason);
    insert_audit(w, by, at, what, id, link_of(w, id), reason);
    w.commit();
    return Ok{};
  });
}

Status QueueStore::reset_breaker(Time at, const Actor& by, const std::string& reason) {
  if (reason.empty()) return Error::invalid("resetting the circuit breaker needs a reason");
  return c_.run("reset_breaker", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    const auto r = w.exec_params(
        "UPDATE breaker SET open = false, reset_at = $1::timestamptz, reset_by = $2 WHERE id = 1 AND open", ts(at),
        by.name);
    if (r.affected_rows() != 1) return Error::conflict("the circuit breaker is not open");
    insert_audit(w, by, at, "breaker_reset", 0, "", reason);
    w.commit();
    return Ok{};
  });
}

Result<std::map<int64_t, std::vector<std::string>>> QueueStore::approvals(std::optional<int64_t> incident_id) {
  return c_.run("approvals", [&](Pq& pq) -> Result<std::map<int64_t, std::vector<std::string>>> {
    pqxx::nontransaction n(pq.c);
    const std::string id = incident_id ? std::to_string(*incident_id) : "";
    const auto r = n.exec_params(
        "SELECT a.incident_id, a.who FROM approvals a JOIN incidents i ON i.id = a.incident_id "
        "WHERE ($1::bigint IS NULL AND i.closed_at IS NULL AND i.dismissed_at IS NULL) OR a.incident_id = $1::bigint "
        "ORDER BY a.incident_id, a.at, a.who",
        opt_text(id));
    std::map<int64_t, std::vector<std::string>> out;
    for (const auto& row : r) out[row[0].as<int64_t>()].push_back(row[1].as<std::string>());
    return out;
  });
}

}  // namespace medic::db
