// SLO targets and the stage times of incidents.
#include "db/slo_store.h"

#include "db/internal.h"

namespace medic::db {

using namespace internal;

Result<std::vector<slo::Target>> SloStore::slo_targets() {
  return c_.run("slo_targets", [&](Pq& pq) -> Result<std::vector<slo::Target>> {
    pqxx::nontransaction n(pq.c);
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

Status SloStore::set_slo_target(const slo::Target& t, const Actor& by, Time at) {
  return c_.run("set_slo_target", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    w.exec_params(
        "INSERT INTO slo_targets (incident_class, stage, target_seconds, objective) "
        "VALUES ($1, $2, $3, $4) ON CONFLICT (incident_class, stage) DO UPDATE SET "
        "target_seconds = excluded.target_seconds, objective = excluded.objective",
        t.incident_class, std::string(slo::to_string(t.stage)), seconds(t.target), t.objective);
    insert_audit(w, by, at, "slo_target", 0, "", "",
                 "{\"class\": \"" + t.incident_class + "\", \"stage\": \"" + std::string(slo::to_string(t.stage)) +
                     "\", \"target_s\": " + std::to_string(seconds(t.target)) + ", \"objective\": " +
                     std::to_string(t.objective) + "}");
    w.commit();
    return Ok{};
  });
}

Result<std::vector<slo::IncidentTimes>> SloStore::incident_times(std::optional<Time> since) {
  return c_.run("incident_times", [&](Pq& pq) -> Result<std::vector<slo::IncidentTimes>> {
    pqxx::nontransaction n(pq.c);
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

}  // namespace medic::db
