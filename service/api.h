// medicd's repair-queue API and web page, served next to /healthz and /metrics:
//
//   GET  /                              the repair queue as a web page
//   GET  /api/queue                     incidents waiting for approval, capacity, repair or a person
//   GET  /api/breaker                   the circuit breaker
//   POST /api/incidents/ID/approve      {"by": "ana"}             (bearer token)
//   POST /api/incidents/ID/reject       {"by": "ana", "reason": "..."}
//   POST /api/incidents/ID/repaired     {"by": "ana"}
//   POST /api/breaker/reset             {"by": "ana"}
//
// Decisions need `Authorization: Bearer TOKEN` (medicd --api-token); without a configured
// token they are refused (403) and people decide with the medic CLI. Errors are JSON
// {"error": "..."} with 400 (bad request), 401 (token), 404 (no such incident or path),
// 405 (method), 409 (the incident's state does not allow it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/http_server.h"
#include "db/connection.h"
#include "db/queue_store.h"
#include "db/remediation_store.h"

namespace medic::service {

// Database work runs on the API's own thread, one request at a time, each call under the
// database's deadline; requests wait in a bounded queue (503 when it is full, or when one
// has waited `queue_wait_s`: the database is slow or hung), and are refused at once while
// the database is known not to answer. The HTTP server's threads never wait on the
// database, so /healthz and /metrics always answer.
class Api {
 public:
  // `db_down`: why the database is known not to answer now ("" when it is thought to).
  Api(std::string db_url, std::string token, db::DbOptions options = {}, size_t queue_limit = 64,
      std::function<std::string()> db_down = {}, double queue_wait_s = 2.0);
  ~Api();
  // Whether the path is the API's (/ and /api/...).
  static bool owns(const std::string& path);
  // Answers on the API's thread through `reply`; false for a path that is not the API's.
  bool submit(HttpRequest r, HttpRespond reply);
  // Answers on the caller's thread; nullopt for any other path (the caller's 404 or its own routes).
  std::optional<HttpResponse> handle(const HttpRequest& r);

 private:
  HttpResponse decide(const HttpRequest& r, int64_t id, const std::string& verb);
  HttpResponse reset_breaker(const HttpRequest& r);
  std::string authorize(const HttpRequest& r) const;  // "" when allowed, else why not
  // The API's own connection and the stores it uses, made on first use (and again after
  // the database was lost).
  struct Stores {
    explicit Stores(const std::string& url, const db::DbOptions& options) : conn(url, options) {}
    db::Connection conn;
    db::RemediationRecords records{conn};  // the queue and the breaker, read
    db::QueueStore queue{conn};            // people's decisions
  };
  Stores& db();

  std::string db_url_;
  std::string token_;
  db::DbOptions options_;
  std::mutex mu_;
  std::unique_ptr<Stores> db_;
  std::chrono::steady_clock::time_point connect_after_{};  // after a failed connect
  std::string connect_error_;

  size_t queue_limit_;
  std::function<std::string()> db_down_;
  double queue_wait_s_;
  struct Waiting {
    HttpRequest request;
    HttpRespond reply;
    std::chrono::steady_clock::time_point since;
  };
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<Waiting> queue_;
  bool stopping_ = false;
  std::thread worker_;
  std::thread reaper_;  // answers requests that waited too long
};

}  // namespace medic::service
