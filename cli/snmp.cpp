#include "cli/snmp.h"

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/json.h"
#include "common/strings.h"
#include "telemetry/mapping.h"
#include "telemetry/prometheus.h"
#include "telemetry/snmp_collector.h"

namespace medic::cli {

namespace {

using nlohmann::json;

struct WalkArgs {
  std::string target;
  std::string credentials;
  std::string counter_map;  // default: data/counter_map.json
  std::string topology;
  std::string device;
  double timeout_s = 5;
  bool json = false;
};

// A counter as it was read: every digit of a whole number.
std::string whole(double v) {
  if (v == static_cast<double>(static_cast<long long>(v)) && v >= -9.2e18 && v <= 9.2e18) {
    return std::to_string(static_cast<long long>(v));
  }
  return format_number(v);
}

// What the agent said of each interface beyond the canonical counters.
struct Interface {
  std::string name;
  long if_index = 0;
  double speed_mbps = -1;  // ifHighSpeed, -1: not given
};

class InterfaceSink final : public telemetry::PromSink {
 public:
  std::map<std::string, Interface> by_name;
  std::vector<std::string> order;
  void on_sample(const telemetry::PromSample& s) override {
    const auto* name = s.label("ifName");
    if (name == nullptr) return;
    auto [it, added] = by_name.try_emplace(std::string(*name));
    if (added) {
      it->second.name = std::string(*name);
      order.push_back(it->second.name);
      if (const auto* idx = s.label("ifIndex")) it->second.if_index = std::strtol(std::string(*idx).c_str(), nullptr, 10);
    }
    if (s.name == "ifHighSpeed") it->second.speed_mbps = s.value;
  }
};

int cmd_snmp_walk(const WalkArgs& a, std::ostream& out, std::ostream& err) {
  const std::string url = is_snmp_url(a.target) ? a.target : "snmp://" + a.target;
  if (auto addr = parse_snmp_url(url); !addr.ok()) {
    err << "medic: " << addr.error() << '\n';
    return 2;
  }
  auto creds = a.credentials.empty() ? telemetry::SnmpCredentials::from_env()
                                     : telemetry::SnmpCredentials::load_file(a.credentials);
  if (!creds.ok()) {
    err << "medic: " << creds.error();
    if (a.credentials.empty()) err << " (or --credentials FILE)";
    err << '\n';
    return 2;
  }
  std::unique_ptr<telemetry::CounterMap> map;
  try {
    map = std::make_unique<telemetry::CounterMap>(
        telemetry::CounterMap::load_file(a.counter_map.empty() ? data_dir() + "/counter_map.json" : a.counter_map));
  } catch (const telemetry::CounterMapError& e) {
    err << "medic: " << e.what() << '\n';
    return 2;
  }
  std::optional<fabric::Topology> given;
  std::optional<fabric::DeviceId> device;
  if (!a.topology.empty() || !a.device.empty()) {
    if (a.topology.empty() || a.device.empty()) {
      err << "medic: --topology and --device go together (the switch this agent is)\n";
      return 2;
    }
    given = load_topology_reporting(a.topology, err);
    if (!given) return 2;
    device = given->find_device(a.device);
    if (!device) {
      err << "medic: " << a.topology << ": no device " << quote(a.device) << '\n';
      return 2;
    }
  }

  telemetry::SnmpOptions opt;
  opt.timeout_s = a.timeout_s;
  opt.request_timeout_s = std::min(1.0, a.timeout_s / 3);  // and one retry, within the walk's time
  telemetry::SnmpCollector collector(*creds, opt);
  const telemetry::ScrapeTarget target{device.value_or(0), url};
  SystemClock clock;
  const auto results = collector.scrape({&target, 1}, clock);
  const telemetry::ScrapeResult& r = results.front();
  if (!r.ok) {
    err << "medic: " << url << ": " << r.error << '\n';
    return 1;
  }

  InterfaceSink names;
  telemetry::PromParser parser;
  if (auto st = parser.parse(r.body, names); !st.ok()) {
    err << "medic: " << url << ": " << st.error() << '\n';  // our own rendering: a fault of ours
    return 1;
  }
  // Without a topology, the agent's own interfaces stand for the switch's ports.
  fabric::Topology own;
  if (!given) {
    fabric::Topology::Builder b;
    fabric::Device d;
    d.name = "agent";
    d.role = fabric::Role::rtsw;
    b.add_device(d);
    for (const auto& n : names.order) b.add_port("agent", n);
    own = std::move(b).build();
  }
  const fabric::Topology& topo = given ? *given : own;
  const fabric::DeviceId dev = device.value_or(0);
  telemetry::ScrapeMapper mapper(topo, *map);
  std::vector<telemetry::PortSample> samples;
  telemetry::MapStats stats;
  if (auto st = mapper.map_snmp(dev, r.body, r.time, samples, &stats); !st.ok()) {
    err << "medic: " << url << ": " << st.error() << '\n';
    return 1;
  }
  std::map<std::string, const telemetry::PortSample*> sample_of;
  for (const auto& s : samples) sample_of[topo.port(s.port).name] = &s;
  std::vector<std::string> missing;  // topology ports the agent does not name
  if (given) {
    for (const auto p : topo.ports_of(dev)) {
      if (!names.by_name.contains(topo.port(p).name)) missing.push_back(topo.port(p).name);
    }
  }

  if (a.json) {
    json ifs = json::array();
    for (const auto& n : names.order) {
      const Interface& i = names.by_name[n];
      json counters = json::object();
      const auto it = sample_of.find(n);
      if (it != sample_of.end()) {
        for (size_t c = 0; c < telemetry::kCounterCount; ++c) {
          const auto counter = static_cast<telemetry::Counter>(c);
          if (it->second->has(counter)) counters[std::string(telemetry::to_string(counter))] = it->second->get(counter);
        }
      }
      json one = {{"ifName", n}, {"ifIndex", i.if_index}, {"counters", counters}};
      one["speed_mbps"] = i.speed_mbps >= 0 ? json(i.speed_mbps) : json(nullptr);
      if (given) one["in_topology"] = it != sample_of.end();
      ifs.push_back(std::move(one));
    }
    json doc = {{"target", url},
                {"credentials", creds->describe()},
                {"seconds", r.seconds},
                {"requests", collector.counters().requests},
                {"values", stats.samples},
                {"mapped", stats.mapped},
                {"interfaces", ifs}};
    if (given) doc["missing_ports"] = missing;
    if (!r.error.empty()) doc["note"] = r.error;
    out << json_text(doc, 2) << '\n';
    return 0;
  }
  out << url << " (" << creds->describe() << "): " << names.order.size() << " interfaces, " << stats.samples
      << " values in " << collector.counters().requests << " requests, " << format_number(r.seconds * 1000) << " ms\n";
  if (!r.error.empty()) out << "note: " << r.error << '\n';
  for (const auto& n : names.order) {
    const Interface& i = names.by_name[n];
    const auto it = sample_of.find(n);
    out << n << " (ifIndex " << i.if_index << ")";
    if (i.speed_mbps >= 0) out << ", " << format_number(i.speed_mbps) << " Mb/s";
    if (it == sample_of.end()) {
      out << (given ? ": not a port of " + a.device + " in the topology\n" : ": no counter mapped\n");
      continue;
    }
    out << '\n';
    std::string line = " ";
    for (size_t c = 0; c < telemetry::kCounterCount; ++c) {
      const auto counter = static_cast<telemetry::Counter>(c);
      if (!it->second->has(counter)) continue;
      std::string item = " " + std::string(telemetry::to_string(counter)) + "=" + whole(it->second->get(counter));
      if (line.size() + item.size() > 100) {
        out << line << '\n';
        line = " ";
      }
      line += item;
    }
    if (line.size() > 1) out << line << '\n';
  }
  if (!missing.empty()) {
    out << missing.size() << " port(s) of " << a.device << " the agent does not name:";
    for (const auto& m : missing) out << ' ' << m;
    out << '\n';
  }
  return 0;
}

}  // namespace

void add_snmp_commands(CommandContext& ctx) {
  auto* snmp = ctx.app.add_subcommand("snmp", "SNMP agents: what medicd would read from them");
  snmp->require_subcommand(1);
  auto args = std::make_shared<WalkArgs>();
  auto* walk = snmp->add_subcommand(
      "walk", "walk one agent as medicd polls it and print each interface's canonical counters (changes nothing)");
  walk->add_option("target", args->target, "the agent: snmp://HOST[:PORT] or HOST[:PORT] (port 161 by default)")
      ->required();
  walk->add_option("--credentials", args->credentials,
                   "JSON file of SNMP credentials (default: $MEDIC_SNMP_COMMUNITY, or $MEDIC_SNMP_USER with "
                   "$MEDIC_SNMP_AUTH_PASSWORD and $MEDIC_SNMP_PRIV_PASSWORD)");
  walk->add_option("--counter-map", args->counter_map, "counter name map (default data/counter_map.json)");
  walk->add_option("--topology", args->topology, "topology JSON file: check the agent's interfaces against a switch");
  walk->add_option("--device", args->device, "the switch of --topology this agent is");
  walk->add_option("--timeout", args->timeout_s, "seconds the whole walk may take (default 5)")->check(CLI::Range(0.1, 600.0));
  walk->add_flag("--json", args->json, "print JSON");
  walk->callback([&ctx, args] { ctx.action = [&ctx, args] { return cmd_snmp_walk(*args, ctx.out, ctx.err); }; });
}

}  // namespace medic::cli
