// SLO targets (versioned) and the SLO report.
#include "db/slo_store.h"

#include <map>
#include <unordered_map>
#include <nlohmann/json.hpp>

#include "db/internal.h"

namespace medic::db {

using namespace internal;

namespace {

constexpr const char* kVersionColumns =
    "incident_class, stage, scope_kind, scope_value, target_seconds, objective, " MEDIC_US("valid_from");

std::optional<slo::TargetVersion> read_version(const pqxx::row& row) {
  slo::TargetVersion v;
  v.incident_class = row[0].as<std::string>();
  const auto st = slo::parse_stage(row[1].as<std::string>());
  if (!st) return std::nullopt;
  v.stage = *st;
  v.scope_kind = row[2].as<std::string>();
  v.scope_value = row[3].as<std::string>();
  v.target = from_seconds(row[4].as<double>());
  v.objective = row[5].as<double>();
  v.from = *read_time(row[6]);
  return v;
}

std::string version_detail(const slo::TargetVersion& v) {
  nlohmann::json j = {{"class", v.incident_class},
                      {"stage", std::string(slo::to_string(v.stage))},
                      {"target_s", seconds(v.target)},
                      {"objective", v.objective},
                      {"from", format_iso8601(v.from)}};
  if (!v.scope_kind.empty()) j["scope"] = {{v.scope_kind, v.scope_value}};
  return j.dump();
}

void insert_version(pqxx::work& w, const slo::TargetVersion& v, const Actor& by, Time at) {
  const auto r = w.exec_params(
      "INSERT INTO slo_target_versions (incident_class, stage, scope_kind, scope_value, target_seconds, objective, "
      "valid_from, applied_at, applied_by) VALUES ($1, $2, $3, $4, $5, $6, $7::timestamptz, $8::timestamptz, $9) "
      "ON CONFLICT DO NOTHING",
      v.incident_class, std::string(slo::to_string(v.stage)), v.scope_kind, v.scope_value, seconds(v.target),
      v.objective, ts(v.from), ts(at), by.name);
  if (r.affected_rows() != 1) {
    throw std::invalid_argument("a version of " + v.incident_class + " " + std::string(slo::to_string(v.stage)) +
                                (v.scope_kind.empty() ? "" : " (" + v.scope_kind + " " + v.scope_value + ")") +
                                " from " + ts(v.from) + " already exists");
  }
  insert_audit(w, by, at, "slo_target", 0, "", "", version_detail(v));
}

// The version in force at `t` among `all` (sorted by key, then time) for `key`'s class,
// stage and scope.
std::optional<slo::TargetVersion> in_force_for(const std::vector<slo::TargetVersion>& all, const slo::TargetVersion& key,
                                               Time t) {
  std::vector<slo::TargetVersion> same;
  for (const auto& v : all) {
    if (v.incident_class == key.incident_class && v.stage == key.stage && v.scope_kind == key.scope_kind &&
        v.scope_value == key.scope_value) {
      same.push_back(v);
    }
  }
  const slo::TargetVersion* v = slo::in_force(same, t);
  return v ? std::optional<slo::TargetVersion>(*v) : std::nullopt;
}

std::vector<slo::TargetVersion> read_versions(pqxx::transaction_base& t) {
  const auto r = t.exec(std::string("SELECT ") + kVersionColumns +
                        " FROM slo_target_versions ORDER BY incident_class, "
                        "array_position(ARRAY['detect','mitigate','repair','restore'], stage), scope_kind, "
                        "scope_value, valid_from");
  std::vector<slo::TargetVersion> out;
  for (const auto& row : r) {
    if (auto v = read_version(row)) out.push_back(std::move(*v));
  }
  return out;
}

std::vector<slo::TargetVersion> in_force_at(const std::vector<slo::TargetVersion>& all, Time at) {
  std::vector<slo::TargetVersion> out;
  for (const auto& v : all) {
    const auto f = in_force_for(all, v, at);
    if (f && f->from == v.from) out.push_back(v);
  }
  return out;
}

}  // namespace

Result<std::vector<slo::Target>> SloStore::slo_targets() {
  return c_.run("slo_targets", [&](Pq& pq) -> Result<std::vector<slo::Target>> {
    pqxx::nontransaction n(pq.c);
    std::vector<slo::Target> out;
    for (const auto& v : in_force_at(read_versions(n), SystemClock().now())) {
      if (v.scope_kind.empty()) out.push_back({v.incident_class, v.stage, v.target, v.objective});
    }
    return out;
  });
}

Result<std::vector<slo::TargetVersion>> SloStore::target_versions() {
  return c_.run("target_versions", [&](Pq& pq) -> Result<std::vector<slo::TargetVersion>> {
    pqxx::nontransaction n(pq.c);
    return read_versions(n);
  });
}

Result<std::vector<slo::TargetVersion>> SloStore::targets_at(Time at) {
  return c_.run("targets_at", [&](Pq& pq) -> Result<std::vector<slo::TargetVersion>> {
    pqxx::nontransaction n(pq.c);
    return in_force_at(read_versions(n), at);
  });
}

Status SloStore::set_slo_target(const slo::Target& t, const Actor& by, Time at) {
  return c_.run("set_slo_target", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    slo::TargetVersion v{t.incident_class, t.stage, "", "", t.target, t.objective, at};
    try {
      insert_version(w, v, by, at);
    } catch (const std::invalid_argument& e) {
      return Error::conflict(e.what());
    }
    w.commit();
    return Ok{};
  });
}

Result<AppliedTargets> SloStore::apply_targets(const std::vector<slo::TargetVersion>& targets, Time from,
                                               const Actor& by, Time at) {
  return c_.run("apply_targets", [&](Pq& pq) -> Result<AppliedTargets> {
    pqxx::work w(pq.c);
    w.exec("LOCK TABLE slo_target_versions IN SHARE ROW EXCLUSIVE MODE");
    const auto all = read_versions(w);
    AppliedTargets out;
    for (slo::TargetVersion v : targets) {
      v.from = from;
      const auto cur = in_force_for(all, v, from);
      if (cur && cur->target == v.target && cur->objective == v.objective) {
        out.unchanged.push_back(v);
        continue;
      }
      try {
        insert_version(w, v, by, at);
      } catch (const std::invalid_argument& e) {
        return Error::conflict(e.what());
      }
      out.written.push_back(v);
    }
    for (const auto& cur : in_force_at(all, from)) {
      bool named = false;
      for (const auto& v : targets) {
        named = named || (v.incident_class == cur.incident_class && v.stage == cur.stage &&
                          v.scope_kind == cur.scope_kind && v.scope_value == cur.scope_value);
      }
      if (!named) out.not_in_file.push_back(cur);
    }
    w.commit();
    return out;
  });
}

Result<slo::Report> SloStore::report(const slo::ReportQuery& q, Time now) {
  return c_.run("slo_report", [&](Pq& pq) -> Result<slo::Report> {
    pqxx::work w(pq.c);
    w.exec("SET TRANSACTION READ ONLY");
    // The cursor is read to its end: planned for all its rows, not for the first tenth (the
    // default plan looks each link up by index, nearly twice as slow at a million incidents).
    w.exec("SET LOCAL cursor_tuple_fraction = 1");
    slo::ReportBuilder b(q, read_versions(w), now);
    const slo::Window scan = b.scan_window();
    const std::string from = w.quote(ts(scan.from)) + "::timestamptz", to = w.quote(ts(scan.to)) + "::timestamptz";
    const std::string cls = q.incident_class.empty() ? "" : " AND i.class = " + w.quote(q.incident_class);
    // The incidents that may decide a stage in [from, to) or hold one pending at `to`: with a
    // stage begun before `to`, and open or ended at or after `from` (a stage is decided no later than the
    // incident ends). Streamed through a cursor, a batch at a time.
    // The switches (a few thousand) looked up here rather than joined: the groups of an
    // incident are those of its suspect device, else its link's first end, else its device.
    struct SwitchGroups {
      std::string zone, plane, role;
    };
    std::unordered_map<std::string, SwitchGroups> switches;
    for (const auto& row : w.exec("SELECT name, zone, plane, role FROM switches")) {
      SwitchGroups g;
      if (!row[1].is_null()) g.zone = "zone" + row[1].as<std::string>();
      if (!row[2].is_null()) g.plane = "plane" + row[2].as<std::string>();
      g.role = row[3].as<std::string>();
      switches.emplace(row[0].as<std::string>(), std::move(g));
    }
    w.exec("DECLARE slo_rows NO SCROLL CURSOR FOR SELECT i.id, i.class, coalesce(i.link, ''), "
           "coalesce(i.device, ''), coalesce(i.suspect_port, ''), coalesce(i.suspect, ''), coalesce(l.a_device, ''), "
           MEDIC_US("i.started_at") ", " MEDIC_US("i.detected_at") ", " MEDIC_US("i.mitigated_at") ", "
           MEDIC_US("i.repaired_at") ", " MEDIC_US("i.undrained_at") ", " MEDIC_US("i.dismissed_at") ", "
           MEDIC_US("i.closed_at") ", coalesce(l.speed_gbps, 0) "
           "FROM incidents i LEFT JOIN links l ON l.name = i.link "
           "WHERE least(i.started_at, i.detected_at, i.mitigated_at, i.repaired_at) < " + to +
           " AND (coalesce(i.closed_at, i.dismissed_at) IS NULL OR coalesce(i.closed_at, i.dismissed_at) >= " + from +
           ")" + cls);
    slo::ReportIncident inc;
    std::string a_end;
    for (;;) {
      const auto r = w.exec("FETCH 5000 FROM slo_rows");
      if (r.empty()) break;
      for (const auto& row : r) {
        // Into the same strings and map nodes row after row: no allocation once they are
        // long enough.
        inc.id = row[0].as<int64_t>();
        inc.incident_class.assign(row[1].c_str(), row[1].size());
        inc.link.assign(row[2].c_str(), row[2].size());
        inc.device.assign(row[3].c_str(), row[3].size());
        inc.suspect_port.assign(row[4].c_str(), row[4].size());
        inc.suspect_device.assign(row[5].c_str(), row[5].size());
        a_end.assign(row[6].c_str(), row[6].size());
        inc.started_at = read_time(row[7]);
        inc.detected_at = read_time(row[8]);
        inc.mitigated_at = read_time(row[9]);
        inc.repaired_at = read_time(row[10]);
        inc.undrained_at = read_time(row[11]);
        inc.dismissed_at = read_time(row[12]);
        inc.closed_at = read_time(row[13]);
        inc.speed_gbps = row[14].as<double>();
        const std::string& grouped = !inc.suspect_device.empty() ? inc.suspect_device : !a_end.empty() ? a_end : inc.device;
        if (inc.suspect_device.empty()) inc.suspect_device = inc.device;
        inc.suspect_is_switch = switches.count(inc.suspect_device) != 0;
        const auto sw = switches.find(grouped);
        auto group = [&](const char* kind, const std::string* v) {
          if (v == nullptr || v->empty()) {
            inc.groups.erase(kind);
          } else {
            inc.groups[kind] = *v;  // the node and its string are reused
          }
        };
        const bool known = sw != switches.end();
        group("zone", known ? &sw->second.zone : nullptr);
        group("plane", known ? &sw->second.plane : nullptr);
        group("role", known ? &sw->second.role : nullptr);
        b.add(inc);
      }
    }
    w.exec("CLOSE slo_rows");
    slo::Report rep = b.finish();

    // Where each breach's time went, from its incident's state history.
    if (!rep.breaches.empty()) {
      std::vector<std::string> ids;
      for (const auto& br : rep.breaches) ids.push_back(std::to_string(br.incident_id));
      const auto ev = w.exec_params("SELECT incident_id, " MEDIC_US("at") ", state, note FROM incident_events "
                                    "WHERE incident_id = ANY($1::bigint[]) ORDER BY incident_id, at, id",
                                    text_array(ids));
      std::map<int64_t, std::vector<slo::StateEvent>> events;
      for (const auto& row : ev) {
        events[row[0].as<int64_t>()].push_back({*read_time(row[1]), row[2].as<std::string>(), row[3].as<std::string>()});
      }
      for (auto& br : rep.breaches) {
        const Time end = br.finished ? *br.finished : q.window.to;  // unfinished: until the window's end
        br.time_went = slo::where_time_went(events[br.incident_id], br.began, end);
      }
    }

    // The lowest headroom any capacity group reached in a snapshot taken in the window.
    const auto lh = w.exec_params(
        "SELECT s.id, coalesce(s.incident_id, 0), " MEDIC_US("s.taken_at") ", g->>'name', "
        "(g->>'available_gbps')::float8 / (g->>'capacity_gbps')::float8 AS fraction, "
        "coalesce((g->>'floor')::float8, 0) AS floor "
        "FROM snapshots s CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(s.data->'groups') = 'array' "
        "THEN s.data->'groups' ELSE '[]'::jsonb END) g "
        "WHERE s.taken_at >= $1::timestamptz AND s.taken_at < $2::timestamptz "
        "AND jsonb_typeof(g->'capacity_gbps') = 'number' AND jsonb_typeof(g->'available_gbps') = 'number' "
        "AND coalesce(jsonb_typeof(g->'floor'), 'number') = 'number' "
        "AND (g->>'capacity_gbps')::float8 > 0 "
        "ORDER BY (g->>'available_gbps')::float8 / (g->>'capacity_gbps')::float8 - "
        "coalesce((g->>'floor')::float8, 0), s.taken_at, s.id LIMIT 1",
        ts(q.window.from), ts(q.window.to));
    if (!lh.empty()) {
      slo::LowestHeadroom low;
      low.snapshot_id = lh[0][0].as<int64_t>();
      low.incident_id = lh[0][1].as<int64_t>();
      low.at = *read_time(lh[0][2]);
      low.group = read_text(lh[0][3]);
      low.fraction = lh[0][4].as<double>();
      low.floor = lh[0][5].as<double>();
      low.headroom = low.fraction - low.floor;
      rep.capacity.lowest = low;
    }

    // The incident ids of the repeat offenders the builder listed (it counted them while the
    // rows streamed past).
    if (!rep.offenders.empty()) {
      std::vector<std::string> links, optics, devices;
      for (const auto& o : rep.offenders) (o.kind == "link" ? links : o.kind == "optic" ? optics : devices).push_back(o.name);
      const auto ids = w.exec_params(
          "SELECT id, coalesce(link, ''), coalesce(suspect_port, ''), coalesce(suspect, device, '') FROM incidents "
          "WHERE detected_at >= $1::timestamptz AND detected_at < $2::timestamptz AND ($3::text IS NULL OR class = $3) "
          "AND (link = ANY($4::text[]) OR suspect_port = ANY($5::text[]) OR coalesce(suspect, device) = ANY($6::text[])) "
          "ORDER BY id",
          ts(q.window.from), ts(q.window.to), opt_text(q.incident_class), text_array(links), text_array(optics),
          text_array(devices));
      std::map<std::pair<std::string, std::string>, slo::Offender*> by;
      for (auto& o : rep.offenders) by[{o.kind == "link" || o.kind == "optic" ? o.kind : "dev", o.name}] = &o;
      for (const auto& row : ids) {
        const int64_t id = row[0].as<int64_t>();
        const std::pair<std::string, std::string> keys[] = {{"link", row[1].as<std::string>()},
                                                            {"optic", row[2].as<std::string>()},
                                                            {"dev", row[3].as<std::string>()}};
        for (const auto& k : keys) {
          if (const auto it = by.find(k); it != by.end()) it->second->incidents.push_back(id);
        }
      }
    }
    w.commit();
    return rep;
  });
}

}  // namespace medic::db
