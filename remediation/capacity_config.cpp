#include "remediation/capacity_config.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "common/files.h"
#include "common/json.h"
#include "common/strings.h"

namespace medic::remediation {

using nlohmann::json;

namespace {

bool derived_kind(std::string_view kind) {
  return std::find(std::begin(kDerivedKinds), std::end(kDerivedKinds), kind) != std::end(kDerivedKinds);
}

}  // namespace

CapacityConfig CapacityConfig::parse(std::string_view text, const std::string& source) {
  auto fail = [&](const std::string& path, const std::string& what) {
    throw CapacityConfigError(source + ": " + path + ": " + what);
  };
  auto parsed = parse_json(text, source);
  if (!parsed) throw CapacityConfigError(parsed.error());
  const json doc = std::move(*parsed);
  if (!doc.is_object()) fail("$", std::string("expected an object, got ") + json_type_name(doc));
  for (const auto& [k, v] : doc.items()) {
    if (k != "version" && k != "comment" && k != "floors" && k != "budget") fail("$", "unknown key " + quote(k));
  }
  if (const auto v = doc.find("version"); v != doc.end() && (!v->is_number_integer() || *v != 1)) {
    fail("$.version", "unsupported version " + v->dump() + " (this build reads version 1)");
  }
  CapacityConfig c;
  if (const auto f = doc.find("floors"); f != doc.end()) {
    if (!f->is_object()) fail("$.floors", std::string("expected an object of group kind: floor, got ") + json_type_name(*f));
    for (const auto& [kind, v] : f->items()) {
      if (kind == "comment") continue;
      if (!derived_kind(kind)) {
        fail("$.floors", "unknown group kind " + quote(kind) + " (tor_uplinks, spine_downlinks, spine_uplinks, plane)");
      }
      if (v.is_null()) {  // not derived
        c.floors.erase(kind);
        continue;
      }
      if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() <= 1)) {
        fail("$.floors." + kind, "a floor must be a fraction in (0, 1] (or null: no such groups), got " + v.dump());
      }
      c.floors[kind] = v.get<double>();
    }
  }
  if (const auto b = doc.find("budget"); b != doc.end()) {
    if (!b->is_object()) fail("$.budget", std::string("expected an object, got ") + json_type_name(*b));
    for (const auto& [k, v] : b->items()) {
      if (k == "comment") continue;
      if (k != "fabric" && k != "per_switch") fail("$.budget", "unknown key " + quote(k) + " (fabric, per_switch)");
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 1000000) {
        fail("$.budget." + k, "expected a whole number of links in [1, 1000000], got " + v.dump());
      }
      (k == "fabric" ? c.budget_fabric : c.budget_per_switch) = static_cast<int>(v.get<int64_t>());
    }
  }
  return c;
}

CapacityConfig CapacityConfig::load_file(const std::string& path) {
  auto text = read_data_file(path);
  if (!text.ok()) throw CapacityConfigError(text.error());
  return parse(*text, path);
}

fabric::Topology with_derived_groups(const fabric::Topology& t, const CapacityConfig& config) {
  using fabric::LinkId;
  using fabric::Role;

  struct Derived {
    std::string name, kind;
    double floor = 0;
    std::vector<LinkId> links;
  };
  std::vector<Derived> derived;
  auto floor_of = [&](std::string_view kind) -> std::optional<double> {
    const auto it = config.floors.find(kind);
    if (it == config.floors.end()) return std::nullopt;
    return it->second;
  };
  auto add = [&](std::string name, std::string_view kind, std::vector<LinkId> links) {
    const auto floor = floor_of(kind);
    if (!floor || links.empty()) return;
    derived.push_back({std::move(name), std::string(kind), *floor, std::move(links)});
  };
  auto role_of = [&](fabric::PortId p) { return t.device(t.port(p).device).role; };
  std::map<int, std::vector<LinkId>> planes;
  for (fabric::DeviceId d = 0; d < t.devices().size(); ++d) {
    const auto& dev = t.device(d);
    if (dev.role != Role::rtsw && dev.role != Role::ctsw) continue;
    std::vector<LinkId> up;
    std::map<int, std::vector<LinkId>> down;  // per zone of the ToR below
    for (const fabric::PortId p : t.ports_of(d)) {
      const LinkId l = t.port(p).link;
      if (l == fabric::kNone) continue;
      const Role peer = role_of(t.peer(p));
      if (dev.role == Role::rtsw && peer == Role::ctsw) up.push_back(l);
      if (dev.role == Role::ctsw && peer == Role::rtsw) down[t.device(t.port(t.peer(p)).device).zone].push_back(l);
      if (dev.role == Role::ctsw && peer == Role::atsw) {
        up.push_back(l);
        if (dev.plane >= 0) planes[dev.plane].push_back(l);
      }
    }
    if (dev.role == Role::rtsw) add(dev.name + " uplinks", "tor_uplinks", std::move(up));
    if (dev.role == Role::ctsw) {
      for (auto& [zone, links] : down) {
        add(down.size() == 1 ? dev.name + " downlinks" : dev.name + " downlinks zone " + std::to_string(zone),
            "spine_downlinks", std::move(links));
      }
      add(dev.name + " uplinks", "spine_uplinks", std::move(up));
    }
  }
  for (auto& [plane, links] : planes) add("plane " + std::to_string(plane), "plane", std::move(links));

  // A group is its set of links: index the derived ones by name and by sorted links.
  auto sorted = [](std::vector<LinkId> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  StringMap<size_t> by_name;
  std::map<std::vector<LinkId>, size_t> by_links;
  for (size_t i = 0; i < derived.size(); ++i) {
    by_name.emplace(derived[i].name, i);
    by_links.emplace(sorted(derived[i].links), i);
  }
  std::vector<bool> merged(derived.size(), false);
  std::vector<double> floors;
  for (const auto& g : t.groups()) {
    const auto links = sorted(g.links);
    std::optional<size_t> same;
    if (const auto it = by_name.find(g.name); it != by_name.end()) {
      const Derived& d = derived[it->second];
      if (sorted(d.links) != links) {
        auto count = [](size_t n) { return std::to_string(n) + (n == 1 ? " link" : " links"); };
        throw CapacityConfigError("capacity group " + quote(g.name) + " of the topology has " + count(g.links.size()) +
                                  ", not the " + count(d.links.size()) + " of the " + d.kind +
                                  " group derived under that name: list the same links or rename it");
      }
      same = it->second;
    } else if (const auto jt = by_links.find(links); jt != by_links.end()) {
      same = jt->second;
    }
    double floor = g.floor;
    if (same) {
      merged[*same] = true;
      floor = std::max(floor, derived[*same].floor);
    }
    floors.push_back(floor);
  }

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
  for (size_t i = 0; i < t.groups().size(); ++i) {
    const auto& g = t.group(static_cast<fabric::GroupId>(i));
    check(b.add_group(g.name, g.kind, floors[i], g.links));
  }
  for (size_t i = 0; i < derived.size(); ++i) {
    if (!merged[i]) check(b.add_group(std::move(derived[i].name), derived[i].kind, derived[i].floor, std::move(derived[i].links)));
  }
  return std::move(b).build();
}

}  // namespace medic::remediation
