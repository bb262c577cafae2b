#include "remediation/capacity_config.h"

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "common/json.h"
#include "common/strings.h"

namespace medic::remediation {

using nlohmann::json;

CapacityConfig CapacityConfig::parse(std::string_view text, const std::string& source) {
  auto fail = [&](const std::string& path, const std::string& what) {
    throw CapacityConfigError(source + ": " + path + ": " + what);
  };
  auto parsed = parse_json(text, source);
  if (!parsed) throw CapacityConfigError(parsed.error());
  const json doc = std::move(*parsed);
  if (!doc.is_object()) fail("$", "expected an object");
  for (const auto& [k, v] : doc.items()) {
    if (k != "version" && k != "comment" && k != "floors" && k != "budget") fail("$", "unknown key " + quote(k));
  }
  CapacityConfig c;
  if (const auto f = doc.find("floors"); f != doc.end()) {
    if (!f->is_object()) fail("$.floors", "expected an object of group kind: floor");
    c.floors.clear();
    for (const auto& [kind, v] : f->items()) {
      if (kind == "comment") continue;
      if (kind != "tor_uplinks" && kind != "spine_downlinks" && kind != "spine_uplinks" && kind != "plane") {
        fail("$.floors", "unknown group kind " + quote(kind) + " (tor_uplinks, spine_downlinks, spine_uplinks, plane)");
      }
      if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() <= 1)) {
        fail("$.floors." + kind, "a floor must be a fraction in (0, 1], got " + v.dump());
      }
      c.floors[kind] = v.get<double>();
    }
  }
  if (const auto b = doc.find("budget"); b != doc.end()) {
    if (!b->is_object()) fail("$.budget", "expected an object");
    for (const auto& [k, v] : b->items()) {
      if (k == "comment") continue;
      if (k != "fabric" && k != "per_switch") fail("$.budget", "unknown key " + quote(k));
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 1000000) {
        fail("$.budget." + k, "expected a whole number of links from 1, got " + v.dump());
      }
      (k == "fabric" ? c.budget_fabric : c.budget_per_switch) = static_cast<int>(v.get<int64_t>());
    }
  }
  return c;
}

CapacityConfig CapacityConfig::load_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CapacityConfigError(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

fabric::Topology with_derived_groups(const fabric::Topology& t, const CapacityConfig& config) {
  using fabric::Role;
  fabric::Topology::Builder b;
  auto check = [](const std::string& err) {
    if (!err.empty()) throw std::logic_error("rebuilding the topology: " + err);
  };
  for (const auto& d : t.devices()) check(b.add_device(d));
  // Ports in id order first, so every id stays what it was.
  for (fabric::PortId p = 0; p < t.ports().size(); ++p) check(b.add_port(t.device(t.port(p).device).name, t.port(p).name));
  for (const auto& l : t.links()) {
    const auto& a = t.port(l.a);
    const auto& bb = t.port(l.b);
    check(b.add_link(t.device(a.device).name, a.name, t.device(bb.device).name, bb.name, l.speed_gbps, l.name, l.optic,
                     a.ip, bb.ip));
  }
  for (const auto& g : t.groups()) check(b.add_group(g.name, g.kind, g.floor, g.links));

  auto role_of = [&](fabric::PortId p) { return t.device(t.port(p).device).role; };
  auto floor_of = [&](std::string_view kind) -> std::optional<double> {
    const auto it = config.floors.find(kind);
    if (it == config.floors.end()) return std::nullopt;
    return it->second;
  };
  auto add = [&](const std::string& name, std::string_view kind, std::vector<fabric::LinkId> links) {
    const auto floor = floor_of(kind);
    if (!floor || links.empty() || t.find_group(name)) return;
    check(b.add_group(name, std::string(kind), *floor, std::move(links)));
  };
  std::map<int, std::vector<fabric::LinkId>> planes;
  for (fabric::DeviceId d = 0; d < t.devices().size(); ++d) {
    const auto& dev = t.device(d);
    std::vector<fabric::LinkId> up;
    std::map<int, std::vector<fabric::LinkId>> down;  // per zone of the ToR below
    for (const fabric::PortId p : t.ports_of(d)) {
      const fabric::LinkId l = t.port(p).link;
      if (l == fabric::kNone) continue;
      const Role peer = role_of(t.peer(p));
      if (dev.role == Role::rtsw && peer == Role::ctsw) up.push_back(l);
      if (dev.role == Role::ctsw && peer == Role::rtsw) down[t.device(t.port(t.peer(p)).device).zone].push_back(l);
      if (dev.role == Role::ctsw && peer == Role::atsw) {
        up.push_back(l);
        if (dev.plane >= 0) planes[dev.plane].push_back(l);
      }
    }
    if (dev.role == Role::rtsw) add(dev.name + " uplinks", "tor_uplinks", up);
    if (dev.role == Role::ctsw) {
      for (auto& [zone, links] : down) {
        add(down.size() == 1 ? dev.name + " downlinks" : dev.name + " downlinks zone " + std::to_string(zone),
            "spine_downlinks", std::move(links));
      }
      add(dev.name + " uplinks", "spine_uplinks", up);
    }
  }
  for (auto& [plane, links] : planes) add("plane " + std::to_string(plane), "plane", std::move(links));
  return std::move(b).build();
}

}  // namespace medic::remediation
