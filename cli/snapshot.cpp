#include "common/files.h"
#include "common/json.h"
#include "cli/snapshot.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "cli/table.h"
#include "common/strings.h"
#include "common/time.h"
#include "db/connection.h"
#include "db/incident_store.h"
#include "db/inventory_store.h"
#include "db/snapshot_store.h"
#include "detectors/config.h"
#include "fabric/loader.h"
#include "remediation/capacity.h"
#include "remediation/capacity_config.h"
#include "snapshot/snapshot.h"
#include "telemetry/collector.h"
#include "telemetry/mapping.h"

namespace medic::cli {

namespace {

using nlohmann::json;
using telemetry::Counter;

struct SnapshotArgs {
  // Ids and numbers the messages must quote as typed are kept as text and checked here.
  std::string id, a, b;
  std::string scope, incident;
  int limit = 100;
  bool json = false, ports = false;
  std::string older_than;
  // take
  std::string topology, capacity, counter_map, reason = "medic snapshot take";
  std::string detectors;  // diff: thresholds (default data/detectors.json)
  double timeout_s = 2.0;
};

// A snapshot id: a positive integer, nothing else.
std::optional<int64_t> parse_id(const std::string& s) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

bool bad_id(const std::string& s, std::ostream& err) {
  if (parse_id(s)) return false;
  err << "medic: snapshot id " << quote(s) << ": expected a positive integer\n";
  return true;
}

std::string time_text(Time t) { return format_iso8601(t).substr(0, 19) + "Z"; }
std::string id_or_dash(int64_t id) { return id ? std::to_string(id) : "-"; }

// Loads one snapshot; prints why not and sets `code` when it cannot.
std::optional<snapshot::Snapshot> load(db::SnapshotStore& db, int64_t id, std::ostream& err, int& code) {
  auto s = db.snapshot(id);
  if (!s.ok()) {
    err << "medic: " << s.error() << '\n';
    code = 1;
    return std::nullopt;
  }
  if (!s->has_value()) {
    err << "medic: no snapshot with id " << id << '\n';
    code = 1;
    return std::nullopt;
  }
  return std::move(**s);
}

// --- list -----------------------------------------------------------------------------

int cmd_list(const SnapshotArgs& a, const DbOption& dbo, std::ostream& out, std::ostream& err) {
  if (!a.scope.empty() && !snapshot::valid_scope(a.scope)) {
    err << "medic: --scope " << quote(a.scope) << ": expected incident, action or fabric\n";
    return 2;
  }
  if (!a.incident.empty() && !parse_id(a.incident)) {
    err << "medic: --incident " << quote(a.incident) << ": expected an incident id (a positive integer)\n";
    return 2;
  }
  auto db = dbo.open();
  db::SnapshotStore snapshots(*db);
  db::SnapshotFilter f;
  if (!a.incident.empty()) f.incident_id = parse_id(a.incident);
  if (!a.scope.empty()) f.scope = a.scope;
  f.limit = a.limit;
  const auto rows = snapshots.snapshots(f);
  if (!rows.ok()) {
    err << "medic: " << rows.error() << '\n';
    return 1;
  }
  if (rows->empty()) {
    out << "no snapshots\n";
    return 0;
  }
  Table t({"ID", "TAKEN AT", "SCOPE", "INCIDENT", "ACTION", "LINK", "PORTS", "REASON"});
  for (const auto& r : *rows) {
    t.add({std::to_string(r.id), time_text(r.taken_at), r.scope, id_or_dash(r.incident_id), id_or_dash(r.action_id),
           r.link.empty() ? "-" : r.link, std::to_string(r.port_count), r.reason});
  }
  out << t.render();
  return 0;
}

// --- show -----------------------------------------------------------------------------

std::string oper_text(int oper) { return oper > 0 ? "up" : oper == 0 ? "down" : "unknown"; }

std::string reading(const snapshot::PortReading& p, Counter c) {
  if (!p.has(c)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, telemetry::is_gauge(c) ? "%.2f" : "%.0f", p.get(c));
  return buf;
}

std::string indented(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    out += "  " + text.substr(start, end - start) + "\n";
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

void render_show(const snapshot::Snapshot& s, bool with_ports, std::ostream& out) {
  out << "snapshot " << s.id << " (" << s.scope << (s.link.empty() ? "" : " on " + s.link)
      << (s.incident_id ? ", incident " + std::to_string(s.incident_id) : "")
      << (s.action_id ? ", action " + std::to_string(s.action_id) : "") << ") taken " << format_iso8601(s.taken_at)
      << '\n';
  out << "reason:   " << (s.reason.empty() ? "-" : s.reason) << '\n';

  std::set<std::string> devices;
  size_t read = 0, up = 0, down = 0, unknown = 0, drained = 0;
  for (const auto& p : s.ports) {
    devices.insert(p.device);
    read += p.sampled_at ? 1 : 0;
    (p.oper > 0 ? up : p.oper == 0 ? down : unknown) += 1;
    drained += p.drained ? 1 : 0;
  }
  out << "ports:    " << s.ports.size() << " on " << devices.size() << " device" << (devices.size() == 1 ? "" : "s")
      << ": " << read << " read, " << s.ports.size() - read << " never answered; " << up << " up, " << down
      << " down, " << unknown << " unknown; " << drained << " drained\n";

  // Capacity groups: every one of an incident or action snapshot; of a fabric snapshot
  // (thousands of groups) those not fully in service.
  const bool fabric = s.scope == snapshot::kScopeFabric;
  size_t below = 0, full = 0;
  Table groups({"GROUP", "KIND", "IN SERVICE", "LINKS", "FLOOR", "STATUS"});
  for (const auto& g : s.groups) {
    below += g.below_floor() ? 1 : 0;
    const bool whole = g.links_in_service == g.links;
    full += whole ? 1 : 0;
    if (fabric && whole) continue;
    groups.add({g.name, g.kind, format_percent(g.fraction()),
                std::to_string(g.links_in_service) + "/" + std::to_string(g.links), format_percent(g.floor),
                g.below_floor() ? "BELOW FLOOR" : "headroom " + format_percent(g.fraction() - g.floor)});
  }
  out << "\ncapacity groups (" << s.groups.size() << "; " << below << " below floor"
      << (fabric ? "; " + std::to_string(full) + " fully in service, not listed" : "") << ")"
      << (groups.size() ? ":" : "") << '\n';
  if (groups.size()) out << indented(groups.render());

  out << "\nincidents (" << s.incidents.size() << " open)" << (s.incidents.empty() ? "" : ":") << '\n';
  for (const auto& i : s.incidents) {
    out << "  #" << i.id << " " << i.incident_class << " on " << (i.link.empty() ? i.device : i.link) << ": "
        << i.state << ", " << i.severity << '\n';
  }

  if (with_ports) {
    Table t({"PORT", "LINK", "OPER", "DRAINED", "SAMPLED AT", "CARRIER", "RX ERR", "CRC", "FEC UNCORR", "DISCARDS",
             "RX DBM", "TX DBM", "TEMP C"});
    for (const auto& p : s.ports) {
      t.add({p.device + ":" + p.port, p.link.empty() ? "-" : p.link, oper_text(p.oper), p.drained ? "yes" : "no",
             p.sampled_at ? time_text(*p.sampled_at) : "-", reading(p, Counter::carrier_changes),
             reading(p, Counter::rx_errors), reading(p, Counter::rx_crc_errors),
             reading(p, Counter::fec_uncorrectable_codewords), reading(p, Counter::rx_discards),
             reading(p, Counter::rx_power_dbm), reading(p, Counter::tx_power_dbm),
             reading(p, Counter::temperature_c)});
    }
    out << "\nports (" << s.ports.size() << "):\n" << indented(t.render());
    return;
  }
  std::vector<std::string> notable;
  for (const auto& p : s.ports) {
    if (p.oper != 0 && !p.drained) continue;
    std::vector<std::string> what;
    if (p.oper == 0) what.push_back("down");
    if (p.drained) what.push_back("drained");
    notable.push_back(p.device + ":" + p.port + (p.link.empty() ? "" : " [" + p.link + "]") + ": " + join(what, ", "));
  }
  out << "\nports down or drained (" << notable.size() << (notable.empty() ? "; --ports lists every port)" : "):")
      << '\n';
  for (const auto& line : notable) out << "  " << line << '\n';
}

int cmd_show(const SnapshotArgs& a, const DbOption& dbo, std::ostream& out, std::ostream& err) {
  if (bad_id(a.id, err)) return 2;
  auto db = dbo.open();
  db::SnapshotStore snapshots(*db);
  int code = 0;
  const auto s = load(snapshots, *parse_id(a.id), err, code);
  if (!s) return code;
  if (a.json) {
    out << json_text(snapshot::to_json(*s), 2) << '\n';
  } else {
    render_show(*s, a.ports, out);
  }
  return 0;
}

// --- diff -----------------------------------------------------------------------------

int cmd_diff(const SnapshotArgs& a, const DbOption& dbo, std::ostream& out, std::ostream& err) {
  if (bad_id(a.a, err) || bad_id(a.b, err)) return 2;
  // Discards and pause frames are notable as the detectors would judge them.
  snapshot::DiffThresholds thresholds;
  try {
    thresholds = snapshot::diff_thresholds(detectors::DetectorConfig::load_file(
        a.detectors.empty() ? data_dir() + "/detectors.json" : a.detectors));
  } catch (const detectors::ConfigError& e) {
    err << "medic: " << e.what() << '\n';
    return 2;
  }
  auto db = dbo.open();
  db::SnapshotStore snapshots(*db);
  int code = 0;
  const auto first = load(snapshots, *parse_id(a.a), err, code);
  if (!first) return code;
  const auto second = load(snapshots, *parse_id(a.b), err, code);
  if (!second) return code;
  const snapshot::SnapshotDiff d = snapshot::diff(*first, *second, thresholds);
  if (a.json) {
    out << json_text(snapshot::diff_to_json(d), 2) << '\n';
  } else {
    out << snapshot::render_text(d);
  }
  return 0;
}

// --- take -----------------------------------------------------------------------------

int cmd_take(const SnapshotArgs& a, const DbOption& dbo, std::ostream& out, std::ostream& err) {
  // Every file first: bad input stops here, before the database or a switch is asked.
  auto loaded = load_topology_reporting(a.topology, err);
  if (!loaded) return 2;
  fabric::Topology own = std::move(*loaded);
  fabric::Topology topo;
  std::unique_ptr<telemetry::CounterMap> map;
  try {
    const auto config = remediation::CapacityConfig::load_file(
        a.capacity.empty() ? data_dir() + "/capacity.json" : a.capacity);
    topo = remediation::with_derived_groups(own, config);
    map = std::make_unique<telemetry::CounterMap>(telemetry::CounterMap::load_file(
        a.counter_map.empty() ? data_dir() + "/counter_map.json" : a.counter_map));
  } catch (const remediation::CapacityConfigError& e) {
    err << "medic: " << e.what() << '\n';
    return 2;
  } catch (const telemetry::CounterMapError& e) {
    err << "medic: " << e.what() << '\n';
    return 2;
  }
  std::vector<telemetry::ScrapeTarget> targets;
  for (fabric::DeviceId d = 0; d < topo.devices().size(); ++d) {
    if (!topo.device(d).telemetry_url.empty()) targets.push_back({d, topo.device(d).telemetry_url});
  }
  if (targets.empty()) {
    err << "medic: " << a.topology << ": no device has a telemetry URL: nothing to scrape\n";
    return 2;
  }

  auto db = dbo.open();
  db::InventoryStore inventory(*db);
  db::IncidentStore incident_store(*db);
  db::SnapshotStore snapshots(*db);
  // What the database records: which links are drained (or on their way), which incidents
  // are open.
  const auto drains = inventory.drain_states();
  if (!drains.ok()) {
    err << "medic: " << drains.error() << '\n';
    return 1;
  }
  db::IncidentFilter open_filter;
  open_filter.open_only = true;
  open_filter.limit = 1000000;
  const auto open = incident_store.incidents(open_filter);
  if (!open.ok()) {
    err << "medic: " << open.error() << '\n';
    return 1;
  }

  // One scrape of every device, mapped onto canonical counters as medicd maps its polls.
  telemetry::CollectorOptions copt;
  copt.timeout_s = a.timeout_s;
  telemetry::Collector collector(copt);
  telemetry::ScrapeMapper mapper(topo, *map);
  SystemClock clock;
  std::vector<telemetry::PortSample> latest(topo.ports().size());
  std::vector<telemetry::PortSample> samples;
  std::vector<std::string> failures;
  size_t answered = 0;
  for (const auto& r : collector.scrape(targets, clock)) {
    const std::string& name = topo.device(r.device).name;
    if (!r.ok) {
      failures.push_back(name + ": " + r.error);
      continue;
    }
    samples.clear();
    const auto st = mapper.map(r.device, telemetry::detect_format(r.content_type, r.body), r.body, r.time, samples);
    if (!st.ok()) {
      failures.push_back(name + ": malformed answer: " + st.error());
      continue;
    }
    ++answered;
    for (const auto& s : samples) latest[s.port] = s;
  }
  constexpr size_t kFailuresShown = 10;
  for (size_t i = 0; i < failures.size() && i < kFailuresShown; ++i) err << "medic: " << failures[i] << '\n';
  if (failures.size() > kFailuresShown) {
    err << "medic: ... and " << failures.size() - kFailuresShown << " more devices did not answer\n";
  }
  if (answered == 0) {
    err << "medic: no device answered (" << failures.size() << " asked): nothing written\n";
    return 1;
  }

  std::vector<int> port_oper(topo.ports().size(), -1);
  for (fabric::PortId p = 0; p < topo.ports().size(); ++p) {
    if (latest[p].has(Counter::oper_up)) port_oper[p] = latest[p].get(Counter::oper_up) > 0.5 ? 1 : 0;
  }
  remediation::CapacityModel capacity(topo);
  for (fabric::LinkId l = 0; l < topo.links().size(); ++l) {
    // As medicd judges it: a link is up unless an end that reports says it is down.
    const auto& link = topo.link(l);
    if (port_oper[link.a] == 0 || port_oper[link.b] == 0) capacity.set_oper_up(l, false);
  }
  size_t drained_unknown = 0;
  for (const auto& row : *drains) {
    if (const auto l = topo.find_link(row.link)) {
      capacity.set_drained(*l, true);
    } else {
      ++drained_unknown;
    }
  }
  std::vector<snapshot::IncidentReading> incidents;
  for (const auto& row : *open) incidents.push_back(db::incident_reading(row));

  snapshot::FabricState state{topo,
                              capacity,
                              [&](fabric::PortId p) -> const telemetry::PortSample& { return latest[p]; },
                              [&](fabric::PortId p) { return port_oper[p]; },
                              std::move(incidents),
                              clock.now()};
  const snapshot::Snapshot s = snapshot::capture_fabric(state, a.reason);
  const auto id = snapshots.write_snapshot(s);
  if (!id.ok()) {
    err << "medic: " << id.error() << '\n';
    return 1;
  }
  out << "snapshot " << *id << ": " << s.ports.size() << " ports of " << targets.size() << " devices ("
      << answered << " answered, " << failures.size() << " did not), " << s.groups.size() << " capacity groups, "
      << s.incidents.size() << " open incident" << (s.incidents.size() == 1 ? "" : "s") << '\n';
  if (drained_unknown) {
    err << "medic: " << drained_unknown << " drained link" << (drained_unknown == 1 ? " is" : "s are")
        << " not in " << a.topology << " (left out)\n";
  }
  return 0;
}

// --- prune ----------------------------------------------------------------------------

int cmd_prune(const SnapshotArgs& a, const DbOption& dbo, std::ostream& out, std::ostream& err) {
  // Days as a number, 0 or more (fractions allowed); at most what a timestamp can go back.
  constexpr double kMaxDays = 100000;
  double days = 0;
  const std::string& s = a.older_than;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), days);
  if (ec != std::errc() || ptr != s.data() + s.size() || !(days >= 0 && days <= kMaxDays)) {
    err << "medic: --older-than " << quote(s) << ": expected a number of days from 0 to 100000\n";
    return 2;
  }
  auto db = dbo.open();
  db::SnapshotStore snapshots(*db);
  const Time before = SystemClock().now() - from_seconds(days * 86400);
  const auto n = snapshots.prune_snapshots(before);
  if (!n.ok()) {
    err << "medic: " << n.error() << '\n';
    return 1;
  }
  out << "pruned " << *n << " snapshot" << (*n == 1 ? "" : "s") << " taken before " << format_iso8601(before) << '\n';
  return 0;
}

}  // namespace

void add_snapshot_commands(CommandContext& ctx) {
  auto* snap = ctx.app.add_subcommand("snapshot", "fabric-state snapshots: list, show, diff, take one, prune");
  snap->require_subcommand(1);
  auto args = std::make_shared<SnapshotArgs>();
  // The streams and the action outlive the parse; `ctx` itself may not.
  auto& action = ctx.action;
  auto& dbo = ctx.dbo;
  auto& out = ctx.out;
  auto& err = ctx.err;
  using Command = int (*)(const SnapshotArgs&, const DbOption&, std::ostream&, std::ostream&);
  auto bind = [&action, &dbo, &out, &err, args](CLI::App* cmd, Command f) {
    dbo.add(cmd);
    cmd->callback([&action, &dbo, &out, &err, args, f] {
      action = [&dbo, &out, &err, args, f] { return f(*args, dbo, out, err); };
    });
  };

  auto* list = snap->add_subcommand("list", "stored snapshots, newest first");
  list->add_option("--incident", args->incident, "only those of this incident (its id)");
  list->add_option("--scope", args->scope, "only incident, action or fabric snapshots");
  list->add_option("--limit", args->limit, "at most this many (default 100)")->check(CLI::Range(1, 1000000));
  bind(list, cmd_list);

  auto* show = snap->add_subcommand("show", "one snapshot: capacity groups, open incidents, ports down or drained");
  show->add_option("id", args->id, "snapshot id")->required();
  show->add_flag("--json", args->json, "print the whole snapshot as JSON (docs/formats.md)");
  show->add_flag("--ports", args->ports, "list every port with its state and key counters");
  bind(show, cmd_show);

  auto* diff = snap->add_subcommand("diff", "what changed from snapshot A to snapshot B");
  diff->add_option("a", args->a, "the earlier snapshot's id")->required();
  diff->add_option("b", args->b, "the later snapshot's id")->required();
  diff->add_flag("--json", args->json, "print JSON");
  diff->add_option("--detectors", args->detectors,
                   "detector thresholds that decide which discards and pause frames matter (default data/detectors.json)");
  bind(diff, cmd_diff);

  auto* take = snap->add_subcommand("take", "scrape every device once and store a whole-fabric snapshot (changes state)");
  take->add_option("--topology", args->topology, "topology JSON file")->required();
  take->add_option("--reason", args->reason, "why, for the record (default \"medic snapshot take\")");
  take->add_option("--capacity", args->capacity, "floors per group kind (default data/capacity.json)");
  take->add_option("--counter-map", args->counter_map, "counter name map (default data/counter_map.json)");
  take->add_option("--timeout", args->timeout_s, "seconds before a device's answer is given up on (default 2)")
      ->check(CLI::Range(0.05, 600.0));
  bind(take, cmd_take);

  auto* prune = snap->add_subcommand("prune", "delete snapshots older than DAYS (changes state)");
  prune->add_option("--older-than", args->older_than, "days, e.g. 30 or 0.5")->required();
  bind(prune, cmd_prune);
}

}  // namespace medic::cli
