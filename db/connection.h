// One connection to PostgreSQL, shared by the stores that speak SQL over it (db/*_store.h).
// Every call a store makes goes through run(): under a deadline (db/deadline.h), retried
// once on a fresh connection when the old one was lost, and failing at once (unavailable)
// while the retry backoff after a failure runs, so no caller is held by a database that is
// gone or hung. Not thread-safe: one Connection per thread that uses the database.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/result.h"
#include "db/deadline.h"

namespace medic::db {

class DbError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "postgresql://user:secret@host/db" -> "postgresql://user:***@host/db"
std::string redact_url(const std::string& url);

// The libpqxx connection, wrapped (a typedef in libpqxx 6, so not forward-declarable);
// defined in db/internal.h for the files of db/ that speak SQL.
struct Pq;

class Connection {
 public:
  // Connects; throws DbError naming the (redacted) URL and the server's answer.
  explicit Connection(std::string url, DbOptions options = {});
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const std::string& url() const { return url_; }
  const DbOptions& options() const { return options_; }
  // False while calls fail at once after the server failed (until the backoff passes).
  bool available() const;
  // Why the last call failed on the connection ("" after a success).
  const std::string& last_failure() const { return last_failure_; }

  // Applies every embedded migration not yet recorded, in order, under an advisory lock so
  // several daemons starting at once do not race. Returns the names applied now. Throws
  // DbError (start-up path) on failure or when an applied migration was edited.
  std::vector<std::string> migrate();
  Result<int> schema_version();

  // Runs `f(Pq&)` as one call (see above); `what` names it in errors. Defined in
  // db/internal.h.
  template <class F>
  auto run(const char* what, F&& f) -> decltype(f(std::declval<Pq&>()));

 private:
  void connect();
  void failed(const std::string& why);
  void succeeded();

  std::string url_;
  DbOptions options_;
  std::unique_ptr<Pq> pq_;
  std::chrono::steady_clock::time_point retry_at_{};
  double backoff_s_ = 0;
  std::string last_failure_;
};

}  // namespace medic::db
