// Snapshots in PostgreSQL: incident and action snapshots are one `snapshots` row with the
// whole snapshot in `data` (JSONB); a fabric snapshot keeps its groups and incidents there
// and writes every port as a typed row of snapshot_ports with COPY, in the same transaction.
//
// That COPY is binary, through libpq on a connection of its own: libpqxx 6 streams COPY only
// in the text format with a string or two per field, and the text form cost three times the
// CPU on both sides (the client formatting, the server parsing 24 doubles a row). Its one
// statement is fixed text and its values go as typed binary fields, never into SQL.
#include <libpq-fe.h>

#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "common/strings.h"
#include "db/snapshot_store.h"
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

std::string port_column_list() {
  std::string cols;
  for (const char* c : kPortColumns) cols += std::string(cols.empty() ? "" : ", ") + c;
  for (size_t c = 0; c < kCounterCount; ++c) {
    cols += ", ";
    cols += telemetry::to_string(static_cast<telemetry::Counter>(c));
  }
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

// PostgreSQL's binary COPY format: a signature, then per row the field count and each field
// as a length (-1 for NULL) and its value in network byte order. timestamptz is
// microseconds since 2000-01-01 UTC.
constexpr char kCopySignature[] = "PGCOPY\n\377\r\n";  // and its NUL: 11 bytes
constexpr int64_t kPostgresEpochUs = 946'684'800'000'000;

class BinaryRows {
 public:
  BinaryRows() {
    buf_.append(kCopySignature, sizeof kCopySignature);  // 11 bytes with the NUL
    put32(0);                                            // flags
    put32(0);                                            // header extension
  }
  void row(int64_t snapshot_id, size_t seq, const PortReading& p) {
    put16(static_cast<uint16_t>(kPortFields));
    field64(static_cast<uint64_t>(snapshot_id));
    put32(4);
    put32(static_cast<uint32_t>(seq));
    text(p.device);
    text(p.port);
    if (p.link.empty()) {
      null();
    } else {
      text(p.link);
    }
    put32(2);
    put16(static_cast<uint16_t>(static_cast<int16_t>(p.oper)));
    put32(1);
    buf_.push_back(p.drained ? 1 : 0);
    if (p.sampled_at) {
      field64(static_cast<uint64_t>(p.sampled_at->time_since_epoch().count() - kPostgresEpochUs));
    } else {
      null();
    }
    for (size_t c = 0; c < kCounterCount; ++c) {
      const auto counter = static_cast<telemetry::Counter>(c);
      // Not read, or not a number (the JSON form cannot keep NaN or infinity either).
      if (!p.has(counter) || !std::isfinite(p.get(counter))) {
        null();
      } else {
        field64(std::bit_cast<uint64_t>(p.get(counter)));
      }
    }
  }
  void end() { put16(0xffff); }
  std::string& buffer() { return buf_; }

 private:
  void put16(uint16_t v) {
    const char b[2] = {static_cast<char>(v >> 8), static_cast<char>(v)};
    buf_.append(b, 2);
  }
  void put32(uint32_t v) {
    const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                       static_cast<char>(v)};
    buf_.append(b, 4);
  }
  void field64(uint64_t v) {
    put32(8);
    put32(static_cast<uint32_t>(v >> 32));
    put32(static_cast<uint32_t>(v));
  }
  void text(const std::string& s) {
    put32(static_cast<uint32_t>(s.size()));
    buf_.append(s);
  }
  void null() { put32(0xffffffff); }

  std::string buf_;
};

// A libpq connection closed (and its open transaction rolled back) when it goes.
struct PgConnClose {
  void operator()(PGconn* c) const { PQfinish(c); }
};
struct PgResultClear {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgConn = std::unique_ptr<PGconn, PgConnClose>;
using PgResult = std::unique_ptr<PGresult, PgResultClear>;

std::string pq_error(PGconn* c) {
  std::string msg = PQerrorMessage(c);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  return msg;
}

// Runs a statement without parameters that returns nothing; "" or the server's error.
std::string pq_command(PGconn* c, const char* sql) {
  const PgResult r(PQexec(c, sql));
  return PQresultStatus(r.get()) == PGRES_COMMAND_OK ? "" : pq_error(c);
}

// The fabric snapshot: its row, then every port by binary COPY, in one transaction on a
// connection of its own.
Result<int64_t> write_fabric(const std::string& url, const snapshot::Snapshot& s, const std::string& data) {
  const std::string incident = s.incident_id ? std::to_string(s.incident_id) : "";
  const std::string action = s.action_id ? std::to_string(s.action_id) : "";
  const PgConn conn(PQconnectdb(url.c_str()));
  PGconn* c = conn.get();
  if (c == nullptr || PQstatus(c) != CONNECTION_OK) {
    return Error{"write_snapshot: cannot connect to PostgreSQL at " + redact_url(url) + ": " +
                 (c ? pq_error(c) : std::string("out of memory"))};
  }
  auto fail = [&](const std::string& what) { return Error{"write_snapshot: " + what}; };
  if (auto e = pq_command(c, "BEGIN"); !e.empty()) return fail(e);
  const std::string taken = internal::ts(s.taken_at);
  const std::string ports = std::to_string(s.ports.size());
  const char* values[] = {internal::opt_text(incident), internal::opt_text(action), s.reason.c_str(), taken.c_str(),
                          data.c_str(),                  s.scope.c_str(),              ports.c_str()};
  const PgResult row(PQexecParams(c,
                                  "INSERT INTO snapshots (incident_id, action_id, reason, taken_at, data, scope, port_count) "
                                  "VALUES ($1::bigint, $2::bigint, $3, $4::timestamptz, $5::jsonb, $6, $7::integer) "
                                  "RETURNING id",
                                  7, nullptr, values, nullptr, nullptr, 0));
  if (PQresultStatus(row.get()) != PGRES_TUPLES_OK) return fail(pq_error(c));
  const int64_t id = std::stoll(PQgetvalue(row.get(), 0, 0));

  const std::string copy = "COPY snapshot_ports (" + port_column_list() + ") FROM STDIN (FORMAT binary)";
  {
    const PgResult started(PQexec(c, copy.c_str()));
    if (PQresultStatus(started.get()) != PGRES_COPY_IN) return fail(pq_error(c));
  }
  // Rows go out in pieces of about a megabyte while the next ones are encoded.
  constexpr size_t kPiece = 1 << 20;
  BinaryRows rows;
  auto flush = [&]() {
    std::string& b = rows.buffer();
    const bool ok = b.empty() || PQputCopyData(c, b.data(), static_cast<int>(b.size())) == 1;
    b.clear();
    return ok;
  };
  for (size_t i = 0; i < s.ports.size(); ++i) {
    rows.row(id, i, s.ports[i]);
    if (rows.buffer().size() >= kPiece && !flush()) return fail(pq_error(c));
  }
  rows.end();
  if (!flush() || PQputCopyEnd(c, nullptr) != 1) return fail(pq_error(c));
  for (PgResult r(PQgetResult(c)); r; r.reset(PQgetResult(c))) {
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) return fail(pq_error(c));
  }
  if (auto e = pq_command(c, "COMMIT"); !e.empty()) return fail(e);
  return id;
}

// PostgreSQL prints a double in its shortest exact form; from_chars reads it back exactly,
// several times faster than libpqxx's stream-based conversion.
std::optional<double> read_double(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  const char* text = f.c_str();
  const char* end = text + f.size();
  double v = 0;
  const auto [ptr, ec] = std::from_chars(text, end, v);
  if (ec != std::errc() || ptr != end) throw DbError("snapshot_ports." + std::string(f.name()) + ": not a number: " + text);
  return v;
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

Result<int64_t> SnapshotStore::write_snapshot(const snapshot::Snapshot& s) {
  if (!snapshot::valid_scope(s.scope)) {
    return Error{"write_snapshot: scope " + quote(s.scope) + " is not incident, action or fabric"};
  }
  return c_.run("write_snapshot", [&](Pq& pq) -> Result<int64_t> {
    const bool fabric = s.scope == snapshot::kScopeFabric;
    json data = fabric ? snapshot::to_json_without_ports(s) : snapshot::to_json(s);
    data.erase("id");  // the row's id is the truth
    if (fabric) return write_fabric(c_.url(), s, data.dump());
    const std::string incident = s.incident_id ? std::to_string(s.incident_id) : "";
    const std::string action = s.action_id ? std::to_string(s.action_id) : "";
    pqxx::work w(pq.c);
    const auto r = w.exec_params(
        "INSERT INTO snapshots (incident_id, action_id, reason, taken_at, data, scope, port_count) "
        "VALUES ($1::bigint, $2::bigint, $3, $4::timestamptz, $5::jsonb, $6, $7) RETURNING id",
        opt_text(incident), opt_text(action), s.reason, ts(s.taken_at), data.dump(), s.scope,
        static_cast<int64_t>(s.ports.size()));
    const auto id = r[0][0].as<int64_t>();
    w.commit();
    return id;
  });
}

Result<std::optional<snapshot::Snapshot>> SnapshotStore::snapshot(int64_t id) {
  using Out = std::optional<snapshot::Snapshot>;
  return c_.run("snapshot", [&](Pq& pq) -> Result<Out> {
    pqxx::work w(pq.c);  // one view of the row and its ports
    const auto r = w.exec_params(
        "SELECT scope, reason, coalesce(incident_id, 0), coalesce(action_id, 0), " MEDIC_US("taken_at") ", "
        "data::text, port_count FROM snapshots WHERE id = $1",
        id);
    if (r.empty()) return Out{};
    const std::string scope = read_text(r[0][0]);
    const std::string source = "snapshot " + std::to_string(id);
    auto decoded = snapshot::from_stored_json(json::parse(r[0][5].c_str()), source);
    if (!decoded.ok()) return decoded.failure();
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

Result<std::vector<SnapshotRow>> SnapshotStore::snapshots(const SnapshotFilter& f) {
  return c_.run("snapshots", [&](Pq& pq) -> Result<std::vector<SnapshotRow>> {
    pqxx::nontransaction n(pq.c);
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

Result<int64_t> SnapshotStore::prune_snapshots(Time older_than) {
  return c_.run("prune_snapshots", [&](Pq& pq) -> Result<int64_t> {
    pqxx::work w(pq.c);
    const auto r = w.exec_params("DELETE FROM snapshots WHERE taken_at < $1::timestamptz", ts(older_than));
    w.commit();
    return static_cast<int64_t>(r.affected_rows());
  });
}

}  // namespace medic::db
