// fabsim: a fabric emulator for demos and scale tests. Serves every switch's counters and
// drain API on loopback (over HTTP, or HTTPS with --tls-cert/--tls-key) and plays a
// scenario of timed faults.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/asio.h"
#include "common/http_server.h"
#include "common/strings.h"
#include "fabric/loader.h"
#include "sim/fabric_sim.h"
#include "sim/scenario.h"
#include "sim/server.h"
#include "probes/reflector.h"
#include <arpa/inet.h>
#include <net/if.h>
#include <random>
#include <unordered_map>

using namespace medic;

namespace {

struct HostPort {
  std::string host;
  uint16_t port = 0;
  bool operator<(const HostPort& o) const { return std::tie(host, port) < std::tie(o.host, o.port); }
};

std::string scheme_of(const std::string& url) {
  const size_t scheme = url.find("://");
  return scheme == std::string::npos ? "" : url.substr(0, scheme);
}

// "http://127.0.0.1:18080/s/x/metrics" -> {127.0.0.1, 18080}
std::optional<HostPort> url_host_port(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return std::nullopt;
  const size_t start = scheme + 3;
  const size_t end = url.find('/', start);
  const std::string hp = url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  const size_t colon = hp.rfind(':');
  if (colon == std::string::npos) return HostPort{hp, static_cast<uint16_t>(url.rfind("https", 0) == 0 ? 443 : 80)};
  try {
    const int port = std::stoi(hp.substr(colon + 1));
    if (port < 0 || port > 65535) return std::nullopt;
    return HostPort{hp.substr(0, colon), static_cast<uint16_t>(port)};
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<HostPort> parse_listen(const std::string& s) {
  const auto hp = parse_host_port(s);
  if (!hp) return std::nullopt;
  return HostPort{hp->first, hp->second};
}

bool is_loopback(const std::string& host) {
  boost::system::error_code ec;
  const auto a = asio::ip::make_address(host, ec);
  return !ec && a.is_loopback();
}

// Rewrites every switch URL's scheme://host:port to `base`, keeping the path.
std::string rewrite(const std::string& url, const std::string& base) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t path = url.find('/', scheme + 3);
  return base + (path == std::string::npos ? "" : url.substr(path));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fabsim: emulated RoCE fabric (counters, drain API, fault scenarios) on loopback"};
  std::string topology_path, scenario_path, listen, export_path, token, tls_cert, tls_key, log_level = "info";
  uint64_t seed = 1;
  double run_for = 0;
  int stamp_port = -1;
  app.add_option("--topology", topology_path, "topology JSON file")->required();
  app.add_option("--scenario", scenario_path, "scenario JSON file with timed faults");
  app.add_option("--listen", listen,
                 "serve every switch on this loopback ADDR:PORT (port 0: any free port) instead of "
                 "the addresses in the topology's URLs");
  app.add_option("--export-topology", export_path,
                 "write the topology with URLs pointing at this fabsim (written once listening)");
  app.add_option("--rpc-token,--token", token,
                 "the JSON-RPC drain API answers 401 to requests without \"Authorization: Bearer TOKEN\" (visible in "
                 "ps: prefer --rpc-token-file or $MEDIC_RPC_TOKEN)");
  std::string token_file;
  app.add_option("--rpc-token-file", token_file, "file holding the drain API's bearer token");
  auto* cert_opt = app.add_option("--tls-cert", tls_cert,
                                  "serve HTTPS with this PEM certificate (chain); the switches' URLs become https://");
  auto* key_opt = app.add_option("--tls-key", tls_key, "the PEM private key of --tls-cert");
  cert_opt->needs(key_opt);
  key_opt->needs(cert_opt);
  app.add_option("--seed", seed, "seed for per-port traffic and optics variation");
  app.add_option("--stamp-port", stamp_port,
                 "UDP port of the STAMP reflectors of every link address (default: the topology's reflector port, "
                 "or any free port with --listen)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--run-for", run_for, "exit after this many seconds (0: until SIGINT/SIGTERM)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::from_str(log_level));

  try {
    auto secret = read_secret(token, token_file, "MEDIC_RPC_TOKEN", "--rpc-token");
    if (!secret.ok()) throw std::invalid_argument(secret.error());
    token = *secret;
    const fabric::Topology topo = fabric::load_topology_file(topology_path);
    sim::Scenario scenario;
    if (!scenario_path.empty()) scenario = sim::load_scenario_file(scenario_path, topo);

    // Every address to serve, and whether it speaks HTTPS. With --listen that is one
    // address, HTTPS when a certificate is given. Otherwise the topology's URLs say: an
    // https:// address needs --tls-cert, and one address cannot be both.
    const bool tls = !tls_cert.empty();
    std::map<HostPort, std::string> addrs;  // -> "http" or "https"
    if (!listen.empty()) {
      const auto hp = parse_listen(listen);
      if (!hp) throw std::runtime_error("--listen " + listen + ": expected ADDR:PORT");
      addrs[*hp] = tls ? "https" : "http";
    } else {
      for (const auto& d : topo.devices()) {
        for (const std::string* u : {&d.telemetry_url, &d.driver_url}) {
          if (u->empty()) continue;
          const auto hp = url_host_port(*u);
          if (!hp) throw std::runtime_error(topology_path + ": switch " + d.name + ": cannot read host:port from URL " + *u);
          const std::string scheme = scheme_of(*u);
          if (scheme != "http" && scheme != "https") {
            throw std::runtime_error(topology_path + ": " + d.name + ": URL " + *u + " is neither http:// nor https://");
          }
          if (scheme == "https" && !tls) {
            throw std::runtime_error(topology_path + ": " + d.name + ": URL " + *u +
                                     " is https://: give --tls-cert and --tls-key");
          }
          const auto [it, fresh] = addrs.emplace(*hp, scheme);
          if (!fresh && it->second != scheme) {
            throw std::runtime_error(topology_path + ": " + hp->host + ":" + std::to_string(hp->port) +
                                     " is both http:// and https:// in the switches' URLs (" + d.name + ": " + *u + ")");
          }
        }
      }
      if (addrs.empty()) throw std::runtime_error(topology_path + ": no switch URLs to serve; use --listen");
      if (tls && std::none_of(addrs.begin(), addrs.end(), [](const auto& a) { return a.second == "https"; })) {
        throw std::runtime_error("--tls-cert: no https:// URL in " + topology_path +
                                 " (use --listen, or make the URLs https://)");
      }
    }
    for (const auto& [a, scheme] : addrs) {
      if (!is_loopback(a.host)) {
        throw std::runtime_error("fabsim serves on loopback only; refusing " + a.host + ":" + std::to_string(a.port));
      }
    }

    asio::io_context io;
    SystemClock sys_clock;
    sim::FabricSim fabric(topo, seed);
    const auto t0 = std::chrono::steady_clock::now();
    auto now_s = [t0] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    const double t0_unix = to_unix_seconds(sys_clock.now()) - now_s();
    sim::ServerOptions sopt{token, t0_unix};
    std::vector<std::unique_ptr<HttpServer>> servers;
    for (const auto& [a, scheme] : addrs) {
      HttpServerOptions hopt;
      if (scheme == "https") {
        hopt.tls_cert_file = tls_cert;
        hopt.tls_key_file = tls_key;
      }
      // A slow drain API (rpc_delay) acts and answers later, on a timer: the other
      // switches' requests are served meanwhile.
      servers.push_back(std::make_unique<HttpServer>(
          io, a.host, a.port,
          AsyncHttpHandler([&](HttpRequest r, HttpRespond reply) {
            const double delay = sim::answer_delay_s(fabric, r);
            if (delay <= 0) {
              reply(sim::handle(fabric, now_s(), r, sopt));
              return;
            }
            auto timer = std::make_shared<asio::steady_timer>(
                io, std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(delay)));
            timer->async_wait([&fabric, &now_s, &sopt, timer, r = std::move(r), reply = std::move(reply)](
                                  const boost::system::error_code&) { reply(sim::handle(fabric, now_s(), r, sopt)); });
          }),
          hopt));
      servers.back()->start();
      std::printf("fabsim listening on %s:%u%s (%zu switches, %zu links, %zu scenario faults)\n", a.host.c_str(),
                  servers.back()->port(), servers.back()->tls() ? " over HTTPS" : "",
                  static_cast<size_t>(std::count_if(topo.devices().begin(), topo.devices().end(),
                                                    [](const auto& d) { return d.is_switch(); })),
                  topo.links().size(), scenario.faults.size());
    }
    // The scenario's faults are timed from t0: tools that time what follows a fault
    // (bench/load, bench/fault_to_drain) read when that was, before the export appears.
    std::printf("fabsim scenario time 0 is Unix time %.6f\n", t0_unix);
    std::fflush(stdout);

    // STAMP reflectors: one socket on loopback answers for every link address of the
    // topology (the address a probe was sent to says which port it reached), with the loss
    // and delay the scenario gives the links on the probe's path.
    uint16_t wanted_stamp = 0;
    if (stamp_port >= 0) {
      wanted_stamp = static_cast<uint16_t>(stamp_port);
    } else if (listen.empty()) {
      for (const auto& d : topo.devices()) {
        if (d.reflector_port != 0) {
          wanted_stamp = d.reflector_port;
          break;
        }
      }
    }
    std::unique_ptr<probes::Reflector> stamp;
    std::mt19937_64 probe_rng(seed ^ 0x5eed);
    bool any_address = false;
    for (const auto& p : topo.ports()) any_address = any_address || !p.ip.empty();
    if (any_address) {
      auto ep = probes::Endpoint::parse("0.0.0.0:" + std::to_string(wanted_stamp));
      auto sock = probes::UdpSocket::open(*ep);
      if (!sock.ok()) throw std::runtime_error("STAMP reflectors: " + sock.error());
      // Only what arrives on loopback: the emulated fabric lives there.
      const char lo[] = "lo";
      setsockopt(sock->fd(), SOL_SOCKET, SO_BINDTODEVICE, lo, sizeof lo);
      probes::ReflectorOptions ropt;
      ropt.rate_limit_pps = 0;  // fabsim answers for a whole fabric from one socket
      stamp = std::make_unique<probes::Reflector>(io, std::move(*sock), ropt, sys_clock);
      const uint16_t bound = stamp->local().port();
      // Each probe's two addresses are looked up by their bits (IPv4), not printed and looked
      // up by text: at 20,000 probes a second that was a tenth of fabsim's time.
      std::unordered_map<uint32_t, fabric::PortId> v4_ports;
      for (fabric::PortId p = 0; p < topo.ports().size(); ++p) {
        in_addr a{};
        if (!topo.port(p).ip.empty() && inet_pton(AF_INET, topo.port(p).ip.c_str(), &a) == 1) v4_ports.emplace(a.s_addr, p);
      }
      auto port_of = [&topo, v4 = std::move(v4_ports)](const probes::Endpoint& e) -> std::optional<fabric::PortId> {
        if (e.addr.ss_family != AF_INET) return topo.find_port_by_ip(e.host());
        const auto it = v4.find(reinterpret_cast<const sockaddr_in&>(e.addr).sin_addr.s_addr);
        if (it == v4.end()) return std::nullopt;
        return it->second;
      };
      stamp->core().set_policy([&, bound, port_of](const probes::Datagram& d, const probes::SenderPacket&) {
        probes::Reflection r;
        const auto src = port_of(d.peer);
        const auto dst = d.local ? port_of(*d.local) : std::nullopt;
        if (!src || !dst) return r;  // not an address of this fabric
        const sim::ProbeFate fate = fabric.probe(*src, *dst, d.peer.port(), bound, probe_rng);
        r.answer = fate.delivered;
        r.delay = fate.delay;
        return r;
      });
      stamp->start();
      std::printf("fabsim STAMP reflectors on udp port %u for every link address\n", bound);
    }

    if (!export_path.empty()) {
      // Every URL points at the server that answers for it (the one --listen server, or
      // the server of the URL's own address), with that server's scheme and bound port.
      std::map<HostPort, std::string> bases;
      {
        size_t i = 0;
        for (const auto& [a, scheme] : addrs) {
          const HttpServer& srv = *servers[i++];
          bases[a] = std::string(srv.tls() ? "https://" : "http://") + srv.address() + ":" + std::to_string(srv.port());
        }
      }
      auto base_for = [&](const std::string& url) {
        if (!listen.empty()) return bases.begin()->second;
        const auto hp = url_host_port(url);
        const auto it = hp ? bases.find(*hp) : bases.end();
        return it != bases.end() ? it->second : bases.begin()->second;
      };
      auto point = [&](nlohmann::json& field) { field = rewrite(field.get<std::string>(), base_for(field.get<std::string>())); };
      nlohmann::json doc = fabric::topology_to_json(topo);
      for (auto& s : doc["switches"]) {
        point(s["telemetry"]);
        if (s["driver"].contains("url")) point(s["driver"]["url"]);
      }
      for (auto& h : doc["hosts"]) {
        if (h.contains("telemetry")) point(h["telemetry"]);
      }
      if (stamp) {
        for (const char* kind : {"switches", "hosts"}) {
          for (auto& d : doc[kind]) {
            if (d.contains("probe") && d["probe"].contains("reflector_port")) d["probe"]["reflector_port"] = stamp->local().port();
          }
        }
      }
      const std::string tmp = export_path + ".tmp";
      {
        std::ofstream out(tmp);
        out << doc.dump(1) << '\n';
        if (!out) throw std::runtime_error("cannot write " + tmp);
      }
      if (std::rename(tmp.c_str(), export_path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp + " to " + export_path);
    }

    // Scenario events, each on its own timer relative to start.
    const auto events = scenario.events();
    std::vector<std::unique_ptr<asio::steady_timer>> timers;
    for (const auto& ev : events) {
      auto timer = std::make_unique<asio::steady_timer>(
          io, t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(ev.at_s)));
      timer->async_wait([&, ev](const boost::system::error_code& ec) {
        if (ec) return;
        const sim::Fault& f = scenario.faults[ev.fault];
        fabric.apply(f, ev.phase, now_s());
        std::string what;
        if (ev.phase == sim::SimEvent::Phase::link_down || ev.phase == sim::SimEvent::Phase::link_up) {
          what = "link " + topo.link(ev.link).name + (ev.up ? " up" : " down");
        } else {
          const std::string target = f.port != fabric::kNone ? topo.endpoint_name(f.port)
                                     : f.device != fabric::kNone ? topo.device(f.device).name
                                                                 : topo.link(f.link).name;
          what = std::string(sim::to_string(f.kind)) + " on " + target +
                 (ev.phase == sim::SimEvent::Phase::start ? " starts" : " ends");
        }
        spdlog::info("t={:.2f}s {}", now_s(), what);
      });
      timers.push_back(std::move(timer));
    }
    asio::steady_timer stop_timer(io);
    if (run_for > 0) {
      stop_timer.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(run_for)));
      stop_timer.async_wait([&](const boost::system::error_code& ec) {
        if (!ec) io.stop();
      });
    }
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code&, int sig) {
      spdlog::info("fabsim: signal {}, stopping", sig);
      io.stop();
    });
    io.run();
    return 0;
  } catch (const fabric::TopologyError& e) {
    std::fprintf(stderr, "fabsim: %s\n", e.what());
    return 2;
  } catch (const sim::ScenarioError& e) {
    std::fprintf(stderr, "fabsim: %s\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "fabsim: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fabsim: %s\n", e.what());
    return 1;
  }
}
