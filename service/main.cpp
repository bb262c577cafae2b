// medicd: the fabric-medic daemon.
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "common/asio.h"
#include "common/http_client.h"
#include "common/http_server.h"
#include "common/strings.h"
#include "db/database.h"
#include "db/leader.h"
#include "fabric/loader.h"
#include "service/api.h"
#include "service/config.h"
#include "service/daemon.h"
#include "detectors/config.h"
#include "remediation/capacity_config.h"
#include "remediation/policy.h"
#include "telemetry/mapping.h"

using namespace medic;

namespace {

std::atomic<bool> g_stop{false};
void on_stop_signal(int) { g_stop = true; }

std::string default_name() {
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = 0;
  return std::string(host[0] != 0 ? host : "medicd") + ":" + std::to_string(::getpid());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"medicd: finds bad links in a RoCE fabric, drains them when capacity allows, records SLOs"};
  service::DaemonSettings s;
  if (const char* env = std::getenv("MEDIC_DB_URL")) s.db_url = env;
  std::string log_level = "info";
  app.add_option("--topology", s.topology_path, "topology JSON file")->required();
  app.add_option("--db", s.db_url, "PostgreSQL URL (default: $MEDIC_DB_URL)");
  app.add_option("--counter-map", s.counter_map_path, "counter name map (default: data/counter_map.json)");
  app.add_option("--poll-interval", s.poll_interval_s, "seconds between polls of every switch");
  app.add_option("--scrape-timeout", s.scrape_timeout_s, "seconds before a switch's answer is given up on");
  app.add_option("--scrape-concurrency", s.scrape_concurrency, "switches scraped at once");
  app.add_option("--detectors", s.detectors_path, "detector thresholds (default: data/detectors.json)");
  app.add_option("--device-fault-links", s.device_fault_links,
                 "failing links of one switch within 2 minutes that make one switch_fault incident");
  app.add_option("--reopen-window", s.reopen_window_s, "seconds within which a closed incident's fault reopens it");
  app.add_option("--backoff-max", s.backoff_max_s, "longest wait in seconds before retrying a failing device");
  app.add_option("--run-for", s.run_for_s, "stop after this many seconds (0: until SIGINT/SIGTERM)");
  app.add_flag("--dry-run", s.dry_run, "never touch a switch: record what would be drained");
  app.add_option("--http", s.http_listen, "serve /healthz and /metrics on this loopback ADDR:PORT");
  app.add_option("--driver-token", s.driver_token, "bearer token for the switches' JSON-RPC drain API");
  app.add_option("--driver-ca", s.driver_ca,
                 "PEM CA bundle to verify the switches' https:// drain API with (default: the system's CAs)")
      ->check(CLI::ExistingFile);
  app.add_option("--capacity", s.capacity_path, "capacity floors per group kind and drain budget (default: data/capacity.json)");
  app.add_option("--policy", s.policy_path, "remediation policy (default: data/remediation.json)");
  app.add_option("--name", s.name, "this daemon's name in the leader row and its actions (default: HOST:PID)");
  app.add_option("--snapshot-retention", s.snapshot_retention_days, "days snapshots are kept (0: forever)");
  std::string api_token;
  app.add_option("--api-token", api_token,
                 "bearer token for decisions over HTTP (approve, reject, repaired, breaker reset); none: CLI only");
  bool no_standby = false;
  app.add_flag("--no-standby", no_standby, "exit (status 3) instead of waiting when another medicd leads");
  bool no_probe = false;
  app.add_flag("--no-probe", no_probe, "no active probing (STAMP), even where the topology allows it");
  app.add_option("--probe-rate", s.probe_rate, "STAMP probes per second over all sessions");
  app.add_option("--probe-round", s.probe_round_s, "seconds per round (every session is probed each round)");
  app.add_option("--probe-per-round", s.probe_per_round, "probes per session per round");
  app.add_option("--probe-timeout", s.probe_timeout_s, "seconds after which an unanswered probe is lost");
  app.add_flag("--probe-paths-unknown", s.probe_paths_unknown,
               "the fabric's ECMP hash is not fabric-medic's model: a path probe could have taken any path");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  CLI11_PARSE(app, argc, argv);
  s.probe = !no_probe;
  s.standby = !no_standby;
  if (s.name.empty()) s.name = default_name();
  spdlog::set_level(spdlog::level::from_str(log_level));
  curl_global_setup();

  try {
    const service::DaemonConfig config(s);
    SystemClock clock;
    const auto started = std::chrono::steady_clock::now();
    auto out_of_time = [&] {
      return s.run_for_s > 0 && std::chrono::steady_clock::now() - started >= std::chrono::duration<double>(s.run_for_s);
    };

    // Bad files stop medicd before it touches the database (the daemon loads them again).
    (void)fabric::load_topology_file(config.settings().topology_path);
    (void)remediation::CapacityConfig::load_file(config.settings().capacity_path);
    (void)remediation::RemediationPolicy::load_file(config.settings().policy_path);

    // Leadership: only the holder of the advisory lock acts; the others wait on standby.
    int64_t epoch = 0;
    std::unique_ptr<db::LeaderLock> lock_holder;
    {
      db::Database db(s.db_url);
      lock_holder = std::make_unique<db::LeaderLock>(s.db_url);
      db::LeaderLock& lock = *lock_holder;
      for (const auto& name : db.migrate()) spdlog::info("applied migration {}", name);
      std::signal(SIGINT, on_stop_signal);
      std::signal(SIGTERM, on_stop_signal);
      bool said = false;
      while (true) {
        auto got = lock.try_acquire();
        if (!got.ok()) throw std::runtime_error(got.error());
        if (*got) break;
        if (!s.standby) {
          std::fprintf(stderr, "medicd: another medicd leads (advisory lock held); --no-standby given, exiting\n");
          return 3;
        }
        if (!said) {
          auto l = db.leader();
          spdlog::info("medicd {}: standby, {} leads", s.name,
                       l.ok() && l->has_value() ? (*l)->daemon + " (epoch " + std::to_string((*l)->epoch) + ")" : "another daemon");
          said = true;
        }
        if (g_stop || out_of_time()) {
          spdlog::info("medicd {}: stopping while on standby", s.name);
          return 0;
        }
        std::this_thread::sleep_for(std::chrono::duration<double>(std::min(s.poll_interval_s, 1.0)));
      }
      auto e = db.claim_leadership(s.name, clock.now());
      if (!e.ok()) throw std::runtime_error(e.error());
      epoch = *e;
      spdlog::info("medicd {}: leader (epoch {})", s.name, epoch);
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
      if (g_stop) return 0;
    }
    service::Daemon daemon(config, clock, epoch);
    db::LeaderLock& lock = *lock_holder;

    // The HTTP endpoint has its own thread so a slow poll never delays /healthz.
    asio::io_context http_io;
    std::unique_ptr<HttpServer> http;
    std::thread http_thread;
    service::Api api(s.db_url, api_token);
    if (!s.http_listen.empty()) {
      const auto hp = parse_host_port(s.http_listen);
      if (!hp) throw std::invalid_argument("--http " + s.http_listen + ": expected ADDR:PORT");
      http = std::make_unique<HttpServer>(http_io, hp->first, hp->second,
                                          [&](const HttpRequest& r) {
                                            if (r.path == "/healthz") return HttpResponse::text(200, "ok");
                                            if (r.path == "/metrics") {
                                              HttpResponse resp;
                                              resp.content_type = "text/plain; version=0.0.4";
                                              resp.body = daemon.metrics().render_prometheus();
                                              return resp;
                                            }
                                            if (auto a = api.handle(r)) return std::move(*a);
                                            return HttpResponse::text(404, "not found");
                                          });
      http->start();
      spdlog::info("medicd http on {}:{}", http->address(), http->port());
      http_thread = std::thread([&] { http_io.run(); });
    }

    asio::io_context io;
    asio::steady_timer timer(io);
    int exit_status = 0;
    // Leadership is checked before every cycle: a daemon that lost its lock stops acting at once.
    auto cycle = [&] {
      if (!lock.held()) {
        spdlog::error("medicd {}: lost the leader lock (database connection gone?); stopping so a leader can act",
                      s.name);
        exit_status = 4;
        io.stop();
        return false;
      }
      daemon.cycle();
      return true;
    };
    const auto interval = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(s.poll_interval_s));
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
        if (cycle()) schedule();
      });
    };
    if (cycle()) schedule();
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code&, int sig) {
      spdlog::info("medicd: signal {}, stopping", sig);
      io.stop();
    });
    io.run();
    if (http) {
      http->stop();
      http_io.stop();
      http_thread.join();
    }
    const auto& m = daemon.metrics();
    spdlog::info("medicd: {} cycles, {} incidents opened, {} drained, {} refused, {} failed", m.cycles.load(),
                 m.incidents_opened.load(), m.drains_succeeded.load(), m.drains_refused.load(),
                 m.drains_failed.load());
    return exit_status;
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
