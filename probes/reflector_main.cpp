// medic-reflector: a small STAMP session-reflector (RFC 8762) to run on hosts and switches.
// Reflects valid test packets, drops and counts malformed ones, limits each source's rate,
// and never crashes on any input.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>

#include "common/asio.h"
#include "probes/reflector.h"

using namespace medic;
using namespace medic::probes;

int main(int argc, char** argv) {
  CLI::App app{"medic-reflector: STAMP (RFC 8762) session-reflector"};
  std::string listen, key_text, netns, log_level = "info";
  bool stateful = false, synchronized = false;
  double rate = 20000, burst = 2000, stats_interval = 0, clock_error_us = 1000;
  app.add_option("--listen", listen, "ADDR:PORT to answer on (STAMP's port is 862)")->required();
  app.add_option("--auth-key", key_text, "authenticated mode with this HMAC key (hex:... or a passphrase)");
  app.add_flag("--stateful", stateful, "number replies per session (tells forward from reverse loss)");
  app.add_option("--rate-limit", rate, "answers per second per source address (0: none)")->check(CLI::NonNegativeNumber);
  app.add_option("--burst", burst, "answers a source may save up")->check(CLI::PositiveNumber);
  app.add_option("--netns", netns, "listen inside this network namespace");
  app.add_flag("--synchronized", synchronized, "set the S bit: this clock is synchronized to UTC (NTP/PTP)");
  app.add_option("--clock-error-us", clock_error_us, "this clock's error estimate in microseconds")
      ->check(CLI::PositiveNumber);
  app.add_option("--stats-interval", stats_interval, "print counters every N seconds (0: only at exit and on SIGUSR1)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A command line CLI11 refuses is bad input: exit 2, as for a malformed --listen (CLI11's
    // own codes, 105 and up, mean nothing to a caller); --help still exits 0.
    return app.exit(e) == 0 ? 0 : 2;
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  if (burst < 1) {
    // Each answer spends a whole token: below one, every source would be refused forever.
    std::fprintf(stderr, "medic-reflector: --burst must be at least 1\n");
    return 2;
  }

  auto ep = Endpoint::parse(listen);
  if (!ep.ok()) {
    std::fprintf(stderr, "medic-reflector: --listen %s\n", ep.error().c_str());
    return 2;
  }
  ReflectorOptions opt;
  opt.stateful = stateful;
  opt.rate_limit_pps = rate;
  opt.burst = burst;
  opt.error = ErrorEstimate::from_seconds(clock_error_us / 1e6, synchronized);
  if (!key_text.empty()) {
    auto key = HmacKey::parse(key_text);
    if (!key.ok()) {
      std::fprintf(stderr, "medic-reflector: --auth-key: %s\n", key.error().c_str());
      return 2;
    }
    opt.mode = Mode::authenticated;
    opt.key = *key;
  }
  auto sock = UdpSocket::open(*ep, netns);
  if (!sock.ok()) {
    std::fprintf(stderr, "medic-reflector: %s\n", sock.error().c_str());
    return 1;
  }
  asio::io_context io;
  SystemClock clock;
  Reflector reflector(io, std::move(*sock), opt, clock);
  reflector.start();

  auto report = [&] {
    const auto& c = reflector.counters();
    std::printf("received %lu, reflected %lu, malformed %lu, auth failed %lu, rate limited %lu, send failed %lu\n",
                static_cast<unsigned long>(c.received.load()), static_cast<unsigned long>(c.reflected.load()),
                static_cast<unsigned long>(c.malformed.load()), static_cast<unsigned long>(c.auth_failed.load()),
                static_cast<unsigned long>(c.rate_limited.load()), static_cast<unsigned long>(c.send_failed.load()));
    std::fflush(stdout);
  };
  asio::signal_set stop(io, SIGINT, SIGTERM);
  stop.async_wait([&](const boost::system::error_code&, int) {
    reflector.stop();
    io.stop();
  });
  asio::signal_set usr1(io, SIGUSR1);
  std::function<void()> wait_usr1 = [&] {
    usr1.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      report();
      wait_usr1();
    });
  };
  wait_usr1();
  asio::steady_timer tick(io);
  std::function<void()> schedule = [&] {
    if (stats_interval <= 0) return;
    tick.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(stats_interval)));
    tick.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      report();
      schedule();
    });
  };
  schedule();
  // Only now that SIGTERM and SIGUSR1 are handled: whoever waits for this line may signal.
  std::printf("medic-reflector on %s (%s, %s)\n", reflector.local().str().c_str(),
              opt.mode == Mode::authenticated ? "authenticated" : "unauthenticated",
              stateful ? "stateful" : "stateless");
  std::fflush(stdout);
  io.run();
  report();
  return 0;
}
