#include "db/connection.h"

#include <spdlog/spdlog.h>

#include <map>

#include "common/url.h"
#include "db/internal.h"
#include "db/migrations.h"

namespace medic::db {

using namespace internal;

namespace {

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

}  // namespace

std::string redact_url(const std::string& url) {
  // postgresql://user:password@host... ; also key=value "password=..." forms.
  // user:password@ can only come before the path (libpq looks no further than the first '/').
  std::string out = hide_url_passwords(url, "/");
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


Connection::Connection(std::string url, DbOptions options) : url_(std::move(url)), options_(options) { connect(); }
Connection::~Connection() = default;

bool Connection::available() const { return std::chrono::steady_clock::now() >= retry_at_; }

void Connection::failed(const std::string& why) {
  backoff_s_ = backoff_s_ == 0 ? options_.retry_min_s : std::min(options_.retry_max_s, backoff_s_ * 2);
  retry_at_ = std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(backoff_s_));
  last_failure_ = why;
}

void Connection::succeeded() {
  backoff_s_ = 0;
  retry_at_ = {};
  last_failure_.clear();
}

void Connection::connect() {
  try {
    pq_ = std::make_unique<Pq>(with_connect_timeout(url_, options_.connect_timeout_s));
    // A transaction whose client was lost without a word (its connection cut where no
    // reset comes back) would hold its row locks on the server until TCP keepalive noticed,
    // hours later, and every write to those rows would wait on it until its deadline. No
    // call leaves its transaction idle for more than moments: the server ends one idle a
    // minute.
    pqxx::nontransaction(pq_->c).exec("SET idle_in_transaction_session_timeout = '60s'");
  } catch (const std::exception& e) {
    std::string msg = e.what();
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    throw DbError("cannot connect to PostgreSQL at " + redact_url(url_) + ": " + msg);
  }
}

std::vector<std::string> Connection::migrate() {
  std::vector<std::string> applied;
  try {
    pqxx::work w(pq_->c);
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

Result<int> Connection::schema_version() {
  return run("schema_version", [&](Pq& pq) -> Result<int> {
    pqxx::nontransaction n(pq.c);
    const auto r = n.exec("SELECT coalesce(max(version), 0) FROM schema_migrations");
    return r[0][0].as<int>();
  });
}

}  // namespace medic::db
