#include "db/database.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <sstream>

#include "db/internal.h"
#include "db/migrations.h"

namespace medic::db {

using nlohmann::json;

namespace {

using namespace internal;

// Stable across builds and platforms (std::hash is not): FNV-1a, 64 bits.
std::string checksum(const char* s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; ++s) {
    h ^= static_cast<unsigned char>(*s);
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

constexpr int64_t kMigrationLock = 0x6d65646963'01;  // "medic" + 1

const char* kIncidentColumns =
    "id, class, state, severity, coalesce(link, ''), coalesce(device, ''), summary, "
    "coalesce(blocked_reason, ''), " MEDIC_US("started_at") ", " MEDIC_US("detected_at") ", "
    MEDIC_US("triaged_at") ", " MEDIC_US("mitigated_at") ", " MEDIC_US("repair_requested_at") ", "
    MEDIC_US("repaired_at") ", " MEDIC_US("validated_at") ", " MEDIC_US("undrained_at") ", "
    MEDIC_US("closed_at") ", " MEDIC_US("dismissed_at") ", " MEDIC_US("escalated_at") ", "
    "coalesce(suspect, ''), coalesce(suspect_port, ''), reopen_count, " MEDIC_US("reopened_at");

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

std::string redact_url(const std::string& url) {
  // postgresql://user:password@host... ; also key=value "password=..." forms.
  std::string out = url;
  const size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    // user:password@ can only come before the path (libpq looks no further than the first
    // '/'); the last '@' there ends it, so an '@' in the password is covered too.
    const size_t start = scheme + 3;
    const size_t end = std::min(out.find('/', start), out.size());
    const size_t at = out.rfind('@', end);
    const size_t colon = out.find(':', start);
    if (at != std::string::npos && at >= start && at < end && colon < at) {
      out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // Key/value and query forms: libpq allows spaces around '=' and a quoted value
  // ('...' with \' escapes) that may itself hold spaces.
  for (size_t pw = out.find("password"); pw != std::string::npos; pw = out.find("password", pw + 8)) {
    size_t v = out.find_first_not_of(' ', pw + 8);
    if (v == std::string::npos || out[v] != '=') continue;
    v = out.find_first_not_of(' ', v + 1);
    if (v == std::string::npos) break;
    size_t end = v;
    if (out[v] == '\'') {
      for (++end; end < out.size() && out[end] != '\''; ++end) {
        if (out[end] == '\\') ++end;
      }
      end = std::min(end + 1, out.size());
    } else {
      end = std::min(out.find_first_of(" &#", v), out.size());
    }
    out.replace(v, end - v, "***");
  }
  return out;
}


Database::Database(std::string url, DbOptions options) : url_(std::move(url)), options_(options) { connect(); }
Database::~Database() = default;

bool Database::available() const { return std::chrono::steady_clock::now() >= retry_at_; }

void Database::failed(const std::string& why) {
  backoff_s_ = backoff_s_ == 0 ? options_.retry_min_s : std::min(options_.retry_max_s, backoff_s_ * 2);
  retry_at_ = std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(backoff_s_));
  last_failure_ = why;
}

void Database::succeeded() {
  backoff_s_ = 0;
  retry_at_ = {};
  last_failure_.clear();
}

void Database::connect() {
  try {
    conn_ = std::make_unique<Connection>(with_connect_timeout(url_, options_.connect_timeout_s));
  } catch (const std::exception& e) {
    std::string msg = e.what();
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    throw DbError("cannot connect to PostgreSQL at " + redact_url(url_) + ": " + msg);
  }
}

std::vector<std::string> Database::migrate() {
  std::vector<std::string> applied;
  try {
    pqxx::work w(conn_->c);
    w.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLock);
    w.exec(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
        " applied_at timestamptz NOT NULL DEFAULT now())");
    const pqxx::result done = w.exec("SELECT version, name, checksum FROM schema_migrations ORDER BY version");
    std::map<int, std::pair<std::string, std::string>> recorded;
    for (const auto& r : done) recorded[r[0].as<int>()] = {r[1].as<std::string>(), r[2].as<std::string>()};
    for (const Migration& m : embedded_migrations()) {
      const std::string sum = checksum(m.sql);
      const auto it = recorded.find(m.version);
      if (it != recorded.end()) {
        if (it->second.second != sum) {
          throw DbError("migration " + std::string(m.name) +
                        " was changed after it was applied (checksum " + it->second.second +
                        " in the database, " + sum + " in this build); add a new migration instead");
        }
        continue;
      }
      w.exec(m.sql);
      w.exec_params("INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    m.version, std::string(m.name), sum);
      applied.emplace_back(m.name);
    }
    w.commit();
  } catch (const DbError&) {
    throw;
  } catch (const std::exception& e) {
    throw DbError("migrating " + redact_url(url_) + ": " + e.what());
  }
  return applied;
}

Result<int> Database::schema_version() {
  return run("schema_version", [&]() -> Result<int> {
    pqxx::nontransaction n(conn_->c);
    const auto r = n.exec("SELECT coalesce(max(version), 0) FROM schema_migrations");
    return r[0][0].as<int>();
  });
}

Status Database::sync_inventory(const fabric::Topology& t) {
  return run("sync_inventory", [&]() -> Status {
    pqxx::work w(conn_->c);
    w.exec("CREATE TEMP TABLE in_switches (LIKE switches INCLUDING DEFAULTS) ON COMMIT DROP");
    w.exec(
        "CREATE TEMP TABLE in_links (name text, a_device text, a_port text, b_device text, "
        "b_port text, speed_gbps double precision) ON COMMIT DROP");
    {
      pqxx::stream_to s(w, "in_switches",
                        std::vector<std::string>{"name", "role", "zone", "plane", "telemetry_url",
                                                 "driver_kind", "driver_url"});
      for (const auto& d : t.devices()) {
        if (!d.is_switch()) continue;
        // -1 means "no zone/plane" in the model and NULL (a null pointer) in the table.
        const std::string zone = std::to_string(d.zone), plane = std::to_string(d.plane);
        s << std::make_tuple(d.name, std::string(fabric::to_string(d.role)),
                             d.zone >= 0 ? zone.c_str() : nullptr,
                             d.plane >= 0 ? plane.c_str() : nullptr, d.telemetry_url,
                             d.driver_kind, d.driver_url);
      }
      s.complete();
    }
    {
      pqxx::stream_to s(w, "in_links",
                        std::vector<std::string>{"name", "a_device", "a_port", "b_device", "b_port", "speed_gbps"});
      for (const auto& l : t.links()) {
        const auto& pa = t.port(l.a);
        const auto& pb = t.port(l.b);
        s << std::make_tuple(l.name, t.device(pa.device).name, pa.name, t.device(pb.device).name,
                             pb.name, l.speed_gbps);
      }
      s.complete();
    }
    w.exec(
        "INSERT INTO switches (name, role, zone, plane, telemetry_url, driver_kind, driver_url) "
        "SELECT name, role, zone, plane, telemetry_url, driver_kind, driver_url FROM in_switches "
        "ON CONFLICT (name) DO UPDATE SET role = excluded.role, zone = excluded.zone, "
        "plane = excluded.plane, telemetry_url = excluded.telemetry_url, "
        "driver_kind = excluded.driver_kind, driver_url = excluded.driver_url, updated_at = now()");
    w.exec(
        "INSERT INTO links (name, a_device, a_port, b_device, b_port, speed_gbps) "
        "SELECT name, a_device, a_port, b_device, b_port, speed_gbps FROM in_links "
        "ON CONFLICT (name) DO UPDATE SET speed_gbps = excluded.speed_gbps, updated_at = now() "
        "WHERE links.speed_gbps IS DISTINCT FROM excluded.speed_gbps");
    w.commit();
    return Ok{};
  });
}

Result<std::vector<LinkDrainRow>> Database::drain_states() {
  return run("drain_states", [&]() -> Result<std::vector<LinkDrainRow>> {
    pqxx::nontransaction n(conn_->c);
    const auto r = n.exec(
        "SELECT name, drain_state, coalesce(drain_incident_id, 0) FROM links "
        "WHERE drain_state <> 'undrained' ORDER BY name");
    std::vector<LinkDrainRow> out;
    for (const auto& row : r) {
      out.push_back({row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<int64_t>()});
    }
    return out;
  });
}

Result<std::vector<IncidentRow>> Database::incidents(const IncidentFilter& f) {
  return run("incidents", [&]() -> Result<std::vector<IncidentRow>> {
    pqxx::nontransaction n(conn_->c);
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

Result<int64_t> Database::open_incident(const triage::IncidentUpdate& u, const fabric::Topology& t, Time now) {
  return run("open_incident", [&]() -> Result<int64_t> {
    pqxx::work w(conn_->c);
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

Status Database::reopen_incident(const triage::IncidentUpdate& u, const fabric::Topology& t, Time now) {
  return run("reopen_incident", [&]() -> Status {
    pqxx::work w(conn_->c);
    const std::string suspect_port = u.suspect_port != fabric::kNone ? t.endpoint_name(u.suspect_port) : "";
    const auto r = w.exec_params(
        "UPDATE incidents SET state = 'triaged', severity = $2, summary = $3, started_at = $4::timestamptz, "
        "detected_at = $5::timestamptz, triaged_at = $6::timestamptz, mitigated_at = NULL, "
        "repair_requested_at = NULL, repaired_at = NULL, validated_at = NULL, undrained_at = NULL, "
        "closed_at = NULL, dismissed_at = NULL, escalated_at = NULL, blocked_reason = NULL, "
        "suspect = coalesce($7, suspect), suspect_port = coalesce($8, suspect_port), "
        "reopen_count = reopen_count + 1, reopened_at = $6::timestamptz, updated_at = now() "
        "WHERE id = $1 AND state IN ('closed', 'dismissed')",
        u.incident_id, std::string(detectors::to_string(u.severity)), u.summary, ts(u.started_at),
        ts(u.detected_at), ts(now), opt_text(u.suspect), opt_text(suspect_port));
    if (r.affected_rows() != 1) return Error{"no closed incident with id " + std::to_string(u.incident_id)};
    insert_findings(w, u.incident_id, u.findings, t);
    insert_event(w, u.incident_id, now, "reopened", u.summary);
    w.commit();
    return Ok{};
  });
}

Status Database::add_findings(const triage::IncidentUpdate& u, const fabric::Topology& t) {
  return run("add_findings", [&]() -> Status {
    pqxx::work w(conn_->c);
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

Status Database::add_findings(int64_t incident_id, const std::vector<detectors::Finding>& findings,
                              const fabric::Topology& t) {
  return run("add_findings", [&]() -> Status {
    pqxx::work w(conn_->c);
    insert_findings(w, incident_id, findings, t);
    w.exec_params("UPDATE incidents SET updated_at = now() WHERE id = $1", incident_id);
    w.commit();
    return Ok{};
  });
}

Status Database::record_noted(const std::vector<triage::NotedFinding>& noted, const fabric::Topology& t) {
  if (noted.empty()) return Ok{};
  return run("record_noted", [&]() -> Status {
    pqxx::work w(conn_->c);
    for (const auto& n : noted) insert_finding(w, 0, n.finding, t, n.note);
    w.commit();
    return Ok{};
  });
}

Result<std::vector<IncidentEventRow>> Database::incident_events(int64_t incident_id) {
  return run("incident_events", [&]() -> Result<std::vector<IncidentEventRow>> {
    pqxx::nontransaction n(conn_->c);
    const auto r = n.exec_params("SELECT id, " MEDIC_US("at") ", state, note FROM incident_events "
                                 "WHERE incident_id = $1 ORDER BY id",
                                 incident_id);
    std::vector<IncidentEventRow> out;
    for (const auto& row : r) out.push_back({row[0].as<int64_t>(), *read_time(row[1]), read_text(row[2]), read_text(row[3])});
    return out;
  });
}

Result<std::vector<IncidentRow>> Database::closed_since(Time since) {
  return run("closed_since", [&]() -> Result<std::vector<IncidentRow>> {
    pqxx::nontransaction n(conn_->c);
    const auto r = n.exec_params(std::string("SELECT ") + kIncidentColumns +
                                     " FROM incidents WHERE state IN ('closed', 'dismissed') AND "
                                     "coalesce(closed_at, dismissed_at) >= $1::timestamptz ORDER BY id",
                                 ts(since));
    std::vector<IncidentRow> out;
    for (const auto& row : r) out.push_back(read_incident(row));
    return out;
  });
}

Result<std::string> Database::resolve_link(const std::string& ref) {
  return run("resolve_link", [&]() -> Result<std::string> {
    pqxx::nontransaction n(conn_->c);
    const auto r = n.exec_params(
        "SELECT name FROM links WHERE name = $1 OR a_device || ':' || a_port = $1 OR b_device || ':' || b_port = $1 "
        "LIMIT 1",
        ref);
    return r.empty() ? std::string() : r[0][0].as<std::string>();
  });
}

Result<bool> Database::device_known(const std::string& name) {
  return run("device_known", [&]() -> Result<bool> {
    pqxx::nontransaction n(conn_->c);
    const auto r = n.exec_params(
        "SELECT EXISTS (SELECT 1 FROM switches WHERE name = $1) OR "
        "EXISTS (SELECT 1 FROM links WHERE a_device = $1 OR b_device = $1)",
        name);
    return r[0][0].as<bool>();
  });
}

Result<int64_t> Database::add_maintenance(const MaintenanceRow& m) {
  return run("add_maintenance", [&]() -> Result<int64_t> {
    pqxx::work w(conn_->c);
    const auto r = w.exec_params(
        "INSERT INTO maintenance (link, device, starts_at, ends_at, reason, created_by) "
        "VALUES ($1, $2, $3::timestamptz, $4::timestamptz, $5, $6) RETURNING id",
        opt_text(m.link), opt_text(m.device), ts(m.starts_at), ts(m.ends_at), m.reason, m.created_by);
    w.commit();
    return r[0][0].as<int64_t>();
  });
}

Result<std::vector<MaintenanceRow>> Database::maintenance(std::optional<Time> at) {
  return run("maintenance", [&]() -> Result<std::vector<MaintenanceRow>> {
    pqxx::nontransaction n(conn_->c);
    const std::string a = at ? ts(*at) : "";
    const auto r = n.exec_params(
        "SELECT id, coalesce(link, ''), coalesce(device, ''), " MEDIC_US("starts_at") ", " MEDIC_US("ends_at")
        ", reason, created_by FROM maintenance WHERE ($1::timestamptz IS NULL OR ends_at > $1::timestamptz) "
        "ORDER BY starts_at, id",
        opt_text(a));
    std::vector<MaintenanceRow> out;
    for (const auto& row : r) {
      MaintenanceRow m;
      m.id = row[0].as<int64_t>();
      m.link = read_text(row[1]);
      m.device = read_text(row[2]);
      m.starts_at = *read_time(row[3]);
      m.ends_at = *read_time(row[4]);
      m.reason = read_text(row[5]);
      m.created_by = read_text(row[6]);
      out.push_back(std::move(m));
    }
    return out;
  });
}

Status Database::end_maintenance(int64_t id, Time at) {
  return run("end_maintenance", [&]() -> Status {
    pqxx::work w(conn_->c);
    const auto r = w.exec_params(
        // A window not yet begun is cancelled: it becomes a moment at `at`, over at once.
        "UPDATE maintenance SET starts_at = least(starts_at, $2::timestamptz), "
        "ends_at = greatest(least(starts_at, $2::timestamptz) + interval '1 microsecond', $2::timestamptz) "
        "WHERE id = $1 AND ends_at > $2::timestamptz",
        id, ts(at));
    if (r.affected_rows() != 1) return Error{"no maintenance window #" + std::to_string(id) + " still running"};
    w.commit();
    return Ok{};
  });
}

Result<std::vector<FindingRow>> Database::findings(int64_t incident_id) {
  return run("findings", [&]() -> Result<std::vector<FindingRow>> {
    pqxx::nontransaction n(conn_->c);
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

Status Database::resolve_incident(const triage::IncidentUpdate& u, const fabric::Topology& t, Time now) {
  return run("resolve_incident", [&]() -> Status {
    pqxx::work w(conn_->c);
    const auto r = w.exec_params(
        "UPDATE incidents SET state = 'closed', closed_at = coalesce(closed_at, $2::timestamptz), updated_at = now() "
        "WHERE id = $1 AND state NOT IN ('closed', 'dismissed')",
        u.incident_id, ts(now));
    if (r.affected_rows() != 1) return Ok{};  // closed or dismissed already: nothing to do
    insert_findings(w, u.incident_id, u.findings, t);
    insert_event(w, u.incident_id, now, "closed", u.summary);
    w.commit();
    return Ok{};
  });
}

Status Database::set_incident_state(int64_t id, triage::IncidentState state, Time at, const std::string& reason) {
  using S = triage::IncidentState;
  // One fixed statement per state: the stage column is never spliced from input.
  const char* sql = nullptr;
  switch (state) {
    case S::detected: sql = "UPDATE incidents SET state = 'detected', updated_at = now() WHERE id = $1 AND $2::timestamptz IS NOT NULL"; break;
    case S::triaged: sql = "UPDATE incidents SET state = 'triaged', triaged_at = coalesce(triaged_at, $2::timestamptz), updated_at = now() WHERE id = $1"; break;
    case S::blocked: sql = "UPDATE incidents SET state = 'blocked', blocked_reason = $3, updated_at = now() WHERE id = $1 AND $2::timestamptz IS NOT NULL"; break;
    case S::mitigated: sql = "UPDATE incidents SET state = 'mitigated', blocked_reason = NULL, mitigated_at = coalesce(mitigated_at, $2::timestamptz), updated_at = now() WHERE id = $1"; break;
    case S::repair_requested: sql = "UPDATE incidents SET state = 'repair_requested', repair_requested_at = coalesce(repair_requested_at, $2::timestamptz), updated_at = now() WHERE id = $1"; break;
    case S::repaired: sql = "UPDATE incidents SET state = 'repaired', repaired_at = coalesce(repaired_at, $2::timestamptz), updated_at = now() WHERE id = $1"; break;
    case S::validated: sql = "UPDATE incidents SET state = 'validated', validated_at = coalesce(validated_at, $2::timestamptz), updated_at = now() WHERE id = $1"; break;
    case S::undrained: sql = "UPDATE incidents SET state = 'undrained', undrained_at = coalesce(undrained_at, $2::timestamptz), updated_at = now() WHERE id = $1"; break;
    case S::closed: sql = "UPDATE incidents SET state = 'closed', closed_at = coalesce(closed_at, $2::timestamptz), updated_at = now() WHERE id = $1"; break;
    case S::dismissed: sql = "UPDATE incidents SET state = 'dismissed', dismissed_at = coalesce(dismissed_at, $2::timestamptz), blocked_reason = coalesce($3, blocked_reason), updated_at = now() WHERE id = $1"; break;
    case S::escalated: sql = "UPDATE incidents SET state = 'escalated', escalated_at = coalesce(escalated_at, $2::timestamptz), blocked_reason = coalesce($3, blocked_reason), updated_at = now() WHERE id = $1"; break;
    case S::pending_approval: sql = "UPDATE incidents SET state = 'pending_approval', approval_reason = $3, updated_at = now() WHERE id = $1 AND $2::timestamptz IS NOT NULL"; break;
    case S::validating: sql = "UPDATE incidents SET state = 'validating', validating_since = $2::timestamptz, updated_at = now() WHERE id = $1"; break;
    case S::kCount: return Error{"set_incident_state: no such state"};
  }
  return run("set_incident_state", [&]() -> Status {
    pqxx::work w(conn_->c);
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

Result<int64_t> Database::write_intent(const remediation::ActionIntent& in, const std::string& link) {
  return run("write_intent", [&]() -> Result<int64_t> {
    pqxx::work w(conn_->c);
    const std::string kind(remediation::to_string(in.kind));
    const auto r = w.exec_params(
        "INSERT INTO actions (incident_id, link, kind, state, intent_at) "
        "VALUES (nullif($1, 0), $2, $3, 'intent', $4::timestamptz) RETURNING id",
        in.incident_id, link, kind, ts(in.at));
    w.exec_params(
        "UPDATE links SET drain_state = $2, drain_changed_at = $3::timestamptz, "
        "drain_incident_id = nullif($4, 0), updated_at = now() WHERE name = $1",
        link, std::string(in.kind == remediation::ActionKind::drain ? "draining" : "undraining"),
        ts(in.at), in.incident_id);
    w.commit();
    return r[0][0].as<int64_t>();
  });
}

Status Database::write_result(int64_t action_id, const remediation::ActionIntent& in,
                              const remediation::ActionOutcome& out, const std::string& link) {
  return run("write_result", [&]() -> Status {
    pqxx::work w(conn_->c);
    json steps = out.steps;
    w.exec_params(
        "UPDATE actions SET state = $2, reason = $3, steps = $4::jsonb, result_at = $5::timestamptz "
        "WHERE id = $1",
        action_id, std::string(out.succeeded ? "succeeded" : "failed"), opt_text(out.error),
        steps.dump(), ts(out.at));
    w.exec_params(
        "UPDATE links SET drain_state = $2, drain_changed_at = $3::timestamptz, "
        "drain_incident_id = CASE WHEN $2 = 'drained' THEN nullif($4, 0) ELSE NULL END, "
        "updated_at = now() WHERE name = $1",
        link, std::string(out.link_drained ? "drained" : "undrained"), ts(out.at), in.incident_id);
    w.commit();
    return Ok{};
  });
}

Status Database::write_refusal(const remediation::ActionIntent& in, const std::string& link,
                               const std::string& reason) {
  return run("write_refusal", [&]() -> Status {
    pqxx::work w(conn_->c);
    w.exec_params(
        "INSERT INTO actions (incident_id, link, kind, state, reason, intent_at, result_at) "
        "VALUES (nullif($1, 0), $2, $3, 'refused', $4, $5::timestamptz, $5::timestamptz)",
        in.incident_id, link, std::string(remediation::to_string(in.kind)), reason, ts(in.at));
    w.commit();
    return Ok{};
  });
}

Result<std::vector<ActionRow>> Database::actions(std::optional<int64_t> incident_id) {
  return run("actions", [&]() -> Result<std::vector<ActionRow>> {
    pqxx::nontransaction n(conn_->c);
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

Result<std::vector<slo::Target>> Database::slo_targets() {
  return run("slo_targets", [&]() -> Result<std::vector<slo::Target>> {
    pqxx::nontransaction n(conn_->c);
    const auto r = n.exec(
        "SELECT incident_class, stage, target_seconds, objective FROM slo_targets "
        "ORDER BY incident_class, array_position(ARRAY['detect','mitigate','repair','restore'], stage)");
    std::vector<slo::Target> out;
    for (const auto& row : r) {
      slo::Target t;
      t.incident_class = row[0].as<std::string>();
      const auto st = slo::parse_stage(row[1].as<std::string>());
      if (!st) continue;
      t.stage = *st;
      t.target = from_seconds(row[2].as<double>());
      t.objective = row[3].as<double>();
      out.push_back(std::move(t));
    }
    return out;
  });
}

Status Database::set_slo_target(const slo::Target& t) {
  return run("set_slo_target", [&]() -> Status {
    pqxx::work w(conn_->c);
    w.exec_params(
        "INSERT INTO slo_targets (incident_class, stage, target_seconds, objective) "
        "VALUES ($1, $2, $3, $4) ON CONFLICT (incident_class, stage) DO UPDATE SET "
        "target_seconds = excluded.target_seconds, objective = excluded.objective",
        t.incident_class, std::string(slo::to_string(t.stage)), seconds(t.target), t.objective);
    w.commit();
    return Ok{};
  });
}

Result<std::vector<slo::IncidentTimes>> Database::incident_times(std::optional<Time> since) {
  return run("incident_times", [&]() -> Result<std::vector<slo::IncidentTimes>> {
    pqxx::nontransaction n(conn_->c);
    const std::string s = since ? ts(*since) : "";
    const auto r = n.exec_params(
        "SELECT id, class, state NOT IN ('closed', 'dismissed'), " MEDIC_US("started_at") ", "
        MEDIC_US("detected_at") ", " MEDIC_US("mitigated_at") ", " MEDIC_US("repaired_at") ", "
        MEDIC_US("undrained_at") " FROM incidents WHERE ($1::timestamptz IS NULL OR detected_at >= $1::timestamptz) "
        "ORDER BY id",
        opt_text(s));
    std::vector<slo::IncidentTimes> out;
    for (const auto& row : r) {
      slo::IncidentTimes t;
      t.id = row[0].as<int64_t>();
      t.incident_class = row[1].as<std::string>();
      t.open = row[2].as<bool>();
      t.started_at = read_time(row[3]);
      t.detected_at = read_time(row[4]);
      t.mitigated_at = read_time(row[5]);
      t.repaired_at = read_time(row[6]);
      t.undrained_at = read_time(row[7]);
      out.push_back(std::move(t));
    }
    return out;
  });
}

Result<int64_t> DbJournal::write_intent(const remediation::ActionIntent& intent) {
  return db_.write_intent(intent, topology_.link(intent.link).name);
}

Status DbJournal::write_result(int64_t action_id, const remediation::ActionIntent& intent,
                               const remediation::ActionOutcome& outcome) {
  return db_.write_result(action_id, intent, outcome, topology_.link(intent.link).name);
}

Status DbJournal::write_refusal(const remediation::ActionIntent& intent, const std::string& reason) {
  return db_.write_refusal(intent, topology_.link(intent.link).name, reason);
}

}  // namespace medic::db
