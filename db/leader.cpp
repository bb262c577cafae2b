#include "db/leader.h"

#include <pqxx/pqxx>

#include "db/database.h"

namespace medic::db {

namespace {
// "medicldr": one key for every medicd sharing a database (the migration lock uses another).
constexpr int64_t kLeaderLockKey = 0x6d656469636c6472;
}  // namespace

struct LeaderLock::Impl {
  explicit Impl(const std::string& url) : url(url) {}
  std::string url;
  std::unique_ptr<pqxx::connection> conn;
  bool acquired = false;
};

LeaderLock::LeaderLock(const std::string& url) : impl_(std::make_unique<Impl>(url)) {
  try {
    impl_->conn = std::make_unique<pqxx::connection>(url);
  } catch (const std::exception& e) {
    throw DbError("leader lock: cannot connect to " + redact_url(url) + ": " + e.what());
  }
}

LeaderLock::~LeaderLock() = default;

Result<bool> LeaderLock::try_acquire() {
  try {
    if (!impl_->conn || !impl_->conn->is_open()) {
      impl_->acquired = false;
      impl_->conn = std::make_unique<pqxx::connection>(impl_->url);
    }
    pqxx::nontransaction n(*impl_->conn);
    impl_->acquired = n.exec_params("SELECT pg_try_advisory_lock($1)", kLeaderLockKey)[0][0].as<bool>();
    return impl_->acquired;
  } catch (const std::exception& e) {
    impl_->acquired = false;
    impl_->conn.reset();
    return Error{std::string("leader lock: ") + e.what()};
  }
}

bool LeaderLock::held() {
  if (!impl_->acquired || !impl_->conn) return false;
  try {
    pqxx::nontransaction n(*impl_->conn);
    const auto r = n.exec_params(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted "
        "AND ((classid::bigint << 32) | objid::bigint) = $1",
        kLeaderLockKey);
    impl_->acquired = r[0][0].as<int64_t>() > 0;
  } catch (const std::exception&) {
    impl_->acquired = false;
    impl_->conn.reset();
  }
  return impl_->acquired;
}

}  // namespace medic::db
