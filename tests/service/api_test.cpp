// medicd's repair-queue API against the real PostgreSQL, request by request: who may do
// what, the exact refusals, and the matrix of every endpoint × every kind of caller × every
// kind of body, checking the database after each call.
#include "service/api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <pqxx/pqxx>

#include "service/queue_view.h"
#include "tests/db/demo_db.h"

namespace medic::service {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

constexpr const char* kBootstrap = "boot-s3cret-token";

remediation::RemediationPolicy two_person_corruption() {
  remediation::RemediationPolicy p;
  p.approvals[static_cast<size_t>(triage::IncidentClass::corruption)] = 2;
  return p;
}

class ApiTest : public ::testing::Test {
 protected:
  ApiTest() {
    for (const auto& [name, role] : std::vector<std::pair<std::string, std::string>>{
             {"vera", "viewer"}, {"otto", "operator"}, {"olga", "operator"}, {"ada", "admin"}, {"dan", "operator"}}) {
      auto t = d.db.add_user(name, role, db::person("setup", "admin"), SystemClock().now());
      EXPECT_TRUE(t.ok()) << t.error();
      tokens[name] = *t;
    }
    EXPECT_TRUE(d.db.disable_user("dan", db::person("setup", "admin"), SystemClock().now()).ok());
  }
  static ApiSetup setup(const std::string& url, const fabric::Topology& topo, const remediation::RemediationPolicy& p) {
    ApiSetup s;
    s.db_url = url;
    s.bootstrap_token = kBootstrap;
    s.capacity_topology = &topo;
    s.policy = &p;
    return s;
  }
  HttpRequest req(std::string method, std::string path, std::string body = "", const std::string& who = "otto") {
    HttpRequest r;
    r.method = std::move(method);
    const size_t q = path.find('?');
    r.path = path.substr(0, q);
    if (q != std::string::npos) r.query = parse_query(path.substr(q + 1));
    r.target = path;
    r.body = std::move(body);
    r.peer = "127.0.0.9:40000";
    if (!r.body.empty()) r.headers["content-type"] = "application/json";
    if (!who.empty()) r.headers["authorization"] = "Bearer " + (tokens.count(who) ? tokens.at(who) : who);
    return r;
  }
  HttpResponse call(const HttpRequest& r) {
    auto res = api.handle(r);
    EXPECT_TRUE(res.has_value()) << r.path;
    return res.value_or(HttpResponse{});
  }
  // "STATUS error" of a refusal.
  std::string err(const HttpRequest& r) {
    const auto res = call(r);
    const json j = json::parse(res.body);
    return std::to_string(res.status) + " " + j.value("error", std::string("(no error)"));
  }
  int64_t open_incident(const std::string& ref, triage::IncidentState state,
                        triage::IncidentClass cls = triage::IncidentClass::corruption) {
    triage::IncidentUpdate u;
    u.cls = cls;
    u.link = d.link(ref);
    u.severity = detectors::Severity::critical;
    u.detected_at = u.started_at = SystemClock().now();
    u.summary = "corrupting";
    const auto id = d.db.open_incident(u, d.topo, u.detected_at);
    EXPECT_TRUE(id.ok());
    if (state != triage::IncidentState::triaged) {
      EXPECT_TRUE(d.db.set_incident_state(*id, state, u.detected_at, "needs approval").ok());
    }
    return *id;
  }
  std::string audit_count() { return d.tdb.scalar("SELECT count(*) FROM audit"); }

  db::DemoDb d;
  std::map<std::string, std::string> tokens;
  remediation::RemediationPolicy policy = two_person_corruption();
  Api api{setup(d.tdb.url(), d.topo, policy)};
};

TEST_F(ApiTest, OtherPathsAreNotItsBusiness) {
  EXPECT_FALSE(api.handle(req("GET", "/metrics")).has_value());
  EXPECT_FALSE(api.handle(req("GET", "/healthz")).has_value());
  EXPECT_FALSE(api.handle(req("GET", "/apix")).has_value());
}

TEST_F(ApiTest, ThePageIsServedWithAPolicyThatForbidsEverythingFromElsewhere) {
  for (const std::string path : {"/", "/incidents/12", "/slo"}) {
    const auto page = call(req("GET", path, "", ""));
    EXPECT_EQ(page.status, 200u) << path;
    EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
    EXPECT_THAT(page.body, HasSubstr("<title>fabric-medic repair queue</title>"));
    EXPECT_THAT(page.body, ::testing::Not(HasSubstr("<script>")));  // no inline script
    EXPECT_THAT(page.body, ::testing::Not(HasSubstr("style=")));
    bool csp = false;
    for (const auto& [k, v] : page.headers) {
      if (k == "Content-Security-Policy") {
        csp = true;
        EXPECT_THAT(v, HasSubstr("default-src 'none'"));
        EXPECT_THAT(v, HasSubstr("script-src 'self'"));
        EXPECT_THAT(v, HasSubstr("connect-src 'self'"));
        EXPECT_THAT(v, ::testing::Not(HasSubstr("unsafe-inline")));
      }
    }
    EXPECT_TRUE(csp) << path;
  }
  EXPECT_EQ(call(req("GET", "/app.js", "", "")).content_type, "text/javascript; charset=utf-8");
  EXPECT_THAT(call(req("GET", "/app.js", "", "")).body, HasSubstr("sessionStorage"));
  EXPECT_EQ(call(req("GET", "/app.css", "", "")).content_type, "text/css; charset=utf-8");
  EXPECT_EQ(call(req("GET", "/favicon.ico", "", "")).status, 204u);
  EXPECT_EQ(err(req("GET", "/incidents/abc", "", "")), "404 no such page: /incidents/abc");
  EXPECT_EQ(err(req("POST", "/", "", "")), "405 /: GET only");
  // The token is never asked for in a URL or a cookie: the page's code sends a header.
  EXPECT_THAT(call(req("GET", "/app.js", "", "")).body, HasSubstr("'Authorization': 'Bearer '"));
  EXPECT_THAT(call(req("GET", "/app.js", "", "")).body, ::testing::Not(HasSubstr("document.cookie")));
}

TEST_F(ApiTest, GetApiDescribesEveryEndpointAndWhetherItChangesState) {
  const auto res = call(req("GET", "/api", "", ""));
  ASSERT_EQ(res.status, 200u);
  const json j = json::parse(res.body);
  ASSERT_GE(j["endpoints"].size(), 20u);
  std::set<std::string> seen;
  for (const auto& e : j["endpoints"]) {
    seen.insert(e["method"].get<std::string>() + " " + e["path"].get<std::string>());
    EXPECT_EQ(e["changes_state"].get<bool>(), e["method"] == "POST") << e.dump();
  }
  EXPECT_TRUE(seen.count("POST /api/incidents/{id}/approve"));
  EXPECT_TRUE(seen.count("GET /api/audit"));
  EXPECT_EQ(j["body_limit"], kApiBodyLimit);
}

TEST_F(ApiTest, WhoAmIIsTheTokensOwnerAndTheBootstrapTokenIsAnAdmin) {
  EXPECT_EQ(json::parse(call(req("GET", "/api/whoami", "", "vera")).body), (json{{"name", "vera"}, {"role", "viewer"}}));
  EXPECT_EQ(json::parse(call(req("GET", "/api/whoami", "", kBootstrap)).body),
            (json{{"name", "bootstrap"}, {"role", "admin"}}));
  EXPECT_EQ(err(req("GET", "/api/whoami", "", "")),
            "401 no bearer token: send Authorization: Bearer TOKEN (medic users add prints one)");
  EXPECT_EQ(err(req("GET", "/api/whoami", "", "mdk_1_AAAA")), "401 unknown or revoked token");
  EXPECT_EQ(err(req("GET", "/api/whoami", "", "dan")), "401 user dan is disabled");
  // The bootstrap token reads and manages users, and decides nothing: whoever holds it and a
  // token of their own is still one approver.
  const int64_t id = open_incident("rtsw0001:eth5", triage::IncidentState::pending_approval);
  EXPECT_EQ(err(req("POST", "/api/incidents/" + std::to_string(id) + "/approve", "", kBootstrap)),
            "403 the bootstrap token (--api-token) may not POST /api/incidents/{id}/approve: it only reads and manages "
            "users; decide with a user's own token");
  EXPECT_EQ(call(req("GET", "/api/queue", "", kBootstrap)).status, 200u);
  EXPECT_EQ(err(req("POST", "/api/users", R"({"name":"bootstrap","role":"admin"})", kBootstrap)),
            "422 user name \"bootstrap\" is reserved (medicd's bootstrap token and medicd itself)");
  // A rotated token stops working at once.
  const std::string old = tokens["otto"];
  ASSERT_TRUE(d.db.rotate_token("otto", db::person("ada", "admin"), SystemClock().now()).ok());
  EXPECT_EQ(err(req("GET", "/api/whoami", "", old)), "401 unknown or revoked token");
}

TEST_F(ApiTest, TheQueueShowsEveryOpenIncidentWithItsBudgetAndWhatTheCallerMayDo) {
  EXPECT_EQ(json::parse(call(req("GET", "/api/queue")).body)["incidents"], json::array());
  const int64_t id = open_incident("rtsw0001:eth5", triage::IncidentState::pending_approval);
  const int64_t flap = open_incident("rtsw0002:eth5", triage::IncidentState::triaged, triage::IncidentClass::link_flap);
  const json a = json::parse(call(req("GET", "/api/queue")).body)["incidents"];
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0]["id"], id);
  EXPECT_EQ(a[0]["waits_for"], "approval");
  EXPECT_EQ(a[0]["reason"], "needs approval");
  EXPECT_EQ(a[0]["approvals_needed"], 2);
  EXPECT_EQ(a[0]["allowed"], (json{"approve", "reject", "dismiss"}));
  EXPECT_EQ(a[0]["suspect"].get<std::string>(), "");
  EXPECT_EQ(a[1]["id"], flap);
  EXPECT_EQ(a[1]["waits_for"], "medicd");
  // link_flap's seeded targets: mitigate within 120 s, most of it left.
  ASSERT_TRUE(a[1]["slo_budget"].is_object()) << a[1].dump();
  EXPECT_EQ(a[1]["slo_budget"]["stage"], "mitigate");
  EXPECT_EQ(a[1]["slo_budget"]["target_s"], 120.0);
  EXPECT_GT(a[1]["slo_budget"]["share_left"].get<double>(), 0.5);
  // Waiting for repair: "repaired" is offered only while its link is drained (the store
  // refuses it otherwise).
  ASSERT_TRUE(d.db.set_incident_state(flap, triage::IncidentState::escalated, SystemClock().now(), "drain failed").ok());
  auto allowed_for = [&](int64_t which) {
    const json q = json::parse(call(req("GET", "/api/queue")).body);
    for (const auto& i : q["incidents"]) {
      if (i["id"] == which) return i["allowed"];
    }
    return json();
  };
  EXPECT_EQ(allowed_for(flap), (json{"dismiss"}));
  d.tdb.exec("UPDATE links SET drain_state = 'drained' WHERE name = '" + d.link_name("rtsw0002:eth5") + "'");
  EXPECT_EQ(allowed_for(flap), (json{"repaired", "dismiss"}));
  // A viewer sees the same queue and may do nothing.
  const json v = json::parse(call(req("GET", "/api/queue", "", "vera")).body)["incidents"];
  EXPECT_EQ(v[0]["allowed"], json::array());
}

TEST_F(ApiTest, TwoPersonRuleNeedsTwoDistinctOperatorsAndTheNameComesFromTheToken) {
  const int64_t id = open_incident("rtsw0001:eth5", triage::IncidentState::pending_approval);
  const std::string path = "/api/incidents/" + std::to_string(id) + "/approve";
  // The body cannot say who approves.
  EXPECT_EQ(err(req("POST", path, R"({"by":"ada"})")), "422 body: $: unknown key \"by\" (reason)");
  const auto first = call(req("POST", path, R"({"reason":"fcs rising on both ends"})", "otto"));
  ASSERT_EQ(first.status, 200u) << first.body;
  EXPECT_EQ(json::parse(first.body)["message"],
            "incident " + std::to_string(id) + ": approval 1 of 2 (by otto); another operator must approve it");
  EXPECT_EQ(d.tdb.scalar("SELECT coalesce(approved_by, '-') FROM incidents"), "-");
  EXPECT_EQ(err(req("POST", path, "", "otto")),
            "409 incident " + std::to_string(id) + ": otto approved it already; another person must approve it");
  // otto's page no longer offers approve.
  EXPECT_EQ(json::parse(call(req("GET", "/api/incidents/" + std::to_string(id), "", "otto")).body)["allowed"],
            (json{"reject", "dismiss"}));
  const auto second = call(req("POST", path, "", "olga"));
  ASSERT_EQ(second.status, 200u) << second.body;
  EXPECT_EQ(json::parse(second.body)["approved"], true);
  EXPECT_EQ(d.tdb.scalar("SELECT approved_by FROM incidents"), "otto, olga");
  EXPECT_EQ(d.tdb.scalar("SELECT string_agg(who || ' ' || role || ' ' || what || ' ' || source, '; ' ORDER BY id) "
                         "FROM audit WHERE incident_id = " + std::to_string(id)),
            "otto operator approve http from 127.0.0.9; olga operator approve http from 127.0.0.9");
}

TEST_F(ApiTest, AnIncidentsPageHasItsTimelineFindingsWhatIfAndRunbook) {
  const int64_t id = open_incident("rtsw0001:eth5", triage::IncidentState::pending_approval);
  ASSERT_EQ(call(req("POST", "/api/incidents/" + std::to_string(id) + "/approve", R"({"reason":"ok"})", "otto")).status,
            200u);
  const auto res = call(req("GET", "/api/incidents/" + std::to_string(id), "", "vera"));
  ASSERT_EQ(res.status, 200u) << res.body;
  const json j = json::parse(res.body);
  EXPECT_EQ(j["class"], "corruption");
  EXPECT_EQ(j["link"], d.link_name("rtsw0001:eth5"));
  EXPECT_EQ(j["allowed"], json::array());  // a viewer
  ASSERT_GE(j["timeline"].size(), 2u);
  const json last = j["timeline"].back();
  EXPECT_EQ(last["kind"], "decision");
  EXPECT_EQ(last["who"], "otto");
  EXPECT_EQ(last["what"], "approve");
  EXPECT_EQ(last["reason"], "ok");
  EXPECT_TRUE(j["findings"].is_array());
  ASSERT_TRUE(j["what_if"].is_object());
  EXPECT_EQ(j["what_if"]["link_state"], "in service");
  EXPECT_EQ(j["what_if"]["out_of_service"], false);
  EXPECT_FALSE(j["what_if"]["groups"].empty());
  // Once drained, the page still shows what taking it out does to its groups.
  d.tdb.exec("UPDATE links SET drain_state = 'drained', oper_state = 'up' WHERE name = '" + d.link_name("rtsw0001:eth5") + "'");
  const json drained = json::parse(call(req("GET", "/api/incidents/" + std::to_string(id), "", "vera")).body)["what_if"];
  EXPECT_EQ(drained["link_state"], "drained");
  EXPECT_EQ(drained["out_of_service"], true);
  EXPECT_EQ(drained["groups"], j["what_if"]["groups"]);
  EXPECT_THAT(j["runbook"].get<std::string>(), HasSubstr("# Runbook: corruption"));
  EXPECT_EQ(err(req("GET", "/api/incidents/4242")), "404 no incident with id 4242");
  EXPECT_EQ(err(req("GET", "/api/incidents/x1")), "404 no incident \"x1\": an incident id is a positive integer");
}

TEST_F(ApiTest, RolesBoundWhatEachMayDo) {
  const int64_t id = open_incident("rtsw0001:eth5", triage::IncidentState::pending_approval);
  const std::string path = "/api/incidents/" + std::to_string(id) + "/approve";
  EXPECT_EQ(err(req("POST", path, "", "vera")),
            "403 viewer vera may not POST /api/incidents/{id}/approve: it needs operator");
  ASSERT_TRUE(d.db.open_breaker(SystemClock().now(), "circuit breaker open: 30 incidents").ok());
  EXPECT_EQ(err(req("POST", "/api/breaker/reset", R"({"reason":"checked"})", "otto")),
            "403 operator otto may not POST /api/breaker/reset: it needs admin");
  EXPECT_EQ(err(req("POST", "/api/breaker/reset", "{}", "ada")),
            "422 body: $.reason: required: resetting the circuit breaker needs a reason");
  EXPECT_EQ(call(req("POST", "/api/breaker/reset", R"({"reason":"fabric checked by hand"})", "ada")).status, 200u);
  EXPECT_EQ(d.tdb.scalar("SELECT open::text || ' ' || reset_by FROM breaker"), "false ada");
  EXPECT_EQ(d.tdb.scalar("SELECT who || ' ' || what || ' ' || reason FROM audit ORDER BY id DESC LIMIT 1"),
            "ada breaker_reset fabric checked by hand");
  EXPECT_EQ(err(req("GET", "/api/users", "", "otto")), "403 operator otto may not GET /api/users: it needs admin");
}

TEST_F(ApiTest, BadRequestsGetExactErrors) {
  const int64_t id = open_incident("rtsw0001:eth5", triage::IncidentState::pending_approval);
  const std::string base = "/api/incidents/" + std::to_string(id);
  EXPECT_EQ(err(req("POST", base + "/drain")), "404 no such path: " + base + "/drain (GET /api lists them)");
  EXPECT_EQ(err(req("POST", "/api/incidents/999/approve")), "404 no incident with id 999");
  EXPECT_EQ(err(req("POST", base + "/approve", "{\"reason\": ")),
            "422 body: line 1, column 12: invalid JSON: syntax error while parsing value - unexpected end of input; "
            "expected '[', '{', or a literal");
  EXPECT_EQ(err(req("POST", base + "/approve", "[1]")), "422 body: $: expected an object, got an array");
  EXPECT_EQ(err(req("POST", base + "/approve", R"({"reason": 7})")), "422 body: $.reason: expected a string, got an integer");
  EXPECT_EQ(err(req("POST", base + "/reject", R"({"reason": "  "})")), "422 body: $.reason: required: a reject needs a reason");
  EXPECT_EQ(err(req("POST", base + "/repaired", "")),
            "409 incident " + std::to_string(id) +
                " is pending_approval: only a drained link waiting for repair (repair_requested, escalated) can be "
                "marked repaired");
  auto plain = req("POST", base + "/reject", R"({"reason":"x"})");
  plain.headers["content-type"] = "text/plain";
  EXPECT_EQ(err(plain), "415 body: Content-Type \"text/plain\": send application/json");
  EXPECT_EQ(err(req("POST", base + "/reject", "{\"reason\":\"" + std::string(20000, 'x') + "\"}")),
            "413 body: 20013 bytes, over the limit of 16384");
  const auto get = call(req("GET", base + "/approve"));
  EXPECT_EQ(get.status, 405u);
  EXPECT_EQ(json::parse(get.body)["error"], "GET " + base + "/approve: allowed: POST");
  EXPECT_EQ(get.headers.at(2), (std::pair<std::string, std::string>{"Allow", "POST"}));
  EXPECT_EQ(err(req("GET", "/api/audit?limit=0")), "422 query limit=\"0\": expected a whole number from 1 to 10000");
  EXPECT_EQ(err(req("GET", "/api/audit?since=yesterday")),
            "422 query since=\"yesterday\": expected now, -N[smhd], Unix seconds or ISO 8601");
  EXPECT_EQ(err(req("GET", "/api/audit?x=1")), "422 query \"x\": unknown (incident, who, since, limit)");
  // A body that is not UTF-8 is refused, and the answer itself is valid JSON.
  const auto bytes = call(req("POST", base + "/reject", "{\"reason\": \"an\xff\"}"));
  EXPECT_EQ(bytes.status, 422u);
  EXPECT_THAT(json::parse(bytes.body)["error"].get<std::string>(), HasSubstr("\\xff"));
  // Nothing was recorded by any of them.
  EXPECT_EQ(d.tdb.scalar("SELECT state || ' ' || coalesce(approved_by, '-') FROM incidents"), "pending_approval -");
  EXPECT_EQ(d.tdb.scalar("SELECT count(*) FROM audit WHERE incident_id IS NOT NULL"), "0");
}

// check_body makes the endpoint's body checks with no database and no caller: the same
// answers as handle gives an authorised caller, nothing for a body that is taken or a path
// no endpoint has.
TEST(ApiCheckBody, TheEndpointsBodyChecksWithoutADatabase) {
  auto r = [](const std::string& method, const std::string& path, const std::string& body,
              const std::string& type = "application/json") {
    HttpRequest q;
    q.method = method;
    q.path = path;
    q.target = path;
    q.body = body;
    if (!type.empty()) q.headers["content-type"] = type;
    return q;
  };
  auto refusal = [](const std::optional<HttpResponse>& a) {
    return a ? std::to_string(a->status) + " " + json::parse(a->body)["error"].get<std::string>() : std::string("taken");
  };
  EXPECT_EQ(refusal(check_body(r("POST", "/api/incidents/7/approve", R"({"reason": 7})"))),
            "422 body: $.reason: expected a string, got an integer");
  EXPECT_EQ(refusal(check_body(r("POST", "/api/incidents/7/reject", R"({"reason": "  "})"))),
            "422 body: $.reason: required: a reject needs a reason");
  EXPECT_EQ(refusal(check_body(r("POST", "/api/incidents/7/reject", R"({"reason":"x"})", "text/plain"))),
            "415 body: Content-Type \"text/plain\": send application/json");
  EXPECT_EQ(refusal(check_body(r("POST", "/api/incidents/7/approve", R"({"why": "x"})"))),
            "422 body: $: unknown key \"why\" (reason)");
  EXPECT_EQ(refusal(check_body(r("POST", "/api/incidents/7/approve", R"({"reason": "looks right"})"))), "taken");
  EXPECT_EQ(refusal(check_body(r("POST", "/api/incidents/7/approve", ""))), "taken");
  EXPECT_EQ(refusal(check_body(r("POST", "/api/incidents/7/drain", "{}"))), "taken") << "no such endpoint: handle's 404";
  EXPECT_EQ(refusal(check_body(r("GET", "/api/queue", ""))), "taken");
  EXPECT_EQ(refusal(check_body(r("GET", "/api/queue", "[1]"))), "422 body: $: expected an object, got an array");
}

TEST_F(ApiTest, MaintenanceAndUsersAndTargetsOverHttp) {
  auto m = call(req("POST", "/api/maintenance", R"({"link":"rtsw0001:eth5","until":"+2h","reason":"optic swap"})"));
  ASSERT_EQ(m.status, 200u) << m.body;
  const json w = json::parse(m.body);
  EXPECT_EQ(w["link"], d.link_name("rtsw0001:eth5"));
  EXPECT_EQ(w["created_by"], "otto");
  EXPECT_EQ(err(req("POST", "/api/maintenance", R"({"link":"rtsw0001:eth99","until":"+2h","reason":"x"})")),
            "404 link \"rtsw0001:eth99\": no such link in the inventory");
  EXPECT_EQ(err(req("POST", "/api/maintenance", R"({"until":"+2h","reason":"x"})")),
            "422 a maintenance window names exactly one of link or device");
  EXPECT_EQ(err(req("POST", "/api/maintenance", R"({"device":"ctsw001","until":"+3000000d","reason":"x"})")),
            "422 a maintenance window lasts at most 30 days");
  EXPECT_EQ(err(req("POST", "/api/maintenance", R"({"device":"ctsw001","until":"soon","reason":"x"})")),
            "422 body: $.until: \"soon\": expected +N[smhd], Unix seconds or ISO 8601");
  const std::string end = "/api/maintenance/" + std::to_string(w["id"].get<int64_t>()) + "/end";
  EXPECT_EQ(call(req("POST", end)).status, 200u);
  EXPECT_EQ(err(req("POST", end)), "409 maintenance window #" + std::to_string(w["id"].get<int64_t>()) + " is over already");

  const auto u = call(req("POST", "/api/users", R"({"name":"svc-bridge","role":"viewer"})", kBootstrap));
  ASSERT_EQ(u.status, 200u) << u.body;
  const std::string token = json::parse(u.body)["token"];
  EXPECT_EQ(json::parse(call(req("GET", "/api/whoami", "", token)).body)["name"], "svc-bridge");
  EXPECT_EQ(err(req("POST", "/api/users", R"({"name":"svc-bridge","role":"viewer"})", "ada")),
            "409 user \"svc-bridge\" exists already");
  EXPECT_EQ(err(req("POST", "/api/users", R"({"name":"x y","role":"viewer"})", "ada")),
            "422 user name \"x y\": 1 to 64 letters, digits and . _ @ -, starting with a letter or digit");
  EXPECT_EQ(err(req("POST", "/api/users", R"({"name":"z","role":"root"})", "ada")),
            "422 role \"root\": expected viewer, operator or admin");
  EXPECT_EQ(call(req("POST", "/api/users/svc-bridge/disable", "", "ada")).status, 200u);
  EXPECT_EQ(err(req("GET", "/api/whoami", "", token)), "401 user svc-bridge is disabled");
  EXPECT_EQ(err(req("POST", "/api/users/svc-bridge/rotate", "", "ada")),
            "409 user \"svc-bridge\" is disabled: add a new user instead");
  const json users = json::parse(call(req("GET", "/api/users", "", "ada")).body);
  for (const auto& x : users) EXPECT_FALSE(x.contains("token")) << x.dump();

  EXPECT_EQ(call(req("POST", "/api/slo/targets", R"({"class":"link_flap","stage":"detect","target_s":45,"objective":0.99})",
                     "ada"))
                .status,
            200u);
  EXPECT_EQ(d.tdb.scalar("SELECT target_seconds::int FROM slo_targets WHERE incident_class = 'link_flap' "
                         "AND stage = 'detect'"),
            "45");
  EXPECT_EQ(err(req("POST", "/api/slo/targets", R"({"class":"nope","stage":"detect","target_s":45,"objective":0.99})",
                    "ada")),
            "422 body: $.class: \"nope\" is not an incident class");
  EXPECT_EQ(err(req("POST", "/api/slo/targets",
                    R"({"class":"link_flap","stage":"detect","target_s":45,"objective":1.5})", "ada")),
            "422 body: $.objective: 1.5 is not a share in (0, 1]");
  // Every one of those that was accepted is in the audit trail, under the token's name.
  const json audit = json::parse(call(req("GET", "/api/audit?who=ada", "", "vera")).body);
  std::vector<std::string> what;
  for (const auto& a : audit) what.push_back(a["what"]);
  EXPECT_THAT(what, ::testing::ElementsAre("user_disable", "slo_target"));
}

TEST_F(ApiTest, TheSloReportTakesTheCliParametersAndEveryFormat) {
  const int64_t id = open_incident("rtsw0001:eth5", triage::IncidentState::triaged);
  const auto j = call(req("GET", "/api/slo?window=28d&by=zone", "", "vera"));
  ASSERT_EQ(j.status, 200u) << j.body;
  const json doc = json::parse(j.body);
  for (const char* k : {"window", "slos", "breaches", "capacity", "repeat_offenders", "trend"}) EXPECT_TRUE(doc.contains(k)) << k;
  EXPECT_EQ(doc["by"], "zone");
  EXPECT_EQ(doc["incidents_read"], 1);
  for (const auto& l : doc["slos"]) EXPECT_TRUE(l.contains("group"));
  const auto html = call(req("GET", "/api/slo?month=2026-10&format=html", "", "vera"));
  EXPECT_EQ(html.status, 200u);
  EXPECT_EQ(html.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(html.body.rfind("<!DOCTYPE html>", 0), 0u);
  bool csp = false;
  for (const auto& [k, v] : html.headers) csp = csp || (k == "Content-Security-Policy" && v.rfind("default-src 'none'", 0) == 0);
  EXPECT_TRUE(csp);
  const auto csv = call(req("GET", "/api/slo?class=corruption&format=csv", "", "vera"));
  EXPECT_EQ(csv.body.rfind("class,stage,group,", 0), 0u);
  EXPECT_EQ(call(req("GET", "/api/slo?format=md", "", "vera")).content_type, "text/markdown; charset=utf-8");
  EXPECT_EQ(err(req("GET", "/api/slo?window=7w", "", "vera")), "422 query: window: not a window: \"7w\" (7d, 28d, 90d, or N d / N h)");
  EXPECT_EQ(err(req("GET", "/api/slo?format=pdf", "", "vera")), "422 query \"format\": \"pdf\" is not one of json, html, html-body, csv, md");
  EXPECT_EQ(err(req("GET", "/api/slo?class=nope", "", "vera")), "422 query \"class\": unknown incident class \"nope\"");
  EXPECT_EQ(err(req("GET", "/api/slo?hours=24", "", "vera")),
            "422 query: unknown report parameter \"hours\" (from, to, window, month, class, by)");
  EXPECT_EQ(err(req("GET", "/api/slo", "", "")).substr(0, 3), "401");
  EXPECT_GT(id, 0);
}

// ---- the matrix ----

// Everything a refused call must leave as it was.
std::string fingerprint(pqxx::connection& c) {
  pqxx::nontransaction n(c);
  return n.exec(
      "SELECT concat_ws(' | ', "
      "(SELECT md5(coalesce(string_agg(concat_ws(',', id, state, approved_by, dismissed_at, repaired_at, blocked_reason), ';' "
      "ORDER BY id), '')) FROM incidents), "
      "(SELECT count(*) FROM approvals), (SELECT count(*) FROM audit), (SELECT count(*) FROM incident_events), "
      "(SELECT md5(coalesce(string_agg(concat_ws(',', name, role, disabled, encode(token_hash, 'hex')), ';' ORDER BY name), "
      "'')) FROM users), "
      "(SELECT md5(coalesce(string_agg(concat_ws(',', id, starts_at, ends_at), ';' ORDER BY id), '')) FROM maintenance), "
      "(SELECT concat_ws(',', open, reset_by, reset_at) FROM breaker), "
      "(SELECT md5(coalesce(string_agg(concat_ws(',', id, incident_class, stage, target_seconds, objective, valid_from), "
      "';' ORDER BY id), '')) FROM slo_target_versions))")[0][0]
      .as<std::string>();
}

TEST_F(ApiTest, EveryEndpointEveryCallerEveryBody) {
  // What to set up for an endpoint to be callable with a good body, the path to call, the
  // body, and what the "unknown" and "wrong state" variants call instead.
  struct Target {
    std::string path, body, unknown_path, wrong_state_path, wrong_state_body;
  };
  int serial = 0;
  auto target = [&](const std::string& method, const std::string& pattern) -> Target {
    ++serial;
    const auto with = [&](const std::string& value) {
      std::string p = pattern;
      const size_t a = p.find('{');
      return a == std::string::npos ? p : p.replace(a, p.find('}') - a + 1, value);
    };
    // One open incident per link: the ones earlier calls left open are closed first.
    d.tdb.exec("UPDATE incidents SET state = 'closed', closed_at = now() WHERE state NOT IN ('closed', 'dismissed')");
    int on_link = 0;
    const auto incident = [&](triage::IncidentState st) {
      const std::string ref = d.topo.link(static_cast<fabric::LinkId>(on_link++)).name;
      return std::to_string(open_incident(ref, st, triage::IncidentClass::link_flap));
    };
    const auto closed_incident = [&] {
      const std::string id = incident(triage::IncidentState::triaged);
      d.tdb.exec("UPDATE incidents SET state = 'closed', closed_at = now() WHERE id = " + id);
      return id;
    };
    if (method == "GET") {
      if (pattern == "/api/incidents/{id}") return {with(incident(triage::IncidentState::triaged)), "", with("987654"), "", ""};
      return {pattern, "", "", "", ""};
    }
    if (pattern.find("/approve") != std::string::npos || pattern.find("/reject") != std::string::npos) {
      return {with(incident(triage::IncidentState::pending_approval)), R"({"reason":"checked"})", with("987654"),
              with(closed_incident()), R"({"reason":"checked"})"};
    }
    if (pattern.find("/dismiss") != std::string::npos) {
      return {with(incident(triage::IncidentState::triaged)), R"({"reason":"not a fault"})", with("987654"),
              with(closed_incident()), R"({"reason":"not a fault"})"};
    }
    if (pattern.find("/repaired") != std::string::npos) {
      const std::string id = incident(triage::IncidentState::repair_requested);
      d.tdb.exec("UPDATE links SET drain_state = 'drained' FROM incidents i WHERE i.id = " + id + " AND links.name = i.link");
      return {with(id), R"({"reason":"optic replaced"})", with("987654"),
              with(incident(triage::IncidentState::pending_approval)), "{}"};
    }
    if (pattern == "/api/breaker/reset") {
      EXPECT_TRUE(d.db.open_breaker(SystemClock().now(), "opened for the test").ok());
      return {pattern, R"({"reason":"checked"})", "", "", ""};
    }
    if (pattern == "/api/maintenance") {
      return {pattern, R"({"device":"ctsw001","until":"+1h","reason":"line card"})", "", "", ""};
    }
    if (pattern == "/api/maintenance/{id}/end") {
      db::MaintenanceRow m;
      m.device = "ctsw002";
      m.starts_at = SystemClock().now() - std::chrono::minutes(1);
      m.ends_at = m.starts_at + std::chrono::hours(1);
      m.reason = "test";
      const auto id = d.db.add_maintenance(m, db::person("setup"), SystemClock().now());
      m.ends_at = m.starts_at + std::chrono::seconds(1);
      const auto over = d.db.add_maintenance(m, db::person("setup"), SystemClock().now());
      return {with(std::to_string(*id)), "", with("987654"), with(std::to_string(*over)), ""};
    }
    if (pattern == "/api/slo/targets") {
      return {pattern, R"({"class":"optics","stage":"repair","target_s":)" + std::to_string(3600 + serial) +
                           R"(,"objective":0.95})", "", "", ""};
    }
    if (pattern == "/api/users") {
      return {pattern, R"({"name":"new)" + std::to_string(serial) + R"(","role":"viewer"})", "", pattern,
              R"({"name":"otto","role":"viewer"})"};
    }
    // /api/users/{name}/rotate and /disable
    const std::string name = "user" + std::to_string(serial);
    EXPECT_TRUE(d.db.add_user(name, "viewer", db::person("setup", "admin"), SystemClock().now()).ok());
    return {with(name), "", with("nobody"), with("dan"), ""};
  };

  // One connection for the checks (a new one per query would be most of the test's time).
  pqxx::connection probe(d.tdb.url());
  const auto audit_rows = [&] { return pqxx::nontransaction(probe).exec("SELECT count(*) FROM audit")[0][0].as<int>(); };
  const auto last_who = [&] {
    return pqxx::nontransaction(probe).exec("SELECT who FROM audit ORDER BY id DESC LIMIT 1")[0][0].as<std::string>();
  };
  const std::vector<std::string> callers = {"", "mdk_9_bad", "dan", "vera", "otto", "ada"};
  int checked = 0, accepted = 0, should_accept = 0;
  const json description = api_description();
  for (const auto& e : description["endpoints"]) {
    const std::string method = e["method"], pattern = e["path"], role = e["role"];
    const bool changes = e["changes_state"];
    for (const std::string& who : callers) {
      const std::string caller_role = who == "vera" ? "viewer" : who == "otto" ? "operator" : who == "ada" ? "admin" : "";
      const bool authenticated = !caller_role.empty();
      const bool allowed = role == "none" || (authenticated && role_rank(caller_role) >= role_rank(role));
      const Target t = target(method, pattern);
      struct Variant {
        std::string name, path, body;
        unsigned want;
      };
      std::vector<Variant> variants = {{"good", t.path, t.body, 200}};
      if (changes) {
        variants.push_back({"malformed JSON", t.path, "{\"reason\": ", 422});
        variants.push_back({"wrong types", t.path, R"({"reason": 7, "until": [], "name": {}, "class": 1})", 422});
        variants.push_back({"not an object", t.path, "[]", 422});
      }
      if (!t.unknown_path.empty()) variants.push_back({"unknown", t.unknown_path, t.body, 404});
      if (!t.wrong_state_path.empty()) variants.push_back({"wrong state", t.wrong_state_path, t.wrong_state_body, 409});
      for (const auto& v : variants) {
        const unsigned want = role == "none" ? 200u : !authenticated ? 401u : !allowed ? 403u : v.want;
        const std::string before = fingerprint(probe);
        const int audit_before = audit_rows();
        if (want == 200 && changes) ++should_accept;
        const auto res = call(req(method, v.path, v.body, who));
        const std::string where = method + " " + v.path + " as " + (who.empty() ? "(no token)" : who) + ", " + v.name;
        ++checked;
        EXPECT_EQ(res.status, want) << where << ": " << res.body;
        const json body = json::parse(res.body);
        if (res.status >= 400) {
          EXPECT_TRUE(body.contains("error")) << where;
          EXPECT_EQ(fingerprint(probe), before) << where << " was refused but changed the database";
        } else if (changes) {
          ++accepted;
          EXPECT_EQ(audit_rows(), audit_before + 1) << where << ": one audit row per accepted change";
          EXPECT_EQ(last_who(), who) << where;
        } else {
          EXPECT_EQ(audit_rows(), audit_before) << where << ": a read writes no audit row";
        }
      }
    }
  }
  EXPECT_GT(checked, 300);
  EXPECT_EQ(accepted, should_accept);
  EXPECT_EQ(should_accept, 17);  // 6 operator endpoints × (otto, ada) + 5 admin endpoints × ada
}

// ---- the database thread ----

TEST_F(ApiTest, AKnownDownDatabaseIsRefusedAtOnceOffTheCallersThread) {
  ApiSetup s = setup(d.tdb.url(), d.topo, policy);
  s.db_down = [] { return std::string("connection refused"); };
  Api down(std::move(s));
  std::promise<HttpResponse> answer;
  ASSERT_TRUE(down.submit(req("GET", "/api/queue"), [&](HttpResponse r) { answer.set_value(std::move(r)); }));
  const HttpResponse r = answer.get_future().get();
  EXPECT_EQ(r.status, 503u);
  EXPECT_EQ(json::parse(r.body)["error"],
            "the database does not answer (connection refused); nothing can be read or decided now");
  // The page and the description need no database.
  for (const std::string path : {"/", "/api"}) {
    std::promise<HttpResponse> page;
    ASSERT_TRUE(down.submit(req("GET", path, "", ""), [&](HttpResponse r) { page.set_value(std::move(r)); }));
    EXPECT_EQ(page.get_future().get().status, 200u) << path;
  }
  // Paths that are not the API's are the caller's.
  EXPECT_FALSE(down.submit(req("GET", "/metrics"), [](HttpResponse) {}));
}

TEST_F(ApiTest, RequestsAreAnsweredOnTheApisThread) {
  std::promise<HttpResponse> answer;
  ASSERT_TRUE(api.submit(req("GET", "/api/whoami", "", "vera"), [&](HttpResponse r) { answer.set_value(std::move(r)); }));
  const HttpResponse r = answer.get_future().get();
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(json::parse(r.body)["name"], "vera");
}

}  // namespace
}  // namespace medic::service
