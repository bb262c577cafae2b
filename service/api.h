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

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/http_server.h"
#include "db/database.h"

namespace medic::service {

// What an incident in the queue waits for ("approval", "capacity", "repair", "a person",
// "validation"), "" when it is not in the queue.
std::string waits_for(const std::string& state);
// The queue as `medic queue --json` and GET /api/queue print it.
nlohmann::json queue_json(const std::vector<db::CaseRow>& cases);

class Api {
 public:
  Api(std::string db_url, std::string token);
  ~Api();
  // Handles /, /api/...; nullopt for any other path (the caller's 404 or its own routes).
  std::optional<HttpResponse> handle(const HttpRequest& r);

 private:
  HttpResponse decide(const HttpRequest& r, int64_t id, const std::string& verb);
  HttpResponse reset_breaker(const HttpRequest& r);
  std::string authorize(const HttpRequest& r) const;  // "" when allowed, else why not
  db::Database& db();

  std::string db_url_;
  std::string token_;
  std::mutex mu_;
  std::unique_ptr<db::Database> db_;
};

}  // namespace medic::service
