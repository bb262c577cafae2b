// bench/notify: what telling people costs on the zone32k fabric. On a private PostgreSQL
// (bench/notify starts one) with the zone32k inventory:
//   1. the outbox trigger: opening incidents and moving each to pending_approval, with no
//      receiver configured and with three (one Alertmanager, two webhooks), N incidents
//      each: the cost per incident change the trigger adds to the transaction that makes it;
//   2. delivery: the notifier's passes sending everything owed (2N events per receiver) to
//      receivers on loopback that answer 200 at once: events per second and the notifier
//      thread's CPU per event, for Alertmanager (batches of 100) and for signed webhooks (one
//      POST each);
//   3. a repeat: every open incident (2.25 N) re-sent to Alertmanager in one pass;
//   and the process's peak resident memory.
//
//   build/bench/bench_notify --db URL [--incidents N]
//   bench/notify [--incidents N]
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "bench/measure.h"
#include "common/asio.h"
#include "common/http_server.h"
#include "fabric/generator.h"
#include "service/notifier.h"
#include "tests/db/all_stores.h"

using namespace medic;

namespace {

using namespace medic::bench;

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: bench_notify --db URL [--incidents N]\n");
  std::exit(2);
}

// Opens incidents on links [first, first + n) and moves each to pending_approval; returns
// the seconds per change (an opening or a state change).
double open_and_change(db::AllStores& db, const fabric::Topology& topo, size_t first, size_t n, Time now) {
  const auto t0 = Steady::now();
  std::vector<int64_t> ids;
  ids.reserve(n);
  for (size_t i = first; i < first + n; ++i) {
    triage::IncidentUpdate u;
    u.cls = triage::IncidentClass::link_flap;
    u.link = static_cast<fabric::LinkId>(i);
    u.severity = detectors::Severity::critical;
    u.started_at = u.detected_at = now;
    u.summary = "bench";
    const auto id = db.open_incident(u, topo, now);
    if (!id.ok()) {
      std::fprintf(stderr, "bench_notify: %s\n", id.error().c_str());
      std::exit(1);
    }
    ids.push_back(*id);
  }
  for (const int64_t id : ids) {
    if (auto s = db.set_incident_state(id, triage::IncidentState::pending_approval, now); !s.ok()) {
      std::fprintf(stderr, "bench_notify: %s\n", s.error().c_str());
      std::exit(1);
    }
  }
  return since(t0) / static_cast<double>(2 * n);
}

}  // namespace

int main(int argc, char** argv) {
  std::string url;
  size_t n = 5000;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage();
    const std::string v = argv[++i];
    if (k == "--db") {
      url = v;
    } else if (k == "--incidents") {
      n = static_cast<size_t>(std::stol(v));
    } else {
      usage();
    }
  }
  if (url.empty() || n == 0) usage();
  curl_global_setup();
  const fabric::Topology topo = fabric::generate_clos(*fabric::preset("zone32k"));
  if (n * 9 / 4 > topo.links().size()) usage();
  db::AllStores db(url);
  db.migrate();
  if (auto st = db.sync_inventory(topo); !st.ok()) {
    std::fprintf(stderr, "bench_notify: %s\n", st.error().c_str());
    return 1;
  }
  std::printf("bench_notify: zone32k (%zu links), %zu incidents per round\n", topo.links().size(), n);

  // Receivers on loopback that take everything at once.
  asio::io_context io;
  std::atomic<long> posts{0};
  HttpServerOptions hopt;
  hopt.body_limit = 64 << 20;
  HttpServer server(io, "127.0.0.1", 0, HttpHandler([&](const HttpRequest&) {
                      ++posts;
                      return HttpResponse::text(200, "ok");
                    }),
                    hopt);
  server.start();
  std::thread server_thread([&] { io.run(); });
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  service::NotifierOptions o;
  o.db_url = url;
  o.alertmanager_urls = {base + "/am"};
  o.webhook_urls = {base + "/hook1", base + "/hook2"};
  o.webhook_secret = "bench-secret";
  o.external_url = "https://medic.example.net";
  metrics::Registry registry;
  SystemClock clock;

  // 1. The trigger's cost: rounds with no receiver and with three, alternated after a
  // warm-up round, each on links of its own.
  const auto receivers = service::notify_receivers(o);
  double none = 0, three = 0;
  size_t next = 0;
  for (int round = 0; round < 5; ++round) {
    const bool with = round % 2 == 0 && round > 0;
    if (auto s = db.set_receivers(with ? receivers : std::vector<db::NotifyReceiver>{}); !s.ok()) {
      std::fprintf(stderr, "bench_notify: %s\n", s.error().c_str());
      return 1;
    }
    const size_t size = round == 0 ? n / 4 : n / 2;
    const double t = open_and_change(db, topo, next, size, clock.now());
    next += size;
    if (round > 0) (with ? three : none) += t / 2;
  }
  std::printf("  incident change, no receiver:     %.3f ms\n", none * 1e3);
  std::printf("  incident change, three receivers: %.3f ms (the outbox trigger adds %.3f ms)\n", three * 1e3,
              (three - none) * 1e3);
  if (auto s = db.set_receivers(receivers); !s.ok()) return 1;

  // 2. Delivery of what is owed: 2N events per receiver. Alertmanager first, then the webhooks.
  for (const bool am : {true, false}) {
    service::NotifierOptions one = o;
    if (am) {
      one.webhook_urls.clear();
      one.repeat_s = 3600;
    } else {
      one.alertmanager_urls.clear();
    }
    service::Notifier notifier(registry, one, clock, [] { return true; });
    // The receivers of `one` only: the others' rows stay owed (disabled) for their turn.
    const long before = posts;
    const auto t0 = Steady::now();
    const double cpu0 = thread_cpu_s();
    long events = 0;
    for (int pass = 0; pass < 100000; ++pass) {
      notifier.pass();
      const auto owed = db.status();
      if (!owed.ok()) {
        std::fprintf(stderr, "bench_notify: %s\n", owed.error().c_str());
        return 1;
      }
      long pending = 0;
      events = 0;
      for (const auto& r : *owed) {
        if ((r.kind == "alertmanager") != am) continue;
        pending += r.pending;
        events += r.delivered;
      }
      if (pending == 0) break;
    }
    const double wall = since(t0), cpu = thread_cpu_s() - cpu0;
    std::printf("  %s: %ld events in %ld POSTs, %.2f s, %.0f events/s, notifier CPU %.1f us per event\n",
                am ? "Alertmanager (batches)" : "2 webhooks (signed, one POST each)", events, posts - before, wall,
                static_cast<double>(events) / wall, cpu / static_cast<double>(events) * 1e6);
  }

  // 3. A repeat of every open incident to Alertmanager.
  {
    service::NotifierOptions one = o;
    one.webhook_urls.clear();
    service::Notifier notifier(registry, one, clock, [] { return true; });
    const long before = posts;
    const auto t0 = Steady::now();
    const double cpu0 = thread_cpu_s();
    notifier.pass();
    std::printf("  repeat of %zu open incidents to Alertmanager: %ld POSTs, %.2f s, notifier CPU %.2f s\n", next,
                posts - before, since(t0), thread_cpu_s() - cpu0);
  }
  std::printf("  peak resident memory: %.1f MiB\n", peak_mib());
  server.stop();
  io.stop();
  server_thread.join();
  return 0;
}
