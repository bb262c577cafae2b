// medicd's repair-queue API against the real PostgreSQL, request by request.
#include "service/api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "tests/db/demo_db.h"

namespace medic::service {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

class ApiTest : public ::testing::Test {
 protected:
  HttpRequest req(std::string method, std::string path, std::string body = "", bool with_token = true) {
    HttpRequest r;
    r.method = std::move(method);
    r.path = std::move(path);
    r.target = r.path;
    r.body = std::move(body);
    if (with_token) r.headers["authorization"] = "Bearer s3cret";
    return r;
  }
  HttpResponse call(const HttpRequest& r) {
    auto res = api.handle(r);
    EXPECT_TRUE(res.has_value()) << r.path;
    return res.value_or(HttpResponse{});
  }
  int64_t open_incident(const std::string& ref, triage::IncidentState state) {
    triage::IncidentUpdate u;
    u.cls = triage::IncidentClass::corruption;
    u.link = d.link(ref);
    u.severity = detectors::Severity::critical;
    u.detected_at = u.started_at = SystemClock().now();
    u.summary = "corrupting";
    const auto id = d.db.open_incident(u, d.topo, u.detected_at);
    EXPECT_TRUE(id.ok());
    EXPECT_TRUE(d.db.set_incident_state(*id, state, u.detected_at, "needs approval").ok());
    return *id;
  }

  db::DemoDb d;
  Api api{d.tdb.url(), "s3cret"};
};

TEST_F(ApiTest, OtherPathsAreNotItsBusiness) {
  EXPECT_FALSE(api.handle(req("GET", "/metrics")).has_value());
  EXPECT_FALSE(api.handle(req("GET", "/healthz")).has_value());
}

TEST_F(ApiTest, ThePageAndTheQueue) {
  const auto page = call(req("GET", "/"));
  EXPECT_EQ(page.status, 200u);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_THAT(page.body, HasSubstr("<title>fabric-medic repair queue</title>"));
  EXPECT_EQ(call(req("GET", "/api/queue")).body, "[]\n");

  const int64_t id = open_incident("rtsw0001:eth5", triage::IncidentState::pending_approval);
  const auto q = call(req("GET", "/api/queue"));
  ASSERT_EQ(q.status, 200u);
  const json a = json::parse(q.body);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["id"], id);
  EXPECT_EQ(a[0]["state"], "pending_approval");
  EXPECT_EQ(a[0]["waits_for"], "approval");
  EXPECT_EQ(a[0]["reason"], "needs approval");
  EXPECT_EQ(call(req("POST", "/api/queue")).status, 405u);
}

TEST_F(ApiTest, ApproveNeedsTheTokenAndRecordsWho) {
  const int64_t id = open_incident("rtsw0001:eth5", triage::IncidentState::pending_approval);
  const std::string path = "/api/incidents/" + std::to_string(id) + "/approve";
  const auto no_token = call(req("POST", path, R"({"by":"ana"})", false));
  EXPECT_EQ(no_token.status, 401u);
  EXPECT_EQ(json::parse(no_token.body)["error"], "missing or wrong bearer token");
  auto wrong = req("POST", path, R"({"by":"ana"})", false);
  wrong.headers["authorization"] = "Bearer nope";
  EXPECT_EQ(call(wrong).status, 401u);
  EXPECT_EQ(d.tdb.scalar("SELECT coalesce(approved_by, '-') FROM incidents"), "-");

  const auto ok = call(req("POST", path, R"({"by":"ana"})"));
  EXPECT_EQ(ok.status, 200u) << ok.body;
  EXPECT_EQ(json::parse(ok.body)["message"], "incident " + std::to_string(id) + ": approve by ana");
  EXPECT_EQ(d.tdb.scalar("SELECT approved_by FROM incidents"), "ana");
  EXPECT_EQ(call(req("GET", path)).status, 405u);
}

TEST_F(ApiTest, BadRequestsGetExactErrors) {
  const int64_t id = open_incident("rtsw0001:eth5", triage::IncidentState::pending_approval);
  const std::string base = "/api/incidents/" + std::to_string(id);
  auto err = [&](const HttpRequest& r) {
    const auto res = call(r);
    return std::to_string(res.status) + " " + json::parse(res.body)["error"].get<std::string>();
  };
  EXPECT_EQ(err(req("POST", "/api/incidents/abc/approve")), "400 incident id must be a positive integer, got \"abc\"");
  EXPECT_EQ(err(req("POST", "/api/incidents/-3/approve")), "400 incident id must be a positive integer, got \"-3\"");
  EXPECT_EQ(err(req("POST", base + "/drain")), "404 no such action \"drain\" (approve, reject, repaired)");
  EXPECT_EQ(err(req("POST", "/api/incidents/999/approve")), "404 no incident with id 999");
  EXPECT_EQ(err(req("POST", base + "/approve", "{\"by\": ")),
            "400 body: line 1, column 8: invalid JSON: syntax error while parsing value - unexpected end of input; "
            "expected '[', '{', or a literal");
  EXPECT_EQ(err(req("POST", base + "/approve", "[1]")), "400 body: $: expected an object, got an array");
  EXPECT_EQ(err(req("POST", base + "/approve", R"({"by": 7})")), "400 body: $.by: expected a string, got an integer");
  EXPECT_EQ(err(req("POST", base + "/approve", R"({"who": "x"})")), "400 body: $: unknown key \"who\" (by, reason)");
  EXPECT_EQ(err(req("POST", base + "/repaired", R"({"by": "ana"})")),
            "409 incident " + std::to_string(id) +
                " is pending_approval: only a drained link waiting for repair (repair_requested, escalated) can be "
                "marked repaired");
  EXPECT_EQ(err(req("GET", "/api/nothing")), "404 no such path: /api/nothing");
  // Nothing was recorded by any of them.
  EXPECT_EQ(d.tdb.scalar("SELECT state || ' ' || coalesce(approved_by, '-') FROM incidents"), "pending_approval -");
}

TEST_F(ApiTest, RejectDismissesWithTheReason) {
  const int64_t id = open_incident("rtsw0001:eth5", triage::IncidentState::blocked);
  const auto r = call(req("POST", "/api/incidents/" + std::to_string(id) + "/reject", R"({"by":"bo","reason":"optic swapped"})"));
  EXPECT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(d.tdb.scalar("SELECT state || ': ' || blocked_reason FROM incidents"), "dismissed: dismissed by bo: optic swapped");
}

TEST_F(ApiTest, TheBreakerCanBeReadAndResetOnlyWhenOpen) {
  EXPECT_EQ(json::parse(call(req("GET", "/api/breaker")).body)["open"], false);
  const auto closed = call(req("POST", "/api/breaker/reset", R"({"by":"ana"})"));
  EXPECT_EQ(closed.status, 409u);
  EXPECT_EQ(json::parse(closed.body)["error"], "the circuit breaker is not open");
  ASSERT_TRUE(d.db.open_breaker(SystemClock().now(), "circuit breaker open: 30 incidents").ok());
  EXPECT_EQ(json::parse(call(req("GET", "/api/breaker")).body)["reason"], "circuit breaker open: 30 incidents");
  EXPECT_EQ(call(req("POST", "/api/breaker/reset", R"({"by":"ana"})")).status, 200u);
  EXPECT_EQ(d.tdb.scalar("SELECT open::text || ' ' || reset_by FROM breaker"), "false ana");
}

TEST(ApiWithoutToken, DecisionsAreOffButReadingWorks) {
  db::DemoDb d;
  Api api(d.tdb.url(), "");
  HttpRequest r;
  r.method = "POST";
  r.path = "/api/breaker/reset";
  const auto res = api.handle(r);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403u);
  EXPECT_THAT(res->body, HasSubstr("decisions over HTTP are off: medicd has no --api-token; use the medic CLI"));
  r.method = "GET";
  r.path = "/api/queue";
  EXPECT_EQ(api.handle(r)->status, 200u);
}


TEST_F(ApiTest, BodiesThatAreNotUtf8Are400AndChangeNothing) {
  const int64_t id = open_incident("rtsw0001:eth5", triage::IncidentState::pending_approval);
  const auto r = call(req("POST", "/api/incidents/" + std::to_string(id) + "/approve", "{\"by\": \"an\xff\"}"));
  EXPECT_EQ(r.status, 400u) << r.body;
  const json body = json::parse(r.body);  // the answer itself is valid JSON
  EXPECT_THAT(body["error"].get<std::string>(), HasSubstr("invalid JSON"));
  EXPECT_THAT(body["error"].get<std::string>(), HasSubstr("\\xff"));
  EXPECT_EQ(d.tdb.scalar("SELECT coalesce(approved_by, '-') FROM incidents"), "-");
}

TEST_F(ApiTest, AKnownDownDatabaseIsRefusedAtOnceOffTheCallersThread) {
  Api down(d.tdb.url(), "s3cret", {}, 64, [] { return std::string("connection refused"); });
  std::promise<HttpResponse> answer;
  ASSERT_TRUE(down.submit(req("GET", "/api/queue"), [&](HttpResponse r) { answer.set_value(std::move(r)); }));
  const HttpResponse r = answer.get_future().get();
  EXPECT_EQ(r.status, 503u);
  EXPECT_EQ(json::parse(r.body)["error"],
            "the database does not answer (connection refused); nothing can be read or decided now");
  // The page needs no database.
  std::promise<HttpResponse> page;
  ASSERT_TRUE(down.submit(req("GET", "/"), [&](HttpResponse r) { page.set_value(std::move(r)); }));
  EXPECT_EQ(page.get_future().get().status, 200u);
  // Paths that are not the API's are the caller's.
  EXPECT_FALSE(down.submit(req("GET", "/metrics"), [](HttpResponse) {}));
}

TEST_F(ApiTest, RequestsAreAnsweredOnTheApisThread) {
  std::promise<HttpResponse> answer;
  ASSERT_TRUE(api.submit(req("GET", "/api/queue"), [&](HttpResponse r) { answer.set_value(std::move(r)); }));
  const HttpResponse r = answer.get_future().get();
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "[]\n");
}

}  // namespace
}  // namespace medic::service
