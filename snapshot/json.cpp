#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/json.h"
#include "common/strings.h"
#include "snapshot/snapshot.h"

namespace medic::snapshot {

using nlohmann::json;

namespace {

json opt_text(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }
json opt_id(int64_t id) { return id ? json(id) : json(nullptr); }

json port_json(const PortReading& p) {
  json counters = json::object();
  for (size_t c = 0; c < telemetry::kCounterCount; ++c) {
    const auto counter = static_cast<telemetry::Counter>(c);
    // A non-finite value is not a reading: JSON has no spelling for it (it would be null).
    if (p.has(counter) && std::isfinite(p.get(counter))) {
      counters[std::string(telemetry::to_string(counter))] = p.get(counter);
    }
  }
  return {{"device", p.device},
          {"port", p.port},
          {"link", opt_text(p.link)},
          {"oper", p.oper},
          {"drained", p.drained},
          {"sampled_at", p.sampled_at ? json(format_iso8601(*p.sampled_at)) : json(nullptr)},
          {"counters", std::move(counters)}};
}

json encode(const Snapshot& s, bool with_ports, bool with_id) {
  json doc = json::object();
  doc["version"] = kFormatVersion;
  if (with_id) doc["id"] = opt_id(s.id);
  doc["scope"] = s.scope;
  doc["reason"] = s.reason;
  doc["incident_id"] = opt_id(s.incident_id);
  doc["action_id"] = opt_id(s.action_id);
  doc["link"] = opt_text(s.link);
  doc["taken_at"] = format_iso8601(s.taken_at);
  doc["port_count"] = s.ports.size();
  json groups = json::array();
  for (const auto& g : s.groups) {
    groups.push_back({{"name", g.name},
                      {"kind", g.kind},
                      {"floor", g.floor},
                      {"capacity_gbps", g.capacity_gbps},
                      {"available_gbps", g.available_gbps},
                      {"links", g.links},
                      {"links_in_service", g.links_in_service}});
  }
  json incidents = json::array();
  for (const auto& i : s.incidents) {
    incidents.push_back({{"id", i.id},
                         {"class", i.incident_class},
                         {"state", i.state},
                         {"severity", i.severity},
                         {"link", opt_text(i.link)},
                         {"device", opt_text(i.device)}});
  }
  if (with_ports) {
    json ports = json::array();
    for (const auto& p : s.ports) ports.push_back(port_json(p));
    doc["ports"] = std::move(ports);
  }
  doc["groups"] = std::move(groups);
  doc["incidents"] = std::move(incidents);
  return doc;
}

// The first problem ends decoding; its message names the source and the JSON path.
struct Problem {
  std::string message;
};

class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw Problem{source_ + ": " + path + ": " + what};
  }

  void object(const json& v, const std::string& path) const {
    if (!v.is_object()) fail(path, std::string("expected an object, got ") + json_type_name(v));
  }

  // Unknown keys are errors: a misspelt key must not be silently dropped.
  void known_keys(const json& obj, const std::string& path, std::initializer_list<const char*> keys) const {
    for (const auto& [k, v] : obj.items()) {
      bool found = false;
      for (const char* key : keys) found = found || k == key;
      if (!found) fail(path, "unknown key " + quote(k));
    }
  }

  const json* field(const json& obj, const std::string& path, const char* key, bool required) const {
    const auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) fail(path, std::string("missing required key \"") + key + "\"");
      return nullptr;
    }
    return &*it;
  }

  std::string text(const json& obj, const std::string& path, const char* key) const {
    const json* v = field(obj, path, key, true);
    if (!v->is_string()) fail(path + "." + key, std::string("expected a string, got ") + json_type_name(*v));
    return v->get<std::string>();
  }

  // A string or null ("" for null or absent).
  std::string opt_text(const json& obj, const std::string& path, const char* key) const {
    const json* v = field(obj, path, key, false);
    if (v == nullptr || v->is_null()) return "";
    if (!v->is_string()) fail(path + "." + key, std::string("expected a string or null, got ") + json_type_name(*v));
    return v->get<std::string>();
  }

  int64_t integer(const json& v, const std::string& path, int64_t min, int64_t max) const {
    if (!v.is_number_integer()) fail(path, std::string("expected an integer, got ") + json_type_name(v));
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      fail(path, "out of range: " + v.dump());
    }
    const auto n = v.get<int64_t>();
    if (n < min || n > max) {
      fail(path, "expected " + std::to_string(min) + " to " + std::to_string(max) + ", got " + std::to_string(n));
    }
    return n;
  }

  // A positive id, or null/absent for none (0).
  int64_t opt_id(const json& obj, const std::string& path, const char* key) const {
    const json* v = field(obj, path, key, false);
    if (v == nullptr || v->is_null()) return 0;
    if (!v->is_number_integer()) fail(path + "." + key, std::string("expected an integer or null, got ") + json_type_name(*v));
    return integer(*v, path + "." + key, 1, INT64_MAX);
  }

  double number(const json& obj, const std::string& path, const char* key, double min) const {
    const json* v = field(obj, path, key, true);
    if (!v->is_number()) fail(path + "." + key, std::string("expected a number, got ") + json_type_name(*v));
    const double d = v->get<double>();
    if (!(d >= min)) fail(path + "." + key, "must not be below " + format_number(min) + ", got " + v->dump());
    return d;
  }

  bool boolean(const json& obj, const std::string& path, const char* key) const {
    const json* v = field(obj, path, key, true);
    if (!v->is_boolean()) fail(path + "." + key, std::string("expected true or false, got ") + json_type_name(*v));
    return v->get<bool>();
  }

  Time time(const json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, std::string("expected a time string, got ") + json_type_name(v));
    const auto t = parse_time(v.get_ref<const std::string&>());
    if (!t) fail(path, "expected a time such as \"2026-11-21T16:14:03.123456Z\", got " + quote(v.get<std::string>()));
    return *t;
  }

  const json& array(const json& obj, const std::string& path, const char* key) const {
    const json* v = field(obj, path, key, true);
    if (!v->is_array()) fail(path + "." + key, std::string("expected an array, got ") + json_type_name(*v));
    return *v;
  }

 private:
  const std::string& source_;
};

PortReading read_port(const Reader& r, const json& v, const std::string& path) {
  r.object(v, path);
  r.known_keys(v, path, {"device", "port", "link", "oper", "drained", "sampled_at", "counters"});
  PortReading p;
  p.device = r.text(v, path, "device");
  p.port = r.text(v, path, "port");
  if (p.device.empty()) r.fail(path + ".device", "must not be empty");
  if (p.port.empty()) r.fail(path + ".port", "must not be empty");
  p.link = r.opt_text(v, path, "link");
  const json* oper = r.field(v, path, "oper", true);
  // A huge unsigned number would wrap to -1 through get<int64_t>: only signed ones can be -1.
  if (!oper->is_number_integer() || (oper->is_number_unsigned() && oper->get<uint64_t>() > 1) ||
      oper->get<int64_t>() < -1 || oper->get<int64_t>() > 1) {
    r.fail(path + ".oper", "expected -1 (unknown), 0 (down) or 1 (up), got " + oper->dump());
  }
  p.oper = oper->get<int>();
  p.drained = r.boolean(v, path, "drained");
  if (const json* t = r.field(v, path, "sampled_at", false); t != nullptr && !t->is_null()) {
    p.sampled_at = r.time(*t, path + ".sampled_at");
  }
  const json* counters = r.field(v, path, "counters", true);
  const std::string cpath = path + ".counters";
  r.object(*counters, cpath);
  for (const auto& [name, value] : counters->items()) {
    const auto c = telemetry::parse_counter(name);
    if (!c) r.fail(cpath, "unknown counter " + quote(name) + " (docs/formats.md lists the canonical counters)");
    if (!value.is_number()) r.fail(cpath + "." + name, std::string("expected a number, got ") + json_type_name(value));
    p.set(*c, value.get<double>());
  }
  if (p.present != 0 && !p.sampled_at) r.fail(path + ".sampled_at", "counters without the time they were read");
  return p;
}

GroupReading read_group(const Reader& r, const json& v, const std::string& path) {
  r.object(v, path);
  r.known_keys(v, path, {"name", "kind", "floor", "capacity_gbps", "available_gbps", "links", "links_in_service"});
  GroupReading g;
  g.name = r.text(v, path, "name");
  g.kind = r.text(v, path, "kind");
  g.floor = r.number(v, path, "floor", 0);
  if (g.floor > 1) r.fail(path + ".floor", "must be within [0, 1], got " + json(g.floor).dump());
  g.capacity_gbps = r.number(v, path, "capacity_gbps", 0);
  g.available_gbps = r.number(v, path, "available_gbps", 0);
  g.links = static_cast<int>(r.integer(*r.field(v, path, "links", true), path + ".links", 0, INT32_MAX));
  g.links_in_service =
      static_cast<int>(r.integer(*r.field(v, path, "links_in_service", true), path + ".links_in_service", 0, g.links));
  return g;
}

IncidentReading read_incident(const Reader& r, const json& v, const std::string& path) {
  r.object(v, path);
  r.known_keys(v, path, {"id", "class", "state", "severity", "link", "device"});
  IncidentReading i;
  i.id = r.integer(*r.field(v, path, "id", true), path + ".id", 1, INT64_MAX);
  i.incident_class = r.text(v, path, "class");
  i.state = r.text(v, path, "state");
  i.severity = r.text(v, path, "severity");
  i.link = r.opt_text(v, path, "link");
  i.device = r.opt_text(v, path, "device");
  return i;
}

Result<Snapshot> decode(const json& doc, const std::string& source, bool ports_required) {
  const Reader r(source);
  try {
    if (!doc.is_object()) r.fail("$", std::string("expected a snapshot object, got ") + json_type_name(doc));
    r.known_keys(doc, "$",
                 {"version", "id", "scope", "reason", "incident_id", "action_id", "link", "taken_at", "port_count",
                  "ports", "groups", "incidents"});
    const json* version = r.field(doc, "$", "version", true);
    if (!version->is_number_integer() || version->get<int64_t>() != kFormatVersion) {
      r.fail("$.version", "unsupported version " + version->dump() + " (this build reads version 1)");
    }
    Snapshot s;
    s.id = r.opt_id(doc, "$", "id");
    s.scope = r.text(doc, "$", "scope");
    if (!valid_scope(s.scope)) r.fail("$.scope", "expected \"incident\", \"action\" or \"fabric\", got " + quote(s.scope));
    s.reason = r.text(doc, "$", "reason");
    s.incident_id = r.opt_id(doc, "$", "incident_id");
    s.action_id = r.opt_id(doc, "$", "action_id");
    s.link = r.opt_text(doc, "$", "link");
    s.taken_at = r.time(*r.field(doc, "$", "taken_at", true), "$.taken_at");
    std::optional<int64_t> port_count;
    if (const json* pc = r.field(doc, "$", "port_count", false)) port_count = r.integer(*pc, "$.port_count", 0, INT32_MAX);
    if (ports_required || doc.contains("ports")) {
      const json& ports = r.array(doc, "$", "ports");
      s.ports.reserve(ports.size());
      for (size_t i = 0; i < ports.size(); ++i) {
        s.ports.push_back(read_port(r, ports[i], "$.ports[" + std::to_string(i) + "]"));
      }
      if (port_count && *port_count != static_cast<int64_t>(s.ports.size())) {
        r.fail("$.port_count", std::to_string(*port_count) + " but $.ports has " + std::to_string(s.ports.size()) +
                                   " entries");
      }
    }
    const json& groups = r.array(doc, "$", "groups");
    for (size_t i = 0; i < groups.size(); ++i) {
      s.groups.push_back(read_group(r, groups[i], "$.groups[" + std::to_string(i) + "]"));
    }
    const json& incidents = r.array(doc, "$", "incidents");
    for (size_t i = 0; i < incidents.size(); ++i) {
      s.incidents.push_back(read_incident(r, incidents[i], "$.incidents[" + std::to_string(i) + "]"));
    }
    return s;
  } catch (const Problem& p) {
    return Error{p.message};
  }
}


}  // namespace

json to_json(const Snapshot& s) { return encode(s, true, true); }
json to_json_without_ports(const Snapshot& s) { return encode(s, false, false); }

Result<Snapshot> from_json(const json& doc, const std::string& source) { return decode(doc, source, true); }
Result<Snapshot> from_stored_json(const json& doc, const std::string& source) { return decode(doc, source, false); }

Result<Snapshot> parse_snapshot(std::string_view text, const std::string& source) {
  auto doc = parse_json(text, source);
  if (!doc) return doc.failure();
  return from_json(*doc, source);
}

std::optional<Time> parse_time(std::string_view s) { return parse_iso8601(s); }

}  // namespace medic::snapshot
