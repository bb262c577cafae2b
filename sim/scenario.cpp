#include "sim/scenario.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/strings.h"

namespace medic::sim {

using nlohmann::json;

std::vector<LinkEvent> Scenario::events() const {
  std::vector<LinkEvent> out;
  for (const Fault& f : faults) {
    if (f.kind == FaultKind::flap) {
      for (int i = 0; i < f.count; ++i) {
        const double t = f.at_s + i * f.period_s;
        out.push_back({t, f.link, false});
        out.push_back({t + f.down_s, f.link, true});
      }
    } else {
      out.push_back({f.at_s, f.link, false});
      if (f.duration_s > 0) out.push_back({f.at_s + f.duration_s, f.link, true});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const LinkEvent& a, const LinkEvent& b) { return a.at_s < b.at_s; });
  return out;
}

Scenario parse_scenario(std::string_view text, const std::string& source, const fabric::Topology& topology) {
  auto fail = [&](const std::string& path, const std::string& what) -> void {
    throw ScenarioError(source + ": " + path + ": " + what);
  };
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    throw ScenarioError(source + ": invalid JSON: " + e.what());
  }
  if (!doc.is_object()) fail("$", "expected an object with \"faults\"");
  for (const auto& [k, v] : doc.items()) {
    if (k != "faults" && k != "comment") fail("$", "unknown key " + quote(k));
  }
  const auto arr = doc.find("faults");
  if (arr == doc.end() || !arr->is_array()) fail("$.faults", "expected an array of faults");
  Scenario s;
  for (size_t i = 0; i < arr->size(); ++i) {
    const json& f = (*arr)[i];
    const std::string path = "$.faults[" + std::to_string(i) + "]";
    if (!f.is_object()) fail(path, "expected an object");
    for (const auto& [k, v] : f.items()) {
      if (k != "kind" && k != "link" && k != "at_s" && k != "count" && k != "period_s" &&
          k != "down_s" && k != "duration_s" && k != "comment") {
        fail(path, "unknown key " + quote(k));
      }
    }
    auto num = [&](const char* key, double def, bool required) {
      const auto it = f.find(key);
      if (it == f.end()) {
        if (required) fail(path, std::string("missing required key \"") + key + "\"");
        return def;
      }
      if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
        fail(path + "." + key, "expected a non-negative number, got " + it->dump());
      }
      return it->get<double>();
    };
    Fault fault;
    const auto kind = f.find("kind");
    if (kind == f.end() || !kind->is_string()) fail(path + ".kind", "expected \"flap\" or \"down\"");
    if (*kind == "flap") {
      fault.kind = FaultKind::flap;
    } else if (*kind == "down") {
      fault.kind = FaultKind::down;
    } else {
      fail(path + ".kind", "unknown fault kind " + kind->dump() + " (expected flap or down)");
    }
    const auto link = f.find("link");
    if (link == f.end() || !link->is_string()) fail(path + ".link", "expected a link name or \"device:port\"");
    const auto id = topology.find_link(link->get<std::string>());
    if (!id) fail(path + ".link", "unknown link " + quote(link->get<std::string>()));
    fault.link = *id;
    fault.at_s = num("at_s", 0, true);
    if (fault.kind == FaultKind::flap) {
      const double count = num("count", 1, true);
      if (count < 1 || count > 100000 || count != std::floor(count)) {
        fail(path + ".count", "expected a whole number of flaps from 1 to 100000");
      }
      fault.count = static_cast<int>(count);
      fault.period_s = num("period_s", 1.0, false);
      fault.down_s = num("down_s", std::min(0.2, fault.period_s / 2), false);
      if (fault.period_s <= 0) fail(path + ".period_s", "must be positive");
      if (fault.down_s <= 0 || fault.down_s >= fault.period_s) {
        fail(path + ".down_s", "must be positive and shorter than period_s");
      }
    } else {
      fault.duration_s = num("duration_s", 0, false);
    }
    s.faults.push_back(fault);
  }
  return s;
}

Scenario load_scenario_file(const std::string& path, const fabric::Topology& topology) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ScenarioError(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_scenario(ss.str(), path, topology);
}

}  // namespace medic::sim
