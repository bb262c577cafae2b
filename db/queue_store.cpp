// The repair queue's decisions: what people decide about incidents, and the breaker reset.
#include "db/queue_store.h"

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

}  // namespace

Status QueueStore::approve_incident(int64_t id, const std::string& by, Time at) {
  return c_.run("approve_incident", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    auto st = locked_state(w, id);
    if (!st.ok()) return st.failure();
    if (*st != "pending_approval" && *st != "blocked" && *st != "triaged" && *st != "detected") {
      return Error::conflict("incident " + std::to_string(id) + " is " + *st +
                             ": only an incident waiting for its drain (pending_approval, blocked, triaged) can be approved");
    }
    w.exec_params("UPDATE incidents SET approved_by = $2, approved_at = $3::timestamptz, updated_at = now() WHERE id = $1",
                  id, by, ts(at));
    insert_event(w, id, at, *st, "drain approved by " + by);
    w.commit();
    return Ok{};
  });
}

Status QueueStore::mark_repaired(int64_t id, const std::string& by, Time at) {
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
    insert_event(w, id, at, "repaired", "marked repaired by " + by);
    w.commit();
    return Ok{};
  });
}

Status QueueStore::dismiss_incident(int64_t id, const std::string& by, const std::string& reason, Time at) {
  return c_.run("dismiss_incident", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    auto st = locked_state(w, id);
    if (!st.ok()) return st.failure();
    if (*st == "closed" || *st == "dismissed") {
      return Error::conflict("incident " + std::to_string(id) + " is already " + *st);
    }
    w.exec_params(
        "UPDATE incidents SET state = 'dismissed', dismissed_at = $2::timestamptz, blocked_reason = $3, "
        "updated_at = now() WHERE id = $1",
        id, ts(at), "dismissed by " + by + (reason.empty() ? "" : ": " + reason));
    insert_event(w, id, at, "dismissed", "dismissed by " + by + (reason.empty() ? "" : ": " + reason));
    w.commit();
    return Ok{};
  });
}

Status QueueStore::reset_breaker(Time at, const std::string& by) {
  return c_.run("reset_breaker", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    const auto r = w.exec_params(
        "UPDATE breaker SET open = false, reset_at = $1::timestamptz, reset_by = $2 WHERE id = 1 AND open", ts(at),
        by);
    if (r.affected_rows() != 1) return Error::conflict("the circuit breaker is not open");
    w.commit();
    return Ok{};
  });
}

}  // namespace medic::db
