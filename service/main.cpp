// medicd: the fabric-medic daemon. The one place of wiring: every file is parsed once,
// the database migrated once, each module built once and handed what it needs.
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "common/asio.h"
#include "common/files.h"
#include "common/http_client.h"
#include "common/http_server.h"
#include "common/strings.h"
#include "common/thread_name.h"
#include "db/connection.h"
#include "detectors/config.h"
#include "fabric/loader.h"
#include "remediation/capacity_config.h"
#include "remediation/policy.h"
#include "service/api.h"
#include "service/config.h"
#include "service/daemon.h"
#include "service/options.h"
#include "telemetry/backoff.h"
#include "telemetry/collector.h"
#include "telemetry/snmp_collector.h"
#include "telemetry/snmp_traps.h"
#include <netdb.h>
#include "common/metrics.h"
#include "service/signals.h"
#include "service/slo_metrics.h"
#include "service/snapshot_writer.h"
#include "service/notifier.h"
#include "remediation/workflow.h"
#include "remediation/capacity.h"
#include "remediation/actions.h"
#include "pipeline/pipeline.h"
#include "db/snapshot_store.h"
#include "db/remediation_store.h"
#include "db/maintenance_store.h"
#include "db/inventory_store.h"
#include "db/incident_store.h"
#include "service/health.h"
#include "snapshot/snapshot.h"
#include "service/leadership.h"
#include "telemetry/mapping.h"

using namespace medic;

namespace {

std::string default_name() {
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = 0;
  return std::string(host[0] != 0 ? host : "medicd") + ":" + std::to_string(::getpid());
}

}  // namespace

int main(int argc, char** argv) {
  // Every option is declared in service/options.cpp (shared with `medic config check`).
  service::DaemonOptions options;
  if (const auto status = options.parse(argc, argv, std::cout, std::cerr)) return *status;
  service::DaemonSettings& s = options.settings();
  std::string api_token;
  if (s.name.empty()) s.name = default_name();
  spdlog::set_level(spdlog::level::from_str(options.log_level()));
  curl_global_setup();

  try {
    // The secrets read (read_secret: file, flag, environment) and every setting checked.
    const service::DaemonConfig config = options.config();
    api_token = options.api_token();
    const auto& settings = config.settings();
    // Every file, once, before the database or the lock is waited on.
    const service::LoadedFiles files = service::LoadedFiles::load(settings);
    SystemClock clock;
    const auto started = std::chrono::steady_clock::now();
    auto out_of_time = [&] {
      return s.run_for_s > 0 && std::chrono::steady_clock::now() - started >= std::chrono::duration<double>(s.run_for_s);
    };

    // The poll loop's own database connection (it reconnects by itself), migrated once.
    db::Connection db(settings.db_url, config.db());
    for (const auto& name : db.migrate()) spdlog::info("applied migration {}", name);
    // Leadership: only the holder of the advisory lock acts; the others stand by.
    service::Leadership leadership(settings.db_url, settings.name, config.db(), clock);
    const service::LeadershipState first = leadership.check_now();
    if (first.role == service::Role::standby && !s.standby) {
      std::fprintf(stderr, "medicd: another medicd leads (advisory lock held); --no-standby given, exiting\n");
      return 3;
    }
    leadership.start(std::chrono::seconds(1));
    // Every module, built once and handed what it needs.
    metrics::Registry registry;
    const fabric::Topology& topology = *files.topology;
    const fabric::Topology capacity_topology = remediation::with_derived_groups(topology, files.capacity);
    db::InventoryStore inventory(db);
    db::IncidentStore incidents(db);
    db::MaintenanceStore maintenance(db);
    db::SnapshotStore snapshots(db);
    db::RemediationRecords records(db);
    records.set_actor({"medicd", "daemon", settings.name});
    db::DbRemediationStore remediation_store(records, incidents, topology);
    telemetry::CollectorOptions copt;
    copt.timeout_s = settings.scrape_timeout_s;
    copt.max_in_flight = static_cast<size_t>(settings.scrape_concurrency);
    telemetry::Collector collector(copt);
    std::unique_ptr<telemetry::SnmpCollector> snmp;
    if (files.snmp) {
      telemetry::SnmpOptions sopt;
      sopt.timeout_s = settings.scrape_timeout_s;
      sopt.max_in_flight = static_cast<size_t>(settings.scrape_concurrency);
      snmp = std::make_unique<telemetry::SnmpCollector>(*files.snmp, sopt);
      spdlog::info("SNMP: switches at snmp:// are polled with {}", files.snmp->describe());
    }
    // SNMP notifications: accepted from the address each switch's agent is polled at (a
    // name is resolved once, here).
    std::unique_ptr<telemetry::SnmpTrapReceiver> snmp_traps;
    if (!settings.snmp_trap_listen.empty() && !files.snmp) {
      spdlog::warn("--snmp-trap-listen {}: no switch is polled over SNMP (snmp://), so no notification could be "
                   "accepted; not listening",
                   settings.snmp_trap_listen);
    } else if (!settings.snmp_trap_listen.empty()) {
      std::vector<std::pair<std::string, fabric::DeviceId>> agents;
      for (fabric::DeviceId d = 0; d < topology.devices().size(); ++d) {
        const auto addr = parse_snmp_url(topology.device(d).telemetry_url);
        if (!addr) continue;
        addrinfo hints{};
        hints.ai_socktype = SOCK_DGRAM;
        addrinfo* found = nullptr;
        if (::getaddrinfo(addr->host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
          spdlog::warn("SNMP notifications: {}'s agent {} does not resolve; its notifications will be dropped",
                       topology.device(d).name, addr->host);
          continue;
        }
        for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
          char text[NI_MAXHOST] = {0};
          if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0) {
            agents.emplace_back(text, d);
          }
        }
        ::freeaddrinfo(found);
      }
      auto r = telemetry::SnmpTrapReceiver::open(settings.snmp_trap_listen, *files.snmp, std::move(agents));
      if (!r) throw std::runtime_error(r.error());
      snmp_traps = std::move(*r);
      spdlog::info("SNMP notifications on udp {}:{}", snmp_traps->address(), snmp_traps->port());
    }
    telemetry::Backoff backoff(topology.devices().size(), config.poll_interval(), from_seconds(settings.backoff_max_s));
    pipeline::Pipeline pipeline(topology, *files.counter_map, files.detectors, config.triage(), config.map_workers());
    remediation::CapacityModel capacity(capacity_topology, files.capacity.budget());
    remediation::JsonRpcOptions jopt;
    jopt.bearer_token = settings.driver_token;
    jopt.ca_file = settings.driver_ca;
    remediation::DriverSet drivers(topology, jopt);
    if (settings.dry_run) {
      for (fabric::DeviceId d = 0; d < topology.devices().size(); ++d) {
        if (topology.device(d).is_switch()) {
          drivers.replace(d, std::make_unique<remediation::DryRunDriver>(topology.device(d).name));
        }
      }
    }
    // Switch calls run off the poll loop: a slow switch holds only its own actions.
    remediation::ThreadedSwitchRunner switches(topology, drivers, settings.switch_workers);
    service::PipelineSignals link_signals(capacity_topology, capacity, pipeline);
    remediation::Workflow workflow(topology, capacity, switches, remediation_store, link_signals, files.policy, clock,
                                   registry);
    // Snapshots are stored on a thread and a connection of their own (before medicd exits,
    // what is queued is stored: it outlives the daemon).
    service::SnapshotWriter snapshot_writer(registry, {settings.db_url, config.db()});
    snapshot_writer.start();
    service::Daemon daemon(config,
                           service::DaemonParts{topology, capacity_topology, files.detectors, db, inventory, incidents,
                                                maintenance, snapshots, snapshot_writer, remediation_store,
                                                collector, snmp.get(), snmp_traps.get(), backoff, pipeline, capacity,
                                                workflow, registry},
                           clock);

    // The HTTP endpoint has its own threads; the API's database work runs on the API's own
    // thread, so a slow poll or a hung database never delays /healthz or /metrics.
    asio::io_context http_io;
    std::unique_ptr<HttpServer> http;
    std::vector<std::thread> http_threads;
    // Decisions and queue reads wait at most a few seconds on the database.
    db::DbOptions api_db = config.db();
    api_db.call_timeout_s = std::min(api_db.call_timeout_s, 3.0);
    service::ApiSetup api_setup;
    api_setup.db_url = settings.db_url;
    api_setup.db_options = api_db;
    api_setup.bootstrap_token = api_token;
    api_setup.capacity_topology = &capacity_topology;
    api_setup.budget = files.capacity.budget();
    api_setup.policy = &files.policy;
    api_setup.diff_thresholds = snapshot::diff_thresholds(files.detectors);
    api_setup.db_down = [&leadership] {
      const auto l = leadership.state();
      return l.db_up ? std::string() : l.db_error;
    };
    service::Api api(std::move(api_setup));
    // The SLO figures on /metrics, on a thread and a connection of their own.
    std::unique_ptr<service::SloMetrics> slo_metrics;
    if (settings.slo_refresh_s > 0) {
      service::SloMetricsOptions so;
      so.db_url = settings.db_url;
      so.db = api_db;
      so.every_s = settings.slo_refresh_s;
      so.window_days = settings.slo_window_days;
      slo_metrics = std::make_unique<service::SloMetrics>(registry, so, clock);
      slo_metrics->start();
    }
    const double stale_after_s =
        std::max(5.0, 3 * settings.poll_interval_s) + settings.scrape_timeout_s + settings.db_timeout_s;
    if (!settings.http_listen.empty()) {
      const auto hp = parse_host_port(settings.http_listen);
      if (!hp) throw std::invalid_argument("--http " + settings.http_listen + ": expected ADDR:PORT");
      HttpServerOptions hopt;
      hopt.max_sessions = 512;
      hopt.max_sessions_per_client = 64;
      hopt.read_timeout_s = 10;
      http = std::make_unique<HttpServer>(
          http_io, hp->first, hp->second,
          AsyncHttpHandler([&](HttpRequest r, HttpRespond reply) {
            if (r.path == "/healthz" || r.path == "/metrics") {
              if (r.method != "GET" && r.method != "HEAD") {
                HttpResponse res = HttpResponse::text(405, r.path + ": GET only");
                res.headers.emplace_back("Allow", "GET, HEAD");
                reply(std::move(res));
                return;
              }
              if (r.path == "/healthz") {
                service::HealthFacts f;
                f.leadership = leadership.state();
                const int64_t last = daemon.last_cycle_ns();
                f.since_last_cycle_s =
                    last == 0 ? -1
                              : std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch() -
                                                              std::chrono::nanoseconds(last))
                                    .count();
                f.stale_after_s = stale_after_s;
                f.pending_records = static_cast<size_t>(std::max(0.0, daemon.metrics().pending_records.value()));
                f.now = clock.now();
                f.mono_now = clock.monotonic();
                const service::Health h = service::judge_health(f);
                reply(HttpResponse::text(h.status, h.text));
                return;
              }
              HttpResponse res;
              res.content_type = "text/plain; version=0.0.4";
              res.body = registry.render();
              reply(std::move(res));
              return;
            }
            const std::string path = r.path;
            if (!api.submit(std::move(r), reply)) reply(HttpResponse::text(404, "not found: " + quote(path)));
          }),
          hopt);
      http->start();
      spdlog::info("medicd http on {}:{}", http->address(), http->port());
      for (int i = 0; i < 2; ++i) http_threads.emplace_back([&] {
        name_this_thread("medic-http");
        http_io.run();
      });
    }
    // However this scope ends, the HTTP threads stop before the API and the daemon they
    // call into go.
    struct HttpStopper {
      std::function<void()> stop;
      ~HttpStopper() { stop(); }
    } http_stopper{[&] {
      if (http) http->stop();
      http_io.stop();
      for (auto& t : http_threads) {
        if (t.joinable()) t.join();
      }
    }};

    // Telling people: the outbox delivered to Alertmanager and the webhooks, on a thread
    // and a connection of their own, by the leader only.
    std::string external_url = settings.external_url;
    if (http && external_url == "http://" + settings.http_listen) {
      // Derived from --http: the port it is bound to (--http ADDR:0 binds any); a wildcard
      // address is no place to browse to, this host's name is; an IPv6 address in brackets.
      std::string host = http->address();
      if (host == "0.0.0.0" || host == "::") {
        char name[256] = {0};
        host = ::gethostname(name, sizeof(name) - 1) == 0 && name[0] != 0 ? name : "localhost";
      } else if (host.find(':') != std::string::npos) {
        host = "[" + host + "]";
      }
      external_url = "http://" + host + ":" + std::to_string(http->port());
      if (!settings.alertmanager_urls.empty() || !settings.webhook_urls.empty()) {
        spdlog::info("no --external-url: alerts link to {} (set --external-url to the address people's browsers reach)",
                     external_url);
      }
    }
    service::NotifierOptions nopt;
    nopt.db_url = settings.db_url;
    nopt.db = api_db;
    nopt.alertmanager_urls = settings.alertmanager_urls;
    nopt.webhook_urls = settings.webhook_urls;
    nopt.webhook_secret = settings.webhook_secret;
    nopt.external_url = external_url;
    nopt.repeat_s = settings.alert_repeat_s;
    nopt.retry_max_s = settings.notify_retry_max_s;
    nopt.timeout_s = settings.notify_timeout_s;
    service::Notifier notifier(registry, nopt, clock,
                               [&leadership] { return leadership.state().role == service::Role::leader; });
    notifier.start();

    asio::io_context io;
    asio::steady_timer timer(io);
    const auto interval = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(settings.poll_interval_s));
    auto next = started;
    std::function<void()> schedule = [&] {
      next += interval;
      const auto now = std::chrono::steady_clock::now();
      if (next < now) next = now;  // a slow cycle does not cause a burst of catch-up cycles
      timer.expires_at(next);
      timer.async_wait([&](const boost::system::error_code& ec) {
        if (ec) return;
        if (out_of_time()) {
          spdlog::info("medicd: ran for {}s, stopping", s.run_for_s);
          io.stop();
          return;
        }
        daemon.cycle(leadership.state());
        schedule();
      });
    };
    daemon.cycle(leadership.state());
    schedule();
    // SNMP notifications are read on this thread too, between cycles: net-snmp's state is
    // the collector's as well, and the pipeline is this loop's alone.
    std::optional<asio::posix::stream_descriptor> trap_socket;
    std::function<void()> wait_for_traps = [&] {
      trap_socket->async_wait(asio::posix::stream_descriptor::wait_read, [&](const boost::system::error_code& ec) {
        if (ec) return;
        daemon.take_notifications();
        wait_for_traps();
      });
    };
    if (snmp_traps) {
      trap_socket.emplace(io, ::dup(snmp_traps->fd()));
      wait_for_traps();
    }
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code&, int sig) {
      spdlog::info("medicd: signal {}, stopping", sig);
      io.stop();
    });
    io.run();
    http_stopper.stop();
    notifier.stop();
    leadership.stop();
    const auto& m = daemon.metrics();
    const auto& w = workflow.metrics();
    spdlog::info("medicd: {} cycles, {} incidents opened, {} drained, {} refused, {} failed", m.cycles.value(),
                 m.incidents_opened.value(), w.drains_verified.value(), w.refusals.value(), w.drains_failed.value());
    return 0;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "medicd: %s\n", e.what());
    return 2;
  } catch (const fabric::TopologyError& e) {
    std::fprintf(stderr, "medicd: %s\n", e.what());
    return 2;
  } catch (const detectors::ConfigError& e) {
    std::fprintf(stderr, "medicd: %s\n", e.what());
    return 2;
  } catch (const remediation::CapacityConfigError& e) {
    std::fprintf(stderr, "medicd: %s\n", e.what());
    return 2;
  } catch (const remediation::PolicyError& e) {
    std::fprintf(stderr, "medicd: %s\n", e.what());
    return 2;
  } catch (const telemetry::CounterMapError& e) {
    std::fprintf(stderr, "medicd: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "medicd: %s\n", e.what());
    return 1;
  }
}
