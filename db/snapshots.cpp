// Snapshots in PostgreSQL: incident and action snapshots are one `snapshots` row with the
// whole snapshot in `data` (JSONB); a fabric snapshot keeps its groups and incidents there
// and writes every port as a typed row of snapshot_ports with COPY, in the same transaction.
#include <array>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "common/strings.h"
#include "db/database.h"
#include "db/internal.h"

namespace medic::db {

using nlohmann::json;
using snapshot::PortReading;
using telemetry::kCounterCount;

namespace {

using namespace internal;

// snapshot_ports columns before the counters; then one column per canonical counter,
// named as the counter.
constexpr std::array<const char*, 8> kPortColumns = {"snapshot_id", "seq",     "device",  "port",
                                                     "link",        "oper",    "drained", "sampled_at"};
constexpr size_t kPortFields = kPortColumns.size() + kCounterCount;

std::vector<std::string> port_columns() {
  std::vector<std::string> cols(kPortColumns.begin(), kPortColumns.end());
  for (size_t c = 0; c < kCounterCount; ++c) cols.emplace_back(telemetry::to_string(static_cast<telemetry::Counter>(c)));
  return cols;
}

std::string port_select_list() {
  std::string cols = "device, port, link, oper, drained, " MEDIC_US("sampled_at");
  for (size_t c = 0; c < kCounterCount; ++c) {
    cols += ", ";
    cols += telemetry::to_string(static_cast<telemetry::Counter>(c));
  }
  return cols;
}

// One port as COPY fields: pointers into a buffer of its own (nullptr is NULL), so a row
// costs no allocation of ours; doubles in their shortest exact form.
class PortRow {
 public:
  PortRow(const std::string& snapshot_id) : id_(snapshot_id) {}

  const std::array<const char*, kPortFields>& fill(size_t seq, const PortReading& p) {
    char* at = buf_.data();
    auto put_int = [&](long long v) {
      const char* start = at;
      at = std::to_chars(at, buf_.data() + buf_.size(), v).ptr;
      *at++ = '\0';
      return start;
    };
    fields_[0] = id_.c_str();
    fields_[1] = put_int(static_cast<long long>(seq));
    fields_[2] = p.device.c_str();
    fields_[3] = p.port.c_str();
    fields_[4] = p.link.empty() ? nullptr : p.link.c_str();
    fields_[5] = put_int(p.oper);
    fields_[6] = p.drained ? "t" : "f";
    if (p.sampled_at) {
      // Ports of one device share their scrape's time: format it once.
      if (*p.sampled_at != last_time_) {
        last_time_ = *p.sampled_at;
        last_text_ = format_iso8601(last_time_);
      }
      fields_[7] = last_text_.c_str();
    } else {
      fields_[7] = nullptr;
    }
    for (size_t c = 0; c < kCounterCount; ++c) {
      const auto counter = static_cast<telemetry::Counter>(c);
      if (!p.has(counter)) {
        fields_[kPortColumns.size() + c] = nullptr;
        continue;
      }
      fields_[kPortColumns.size() + c] = at;
      at = std::to_chars(at, buf_.data() + buf_.size(), p.get(counter)).ptr;
      *at++ = '\0';
    }
    return fields_;
  }

 private:
  const std::string& id_;
  std::array<char, 32 * (kCounterCount + 2)> buf_{};  // a double is at most 24 characters
  std::array<const char*, kPortFields> fields_{};
  Time last_time_{Duration(INT64_MIN)};
  std::string last_text_;
};

std::optional<double> read_double(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<double>();
}

void read_ports(pqxx::transaction_base& w, int64_t id, std::vector<PortReading>& out) {
  const auto r = w.exec_params("SELECT " + port_select_list() + " FROM snapshot_ports WHERE snapshot_id = $1 ORDER BY seq",
                               id);
  out.reserve(r.size());
  for (const auto& row : r) {
    PortReading p;
    p.device = read_text(row[0]);
    p.port = read_text(row[1]);
    p.link = read_text(row[2]);
    p.oper = row[3].as<int>();
    p.drained = row[4].as<bool>();
    p.sampled_at = read_time(row[5]);
    for (size_t c = 0; c < kCounterCount; ++c) {
      if (const auto v = read_double(row[static_cast<int>(6 + c)])) p.set(static_cast<telemetry::Counter>(c), *v);
    }
    out.push_back(std::move(p));
  }
}

}  // namespace

snapshot::IncidentReading incident_reading(const IncidentRow& r) {
  snapshot::IncidentReading i;
  i.id = r.id;
  i.incident_class = r.incident_class;
  i.state = r.state;
  i.severity = r.severity;
  i.link = r.link;
  i.device = r.device;
  return i;
}

Result<int64_t> Database::write_snapshot(const snapshot::Snapshot& s) {
  if (!snapshot::valid_scope(s.scope)) {
    return Error{"write_snapshot: scope " + quote(s.scope) + " is not incident, action or fabric"};
  }
  return run("write_snapshot", [&]() -> Result<int64_t> {
    const bool fabric = s.scope == snapshot::kScopeFabric;
    json data = fabric ? snapshot::to_json_without_ports(s) : snapshot::to_json(s);
    data.erase("id");  // the row's id is the truth
    const std::string incident = s.incident_id ? std::to_string(s.incident_id) : "";
    const std::string action = s.action_id ? std::to_string(s.action_id) : "";
    pqxx::work w(conn_->c);
    const auto r = w.exec_params(
        "INSERT INTO snapshots (incident_id, action_id, reason, taken_at, data, scope, port_count) "
        "VALUES ($1::bigint, $2::bigint, $3, $4::timestamptz, $5::jsonb, $6, $7) RETURNING id",
        opt_text(incident), opt_text(action), s.reason, ts(s.taken_at), data.dump(), s.scope,
        static_cast<int64_t>(s.ports.size()));
    const auto id = r[0][0].as<int64_t>();
    if (fabric && !s.ports.empty()) {
      const std::string id_text = std::to_string(id);
      PortRow row(id_text);
      pqxx::stream_to copy(w, "snapshot_ports", port_columns());
      for (size_t i = 0; i < s.ports.size(); ++i) copy << row.fill(i, s.ports[i]);
      copy.complete();
    }
    w.commit();
    return id;
  });
}

Result<std::optional<snapshot::Snapshot>> Database::snapshot(int64_t id) {
  using Out = std::optional<snapshot::Snapshot>;
  return run("snapshot", [&]() -> Result<Out> {
    pqxx::work w(conn_->c);  // one view of the row and its ports
    const auto r = w.exec_params(
        "SELECT scope, reason, coalesce(incident_id, 0), coalesce(action_id, 0), " MEDIC_US("taken_at") ", "
        "data::text, port_count FROM snapshots WHERE id = $1",
        id);
    if (r.empty()) return Out{};
    const std::string scope = read_text(r[0][0]);
    const std::string source = "snapshot " + std::to_string(id);
    auto decoded = snapshot::from_stored_json(json::parse(r[0][5].c_str()), source);
    if (!decoded.ok()) return Error{decoded.error()};
    snapshot::Snapshot s = std::move(decoded).value();
    s.id = id;
    s.scope = scope;
    s.reason = read_text(r[0][1]);
    s.incident_id = r[0][2].as<int64_t>();
    s.action_id = r[0][3].as<int64_t>();
    s.taken_at = *read_time(r[0][4]);
    if (scope == snapshot::kScopeFabric) {
      read_ports(w, id, s.ports);
      const auto expected = r[0][6].as<int64_t>();
      if (static_cast<int64_t>(s.ports.size()) != expected) {
        return Error{source + ": " + std::to_string(s.ports.size()) + " port rows, expected " + std::to_string(expected)};
      }
    }
    w.commit();
    return Out{std::move(s)};
  });
}

Result<std::vector<SnapshotRow>> Database::snapshots(const SnapshotFilter& f) {
  return run("snapshots", [&]() -> Result<std::vector<SnapshotRow>> {
    pqxx::nontransaction n(conn_->c);
    const std::string incident = f.incident_id ? std::to_string(*f.incident_id) : "";
    const std::string scope = f.scope.value_or("");
    const auto r = n.exec_params(
        "SELECT id, scope, reason, coalesce(data->>'link', ''), coalesce(incident_id, 0), coalesce(action_id, 0), "
        MEDIC_US("taken_at") ", port_count, coalesce(jsonb_array_length(data->'groups'), 0), "
        "coalesce(jsonb_array_length(data->'incidents'), 0) FROM snapshots "
        "WHERE ($1::bigint IS NULL OR incident_id = $1::bigint) AND ($2::text IS NULL OR scope = $2::text) "
        "ORDER BY taken_at DESC, id DESC LIMIT $3",
        opt_text(incident), opt_text(scope), f.limit);
    std::vector<SnapshotRow> out;
    for (const auto& row : r) {
      SnapshotRow s;
      s.id = row[0].as<int64_t>();
      s.scope = read_text(row[1]);
      s.reason = read_text(row[2]);
      s.link = read_text(row[3]);
      s.incident_id = row[4].as<int64_t>();
      s.action_id = row[5].as<int64_t>();
      s.taken_at = *read_time(row[6]);
      s.port_count = row[7].as<int>();
      s.group_count = row[8].as<int>();
      s.incident_count = row[9].as<int>();
      out.push_back(std::move(s));
    }
    return out;
  });
}

Result<int64_t> Database::prune_snapshots(Time older_than) {
  return run("prune_snapshots", [&]() -> Result<int64_t> {
    pqxx::work w(conn_->c);
    const auto r = w.exec_params("DELETE FROM snapshots WHERE taken_at < $1::timestamptz", ts(older_than));
    w.commit();
    return static_cast<int64_t>(r.affected_rows());
  });
}

}  // namespace medic::db
