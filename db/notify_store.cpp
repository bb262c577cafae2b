#include "db/notify_store.h"

#include "db/internal.h"

namespace medic::db {

using namespace internal;

namespace {

// The incident columns every event carries, after the event's own columns. The zone and
// plane are those of the incident's suspect end, else of its link's switch end, else of its
// device.
constexpr const char* kIncidentColumns =
    "i.id, i.class, coalesce(i.link, ''), coalesce(i.device, ''), i.summary, coalesce(i.blocked_reason, ''), "
    "coalesce('zone' || coalesce(ss.zone, sa.zone, sb.zone, sd.zone), ''), "
    "coalesce('plane' || coalesce(ss.plane, sa.plane, sb.plane, sd.plane), ''), "
    "CASE WHEN nullif(i.suspect, '') IS NOT NULL THEN ss.name IS NOT NULL ELSE sd.name IS NOT NULL END, " MEDIC_US(
        "i.detected_at") ", " MEDIC_US("coalesce(i.closed_at, i.dismissed_at)") " ";
constexpr const char* kIncidentJoins =
    "LEFT JOIN links l ON l.name = i.link "
    "LEFT JOIN switches ss ON ss.name = nullif(i.suspect, '') "
    "LEFT JOIN switches sa ON sa.name = l.a_device "
    "LEFT JOIN switches sb ON sb.name = l.b_device "
    "LEFT JOIN switches sd ON sd.name = i.device ";

void read_incident(const pqxx::row& row, int first, NotifyEvent& e) {
  e.incident_id = row[first].as<int64_t>();
  e.incident_class = read_text(row[first + 1]);
  e.link = read_text(row[first + 2]);
  e.device = read_text(row[first + 3]);
  e.summary = read_text(row[first + 4]);
  e.blocked_reason = read_text(row[first + 5]);
  e.zone = read_text(row[first + 6]);
  e.plane = read_text(row[first + 7]);
  e.device_is_switch = row[first + 8].as<bool>();
  e.detected_at = read_time(row[first + 9]).value_or(Time{});
  e.ended_at = read_time(row[first + 10]);
}

}  // namespace

Status NotifyStore::set_receivers(const std::vector<NotifyReceiver>& receivers) {
  return c_.run("set notification receivers", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    std::vector<std::string> names;
    for (const auto& r : receivers) {
      w.exec_params(
          "INSERT INTO notify_receivers (name, kind, enabled) VALUES ($1, $2, true) "
          "ON CONFLICT (name) DO UPDATE SET kind = EXCLUDED.kind, enabled = true, updated_at = now() "
          "WHERE notify_receivers.enabled IS DISTINCT FROM true OR notify_receivers.kind <> EXCLUDED.kind",
          r.name, r.kind);
      names.push_back(r.name);
    }
    w.exec_params("UPDATE notify_receivers SET enabled = false, updated_at = now() WHERE enabled AND NOT (name = ANY($1::text[]))",
                  text_array(names));
    w.commit();
    return Ok{};
  });
}

Result<std::vector<NotifyEvent>> NotifyStore::due(const std::string& receiver, int limit) {
  return c_.run("notifications due", [&](Pq& pq) -> Result<std::vector<NotifyEvent>> {
    pqxx::nontransaction n(pq.c);
    const auto r = n.exec_params(std::string("SELECT o.id, o.receiver, o.event, o.state, o.severity, "
                                             "coalesce(o.old_severity, ''), " MEDIC_US("o.created_at") ", o.attempts, ") +
                                     kIncidentColumns + ", o.summary, coalesce(o.blocked_reason, ''), " +
                                     MEDIC_US("o.ended_at") " " + "FROM notify_outbox o JOIN incidents i ON i.id = o.incident_id " + kIncidentJoins +
                                     "WHERE o.receiver = $1 AND o.delivered_at IS NULL AND o.failed_at IS NULL "
                                     "ORDER BY o.id LIMIT $2",
                                 receiver, std::max(1, limit));
    std::vector<NotifyEvent> out;
    out.reserve(r.size());
    for (const auto& row : r) {
      NotifyEvent e;
      e.id = row[0].as<int64_t>();
      e.receiver = read_text(row[1]);
      e.event = read_text(row[2]);
      e.state = read_text(row[3]);
      e.severity = read_text(row[4]);
      e.old_severity = read_text(row[5]);
      e.at = read_time(row[6]).value_or(Time{});
      e.attempts = row[7].as<int>();
      read_incident(row, 8, e);
      // The incident as it was at the change, not as it is now.
      e.summary = read_text(row[19]);
      e.blocked_reason = read_text(row[20]);
      e.ended_at = read_time(row[21]);
      out.push_back(std::move(e));
    }
    return out;
  });
}

Result<std::vector<NotifyEvent>> NotifyStore::open_incidents(const std::string& receiver, Time now) {
  return c_.run("open incidents to notify", [&](Pq& pq) -> Result<std::vector<NotifyEvent>> {
    pqxx::nontransaction n(pq.c);
    const auto r = n.exec(std::string("SELECT i.state, i.severity, ") + kIncidentColumns +
                          "FROM incidents i " + kIncidentJoins + "WHERE i.state NOT IN ('closed', 'dismissed') ORDER BY i.id");
    std::vector<NotifyEvent> out;
    out.reserve(r.size());
    for (const auto& row : r) {
      NotifyEvent e;
      e.receiver = receiver;
      e.event = "firing";
      e.state = read_text(row[0]);
      e.severity = read_text(row[1]);
      e.at = now;
      read_incident(row, 2, e);
      out.push_back(std::move(e));
    }
    return out;
  });
}

Status NotifyStore::delivered(const std::vector<int64_t>& ids, Time at) {
  if (ids.empty()) return Ok{};
  return c_.run("record notifications delivered", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    // Not waiting for the disk: a crash of medicd loses nothing (the server has the row); a
    // crash of the server itself within its WAL writer's delay (200 ms) may lose the mark,
    // and the event is sent again (receivers drop it by its id). A webhook is marked per
    // event, so this is what keeps delivery from waiting on a disk flush per POST.
    w.exec("SET LOCAL synchronous_commit = off");
    w.exec_params(
        "UPDATE notify_outbox SET delivered_at = $2::timestamptz, attempts = attempts + 1 "
        "WHERE id = ANY($1::bigint[]) AND delivered_at IS NULL",
        id_array(ids), ts(at));
    w.commit();
    return Ok{};
  });
}

Status NotifyStore::attempt_failed(const std::vector<int64_t>& ids, const std::string& error, bool permanent, Time at) {
  if (ids.empty()) return Ok{};
  return c_.run("record a failed notification", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    w.exec_params(
        "UPDATE notify_outbox SET attempts = attempts + 1, last_error = $2, "
        "failed_at = CASE WHEN $3 THEN $4::timestamptz END WHERE id = ANY($1::bigint[]) AND delivered_at IS NULL",
        id_array(ids), error.substr(0, 1000), permanent, ts(at));
    w.commit();
    return Ok{};
  });
}

Result<std::vector<NotifyReceiverStatus>> NotifyStore::status(const std::optional<std::string>& receiver) {
  return c_.run("notification status", [&](Pq& pq) -> Result<std::vector<NotifyReceiverStatus>> {
    pqxx::nontransaction n(pq.c);
    // $1 NULL: every receiver.
    const auto r = n.exec_params(
        "SELECT r.name, r.kind, r.enabled, "
        "(SELECT count(*) FROM notify_outbox o WHERE o.receiver = r.name AND o.delivered_at IS NULL AND o.failed_at IS NULL), "
        "(SELECT count(*) FROM notify_outbox o WHERE o.receiver = r.name AND o.delivered_at IS NOT NULL), "
        "(SELECT count(*) FROM notify_outbox o WHERE o.receiver = r.name AND o.failed_at IS NOT NULL), "
        "(SELECT " MEDIC_US("min(o.created_at)") " FROM notify_outbox o "
        " WHERE o.receiver = r.name AND o.delivered_at IS NULL AND o.failed_at IS NULL), "
        "(SELECT o.last_error FROM notify_outbox o WHERE o.receiver = r.name AND o.delivered_at IS NULL "
        " AND o.last_error IS NOT NULL ORDER BY o.failed_at IS NULL DESC, o.id DESC LIMIT 1) "
        "FROM notify_receivers r WHERE $1::text IS NULL OR r.name = $1 ORDER BY r.name",
        receiver ? receiver->c_str() : nullptr);
    std::vector<NotifyReceiverStatus> out;
    for (const auto& row : r) {
      NotifyReceiverStatus s;
      s.name = read_text(row[0]);
      s.kind = read_text(row[1]);
      s.enabled = row[2].as<bool>();
      s.pending = row[3].as<int64_t>();
      s.delivered = row[4].as<int64_t>();
      s.failed = row[5].as<int64_t>();
      s.oldest_pending = read_time(row[6]);
      s.last_error = read_text(row[7]);
      out.push_back(std::move(s));
    }
    return out;
  });
}

Result<int64_t> NotifyStore::prune(Time before) {
  return c_.run("prune notifications", [&](Pq& pq) -> Result<int64_t> {
    pqxx::work w(pq.c);
    const auto r = w.exec_params(
        "DELETE FROM notify_outbox WHERE (delivered_at IS NOT NULL OR failed_at IS NOT NULL) "
        "AND created_at < $1::timestamptz",
        ts(before));
    w.commit();
    return static_cast<int64_t>(r.affected_rows());
  });
}

}  // namespace medic::db
