#include "common/json.h"
#include "cli/commands.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/capacity.h"
#include "cli/config_check.h"
#include "cli/context.h"
#include "cli/notify.h"
#include "cli/snmp.h"
#include "cli/people.h"
#include "cli/slo.h"
#include "cli/queue.h"
#include "cli/record.h"
#include "cli/replay.h"
#include "cli/snapshot.h"
#include "cli/table.h"
#include "common/strings.h"
#include "common/time.h"
#include "db/connection.h"
#include "db/incident_store.h"
#include "db/inventory_store.h"
#include "db/maintenance_store.h"
#include "db/remediation_store.h"
#include "db/slo_store.h"
#include "fabric/generator.h"
#include "fabric/loader.h"
#include "probes/sender.h"
#include "slo/slo.h"

namespace medic::cli {

using nlohmann::json;

namespace {

std::string dur_or_dash(const std::optional<Time>& a, const std::optional<Time>& b) {
  if (!a || !b) return "-";
  return format_duration(*b - *a);
}

std::string link_kind(const fabric::Topology& t, const fabric::Link& l) {
  auto role = [&](fabric::PortId p) { return t.device(t.port(p).device).role; };
  fabric::Role a = role(l.a), b = role(l.b);
  if (a > b) std::swap(a, b);
  if (b == fabric::Role::host) return std::string(fabric::to_string(a)) + "-host";
  return std::string(fabric::to_string(a)) + "-" + std::string(fabric::to_string(b));
}

json time_json(const std::optional<Time>& t) { return t ? json(format_iso8601(*t)) : json(nullptr); }

std::string format_tbps(double gbps) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f Tb/s", gbps / 1000.0);
  return buf;
}

// A URL query's "a%3Ab+c" -> "a:b c".
std::string url_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

int cmd_fabric_gen(const std::string& preset_name, const std::string& base_url, const std::string& driver,
                   const std::string& telemetry, std::ostream& out, std::ostream& err) {
  auto shape = fabric::preset(preset_name);
  if (!shape) {
    err << "medic: unknown preset " << quote(preset_name) << " (known: " << join(fabric::preset_names(), ", ")
        << ")\n";
    return 2;
  }
  if (!base_url.empty()) shape->base_url = base_url;
  shape->driver_kind = driver;
  shape->telemetry_format = telemetry;
  const fabric::Topology t = fabric::generate_clos(*shape);
  out << json_text(fabric::topology_to_json(t), 1) << '\n';
  return 0;
}

int cmd_fabric_check(const std::string& file, bool as_json, std::ostream& out, std::ostream& err) {
  auto loaded = load_topology_reporting(file, err);
  if (!loaded) return 1;
  fabric::Topology t = std::move(*loaded);
  std::map<std::string, size_t> roles, link_kinds, group_kinds;
  size_t hosts = 0, nics = 0;
  for (fabric::DeviceId d = 0; d < t.devices().size(); ++d) {
    const auto& dev = t.device(d);
    if (dev.is_switch()) {
      ++roles[std::string(fabric::to_string(dev.role))];
    } else {
      ++hosts;
      nics += t.ports_of(d).size();
    }
  }
  for (const auto& l : t.links()) ++link_kinds[link_kind(t, l)];
  for (const auto& g : t.groups()) ++group_kinds[g.kind];
  const size_t switches = roles["rtsw"] + roles["ctsw"] + roles["atsw"];
  if (as_json) {
    out << json{{"file", file},
                {"switches", switches},
                {"switches_by_role", roles},
                {"hosts", hosts},
                {"nics", nics},
                {"ports", t.ports().size()},
                {"links", t.links().size()},
                {"links_by_kind", link_kinds},
                {"capacity_groups", t.groups().size()},
                {"capacity_groups_by_kind", group_kinds},
                {"total_capacity_gbps", t.total_capacity_gbps()}}
               .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
        << '\n';
    return 0;
  }
  auto breakdown = [](const std::map<std::string, size_t>& m) {
    std::vector<std::string> parts;
    for (const auto& [k, v] : m) {
      if (v) parts.push_back(k + " " + std::to_string(v));
    }
    return parts.empty() ? std::string() : " (" + join(parts, ", ") + ")";
  };
  out << file << ": ok\n";
  out << "switches:        " << switches << breakdown(roles) << '\n';
  out << "hosts:           " << hosts << " (" << nics << " NICs)\n";
  out << "ports:           " << t.ports().size() << '\n';
  out << "links:           " << t.links().size() << breakdown(link_kinds) << '\n';
  out << "capacity groups: " << t.groups().size() << breakdown(group_kinds) << '\n';
  out << "total capacity:  " << format_tbps(t.total_capacity_gbps()) << '\n';
  return 0;
}

// Every device's telemetry endpoint as a Prometheus file_sd target group, so the same
// fabric can be scraped by a Prometheus server side by side with medicd.
int cmd_fabric_targets(const std::string& file, std::ostream& out, std::ostream& err) {
  fabric::Topology t;
  try {
    t = fabric::load_topology_file(file);
  } catch (const fabric::TopologyError& e) {
    for (const auto& p : e.problems()) err << p << '\n';
    return 1;
  }
  json groups = json::array();
  for (const auto& d : t.devices()) {
    const std::string& url = d.telemetry_url;
    const size_t scheme = url.find("://");
    if (url.empty() || scheme == std::string::npos) continue;
    // scheme://host[:port][/path][?query][#fragment], fetched as medicd fetches it: no path
    // is the root, and query parameters go into __param_ labels (Prometheus would escape a
    // '?' inside __metrics_path__).
    const std::string rest = url.substr(0, url.find('#'));
    const size_t host_end = std::min(rest.find_first_of("/?", scheme + 3), rest.size());
    const size_t query = std::min(rest.find('?', host_end), rest.size());
    const std::string path = rest.substr(host_end, query - host_end);
    json labels = {{"__scheme__", url.substr(0, scheme)},
                   {"__metrics_path__", path.empty() ? "/" : path},
                   {"device", d.name},
                   {"role", std::string(fabric::to_string(d.role))}};
    if (query < rest.size()) {
      for (const auto& kv : split(rest.substr(query + 1), '&')) {
        if (kv.empty()) continue;
        const size_t eq = kv.find('=');
        labels["__param_" + url_decode(kv.substr(0, eq))] = eq == std::string::npos ? "" : url_decode(kv.substr(eq + 1));
      }
    }
    groups.push_back({{"targets", json::array({rest.substr(scheme + 3, host_end - scheme - 3)})}, {"labels", labels}});
  }
  out << json_text(groups, 1) << '\n';
  return 0;
}

int cmd_db_migrate(const DbOption& dbo, std::ostream& out) {
  auto db = dbo.open();
  const auto applied = db->migrate();
  const auto v = db->schema_version();
  for (const auto& name : applied) out << "applied " << name << '\n';
  out << "schema at version " << (v.ok() ? std::to_string(*v) : "?") << " ("
      << (applied.empty() ? "nothing to do" : std::to_string(applied.size()) + " applied") << ")\n";
  return 0;
}

int cmd_incidents(const DbOption& dbo, bool open_only, const std::string& cls, int limit, bool as_json,
                  std::ostream& out, std::ostream& err) {
  auto db = dbo.open();
  db::IncidentStore incidents(*db);
  db::IncidentFilter f;
  f.open_only = open_only;
  f.limit = limit;
  if (!cls.empty()) f.incident_class = cls;
  const auto rows = incidents.incidents(f);
  if (!rows.ok()) {
    err << "medic: " << rows.error() << '\n';
    return 1;
  }
  if (as_json) {
    json arr = json::array();
    for (const auto& r : *rows) {
      arr.push_back({{"id", r.id},
                     {"class", r.incident_class},
                     {"state", r.state},
                     {"severity", r.severity},
                     {"link", r.link},
                     {"device", r.device},
                     {"summary", r.summary},
                     {"suspect", r.suspect.empty() ? json(nullptr) : json(r.suspect)},
                     {"reopen_count", r.reopen_count},
                     {"blocked_reason", r.blocked_reason.empty() ? json(nullptr) : json(r.blocked_reason)},
                     {"started_at", time_json(r.started_at)},
                     {"detected_at", time_json(r.detected_at)},
                     {"triaged_at", time_json(r.triaged_at)},
                     {"mitigated_at", time_json(r.mitigated_at)},
                     {"repair_requested_at", time_json(r.repair_requested_at)},
                     {"repaired_at", time_json(r.repaired_at)},
                     {"validated_at", time_json(r.validated_at)},
                     {"undrained_at", time_json(r.undrained_at)},
                     {"closed_at", time_json(r.closed_at)},
                     {"dismissed_at", time_json(r.dismissed_at)},
                     {"escalated_at", time_json(r.escalated_at)}});
    }
    out << json_text(arr, 2) << '\n';
    return 0;
  }
  if (rows->empty()) {
    out << "no incidents\n";
    return 0;
  }
  Table t({"ID", "CLASS", "SEVERITY", "LINK OR DEVICE", "STATE", "DETECT", "MITIGATE", "DETECTED AT", "DETAIL"});
  for (const auto& r : *rows) {
    std::string detail = r.blocked_reason.empty() ? r.summary : r.blocked_reason;
    if (r.state == "blocked") detail = "drain refused: " + r.blocked_reason;
    t.add({std::to_string(r.id), r.incident_class, r.severity, r.link.empty() ? r.device : r.link, r.state,
           dur_or_dash(r.started_at, r.detected_at), dur_or_dash(r.detected_at, r.mitigated_at),
           r.detected_at ? format_iso8601(*r.detected_at).substr(0, 19) + "Z" : "-", detail});
  }
  out << t.render();
  return 0;
}

int cmd_incident_show(const DbOption& dbo, int64_t id, bool as_json, std::ostream& out, std::ostream& err) {
  auto db = dbo.open();
  db::IncidentStore incidents(*db);
  db::RemediationRecords records(*db);
  const auto row = incidents.incident(id);
  if (!row.ok()) {
    err << "medic: " << row.error() << '\n';
    return 1;
  }
  const auto& r = *row;
  const auto findings = incidents.findings(id);
  const auto actions = records.actions(id);
  if (!findings.ok() || !actions.ok()) {
    err << "medic: " << (findings.ok() ? actions.error() : findings.error()) << '\n';
    return 1;
  }
  if (as_json) {
    json fj = json::array(), aj = json::array();
    for (const auto& fr : *findings) {
      fj.push_back({{"kind", fr.kind}, {"severity", fr.severity}, {"link", fr.link}, {"device", fr.device},
                    {"port", fr.port}, {"summary", fr.summary}, {"evidence", json::parse(fr.evidence_json)},
                    {"first_seen", format_iso8601(fr.first_seen)}, {"observed_at", format_iso8601(fr.observed_at)}});
    }
    for (const auto& a : *actions) {
      aj.push_back({{"id", a.id}, {"kind", a.kind}, {"state", a.state}, {"link", a.link}, {"reason", a.reason},
                    {"steps", json::parse(a.steps_json)}, {"intent_at", format_iso8601(a.intent_at)},
                    {"result_at", time_json(a.result_at)}});
    }
    json ej = json::array();
    if (const auto events = incidents.incident_events(id); events.ok()) {
      for (const auto& e : *events) ej.push_back({{"at", format_iso8601(e.at)}, {"state", e.state}, {"note", e.note}});
    }
    out << json{{"id", r.id}, {"class", r.incident_class}, {"state", r.state}, {"link", r.link},
                {"device", r.device}, {"severity", r.severity}, {"summary", r.summary},
                {"suspect", r.suspect.empty() ? json(nullptr) : json(r.suspect)},
                {"suspect_port", r.suspect_port.empty() ? json(nullptr) : json(r.suspect_port)},
                {"reopen_count", r.reopen_count}, {"history", ej}, {"findings", fj}, {"actions", aj}}
               .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
        << '\n';
    return 0;
  }
  out << "incident " << r.id << ": " << r.incident_class << " on " << (r.link.empty() ? r.device : r.link) << '\n';
  out << "state:     " << r.state << (r.blocked_reason.empty() ? "" : " (" + r.blocked_reason + ")") << '\n';
  out << "severity:  " << r.severity << '\n';
  out << "summary:   " << r.summary << '\n';
  if (!r.suspect.empty()) {
    out << "suspect:   " << r.suspect << (r.suspect_port.empty() ? "" : " [" + r.suspect_port + "]") << '\n';
  }
  if (r.reopen_count > 0) {
    out << "reopened:  " << r.reopen_count << " time" << (r.reopen_count == 1 ? "" : "s")
        << (r.reopened_at ? ", last " + format_iso8601(*r.reopened_at) : "") << '\n';
  }
  const std::pair<const char*, std::optional<Time>> stages[] = {
      {"started", r.started_at},     {"detected", r.detected_at},         {"triaged", r.triaged_at},
      {"mitigated", r.mitigated_at}, {"repair requested", r.repair_requested_at}, {"repaired", r.repaired_at},
      {"validated", r.validated_at}, {"undrained", r.undrained_at},       {"closed", r.closed_at},
      {"dismissed", r.dismissed_at}, {"escalated", r.escalated_at}};
  for (const auto& [name, t] : stages) {
    if (t) out << "  " << name << std::string(18 - std::string(name).size(), ' ') << format_iso8601(*t) << '\n';
  }
  if (const auto events = incidents.incident_events(id); events.ok() && !events->empty()) {
    out << "history (" << events->size() << "):\n";
    for (const auto& e : *events) {
      out << "  " << format_iso8601(e.at) << "  " << e.state << (e.note.empty() ? "" : "  " + e.note) << '\n';
    }
  }
  out << "findings (" << findings->size() << "):\n";
  for (const auto& fr : *findings) out << "  " << format_iso8601(fr.observed_at) << "  " << fr.kind << "  " << fr.summary << '\n';
  out << "actions (" << actions->size() << "):\n";
  for (const auto& a : *actions) {
    out << "  #" << a.id << " " << a.kind << " " << a.link << ": " << a.state
        << (a.reason.empty() ? "" : " (" + a.reason + ")") << '\n';
    for (const auto& step : json::parse(a.steps_json)) out << "      " << step.get<std::string>() << '\n';
  }
  return 0;
}

struct ProbeArgs {
  std::string target, bind, netns, key;
  uint64_t count = 100;
  double interval_ms = 10;
  size_t size = 0;
  int ssid = 1;
  double wait_s = 1.0;
  bool json = false, synchronized = false;
};

int cmd_probe(const ProbeArgs& a, std::ostream& out, std::ostream& err) {
  probes::SenderOptions o;
  auto target = probes::Endpoint::parse(a.target);
  if (!target.ok()) {
    err << "medic: target " << target.error() << '\n';
    return 2;
  }
  o.target = *target;
  const std::string bind = a.bind.empty() ? (target->is_v6() ? "[::]:0" : "0.0.0.0:0") : a.bind;
  auto b = probes::Endpoint::parse(bind.find(':') == std::string::npos || (bind.front() == '[' && bind.back() == ']')
                                       ? bind + ":0"
                                       : bind);
  if (!b.ok()) {
    err << "medic: --bind " << b.error() << '\n';
    return 2;
  }
  o.bind = *b;
  o.netns = a.netns;
  o.count = a.count;
  o.interval_s = a.interval_ms / 1000.0;
  o.size = a.size;
  o.ssid = static_cast<uint16_t>(a.ssid);
  o.wait_s = a.wait_s;
  o.error = probes::ErrorEstimate::from_seconds(1e-3, a.synchronized);
  if (!a.key.empty()) {
    auto key = probes::HmacKey::parse(a.key);
    if (!key.ok()) {
      err << "medic: --auth-key: " << key.error() << '\n';
      return 2;
    }
    o.mode = probes::Mode::authenticated;
    o.key = *key;
  }
  if (o.size != 0 && o.size < probes::base_size(o.mode)) {
    err << "medic: --size " << o.size << " is below the " << probes::base_size(o.mode) << " octets of a"
        << (o.mode == probes::Mode::authenticated ? "n authenticated" : "n unauthenticated") << " STAMP packet\n";
    return 2;
  }
  const auto r = probes::run_session(o);
  if (!r.ok()) {
    err << "medic: " << r.error() << '\n';
    return 1;
  }
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  if (a.json) {
    out << json{{"target", r->target},
                {"sent", r->sent},
                {"received", r->received},
                {"lost", r->lost},
                {"loss", r->sent ? static_cast<double>(r->lost) / static_cast<double>(r->sent) : 0.0},
                {"loss_ci95", {r->loss.lower, r->loss.upper}},
                {"duplicates", r->duplicates},
                {"reordered", r->reordered},
                {"malformed_replies", r->malformed},
                {"rtt_min_s", opt(r->rtt_min_s)},
                {"rtt_median_s", opt(r->rtt_median_s)},
                {"rtt_p99_s", opt(r->rtt_p99_s)},
                {"rtt_max_s", opt(r->rtt_max_s)},
                {"jitter_s", r->jitter_s},
                {"one_way", r->one_way},
                {"forward_median_s", opt(r->forward_median_s)},
                {"backward_median_s", opt(r->backward_median_s)},
                {"reflector_ttl", r->reflector_ttl ? json(*r->reflector_ttl) : json(nullptr)},
                {"duration_s", r->duration_s},
                {"cpu_s", r->cpu_s}}
               .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
        << '\n';
  } else {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%.2f%% (95%% CI %.2f%%-%.2f%%)",
                  r->sent ? 100.0 * static_cast<double>(r->lost) / static_cast<double>(r->sent) : 0.0,
                  100 * r->loss.lower, 100 * r->loss.upper);
    out << "STAMP " << r->target << ": " << r->sent << " sent, " << r->received << " received, " << r->lost
        << " lost " << buf << ", " << r->duplicates << " duplicates, " << r->reordered << " reordered\n";
    if (r->rtt_min_s) {
      out << "RTT min " << format_short_seconds(*r->rtt_min_s) << ", median " << format_short_seconds(*r->rtt_median_s)
          << ", p99 " << format_short_seconds(*r->rtt_p99_s) << ", max " << format_short_seconds(*r->rtt_max_s)
          << "; jitter " << format_short_seconds(r->jitter_s) << '\n';
    }
    if (r->one_way) {
      out << "one-way: forward " << format_short_seconds(*r->forward_median_s) << ", backward "
          << format_short_seconds(*r->backward_median_s) << " (median; both clocks synchronized)\n";
    } else {
      out << "one-way delays: not shown (both clocks must say they are synchronized)\n";
    }
    if (r->reflector_ttl) out << "the reflector saw TTL " << *r->reflector_ttl << '\n';
    if (r->malformed) out << r->malformed << " replies did not decode (wrong mode or key?)\n";
  }
  return r->received == 0 ? 1 : 0;
}

int cmd_maintenance_add(const DbOption& dbo, const std::string& link, const std::string& device,
                        const std::string& from, const std::string& until, const std::string& reason,
                        std::ostream& out, std::ostream& err) {
  if (link.empty() == device.empty()) {
    err << "medic: give exactly one of --link or --device\n";
    return 2;
  }
  const Time now = SystemClock().now();
  // A window starts now or later: "-5m" is refused, as are times before 1970.
  const auto ahead = [&](const std::string& s) -> std::optional<Time> {
    if (!s.empty() && s[0] == '-') return std::nullopt;
    const auto t = parse_time_arg(s, now);
    if (!t || t->time_since_epoch().count() <= 0) return std::nullopt;
    return t;
  };
  const auto start = ahead(from);
  const auto end = ahead(until);
  if (!start) {
    err << "medic: --from " << quote(from) << ": expected now, +N[smhd] or Unix seconds\n";
    return 2;
  }
  if (!end) {
    err << "medic: --until " << quote(until) << ": expected +N[smhd] or Unix seconds\n";
    return 2;
  }
  if (*end <= *start) {
    err << "medic: --until must be after --from\n";
    return 2;
  }
  auto db = dbo.open();
  db::InventoryStore inventory(*db);
  db::MaintenanceStore windows(*db);
  db::MaintenanceRow m;
  m.link = link;
  m.device = device;
  m.starts_at = *start;
  m.ends_at = *end;
  m.reason = reason;
  const db::Actor actor = cli_actor("");
  m.created_by = actor.name;
  auto checked = db::checked_window(inventory, m);
  if (!checked.ok()) {
    err << "medic: " << (checked.kind() == ErrorKind::not_found ? "--" : "") << checked.error()
        << (checked.kind() == ErrorKind::not_found ? " (run medicd or check the name)" : "") << '\n';
    return checked.kind() == ErrorKind::unavailable ? 1 : 2;
  }
  m = *checked;
  const auto id = windows.add_maintenance(m, actor, SystemClock().now());
  if (!id.ok()) {
    err << "medic: " << id.error() << '\n';
    return 1;
  }
  out << "maintenance #" << *id << ": " << (m.link.empty() ? device : m.link) << " from " << format_iso8601(*start)
      << " until " << format_iso8601(*end) << (reason.empty() ? "" : " (" + reason + ")") << '\n';
  return 0;
}

int cmd_maintenance_list(const DbOption& dbo, bool all, std::ostream& out, std::ostream& err) {
  auto db = dbo.open();
  db::MaintenanceStore windows(*db);
  const Time now = SystemClock().now();
  const auto rows = windows.maintenance(all ? std::nullopt : std::optional<Time>(now));
  if (!rows.ok()) {
    err << "medic: " << rows.error() << '\n';
    return 1;
  }
  if (rows->empty()) {
    out << (all ? "no maintenance windows\n" : "no maintenance windows now or ahead\n");
    return 0;
  }
  Table t({"ID", "LINK OR DEVICE", "FROM", "UNTIL", "STATUS", "REASON"});
  for (const auto& m : *rows) {
    const std::string status = now < m.starts_at ? "ahead" : now < m.ends_at ? "active" : "over";
    t.add({std::to_string(m.id), m.link.empty() ? m.device : m.link, format_iso8601(m.starts_at).substr(0, 19) + "Z",
           format_iso8601(m.ends_at).substr(0, 19) + "Z", status, m.reason});
  }
  out << t.render();
  return 0;
}

int cmd_maintenance_end(const DbOption& dbo, int64_t id, std::ostream& out, std::ostream& err) {
  auto db = dbo.open();
  db::MaintenanceStore windows(*db);
  if (auto st = windows.end_maintenance(id, cli_actor(""), SystemClock().now()); !st.ok()) {
    err << "medic: " << st.error() << '\n';
    return 1;
  }
  out << "maintenance #" << id << " ended\n";
  return 0;
}

}  // namespace

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"medic: fabric-medic command line (fabric files, database, incidents, SLO reports)"};
  app.name("medic");
  app.require_subcommand(1);
  DbOption dbo;
  std::function<int()> action;

  auto* fabric_cmd = app.add_subcommand("fabric", "topology files: generate and check");
  fabric_cmd->require_subcommand(1);
  std::string preset, base_url, driver = "jsonrpc", telemetry = "mixed";
  auto* gen = fabric_cmd->add_subcommand("gen", "write a generated Clos topology to stdout");
  gen->add_option("preset", preset, "demo or zone32k")->required();
  gen->add_option("--base-url", base_url, "where fabsim will serve the switches (default http://127.0.0.1:18080)");
  gen->add_option("--driver", driver, "drain driver kind for every switch")
      ->check(CLI::IsMember({"jsonrpc", "dryrun", "netns"}));
  gen->add_option("--telemetry", telemetry,
                  "how switches are scraped: prometheus, openconfig, or mixed (ToRs Prometheus, the rest OpenConfig)")
      ->check(CLI::IsMember({"prometheus", "openconfig", "mixed"}));
  gen->callback([&] { action = [&] { return cmd_fabric_gen(preset, base_url, driver, telemetry, out, err); }; });
  std::string check_file;
  bool check_json = false;
  auto* check = fabric_cmd->add_subcommand("check", "validate a topology file and print its counts");
  check->add_option("file", check_file, "topology JSON file")->required();
  check->add_flag("--json", check_json, "print the counts as JSON");
  check->callback([&] { action = [&] { return cmd_fabric_check(check_file, check_json, out, err); }; });

  std::string targets_file;
  auto* targets_cmd = fabric_cmd->add_subcommand("targets", "every telemetry endpoint as Prometheus file_sd JSON");
  targets_cmd->add_option("file", targets_file, "topology JSON file")->required();
  targets_cmd->callback([&] { action = [&] { return cmd_fabric_targets(targets_file, out, err); }; });

  auto* db_cmd = app.add_subcommand("db", "database schema");
  db_cmd->require_subcommand(1);
  auto* migrate = db_cmd->add_subcommand("migrate", "apply every migration not yet applied");
  dbo.add(migrate);
  migrate->callback([&] { action = [&] { return cmd_db_migrate(dbo, out); }; });

  bool open_only = false, inc_json = false;
  std::string cls;
  int limit = 1000;
  int64_t show_id = 0;
  auto* inc = app.add_subcommand("incidents", "list incidents with class, link, state and stage times");
  dbo.add(inc);
  inc->add_flag("--open", open_only, "only incidents not closed or dismissed");
  inc->add_option("--class", cls, "only this incident class");
  inc->add_option("--limit", limit, "at most this many")->check(CLI::Range(1, 1000000));
  inc->add_flag("--json", inc_json, "print JSON");
  auto* show = inc->add_subcommand("show", "one incident with its findings and actions");
  show->add_option("id", show_id, "incident id")->required()->check(CLI::PositiveNumber);
  show->add_flag("--json", inc_json, "print JSON");
  dbo.add(show);
  inc->callback([&] {
    if (!action) action = [&] { return cmd_incidents(dbo, open_only, cls, limit, inc_json, out, err); };
  });
  show->callback([&] { action = [&] { return cmd_incident_show(dbo, show_id, inc_json, out, err); }; });

  auto* mnt = app.add_subcommand("maintenance", "maintenance windows: findings on these links or devices open no incident");
  mnt->require_subcommand(1);
  std::string m_link, m_device, m_from = "now", m_until, m_reason;
  auto* madd = mnt->add_subcommand("add", "declare a window (changes state)");
  dbo.add(madd);
  madd->add_option("--link", m_link, "the link's name (device:port--device:port)");
  madd->add_option("--device", m_device, "a switch or host: all its links");
  madd->add_option("--from", m_from, "now (default), +N[smhd] or Unix seconds");
  madd->add_option("--until", m_until, "+N[smhd] or Unix seconds")->required();
  madd->add_option("--reason", m_reason, "why, for the record");
  madd->callback([&] {
    action = [&] { return cmd_maintenance_add(dbo, m_link, m_device, m_from, m_until, m_reason, out, err); };
  });
  bool m_all = false;
  auto* mlist = mnt->add_subcommand("list", "windows now or ahead (--all: also those over)");
  dbo.add(mlist);
  mlist->add_flag("--all", m_all, "also windows that are over");
  mlist->callback([&] { action = [&] { return cmd_maintenance_list(dbo, m_all, out, err); }; });
  int64_t m_id = 0;
  auto* mend = mnt->add_subcommand("end", "end a window now (changes state)");
  dbo.add(mend);
  mend->add_option("id", m_id, "window id")->required()->check(CLI::PositiveNumber);
  mend->callback([&] { action = [&] { return cmd_maintenance_end(dbo, m_id, out, err); }; });

  ReplayOptions ro;
  bool ro_incidents_only = false;
  auto* rep = app.add_subcommand("replay", "run recorded scrapes through detectors and triage, print JSON lines");
  rep->add_option("--topology", ro.topology_path, "topology JSON file")->required();
  rep->add_option("--scrapes", ro.scrapes_dir, "folder of DIR/UNIXTIME/DEVICE.prom|.json|.snmp")->required();
  rep->add_option("--counter-map", ro.counter_map_path, "counter name map (default data/counter_map.json)");
  rep->add_option("--detectors", ro.detectors_path, "detector thresholds (default data/detectors.json)");
  rep->add_option("--device-fault-links", ro.device_fault_links, "failing links of one device that make one incident")
      ->check(CLI::Range(2, 100000));
  rep->add_option("--reopen-window", ro.reopen_window_s, "seconds within which a fault reopens a closed incident")
      ->check(CLI::NonNegativeNumber);
  rep->add_flag("--incidents-only", ro_incidents_only, "print incident lines only");
  rep->callback([&] {
    action = [&] {
      ro.findings = !ro_incidents_only;
      return replay(ro, out, err);
    };
  });

  ProbeArgs pa;
  auto* probe = app.add_subcommand("probe", "one STAMP session to a reflector: loss, RTT, jitter, reordering");
  probe->add_option("target", pa.target, "reflector ADDR:PORT (STAMP's port is 862)")->required();
  probe->add_option("--count", pa.count, "probes to send (default 100)")->check(CLI::Range(1, 100000000));
  probe->add_option("--interval-ms", pa.interval_ms, "milliseconds between probes (default 10; 0: as fast as possible)")
      ->check(CLI::Range(0.0, 60000.0));
  probe->add_option("--size", pa.size, "octets per packet, zero padded (default: 44, or 112 authenticated)")
      ->check(CLI::Range(0, 9000));
  probe->add_option("--auth-key", pa.key, "authenticated mode with this HMAC key (hex:... or a passphrase)");
  probe->add_option("--ssid", pa.ssid, "Session-Sender Identifier (RFC 8972)")->check(CLI::Range(0, 65535));
  probe->add_option("--bind", pa.bind, "send from this ADDR[:PORT]");
  probe->add_option("--netns", pa.netns, "send from inside this network namespace");
  probe->add_option("--wait", pa.wait_s, "seconds to wait for late replies (default 1)")->check(CLI::Range(0.0, 60.0));
  probe->add_flag("--synchronized", pa.synchronized, "this clock is synchronized to UTC (shows one-way delays)");
  probe->add_flag("--json", pa.json, "print JSON");
  probe->callback([&] { action = [&] { return cmd_probe(pa, out, err); }; });

  RecordOptions rec;
  auto* recc = app.add_subcommand("record", "scrape every device N times and write a scrape set for replay");
  recc->add_option("--topology", rec.topology_path, "topology JSON file")->required();
  recc->add_option("--out", rec.out_dir, "folder to write DIR/UNIXTIME/DEVICE.prom|.json|.snmp into")->required();
  recc->add_option("--snmp-credentials", rec.snmp_credentials_path,
                   "JSON file of SNMP credentials for switches at snmp:// (default: $MEDIC_SNMP_COMMUNITY, or "
                   "$MEDIC_SNMP_USER with $MEDIC_SNMP_AUTH_PASSWORD and $MEDIC_SNMP_PRIV_PASSWORD)")
      ->check(CLI::ExistingFile);
  recc->add_option("--polls", rec.polls, "how many polls (default 10)")->check(CLI::Range(1, 100000));
  recc->add_option("--interval", rec.interval_s, "seconds between polls (default 1)")->check(CLI::Range(0.01, 3600.0));
  recc->add_option("--timeout", rec.timeout_s, "seconds before a device's answer is given up on")
      ->check(CLI::Range(0.05, 600.0));
  recc->callback([&] { action = [&] { return record(rec, out, err); }; });

  // Command groups that register themselves from their own files.
  CommandContext ctx{app, dbo, action, out, err};
  add_capacity_commands(ctx);
  add_snapshot_commands(ctx);
  add_queue_commands(ctx);
  add_people_commands(ctx);
  add_slo_commands(ctx);
  add_config_commands(ctx);
  add_notify_commands(ctx);
  add_snmp_commands(ctx);

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    // A command line CLI11 refuses is bad input: exit 2 like any other (CLI11's own codes,
    // 105 and up, mean nothing to a caller); --help still exits 0.
    auto usage = [&](const CLI::Error& x) { return app.exit(x, out, err) == 0 ? 0 : 2; };
    // CLI11 checks for a missing subcommand before it complains about words it did not
    // expect, so "medic fabric chek" would only say "A subcommand is required": name them.
    if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
      if (auto extra = app.remaining(true); !extra.empty()) return usage(CLI::ExtrasError(std::move(extra)));
    }
    return usage(e);
  }
  try {
    return action ? action() : 2;
  } catch (const db::DbError& e) {
    err << "medic: " << e.what() << '\n';
    return 1;
  } catch (const std::invalid_argument& e) {
    err << "medic: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    err << "medic: " << e.what() << '\n';
    return 1;
  }
}

}  // namespace medic::cli
