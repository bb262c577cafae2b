// Shared by the files of db/ that speak SQL (never included outside db/): the connection,
// the retry-once wrapper every call goes through, and column helpers.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "common/strings.h"
#include "common/time.h"
#include "db/audit_store.h"
#include "db/connection.h"

namespace medic::db {

struct Pq {
  explicit Pq(const std::string& url) : c(url) {}
  pqxx::connection c;
};

namespace internal {

inline std::string ts(Time t) { return format_iso8601(t); }
inline const char* opt_text(const std::string& s) { return s.empty() ? nullptr : s.c_str(); }

inline std::optional<Time> read_time(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return Time(Duration(f.as<int64_t>()));
}

inline std::string read_text(const pqxx::field& f) { return f.is_null() ? "" : f.as<std::string>(); }

// One line of an incident's history.
inline void insert_event(pqxx::work& w, int64_t incident_id, Time at, const std::string& state,
                         const std::string& note) {
  w.exec_params("INSERT INTO incident_events (incident_id, at, state, note) VALUES ($1, $2::timestamptz, $3, $4)",
                incident_id, ts(at), state, note);
}

// A PostgreSQL array literal of texts ('{"a","b"}'), for `= ANY($1::text[])`: one
// statement for many rows instead of a statement per row.
inline std::string text_array(const std::vector<std::string>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += '"';
    for (const char ch : items[i]) {
      if (ch == '"' || ch == '\\') out += '\\';
      out += ch;
    }
    out += '"';
  }
  return out + "}";
}

// A PostgreSQL array literal of ids ('{1,2}'), for `= ANY($1::bigint[])`.
inline std::string id_array(const std::vector<int64_t>& ids) {
  std::string out = "{";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  return out + "}";
}

// One row of the audit trail, in the caller's transaction (with the change it records).
inline void insert_audit(pqxx::work& w, const Actor& by, Time at, const std::string& what, int64_t incident_id,
                         const std::string& link, const std::string& reason, const std::string& detail_json = "{}") {
  const std::string incident = incident_id != 0 ? std::to_string(incident_id) : "";
  w.exec_params(
      "INSERT INTO audit (at, who, role, what, incident_id, link, reason, source, detail) "
      "VALUES ($1::timestamptz, $2, $3, $4, $5::bigint, $6, $7, $8, $9::jsonb)",
      ts(at), by.name, by.role, what, opt_text(incident), opt_text(link), opt_text(reason), by.source, detail_json);
}

}  // namespace internal

// Selects a timestamptz column as microseconds since the epoch.
#define MEDIC_US(col) "(extract(epoch from " col ") * 1000000)::bigint"

// Whether a call the server rolled back (a deadlock or serialization failure) is run again:
// once, on its first attempt.
inline bool retry_rolled_back(const char* what, const std::exception& e, int attempt) {
  spdlog::warn("database rolled back {}: {}{}", what, trim(e.what()), attempt == 0 ? "; running it again" : "");
  return attempt == 0;
}

template <class F>
inline auto Connection::run(const char* what, F&& f) -> decltype(f(std::declval<Pq&>())) {
  if (!available()) {
    const double left = std::chrono::duration<double>(retry_at_ - std::chrono::steady_clock::now()).count();
    return Error::unavailable(std::string(what) + ": database unavailable (" + last_failure_ + "); next try in " +
                              std::to_string(static_cast<int>(std::ceil(std::max(0.0, left)))) + " s");
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool late = false;
    try {
      if (!pq_ || !pq_->c.is_open()) connect();
      CallDeadline deadline(pq_->c.sock(), options_.call_timeout_s);
      try {
        auto r = f(*pq_);
        succeeded();
        return r;
      } catch (...) {
        late = deadline.fired();
        throw;
      }
    } catch (const pqxx::deadlock_detected& e) {
      // The server chose this transaction to end a deadlock, or (serializable) to keep
      // transactions apart: it rolled back whole and nothing of it was written, so the
      // call is run once more on the same connection. Not statement_completion_unknown
      // (40003): that statement may have taken effect.
      if (retry_rolled_back(what, e, attempt)) continue;
      return Error::unavailable(std::string(what) + ": " + std::string(trim(e.what())));
    } catch (const pqxx::serialization_failure& e) {
      if (retry_rolled_back(what, e, attempt)) continue;
      return Error::unavailable(std::string(what) + ": " + std::string(trim(e.what())));
    } catch (const pqxx::broken_connection& e) {
      pq_.reset();
      std::string why = e.what();
      while (!why.empty() && why.back() == '\n') why.pop_back();
      if (late) why = "no answer within " + format_number(options_.call_timeout_s) + " s";
      spdlog::warn("database connection lost during {}: {}{}", what, why, attempt == 0 && !late ? "; reconnecting" : "");
      if (attempt == 1 || late) {
        failed(why);
        return Error::unavailable(std::string(what) + ": connection lost: " + why);
      }
    } catch (const DbError& e) {
      pq_.reset();
      failed(e.what());
      return Error::unavailable(std::string(what) + ": " + e.what());
    } catch (const std::exception& e) {
      std::string msg = e.what();
      while (!msg.empty() && msg.back() == '\n') msg.pop_back();
      if (late) {
        pq_.reset();
        msg = "no answer within " + format_number(options_.call_timeout_s) + " s";
        failed(msg);
        return Error::unavailable(std::string(what) + ": " + msg);
      }
      return Error::internal(std::string(what) + ": " + msg);
    }
  }
  return Error::internal(std::string(what) + ": unreachable");
}

}  // namespace medic::db
