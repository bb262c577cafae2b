#include "fabric/loader.h"

#include <arpa/inet.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/files.h"
#include "common/json.h"
#include "common/url.h"
#include "common/strings.h"

namespace medic::fabric {

using nlohmann::json;

namespace {

std::string join_problems(const std::vector<std::string>& problems) {
  constexpr size_t kShown = 20;
  std::string out;
  for (size_t i = 0; i < problems.size() && i < kShown; ++i) {
    if (i) out += '\n';
    out += problems[i];
  }
  if (problems.size() > kShown) {
    out += "\n... and " + std::to_string(problems.size() - kShown) + " more problems";
  }
  return out;
}

// Walks the document collecting problems; stops adding after a generous cap so a wholly
// wrong file does not print a million lines.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  void problem(const std::string& path, const std::string& what) {
    if (problems_.size() < 1000) problems_.push_back(source_ + ": " + path + ": " + what);
  }
  bool failed() const { return !problems_.empty(); }
  std::vector<std::string> take() { return std::move(problems_); }

  // Unknown keys are errors: a typo such as "capcity_groups" must not be silently ignored.
  void known_keys(const json& obj, const std::string& path, std::initializer_list<const char*> keys) {
    for (const auto& [k, v] : obj.items()) {
      bool found = false;
      for (const char* key : keys) found = found || k == key;
      if (!found) problem(path, "unknown key " + quote(k));
    }
  }

  const json* field(const json& obj, const std::string& path, const char* key, bool required) {
    const auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) problem(path, std::string("missing required key \"") + key + "\"");
      return nullptr;
    }
    return &*it;
  }

  std::optional<std::string> string_field(const json& obj, const std::string& path,
                                          const char* key, bool required) {
    const json* v = field(obj, path, key, required);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) {
      problem(path + "." + key, std::string("expected a string, got ") + json_type_name(*v));
      return std::nullopt;
    }
    return v->get<std::string>();
  }

  // Optional integer; null means "not set".
  std::optional<int> int_field(const json& obj, const std::string& path, const char* key,
                               int min_value) {
    const json* v = field(obj, path, key, false);
    if (v == nullptr || v->is_null()) return std::nullopt;
    if (!v->is_number_integer()) {
      problem(path + "." + key, std::string("expected an integer, got ") + json_type_name(*v));
      return std::nullopt;
    }
    const auto n = v->get<int64_t>();
    if (n < min_value || n > 1000000) {
      problem(path + "." + key, "out of range: " + std::to_string(n));
      return std::nullopt;
    }
    return static_cast<int>(n);
  }

  std::optional<double> number_field(const json& obj, const std::string& path, const char* key) {
    const json* v = field(obj, path, key, true);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number()) {
      problem(path + "." + key, std::string("expected a number, got ") + json_type_name(*v));
      return std::nullopt;
    }
    return v->get<double>();
  }

  const json* array_field(const json& obj, const std::string& path, const char* key, bool required) {
    const json* v = field(obj, path, key, required);
    if (v == nullptr) return nullptr;
    if (!v->is_array()) {
      problem(path + "." + key, std::string("expected an array, got ") + json_type_name(*v));
      return nullptr;
    }
    return v;
  }

 private:
  std::string source_;
  std::vector<std::string> problems_;
};

struct EndpointRef {
  std::string device;
  std::string port;
};

std::optional<EndpointRef> parse_endpoint(std::string_view s) {
  const size_t colon = s.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == s.size()) return std::nullopt;
  return EndpointRef{std::string(s.substr(0, colon)), std::string(s.substr(colon + 1))};
}

// "probe": {"source": "local" | "netns:NAME", "reflector_port": 862}
void read_probe(Reader& r, const json& obj, const std::string& path, Device& d) {
  const json* p = r.field(obj, path, "probe", false);
  if (p == nullptr) return;
  const std::string ppath = path + ".probe";
  if (!p->is_object()) {
    r.problem(ppath, std::string("expected an object, got ") + json_type_name(*p));
    return;
  }
  r.known_keys(*p, ppath, {"source", "reflector_port"});
  if (const auto src = r.string_field(*p, ppath, "source", false)) {
    if (*src != "local" && (src->rfind("netns:", 0) != 0 || src->size() == 6)) {
      r.problem(ppath + ".source", "expected \"local\" or \"netns:NAME\", got " + quote(*src));
    } else {
      d.probe_source = *src;
    }
  }
  if (const auto port = r.int_field(*p, ppath, "reflector_port", 0)) {
    if (*port > 65535) {
      r.problem(ppath + ".reflector_port", "out of range: " + std::to_string(*port));
    } else {
      d.reflector_port = static_cast<uint16_t>(*port);
    }
  }
}

bool valid_ip(const std::string& s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

// A telemetry or drain API URL medicd can use: http:// or https:// with a host. Anything
// else (ftp://, file://, a bare host) would only fail later, at every poll. A switch's
// counters may also be polled over SNMP (`snmp_ok`): snmp://HOST[:PORT].
void check_url(Reader& r, const std::string& path, const std::string& url, bool snmp_ok = false) {
  if (snmp_ok && is_snmp_url(url)) {
    if (auto a = parse_snmp_url(url); !a.ok()) r.problem(path, a.error());
    return;
  }
  const size_t sep = url.find("://");
  const std::string scheme = sep == std::string::npos ? "" : url.substr(0, sep);
  if (scheme != "http" && scheme != "https") {
    r.problem(path, "URL " + quote(url, 200) + (snmp_ok ? " is not http://, https:// or snmp://" : " is not http:// or https://"));
  } else if (sep + 3 >= url.size() || url[sep + 3] == '/') {
    r.problem(path, "URL " + quote(url, 200) + " has no host");
  }
}

void read_switches(Reader& r, const json& doc, Topology::Builder& b) {
  const json* arr = r.array_field(doc, "$", "switches", true);
  if (arr == nullptr) return;
  for (size_t i = 0; i < arr->size(); ++i) {
    const json& s = (*arr)[i];
    const std::string path = "$.switches[" + std::to_string(i) + "]";
    if (!s.is_object()) {
      r.problem(path, std::string("expected an object, got ") + json_type_name(s));
      continue;
    }
    r.known_keys(s, path, {"name", "role", "zone", "plane", "telemetry", "driver", "probe"});
    Device d;
    const auto name = r.string_field(s, path, "name", true);
    const auto role = r.string_field(s, path, "role", true);
    const auto telemetry = r.string_field(s, path, "telemetry", true);
    const auto zone = r.int_field(s, path, "zone", 0);
    const auto plane = r.int_field(s, path, "plane", 0);
    if (!name || !role) continue;
    const auto parsed_role = parse_role(*role);
    if (!parsed_role || *parsed_role == Role::host) {
      r.problem(path + ".role", "unknown role " + quote(*role) + " (expected rtsw, ctsw or atsw)");
      continue;
    }
    d.name = *name;
    d.role = *parsed_role;
    d.zone = zone.value_or(-1);
    d.plane = plane.value_or(-1);
    d.telemetry_url = telemetry.value_or("");
    if (telemetry) check_url(r, path + ".telemetry", *telemetry, true);
    read_probe(r, s, path, d);
    if (const json* drv = r.field(s, path, "driver", true)) {
      const std::string dpath = path + ".driver";
      if (!drv->is_object()) {
        r.problem(dpath, std::string("expected an object, got ") + json_type_name(*drv));
      } else {
        r.known_keys(*drv, dpath, {"kind", "url"});
        const auto kind = r.string_field(*drv, dpath, "kind", true);
        const auto url = r.string_field(*drv, dpath, "url", false);
        if (kind) {
          if (*kind != "jsonrpc" && *kind != "dryrun" && *kind != "netns") {
            r.problem(dpath + ".kind",
                      "unknown driver kind " + quote(*kind) + " (expected jsonrpc, netns or dryrun)");
          } else if (*kind == "jsonrpc" && (!url || url->empty())) {
            r.problem(dpath, "driver kind \"jsonrpc\" needs a \"url\"");
          }
          d.driver_kind = *kind;
        }
        d.driver_url = url.value_or("");
        if (url && !url->empty() && kind && *kind == "jsonrpc") check_url(r, dpath + ".url", *url);
      }
    }
    if (auto err = b.add_device(std::move(d)); !err.empty()) r.problem(path + ".name", err);
  }
}

void read_hosts(Reader& r, const json& doc, Topology::Builder& b) {
  const json* arr = r.array_field(doc, "$", "hosts", false);
  if (arr == nullptr) return;
  for (size_t i = 0; i < arr->size(); ++i) {
    const json& h = (*arr)[i];
    const std::string path = "$.hosts[" + std::to_string(i) + "]";
    if (!h.is_object()) {
      r.problem(path, std::string("expected an object, got ") + json_type_name(h));
      continue;
    }
    r.known_keys(h, path, {"name", "zone", "nics", "telemetry", "probe"});
    const auto name = r.string_field(h, path, "name", true);
    const auto zone = r.int_field(h, path, "zone", 0);
    const auto telemetry = r.string_field(h, path, "telemetry", false);
    const json* nics = r.array_field(h, path, "nics", true);
    if (!name) continue;
    Device d;
    d.name = *name;
    d.role = Role::host;
    d.zone = zone.value_or(-1);
    d.telemetry_url = telemetry.value_or("");
    if (telemetry && !telemetry->empty()) check_url(r, path + ".telemetry", *telemetry);
    read_probe(r, h, path, d);
    if (auto err = b.add_device(std::move(d)); !err.empty()) {
      r.problem(path + ".name", err);
      continue;
    }
    if (nics == nullptr) continue;
    std::set<std::string> seen;
    for (size_t j = 0; j < nics->size(); ++j) {
      const json& n = (*nics)[j];
      const std::string npath = path + ".nics[" + std::to_string(j) + "]";
      if (!n.is_string() || n.get<std::string>().empty()) {
        r.problem(npath, std::string("expected a NIC name, got ") + json_type_name(n));
        continue;
      }
      if (!seen.insert(n.get<std::string>()).second) {
        r.problem(npath, "duplicate NIC " + quote(n.get<std::string>()) + " on host " + quote(*name));
        continue;
      }
      if (auto err = b.add_port(*name, n.get<std::string>()); !err.empty()) r.problem(npath, err);
    }
  }
}

void read_links(Reader& r, const json& doc, Topology::Builder& b) {
  const json* arr = r.array_field(doc, "$", "links", true);
  if (arr == nullptr) return;
  for (size_t i = 0; i < arr->size(); ++i) {
    const json& l = (*arr)[i];
    const std::string path = "$.links[" + std::to_string(i) + "]";
    if (!l.is_object()) {
      r.problem(path, std::string("expected an object, got ") + json_type_name(l));
      continue;
    }
    r.known_keys(l, path, {"a", "b", "speed_gbps", "name", "optic", "a_ip", "b_ip"});
    const auto a = r.string_field(l, path, "a", true);
    const auto bb = r.string_field(l, path, "b", true);
    const auto name = r.string_field(l, path, "name", false);
    const auto optic = r.string_field(l, path, "optic", false);
    const auto a_ip = r.string_field(l, path, "a_ip", false);
    const auto b_ip = r.string_field(l, path, "b_ip", false);
    bool ips_ok = true;
    for (const auto& [ip, key] : {std::pair{&a_ip, "a_ip"}, std::pair{&b_ip, "b_ip"}}) {
      if (*ip && !valid_ip(**ip)) {
        r.problem(path + "." + key, "not an IPv4 or IPv6 address: " + quote(**ip));
        ips_ok = false;
      }
    }
    if (!ips_ok) continue;
    const auto speed = r.number_field(l, path, "speed_gbps");
    if (!a || !bb || !speed) continue;
    if (!(*speed > 0) || !std::isfinite(*speed)) {
      r.problem(path + ".speed_gbps", "speed must be a positive number of Gb/s, got " + l["speed_gbps"].dump());
      continue;
    }
    if (*speed > kMaxLinkSpeedGbps) {
      r.problem(path + ".speed_gbps", "speed must be at most " + std::to_string(static_cast<int64_t>(kMaxLinkSpeedGbps)) +
                                          " Gb/s (100 Tb/s), got " + l["speed_gbps"].dump());
      continue;
    }
    bool ends_ok = true;
    std::optional<EndpointRef> ends[2];
    const std::string* texts[2] = {&*a, &*bb};
    const char* keys[2] = {"a", "b"};
    const auto& topo = b.partial();
    for (int e = 0; e < 2; ++e) {
      ends[e] = parse_endpoint(*texts[e]);
      const std::string epath = path + "." + keys[e];
      if (!ends[e]) {
        r.problem(epath, "endpoint " + quote(*texts[e]) + " is not written \"device:port\"");
        ends_ok = false;
        continue;
      }
      const auto dev = topo.find_device(ends[e]->device);
      if (!dev) {
        r.problem(epath, "unknown switch " + quote(ends[e]->device) + " (no switch or host has that name)");
        ends_ok = false;
        continue;
      }
      if (!topo.device(*dev).is_switch() && !topo.find_port(*dev, ends[e]->port)) {
        r.problem(epath, "host " + quote(ends[e]->device) + " has no NIC " + quote(ends[e]->port));
        ends_ok = false;
      }
    }
    if (!ends_ok) continue;
    const std::string err = b.add_link(ends[0]->device, ends[0]->port, ends[1]->device,
                                       ends[1]->port, *speed, name.value_or(""), optic.value_or(""),
                                       a_ip.value_or(""), b_ip.value_or(""));
    if (!err.empty()) r.problem(path, err);
  }
}

void read_groups(Reader& r, const json& doc, Topology::Builder& b) {
  const json* arr = r.array_field(doc, "$", "capacity_groups", false);
  if (arr == nullptr) return;
  for (size_t i = 0; i < arr->size(); ++i) {
    const json& g = (*arr)[i];
    const std::string path = "$.capacity_groups[" + std::to_string(i) + "]";
    if (!g.is_object()) {
      r.problem(path, std::string("expected an object, got ") + json_type_name(g));
      continue;
    }
    r.known_keys(g, path, {"name", "kind", "floor", "links"});
    const auto name = r.string_field(g, path, "name", true);
    const auto kind = r.string_field(g, path, "kind", false);
    const auto floor = r.number_field(g, path, "floor");
    const json* links = r.array_field(g, path, "links", true);
    if (floor && !(*floor > 0.0 && *floor <= 1.0)) {
      r.problem(path + ".floor", "floor must be a fraction in (0, 1], got " + g["floor"].dump());
      continue;
    }
    if (!name || !floor || links == nullptr) continue;
    std::vector<LinkId> ids;
    bool ok = true;
    for (size_t j = 0; j < links->size(); ++j) {
      const json& ref = (*links)[j];
      const std::string lpath = path + ".links[" + std::to_string(j) + "]";
      if (!ref.is_string()) {
        r.problem(lpath, std::string("expected a link name or \"device:port\", got ") + json_type_name(ref));
        ok = false;
        continue;
      }
      const auto id = b.partial().find_link(ref.get<std::string>());
      if (!id) {
        r.problem(lpath, "unknown link " + quote(ref.get<std::string>()));
        ok = false;
        continue;
      }
      ids.push_back(*id);
    }
    if (!ok) continue;
    if (auto err = b.add_group(*name, kind.value_or("custom"), *floor, std::move(ids)); !err.empty()) {
      r.problem(path, err);
    }
  }
}

}  // namespace

TopologyError::TopologyError(std::vector<std::string> problems)
    : std::runtime_error(join_problems(problems)), problems_(std::move(problems)) {}

Topology parse_topology(std::string_view text, const std::string& source) {
  auto parsed = parse_json(text, source);
  if (!parsed) throw TopologyError({parsed.error()});
  json doc = std::move(*parsed);
  Reader r(source);
  if (!doc.is_object()) {
    r.problem("$", std::string("expected an object with \"switches\" and \"links\", got ") + json_type_name(doc));
    throw TopologyError(r.take());
  }
  r.known_keys(doc, "$", {"version", "switches", "hosts", "links", "capacity_groups"});
  if (const auto v = doc.find("version"); v != doc.end() && (!v->is_number_integer() || v->get<int>() != 1)) {
    r.problem("$.version", "unsupported version " + v->dump() + " (this build reads version 1)");
  }
  Topology::Builder b;
  read_switches(r, doc, b);
  read_hosts(r, doc, b);
  read_links(r, doc, b);
  read_groups(r, doc, b);
  if (r.failed()) throw TopologyError(r.take());
  return std::move(b).build();
}

Topology load_topology_file(const std::string& path) {
  auto text = read_data_file(path);
  if (!text.ok()) throw TopologyError({text.error()});
  return parse_topology(*text, path);
}

json topology_to_json(const Topology& t) {
  json switches = json::array();
  json hosts = json::array();
  for (DeviceId d = 0; d < t.devices().size(); ++d) {
    const Device& dev = t.device(d);
    if (dev.is_switch()) {
      json s = {{"name", dev.name}, {"role", std::string(to_string(dev.role))}};
      if (dev.zone >= 0) s["zone"] = dev.zone;
      if (dev.plane >= 0) s["plane"] = dev.plane;
      s["telemetry"] = dev.telemetry_url;
      json drv = {{"kind", dev.driver_kind}};
      if (!dev.driver_url.empty()) drv["url"] = dev.driver_url;
      s["driver"] = std::move(drv);
      if (!dev.probe_source.empty() || dev.reflector_port != 0) {
        json p = json::object();
        if (!dev.probe_source.empty()) p["source"] = dev.probe_source;
        if (dev.reflector_port != 0) p["reflector_port"] = dev.reflector_port;
        s["probe"] = std::move(p);
      }
      switches.push_back(std::move(s));
    } else {
      json h = {{"name", dev.name}};
      if (dev.zone >= 0) h["zone"] = dev.zone;
      json nics = json::array();
      for (const PortId p : t.ports_of(d)) nics.push_back(t.port(p).name);
      h["nics"] = std::move(nics);
      if (!dev.telemetry_url.empty()) h["telemetry"] = dev.telemetry_url;
      if (!dev.probe_source.empty() || dev.reflector_port != 0) {
        json p = json::object();
        if (!dev.probe_source.empty()) p["source"] = dev.probe_source;
        if (dev.reflector_port != 0) p["reflector_port"] = dev.reflector_port;
        h["probe"] = std::move(p);
      }
      hosts.push_back(std::move(h));
    }
  }
  json links = json::array();
  for (const Link& l : t.links()) {
    json j = {{"a", t.endpoint_name(l.a)}, {"b", t.endpoint_name(l.b)}, {"speed_gbps", l.speed_gbps}};
    const std::string default_name = t.endpoint_name(l.a) + "--" + t.endpoint_name(l.b);
    if (l.name != default_name) j["name"] = l.name;
    if (!l.optic.empty()) j["optic"] = l.optic;
    if (!t.port(l.a).ip.empty()) j["a_ip"] = t.port(l.a).ip;
    if (!t.port(l.b).ip.empty()) j["b_ip"] = t.port(l.b).ip;
    links.push_back(std::move(j));
  }
  json groups = json::array();
  for (const CapacityGroup& g : t.groups()) {
    json ls = json::array();
    for (const LinkId l : g.links) ls.push_back(t.endpoint_name(t.link(l).a));
    groups.push_back({{"name", g.name}, {"kind", g.kind}, {"floor", g.floor}, {"links", std::move(ls)}});
  }
  return {{"version", 1},
          {"switches", std::move(switches)},
          {"hosts", std::move(hosts)},
          {"links", std::move(links)},
          {"capacity_groups", std::move(groups)}};
}

}  // namespace medic::fabric
