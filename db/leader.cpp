#include "db/leader.h"

#include <pqxx/pqxx>

#include "db/internal.h"

namespace medic::db {

namespace {
// "medicldr": one key for every medicd sharing a database (the migration lock uses another).
constexpr int64_t kLeaderLockKey = 0x6d656469636c6472;
}  // namespace

struct LeaderLock::Impl {
  Impl(const std::string& u, DbOptions o) : url(with_connect_timeout(u, o.connect_timeout_s)), options(o) {}
  std::string url;
  DbOptions options;
  std::unique_ptr<pqxx::connection> conn;
  bool acquired = false;

  // One call on the lock's connection, with the deadline; false (and the connection
  // dropped, the lock with it) when it fails.
  template <class F>
  bool call(F&& f, std::string* error) {
    try {
      if (!conn || !conn->is_open()) {
        acquired = false;
        conn = std::make_unique<pqxx::connection>(url);
      }
      CallDeadline deadline(conn->sock(), options.call_timeout_s);
      try {
        f(*conn);
        return true;
      } catch (...) {
        if (deadline.fired() && error != nullptr) {
          *error = "leader lock: no answer within " + std::to_string(options.call_timeout_s) + " s";
          conn.reset();
          acquired = false;
          return false;
        }
        throw;
      }
    } catch (const std::exception& e) {
      if (error != nullptr) {
        *error = std::string("leader lock: ") + e.what();
        while (!error->empty() && error->back() == '\n') error->pop_back();
      }
      conn.reset();
      acquired = false;
      return false;
    }
  }
};

LeaderLock::LeaderLock(const std::string& url, DbOptions options) : impl_(std::make_unique<Impl>(url, options)) {
  try {
    impl_->conn = std::make_unique<pqxx::connection>(impl_->url);
  } catch (const std::exception& e) {
    throw DbError("leader lock: cannot connect to " + redact_url(url) + ": " + e.what());
  }
}

LeaderLock::~LeaderLock() = default;

Result<bool> LeaderLock::try_acquire() {
  std::string error;
  const bool ok = impl_->call(
      [&](pqxx::connection& c) {
        pqxx::nontransaction n(c);
        impl_->acquired = n.exec_params("SELECT pg_try_advisory_lock($1)", kLeaderLockKey)[0][0].as<bool>();
      },
      &error);
  if (!ok) return Error{error};
  return impl_->acquired;
}

bool LeaderLock::held() {
  if (!impl_->acquired || !impl_->conn) return false;
  const bool ok = impl_->call(
      [&](pqxx::connection& c) {
        pqxx::nontransaction n(c);
        const auto r = n.exec_params(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted "
            "AND ((classid::bigint << 32) | objid::bigint) = $1",
            kLeaderLockKey);
        impl_->acquired = r[0][0].as<int64_t>() > 0;
      },
      nullptr);
  return ok && impl_->acquired;
}

}  // namespace medic::db

namespace medic::db {

using namespace internal;

Result<int64_t> LeaderStore::claim_leadership(const std::string& daemon, Time at) {
  return c_.run("claim_leadership", [&](Pq& pq) -> Result<int64_t> {
    pqxx::work w(pq.c);
    const auto r = w.exec_params(
        "INSERT INTO leader (id, daemon, epoch, since, heartbeat) VALUES (1, $1, 1, $2::timestamptz, $2::timestamptz) "
        "ON CONFLICT (id) DO UPDATE SET daemon = $1, epoch = leader.epoch + 1, since = $2::timestamptz, "
        "heartbeat = $2::timestamptz RETURNING epoch",
        daemon, ts(at));
    w.commit();
    return r[0][0].as<int64_t>();
  });
}

Status LeaderStore::leader_heartbeat(const std::string& daemon, int64_t epoch, Time at) {
  return c_.run("leader_heartbeat", [&](Pq& pq) -> Status {
    pqxx::work w(pq.c);
    const auto r = w.exec_params(
        "UPDATE leader SET heartbeat = $3::timestamptz WHERE id = 1 AND daemon = $1 AND epoch = $2", daemon, epoch,
        ts(at));
    if (r.affected_rows() != 1) return Error::conflict(daemon + " no longer leads (epoch " + std::to_string(epoch) + ")");
    w.commit();
    return Ok{};
  });
}

Result<std::optional<LeaderRow>> LeaderStore::leader() {
  return c_.run("leader", [&](Pq& pq) -> Result<std::optional<LeaderRow>> {
    pqxx::nontransaction n(pq.c);
    const auto r = n.exec("SELECT daemon, epoch, " MEDIC_US("since") ", " MEDIC_US("heartbeat") " FROM leader WHERE id = 1");
    if (r.empty()) return std::optional<LeaderRow>{};
    LeaderRow l;
    l.daemon = read_text(r[0][0]);
    l.epoch = r[0][1].as<int64_t>();
    l.since = *read_time(r[0][2]);
    l.heartbeat = *read_time(r[0][3]);
    return std::optional<LeaderRow>{l};
  });
}

}  // namespace medic::db
