#include "db/audit_store.h"

#include "db/internal.h"

namespace medic::db {

using namespace internal;

Result<std::vector<AuditRow>> AuditStore::audit(const AuditFilter& f) {
  return c_.run("audit", [&](Pq& pq) -> Result<std::vector<AuditRow>> {
    pqxx::nontransaction n(pq.c);
    const std::string incident = f.incident_id ? std::to_string(*f.incident_id) : "";
    const std::string since = f.since ? ts(*f.since) : "";
    const auto r = n.exec_params(
        "SELECT * FROM (SELECT id, " MEDIC_US("at") ", who, role, what, coalesce(incident_id, 0), coalesce(link, ''), "
        "coalesce(reason, ''), source, detail::text FROM audit "
        "WHERE ($1::bigint IS NULL OR incident_id = $1::bigint) AND ($2::text IS NULL OR who = $2) "
        "AND ($3::timestamptz IS NULL OR at >= $3::timestamptz) ORDER BY id DESC LIMIT $4) newest ORDER BY id",
        opt_text(incident), f.who ? f.who->c_str() : nullptr, opt_text(since), std::max(1, f.limit));
    std::vector<AuditRow> out;
    out.reserve(r.size());
    for (const auto& row : r) {
      AuditRow a;
      a.id = row[0].as<int64_t>();
      a.at = *read_time(row[1]);
      a.who = read_text(row[2]);
      a.role = read_text(row[3]);
      a.what = read_text(row[4]);
      a.incident_id = row[5].as<int64_t>();
      a.link = read_text(row[6]);
      a.reason = read_text(row[7]);
      a.source = read_text(row[8]);
      a.detail_json = read_text(row[9]);
      out.push_back(std::move(a));
    }
    return out;
  });
}

}  // namespace medic::db
