// medicd's repair-queue API and web page, served next to /healthz and /metrics.
//
// GET /api describes every endpoint: its method and path, the least role it needs, whether
// it changes state, and its body. Every other /api call needs `Authorization: Bearer TOKEN`,
// a token `medic users add` handed out (or the bootstrap token of --api-token, which acts as
// the admin "bootstrap" until real users exist). The identity of every change is the
// token's, never the body's. Roles: viewer reads; operator also approves, rejects, dismisses,
// marks repaired and declares maintenance; admin also resets the breaker, sets SLO targets
// and manages users.
//
// Refusals are JSON {"error": "...", "status": N}: 401 (no, unknown or disabled token),
// 403 (the role may not), 404 (no such path, incident, window or user), 405 (method, with
// Allow), 409 (the state does not allow it), 413 (body over 16 KiB), 415 (a body that is
// not application/json), 422 (malformed JSON, unknown keys, wrong types, a missing reason,
// bad query values), 503 (the database does not answer). A refused call changes nothing.
//
// The page (/, /incidents/ID, /app.js, /app.css) is served with a Content-Security-Policy
// that allows nothing from elsewhere and no inline script or style.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/http_server.h"
#include "db/audit_store.h"
#include "db/connection.h"
#include "fabric/topology.h"
#include "remediation/capacity.h"
#include "remediation/policy.h"
#include "snapshot/snapshot.h"

namespace medic::service {

// What the API is built with (service/main.cpp fills it in once).
struct ApiSetup {
  std::string db_url;
  db::DbOptions db_options;
  // --api-token: acts as the admin "bootstrap" (to add the first users); "" for none.
  std::string bootstrap_token;
  // For the incident page's what-if (both may be null: no what-if).
  const fabric::Topology* capacity_topology = nullptr;
  remediation::DrainBudget budget;
  // Approvals each class needs (the two-person rule); null: one.
  const remediation::RemediationPolicy* policy = nullptr;
  snapshot::DiffThresholds diff_thresholds;
  size_t queue_limit = 64;
  double queue_wait_s = 2.0;
  // Why the database is known not to answer now ("" when it is thought to).
  std::function<std::string()> db_down;
};

inline constexpr size_t kApiBodyLimit = 16 * 1024;

// Database work runs on the API's own thread, one request at a time, each call under the
// database's deadline; requests wait in a bounded queue (503 when it is full, or when one
// has waited `queue_wait_s`: the database is slow or hung), and are refused at once while
// the database is known not to answer. The HTTP server's threads never wait on the
// database, so /healthz and /metrics always answer.
class Api {
 public:
  explicit Api(ApiSetup setup);
  ~Api();
  // Whether the path is the API's or the page's.
  static bool owns(const std::string& path);
  // Answers on the API's thread through `reply`; false for a path that is not the API's.
  bool submit(HttpRequest r, HttpRespond reply);
  // Answers on the caller's thread; nullopt for any other path.
  std::optional<HttpResponse> handle(const HttpRequest& r);

  struct Stores;
  struct Call;

 private:
  Stores& db();
  HttpResponse route(const HttpRequest& r);

  ApiSetup setup_;
  std::mutex mu_;
  std::unique_ptr<Stores> db_;
  std::chrono::steady_clock::time_point connect_after_{};  // after a failed connect
  std::string connect_error_;

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

// The endpoints as GET /api lists them.
nlohmann::json api_description();

// The checks of a request's body its endpoint (r.method, r.path) makes before any store is
// asked, as Api::handle makes them for an authorised caller: 413, 415 or 422 with the
// reason; nullopt when the body is taken, or when no endpoint takes it (404, 405: handle
// says so). The fuzz harness, which has no database behind it, calls it.
std::optional<HttpResponse> check_body(const HttpRequest& r);

}  // namespace medic::service
