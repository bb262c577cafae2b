#include "telemetry/mapping.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/strings.h"

namespace medic::telemetry {

using nlohmann::json;

namespace {

std::optional<Transform> parse_transform(std::string_view s) {
  if (s == "none") return Transform::none;
  if (s == "mw_to_dbm") return Transform::mw_to_dbm;
  if (s == "ifoper_status") return Transform::ifoper_status;
  if (s == "up") return Transform::up_string;
  return std::nullopt;
}

std::optional<Aggregate> parse_aggregate(std::string_view s) {
  if (s == "last") return Aggregate::last;
  if (s == "min") return Aggregate::min;
  if (s == "max") return Aggregate::max;
  if (s == "sum") return Aggregate::sum;
  return std::nullopt;
}

double apply(const MapRule& r, double v) {
  switch (r.transform) {
    case Transform::none: break;
    case Transform::mw_to_dbm: v = v > 1e-4 ? 10.0 * std::log10(v) : -40.0; break;
    case Transform::ifoper_status: v = v == 1.0 ? 1.0 : 0.0; break;
    case Transform::up_string: v = v != 0.0 ? 1.0 : 0.0; break;
  }
  return v * r.scale;
}

}  // namespace

CounterMap CounterMap::parse(std::string_view text, const std::string& source) {
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    throw CounterMapError(source + ": invalid JSON: " + e.what());
  }
  auto fail = [&](const std::string& path, const std::string& what) {
    throw CounterMapError(source + ": " + path + ": " + what);
  };
  if (!doc.is_object()) fail("$", "expected an object");
  for (const auto& [k, v] : doc.items()) {
    if (k != "version" && k != "prometheus" && k != "comment") fail("$", "unknown key " + quote(k));
  }
  CounterMap m;
  const auto it = doc.find("prometheus");
  if (it == doc.end() || !it->is_array()) fail("$.prometheus", "expected an array of rules");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& r = (*it)[i];
    const std::string path = "$.prometheus[" + std::to_string(i) + "]";
    if (!r.is_object()) fail(path, "expected an object");
    for (const auto& [k, v] : r.items()) {
      if (k != "metric" && k != "counter" && k != "port_label" && k != "match" && k != "scale" &&
          k != "transform" && k != "aggregate" && k != "comment") {
        fail(path, "unknown key " + quote(k));
      }
    }
    auto str = [&](const char* key, bool required) -> std::string {
      const auto f = r.find(key);
      if (f == r.end()) {
        if (required) fail(path, std::string("missing required key \"") + key + "\"");
        return "";
      }
      if (!f->is_string()) fail(path + "." + key, "expected a string");
      return f->get<std::string>();
    };
    MapRule rule;
    const std::string metric = str("metric", true);
    const std::string counter = str("counter", true);
    rule.port_label = str("port_label", true);
    const auto c = parse_counter(counter);
    if (!c) fail(path + ".counter", "unknown canonical counter " + quote(counter));
    rule.counter = *c;
    if (const std::string t = str("transform", false); !t.empty()) {
      const auto tr = parse_transform(t);
      if (!tr) fail(path + ".transform", "unknown transform " + quote(t) + " (none, mw_to_dbm, ifoper_status, up)");
      rule.transform = *tr;
    }
    if (const std::string a = str("aggregate", false); !a.empty()) {
      const auto ag = parse_aggregate(a);
      if (!ag) fail(path + ".aggregate", "unknown aggregate " + quote(a) + " (last, min, max, sum)");
      rule.aggregate = *ag;
    }
    if (const auto s = r.find("scale"); s != r.end()) {
      if (!s->is_number() || !std::isfinite(s->get<double>())) fail(path + ".scale", "expected a finite number");
      rule.scale = s->get<double>();
    }
    if (const auto mt = r.find("match"); mt != r.end()) {
      if (!mt->is_object()) fail(path + ".match", "expected an object of label: value");
      for (const auto& [k, v] : mt->items()) {
        if (!v.is_string()) fail(path + ".match." + k, "expected a string");
        rule.match.emplace_back(k, v.get<std::string>());
      }
    }
    m.prom_[metric].push_back(std::move(rule));
  }
  return m;
}

CounterMap CounterMap::load_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CounterMapError(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

const std::vector<MapRule>* CounterMap::prometheus(std::string_view metric) const {
  const auto it = prom_.find(metric);
  return it == prom_.end() ? nullptr : &it->second;
}

class ScrapeMapper::Sink final : public PromSink {
 public:
  Sink(ScrapeMapper& m, fabric::DeviceId device, Time time, std::vector<PortSample>& out, MapStats& st)
      : m_(m), device_(device), time_(time), out_(out), st_(st), base_(out.size()) {}

  void on_sample(const PromSample& s) override {
    ++st_.samples;
    if (s.type == MetricType::histogram || s.type == MetricType::summary) {
      ++st_.skipped;
      return;
    }
    const auto* rules = m_.map_.prometheus(s.name);
    if (rules == nullptr) {
      ++st_.unmapped;
      return;
    }
    for (const MapRule& r : *rules) {
      bool matches = true;
      for (const auto& [k, v] : r.match) {
        const auto* lv = s.label(k);
        if (lv == nullptr || *lv != v) {
          matches = false;
          break;
        }
      }
      if (!matches) continue;
      const std::string_view* port_name = s.label(r.port_label);
      if (port_name == nullptr) {
        ++st_.unknown_port;
        continue;
      }
      const auto port = m_.topology_.find_port(device_, *port_name);
      if (!port) {
        ++st_.unknown_port;
        continue;
      }
      int32_t& slot = m_.slot_[*port];
      if (slot < 0) {
        slot = static_cast<int32_t>(out_.size());
        out_.emplace_back();
        out_.back().port = *port;
        out_.back().time = time_;
      }
      PortSample& ps = out_[static_cast<size_t>(slot)];
      const double v = apply(r, s.value);
      if (ps.has(r.counter)) {
        double& cur = ps.v[static_cast<size_t>(r.counter)];
        switch (r.aggregate) {
          case Aggregate::last: cur = v; break;
          case Aggregate::min: cur = std::min(cur, v); break;
          case Aggregate::max: cur = std::max(cur, v); break;
          case Aggregate::sum: cur += v; break;
        }
      } else {
        ps.set(r.counter, v);
      }
      ++st_.mapped;
    }
  }

  void reset_slots() {
    for (size_t i = base_; i < out_.size(); ++i) m_.slot_[out_[i].port] = -1;
  }

 private:
  ScrapeMapper& m_;
  fabric::DeviceId device_;
  Time time_;
  std::vector<PortSample>& out_;
  MapStats& st_;
  size_t base_;
};

ScrapeMapper::ScrapeMapper(const fabric::Topology& topology, const CounterMap& map)
    : topology_(topology), map_(map), slot_(topology.ports().size(), -1) {}

Status ScrapeMapper::map_prometheus(fabric::DeviceId device, std::string_view body, Time time,
                                    std::vector<PortSample>& out, MapStats* stats) {
  MapStats local;
  const size_t before = out.size();
  Sink sink(*this, device, time, out, local);
  Status st = parser_.parse(body, sink);
  sink.reset_slots();
  if (!st.ok()) {
    out.resize(before);
    return st;
  }
  if (stats != nullptr) {
    stats->samples += local.samples;
    stats->mapped += local.mapped;
    stats->unmapped += local.unmapped;
    stats->unknown_port += local.unknown_port;
    stats->skipped += local.skipped;
  }
  return st;
}

}  // namespace medic::telemetry
