// bench/api: the repair-queue API on zone32k (75,000 links, 147,456 ports) with a real
// PostgreSQL: how long the queue, an incident's page (with its what-if over every capacity
// group the link touches) and a decision take, token checks included.
//
//   build/bench/bench_api --db URL [--preset zone32k|demo] [--incidents N] [--rounds N]
//   bench/api                 (starts a private PostgreSQL cluster and runs this)
//
// The run makes a database of its own on the server (dropped at the end), loads the
// fabric's inventory, opens N incidents on as many links (a quarter waiting for approval,
// each with three findings), adds people, then calls the API in process (Api::handle, as
// medicd's HTTP threads hand it requests) and prints the best and median of each call.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pqxx/pqxx>
#include <string>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

#include "bench/measure.h"
#include "fabric/generator.h"
#include "remediation/capacity_config.h"
#include "service/api.h"
#include "tests/db/all_stores.h"

using namespace medic;

namespace {

using namespace medic::bench;

struct Figures {
  std::vector<double> ms;
  size_t bytes = 0;
  unsigned status = 0;
};

void print(const char* what, Figures f) {
  std::sort(f.ms.begin(), f.ms.end());
  std::printf("  %-44s %4u  best %8.2f ms  median %8.2f ms  %9zu bytes\n", what, f.status, f.ms.front(),
              f.ms[f.ms.size() / 2], f.bytes);
}

// The database URL with another database name.
std::string with_database(const std::string& url, const std::string& name) {
  const size_t q = url.find('?');
  const size_t slash = url.rfind('/', q);
  return url.substr(0, slash + 1) + name + (q == std::string::npos ? "" : url.substr(q));
}

}  // namespace

int main(int argc, char** argv) {
  std::string url, preset_name = "zone32k";
  int incidents = 400, rounds = 15;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--db") && i + 1 < argc) {
      url = argv[++i];
    } else if (!std::strcmp(argv[i], "--preset") && i + 1 < argc) {
      preset_name = argv[++i];
    } else if (!std::strcmp(argv[i], "--incidents") && i + 1 < argc) {
      incidents = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: bench_api --db URL [--preset zone32k|demo] [--incidents N] [--rounds N]\n");
      return 2;
    }
  }
  const auto shape = fabric::preset(preset_name);
  if (url.empty() || !shape || incidents < 4 || rounds < 1) {
    std::fprintf(stderr, "bench_api: --db is required; --preset demo or zone32k; --incidents at least 4; --rounds at least 1\n");
    return 2;
  }
  const std::string name = "medic_bench_api_" + std::to_string(::getpid());
  {
    pqxx::connection c(url);
    pqxx::nontransaction(c).exec("CREATE DATABASE " + name);
  }
  const std::string db_url = with_database(url, name);
  int rc = 0;
  try {
    const fabric::Topology topo = fabric::generate_clos(*shape);
    const remediation::CapacityConfig capacity;
    const fabric::Topology capacity_topo = remediation::with_derived_groups(topo, capacity);
    db::AllStores d(db_url);
    d.migrate();
    auto t0 = Steady::now();
    if (auto st = d.sync_inventory(topo); !st.ok()) throw std::runtime_error(st.error());
    const double inventory_ms = ms_since(t0);
    // As after medicd's first poll: every link up but 40, and 64 drained.
    {
      std::vector<std::pair<std::string, bool>> oper;
      for (fabric::LinkId l = 0; l < topo.links().size(); ++l) oper.emplace_back(topo.link(l).name, l % 1800 != 7);
      const auto t1 = Steady::now();
      if (auto st = d.set_link_oper(oper, SystemClock().now()); !st.ok()) throw std::runtime_error(st.error());
      std::printf("  every link's oper state recorded in one call (medicd's first poll): %.0f ms\n", ms_since(t1));
      pqxx::connection c(db_url);
      pqxx::nontransaction(c).exec("UPDATE links SET drain_state = 'drained' WHERE name IN (SELECT name FROM links ORDER BY name "
                                   "LIMIT 64 OFFSET 1000)");
    }
    incidents = std::min<int>(incidents, static_cast<int>(topo.links().size()));

    // Open incidents on links spread over the fabric, with three findings each.
    const Time now = SystemClock().now();
    std::vector<int64_t> waiting;
    const size_t stride = topo.links().size() / static_cast<size_t>(incidents);
    for (int i = 0; i < incidents; ++i) {
      triage::IncidentUpdate u;
      u.cls = i % 4 == 0 ? triage::IncidentClass::corruption : triage::IncidentClass::link_flap;
      u.link = static_cast<fabric::LinkId>(static_cast<size_t>(i) * stride);
      u.severity = detectors::Severity::critical;
      u.detected_at = u.started_at = now - std::chrono::seconds(60 + i);
      u.summary = "bench incident";
      const fabric::Link& l = topo.link(u.link);
      for (int f = 0; f < 3; ++f) {
        detectors::Finding x;
        x.kind = u.cls == triage::IncidentClass::corruption ? detectors::FindingKind::corruption
                                                             : detectors::FindingKind::link_flap;
        x.severity = u.severity;
        x.link = u.link;
        x.port = f % 2 == 0 ? l.a : l.b;
        x.device = topo.port(x.port).device;
        x.summary = "bench finding";
        x.first_seen = x.observed_at = u.detected_at + std::chrono::seconds(f);
        u.findings.push_back(x);
      }
      auto id = d.open_incident(u, topo, u.detected_at);
      if (!id.ok()) throw std::runtime_error(id.error());
      if (u.cls == triage::IncidentClass::corruption) {
        if (auto st = d.set_incident_state(*id, triage::IncidentState::pending_approval, now, "needs approval"); !st.ok()) {
          throw std::runtime_error(st.error());
        }
        waiting.push_back(*id);
      }
    }
    // People: enough approvers for every round's decision.
    std::vector<std::string> tokens;
    for (int i = 0; i < rounds + 2; ++i) {
      auto t = d.add_user("op" + std::to_string(i), "operator", db::person("bench", "admin"), now);
      if (!t.ok()) throw std::runtime_error(t.error());
      tokens.push_back(*t);
    }
    auto viewer = d.add_user("viewer", "viewer", db::person("bench", "admin"), now);

    service::ApiSetup setup;
    setup.db_url = db_url;
    setup.capacity_topology = &capacity_topo;
    setup.budget = capacity.budget();
    remediation::RemediationPolicy policy;
    policy.approvals[static_cast<size_t>(triage::IncidentClass::corruption)] = rounds + 1;  // every round approves
    setup.policy = &policy;
    service::Api api(std::move(setup));
    auto request = [&](const std::string& method, const std::string& path, const std::string& token,
                       const std::string& body = "") {
      HttpRequest r;
      r.method = method;
      r.path = path;
      r.target = path;
      r.peer = "127.0.0.1:1";
      r.body = body;
      if (!body.empty()) r.headers["content-type"] = "application/json";
      r.headers["authorization"] = "Bearer " + token;
      return r;
    };
    auto measure = [&](const std::function<HttpRequest(int)>& make) {
      Figures f;
      for (int i = 0; i < rounds; ++i) {
        const HttpRequest r = make(i);
        const auto t = Steady::now();
        const auto res = api.handle(r);
        f.ms.push_back(ms_since(t));
        f.bytes = res->body.size();
        f.status = res->status;
      }
      return f;
    };
    std::printf("bench_api: %s, %zu devices, %zu links, %zu ports, %zu capacity groups; %d open incidents (%zu waiting "
                "for approval), %d rounds\n",
                preset_name.c_str(), topo.devices().size(), topo.links().size(), topo.ports().size(),
                capacity_topo.groups().size(), incidents, waiting.size(), rounds);
    std::printf("  inventory of %zu links loaded in %.0f ms\n", topo.links().size(), inventory_ms);
    api.handle(request("GET", "/api/whoami", *viewer));  // the API's connection, made once
    const std::string one = "/api/incidents/" + std::to_string(waiting.front());
    print("GET /api/whoami (token check)", measure([&](int) { return request("GET", "/api/whoami", *viewer); }));
    print("GET /api/queue", measure([&](int) { return request("GET", "/api/queue", *viewer); }));
    print("GET /api/incidents/ID (what-if on every group)", measure([&](int) { return request("GET", one, *viewer); }));
    print("POST /api/incidents/ID/approve", measure([&](int i) {
            return request("POST", one + "/approve", tokens[static_cast<size_t>(i)], R"({"reason":"bench"})");
          }));
    print("GET /api/audit", measure([&](int) { return request("GET", "/api/audit", *viewer); }));
    print("refused: 401 unknown token", measure([&](int) { return request("GET", "/api/queue", "mdk_1_nope"); }));
    print("refused: 403 viewer approves", measure([&](int) { return request("POST", one + "/approve", *viewer, "{}"); }));
    std::printf("  peak RSS %.0f MiB\n", peak_mib());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_api: %s\n", e.what());
    rc = 1;
  }
  try {
    pqxx::connection c(url);
    pqxx::nontransaction n(c);
    n.exec_params("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name);
    n.exec("DROP DATABASE IF EXISTS " + name);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_api: dropping %s: %s\n", name.c_str(), e.what());
  }
  return rc;
}
