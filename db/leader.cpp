#include "db/leader.h"

#include <pqxx/pqxx>

#include "db/database.h"

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
