#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "common/strings.h"
#include "snapshot/snapshot.h"

namespace medic::snapshot {

using nlohmann::json;
using telemetry::Counter;

namespace {

constexpr double kChangeEpsilon = 1e-12;

// Counters whose every increase is a symptom (flaps, errors, drops, pauses); the other
// monotonic counters move with traffic.
bool is_fault_counter(Counter c) {
  switch (c) {
    case Counter::carrier_changes:
    case Counter::link_down_events:
    case Counter::rx_errors:
    case Counter::tx_errors:
    case Counter::rx_discards:
    case Counter::tx_discards:
    case Counter::rx_crc_errors:
    case Counter::rx_symbol_errors:
    case Counter::fec_uncorrectable_codewords:
    case Counter::rx_pause:
    case Counter::tx_pause:
      return true;
    default:
      return false;
  }
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// 1234567 -> "1,234,567"; non-integers and huge values keep their digits.
std::string count_text(double v) {
  if (!std::isfinite(v) || std::fabs(v) >= 1e18 || v != std::floor(v)) return fmt("%.6g", v);
  const bool neg = v < 0;
  std::string digits = std::to_string(static_cast<long long>(std::fabs(v)));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (neg ? "-" : "") + out;
}

std::string gauge_text(Counter c, double v) {
  if (c == Counter::pre_fec_ber) return fmt("%.2e", v);
  if (c == Counter::oper_up) return fmt("%.0f", v);
  return fmt("%.2f", v);
}

const char* gauge_unit(Counter c) {
  switch (c) {
    case Counter::rx_power_dbm:
    case Counter::tx_power_dbm: return " dB";
    case Counter::temperature_c: return " C";
    case Counter::laser_bias_ma: return " mA";
    default: return "";
  }
}

std::string value_text(Counter c, double v) { return telemetry::is_gauge(c) ? gauge_text(c, v) : count_text(v); }

std::string change_text(const CounterChange& ch) {
  const std::string name(telemetry::to_string(ch.counter));
  if (!ch.before) return name + " now read (" + value_text(ch.counter, *ch.after) + ")";
  if (!ch.after) return name + " no longer read (was " + value_text(ch.counter, *ch.before) + ")";
  if (ch.reset()) return name + " reset (" + count_text(*ch.before) + " -> " + count_text(*ch.after) + ")";
  if (!telemetry::is_gauge(ch.counter)) return name + " +" + count_text(ch.delta());
  if (ch.counter == Counter::pre_fec_ber || ch.counter == Counter::oper_up) {
    return name + " " + gauge_text(ch.counter, *ch.before) + " -> " + gauge_text(ch.counter, *ch.after);
  }
  const double d = ch.delta();
  return name + " " + (d > 0 ? "+" : "") + fmt("%.2f", d) + gauge_unit(ch.counter) + " (" +
         gauge_text(ch.counter, *ch.before) + " -> " + gauge_text(ch.counter, *ch.after) + ")";
}

std::string oper_text(int oper) { return oper > 0 ? "up" : oper == 0 ? "down" : "unknown"; }

Importance importance_of(const PortChange& p) {
  if (p.oper_before != p.oper_after || p.drained_before != p.drained_after) return Importance::state;
  Importance best = Importance::minor;
  for (const CounterChange& c : p.counters) {
    if (!c.notable) continue;
    if (c.counter == Counter::oper_up) return Importance::state;
    const Importance i = telemetry::is_gauge(c.counter) ? Importance::optics : Importance::fault;
    best = std::min(best, i);
  }
  return best;
}

// Group order: floors newly broken, still broken, recovered, the rest; biggest drop first.
int group_rank(const GroupChange& g) {
  if (g.below_floor_after && !g.below_floor_before) return 0;
  if (g.below_floor_after) return 1;
  if (g.below_floor_before) return 2;
  return 3;
}

SnapshotRef ref_of(const Snapshot& s) {
  return SnapshotRef{s.id, s.scope, s.reason, s.link, s.incident_id, s.action_id, s.taken_at};
}

json opt_number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json text_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

json ref_json(const SnapshotRef& r) {
  return {{"id", r.id},
          {"scope", r.scope},
          {"reason", r.reason},
          {"link", text_or_null(r.link)},
          {"incident_id", r.incident_id ? json(r.incident_id) : json(nullptr)},
          {"action_id", r.action_id ? json(r.action_id) : json(nullptr)},
          {"taken_at", format_iso8601(r.taken_at)}};
}

std::string ref_line(const char* label, const SnapshotRef& r) {
  std::string line = std::string(label) + "snapshot " + std::to_string(r.id) + " (" + r.scope;
  if (!r.link.empty()) line += " on " + r.link;
  if (r.incident_id) line += ", incident " + std::to_string(r.incident_id);
  if (r.action_id) line += ", action " + std::to_string(r.action_id);
  line += ") taken " + format_iso8601(r.taken_at);
  if (!r.reason.empty()) line += ": " + r.reason;
  return line;
}

}  // namespace

std::string_view to_string(Importance i) {
  switch (i) {
    case Importance::state: return "state";
    case Importance::fault: return "fault";
    case Importance::optics: return "optics";
    case Importance::minor: return "minor";
  }
  return "?";
}

std::string_view to_string(IncidentChange::Kind k) {
  switch (k) {
    case IncidentChange::Kind::opened: return "opened";
    case IncidentChange::Kind::changed: return "changed";
    case IncidentChange::Kind::closed: return "closed";
  }
  return "?";
}

bool is_notable(const CounterChange& c, const DiffThresholds& t) {
  if (!c.before || !c.after) return false;
  if (c.reset()) return true;
  const double d = *c.after - *c.before;
  switch (c.counter) {
    case Counter::oper_up: return std::fabs(d) > kChangeEpsilon;
    case Counter::rx_power_dbm:
    case Counter::tx_power_dbm: return std::fabs(d) >= t.power_db - kChangeEpsilon;
    case Counter::temperature_c: return std::fabs(d) >= t.temperature_c - kChangeEpsilon;
    case Counter::laser_bias_ma: return std::fabs(d) >= t.bias_ma - kChangeEpsilon;
    case Counter::pre_fec_ber:
      return (*c.after > 0 && *c.after >= t.ber_factor * *c.before) ||
             (*c.before > 0 && *c.before >= t.ber_factor * *c.after);
    case Counter::rx_discards:
    case Counter::tx_discards:
      return d > 0 && (!c.packets || *c.packets <= 0 || d >= t.discard_share * *c.packets);
    case Counter::rx_pause:
    case Counter::tx_pause: return d > 0 && (c.interval_s <= 0 || d >= t.pause_rate * c.interval_s);
    default: return is_fault_counter(c.counter) && d > 0;
  }
}

DiffThresholds diff_thresholds(const detectors::DetectorConfig& detectors) {
  DiffThresholds t;
  t.discard_share = detectors.corruption.discard_rate;
  t.pause_rate = detectors.pfc.pause_rate;
  return t;
}

SnapshotDiff diff(const Snapshot& a, const Snapshot& b, const DiffThresholds& thresholds) {
  SnapshotDiff d;
  d.a = ref_of(a);
  d.b = ref_of(b);

  // Ports, matched by device and port name.
  std::unordered_map<std::string, size_t> in_a;
  in_a.reserve(a.ports.size());
  for (size_t i = 0; i < a.ports.size(); ++i) in_a.emplace(a.ports[i].device + ':' + a.ports[i].port, i);
  std::vector<std::pair<size_t, PortChange>> ports;  // (order in b, change)
  std::string key;
  for (size_t i = 0; i < b.ports.size(); ++i) {
    const PortReading& pb = b.ports[i];
    key.assign(pb.device).append(1, ':').append(pb.port);
    const auto it = in_a.find(key);
    if (it == in_a.end()) {
      ++d.ports_only_in_b;
      continue;
    }
    ++d.ports_compared;
    const PortReading& pa = a.ports[it->second];
    PortChange c;
    c.oper_before = pa.oper;
    c.oper_after = pb.oper;
    c.drained_before = pa.drained;
    c.drained_after = pb.drained;
    for (size_t k = 0; k < telemetry::kCounterCount; ++k) {
      const auto counter = static_cast<Counter>(k);
      const bool ha = pa.has(counter), hb = pb.has(counter);
      if (!ha && !hb) continue;
      if (ha && hb && pa.get(counter) == pb.get(counter)) continue;
      CounterChange ch;
      ch.counter = counter;
      if (ha) ch.before = pa.get(counter);
      if (hb) ch.after = pb.get(counter);
      // What the load did meanwhile (an unknown or reset packet counter says nothing).
      const Counter packets = counter == Counter::rx_discards   ? Counter::rx_packets
                              : counter == Counter::tx_discards ? Counter::tx_packets
                                                                : Counter::kCount;
      if (packets != Counter::kCount && pa.has(packets) && pb.has(packets) && pb.get(packets) >= pa.get(packets)) {
        ch.packets = pb.get(packets) - pa.get(packets);
      }
      const Time ta = pa.sampled_at.value_or(a.taken_at), tb = pb.sampled_at.value_or(b.taken_at);
      ch.interval_s = std::fabs(seconds(tb - ta));
      ch.notable = is_notable(ch, thresholds);
      c.counters.push_back(ch);
    }
    if (c.counters.empty() && c.oper_before == c.oper_after && c.drained_before == c.drained_after) continue;
    c.device = pb.device;
    c.port = pb.port;
    c.link = pb.link;
    c.importance = importance_of(c);
    ports.emplace_back(i, std::move(c));
  }
  d.ports_only_in_a = a.ports.size() - d.ports_compared;
  std::stable_sort(ports.begin(), ports.end(),
                   [](const auto& x, const auto& y) { return x.second.importance < y.second.importance; });
  d.ports.reserve(ports.size());
  for (auto& [order, c] : ports) d.ports.push_back(std::move(c));

  // Capacity groups, matched by name.
  std::unordered_map<std::string, const GroupReading*> groups_a;
  for (const GroupReading& g : a.groups) groups_a.emplace(g.name, &g);
  for (const GroupReading& gb : b.groups) {
    const auto it = groups_a.find(gb.name);
    if (it == groups_a.end()) continue;
    ++d.groups_compared;
    const GroupReading& ga = *it->second;
    if (std::fabs(ga.fraction() - gb.fraction()) <= kChangeEpsilon && ga.links_in_service == gb.links_in_service) continue;
    GroupChange c;
    c.name = gb.name;
    c.kind = gb.kind;
    c.floor = gb.floor;
    c.before = ga.fraction();
    c.after = gb.fraction();
    c.links = gb.links;
    c.in_service_before = ga.links_in_service;
    c.in_service_after = gb.links_in_service;
    c.below_floor_before = ga.below_floor();
    c.below_floor_after = gb.below_floor();
    d.groups.push_back(std::move(c));
  }
  std::sort(d.groups.begin(), d.groups.end(), [](const GroupChange& x, const GroupChange& y) {
    if (group_rank(x) != group_rank(y)) return group_rank(x) < group_rank(y);
    const double dx = x.after - x.before, dy = y.after - y.before;
    if (dx != dy) return dx < dy;
    return x.name < y.name;
  });

  // Incidents, by id.
  std::map<int64_t, const IncidentReading*> inc_a, inc_b;
  for (const IncidentReading& i : a.incidents) inc_a.emplace(i.id, &i);
  for (const IncidentReading& i : b.incidents) inc_b.emplace(i.id, &i);
  auto make = [](IncidentChange::Kind kind, const IncidentReading* before, const IncidentReading* after) {
    const IncidentReading& r = after ? *after : *before;
    IncidentChange c;
    c.kind = kind;
    c.id = r.id;
    c.incident_class = r.incident_class;
    c.link = r.link;
    c.device = r.device;
    if (before) {
      c.state_before = before->state;
      c.severity_before = before->severity;
    }
    if (after) {
      c.state_after = after->state;
      c.severity_after = after->severity;
    }
    return c;
  };
  for (const auto& [id, rb] : inc_b) {
    const auto it = inc_a.find(id);
    if (it == inc_a.end()) {
      d.incidents.push_back(make(IncidentChange::Kind::opened, nullptr, rb));
    } else if (it->second->state != rb->state || it->second->severity != rb->severity) {
      d.incidents.push_back(make(IncidentChange::Kind::changed, it->second, rb));
    }
  }
  for (const auto& [id, ra] : inc_a) {
    if (!inc_b.count(id)) d.incidents.push_back(make(IncidentChange::Kind::closed, ra, nullptr));
  }
  std::stable_sort(d.incidents.begin(), d.incidents.end(),
                   [](const IncidentChange& x, const IncidentChange& y) { return x.kind < y.kind; });
  return d;
}

std::string render_text(const SnapshotDiff& d) {
  std::string out;
  out += ref_line("from ", d.a) + "\n";
  out += ref_line("to   ", d.b) + "\n";
  const Duration apart = d.b.taken_at - d.a.taken_at;
  // "5.0s earlier", not "-5.0s earlier": the word carries the sign.
  out += format_duration(apart.count() < 0 ? -apart : apart) + (apart.count() < 0 ? " earlier" : " later") + "; " +
         std::to_string(d.ports_compared) + " ports and " + std::to_string(d.groups_compared) +
         " capacity groups in both\n";
  if (d.empty()) {
    out += "no changes";
    if (d.ports_only_in_a || d.ports_only_in_b) {
      out += " (" + std::to_string(d.ports_only_in_a) + " ports only in the first, " +
             std::to_string(d.ports_only_in_b) + " only in the second: not compared)";
    }
    out += "\n";
    return out;
  }

  if (!d.groups.empty()) {
    size_t broken = 0;
    for (const auto& g : d.groups) broken += g.below_floor_after ? 1 : 0;
    out += "\ncapacity groups (" + std::to_string(d.groups.size()) + " changed" +
           (broken ? ", " + std::to_string(broken) + " below floor" : "") + "):\n";
    for (const auto& g : d.groups) {
      const char* mark = g.below_floor_after ? "BELOW FLOOR  " : g.below_floor_before ? "recovered    " : "             ";
      out += std::string("  ") + mark + g.name + (g.kind.empty() ? "" : " (" + g.kind + ")") + ": " +
             format_percent(g.before) + " -> " + format_percent(g.after) + " in service (" +
             std::to_string(g.in_service_before) + " -> " + std::to_string(g.in_service_after) + " of " +
             std::to_string(g.links) + " links), floor " + format_percent(g.floor) + "\n";
    }
  }

  if (!d.incidents.empty()) {
    size_t n[3] = {0, 0, 0};
    for (const auto& i : d.incidents) ++n[static_cast<int>(i.kind)];
    std::vector<std::string> parts;
    if (n[0]) parts.push_back(std::to_string(n[0]) + " opened");
    if (n[1]) parts.push_back(std::to_string(n[1]) + " changed");
    if (n[2]) parts.push_back(std::to_string(n[2]) + " no longer open");
    out += "\nincidents (" + join(parts, ", ") + "):\n";
    for (const auto& i : d.incidents) {
      std::string line = "  " + std::string(to_string(i.kind)) + std::string(9 - to_string(i.kind).size(), ' ') +
                         "#" + std::to_string(i.id) + " " + i.incident_class + " on " +
                         (i.link.empty() ? i.device : i.link) + ": ";
      switch (i.kind) {
        case IncidentChange::Kind::opened: line += i.state_after + ", " + i.severity_after; break;
        case IncidentChange::Kind::changed:
          line += i.state_before + " -> " + i.state_after;
          if (i.severity_before != i.severity_after) line += ", " + i.severity_before + " -> " + i.severity_after;
          break;
        case IncidentChange::Kind::closed: line += "was " + i.state_before; break;
      }
      out += line + "\n";
    }
  }

  size_t listed = 0;
  for (const auto& p : d.ports) listed += p.importance != Importance::minor ? 1 : 0;
  const size_t minor = d.ports.size() - listed;
  std::string head = "\nports (" + std::to_string(listed) + " changed";
  if (minor) head += "; " + std::to_string(minor) + " with traffic or minor changes only";
  if (d.ports_only_in_a) head += "; " + std::to_string(d.ports_only_in_a) + " only in the first";
  if (d.ports_only_in_b) head += "; " + std::to_string(d.ports_only_in_b) + " only in the second";
  out += head + ")" + (listed ? ":" : "") + "\n";
  for (const auto& p : d.ports) {
    if (p.importance == Importance::minor) break;  // sorted: the rest are minor
    std::vector<std::string> states;
    if (p.oper_before != p.oper_after) states.push_back("oper " + oper_text(p.oper_before) + " -> " + oper_text(p.oper_after));
    if (p.drained_before != p.drained_after) {
      states.push_back(std::string("drained ") + (p.drained_before ? "yes" : "no") + " -> " + (p.drained_after ? "yes" : "no"));
    }
    out += "  " + p.device + ":" + p.port + (p.link.empty() ? "" : " [" + p.link + "]");
    out += states.empty() ? "\n" : ": " + join(states, "; ") + "\n";
    std::vector<std::string> moved;
    for (const auto& c : p.counters) {
      if (c.notable) moved.push_back(change_text(c));
    }
    if (!moved.empty()) out += "      " + join(moved, "; ") + "\n";
  }
  return out;
}

json diff_to_json(const SnapshotDiff& d) {
  json groups = json::array();
  for (const auto& g : d.groups) {
    groups.push_back({{"name", g.name},
                      {"kind", g.kind},
                      {"floor", g.floor},
                      {"before", g.before},
                      {"after", g.after},
                      {"links", g.links},
                      {"links_in_service_before", g.in_service_before},
                      {"links_in_service_after", g.in_service_after},
                      {"below_floor_before", g.below_floor_before},
                      {"below_floor_after", g.below_floor_after}});
  }
  json incidents = json::array();
  for (const auto& i : d.incidents) {
    incidents.push_back({{"id", i.id},
                         {"change", std::string(to_string(i.kind))},
                         {"class", i.incident_class},
                         {"link", text_or_null(i.link)},
                         {"device", text_or_null(i.device)},
                         {"state_before", text_or_null(i.state_before)},
                         {"state_after", text_or_null(i.state_after)},
                         {"severity_before", text_or_null(i.severity_before)},
                         {"severity_after", text_or_null(i.severity_after)}});
  }
  json ports = json::array();
  for (const auto& p : d.ports) {
    json counters = json::object();
    for (const auto& c : p.counters) {
      json cj = {{"before", opt_number(c.before)}, {"after", opt_number(c.after)}};
      if (c.before && c.after) cj["delta"] = c.delta();
      if (c.reset()) cj["reset"] = true;
      cj["notable"] = c.notable;
      counters[std::string(telemetry::to_string(c.counter))] = std::move(cj);
    }
    ports.push_back({{"device", p.device},
                     {"port", p.port},
                     {"link", text_or_null(p.link)},
                     {"importance", std::string(to_string(p.importance))},
                     {"oper_before", p.oper_before},
                     {"oper_after", p.oper_after},
                     {"drained_before", p.drained_before},
                     {"drained_after", p.drained_after},
                     {"counters", std::move(counters)}});
  }
  return {{"a", ref_json(d.a)},
          {"b", ref_json(d.b)},
          {"interval_s", seconds(d.b.taken_at - d.a.taken_at)},
          {"ports_compared", d.ports_compared},
          {"ports_only_in_a", d.ports_only_in_a},
          {"ports_only_in_b", d.ports_only_in_b},
          {"groups_compared", d.groups_compared},
          {"groups", std::move(groups)},
          {"incidents", std::move(incidents)},
          {"ports", std::move(ports)}};
}

}  // namespace medic::snapshot
