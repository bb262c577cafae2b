#include "telemetry/mapping.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/files.h"
#include "common/json.h"
#include "common/strings.h"
#include "telemetry/openconfig.h"

namespace medic::telemetry {

using nlohmann::json;

namespace {

std::optional<Transform> parse_transform(std::string_view s) {
  if (s == "none") return Transform::none;
  if (s == "mw_to_dbm") return Transform::mw_to_dbm;
  if (s == "ifoper_status") return Transform::ifoper_status;
  if (s == "up") return Transform::up_string;
  if (s == "oc_oper_status") return Transform::oc_oper_status;
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
    case Transform::oc_oper_status: break;  // applied to the text, before this
  }
  return v * r.scale;
}

}  // namespace

namespace {

enum class Section : uint8_t { prometheus, openconfig, snmp };

// Reads one rule array ("prometheus" keyed by metric, "openconfig" keyed by path, "snmp"
// keyed by MIB object, each interface named by its ifName).
void read_rules(const json& doc, const char* section, Section kind, const std::string& source,
                StringMap<std::vector<MapRule>>& into) {
  const bool is_prom = kind == Section::prometheus;
  auto fail = [&](const std::string& path, const std::string& what) {
    throw CounterMapError(source + ": " + path + ": " + what);
  };
  const auto it = doc.find(section);
  if (it == doc.end()) {
    if (is_prom) fail(std::string("$.") + section, "expected an array of rules");
    return;
  }
  if (!it->is_array()) fail(std::string("$.") + section, "expected an array of rules");
  const char* key_name = is_prom ? "metric" : kind == Section::snmp ? "object" : "path";
  for (size_t i = 0; i < it->size(); ++i) {
    const json& r = (*it)[i];
    const std::string path = std::string("$.") + section + "[" + std::to_string(i) + "]";
    if (!r.is_object()) fail(path, "expected an object");
    for (const auto& [k, v] : r.items()) {
      const bool common = k == key_name || k == "counter" || k == "scale" || k == "transform" ||
                          k == "aggregate" || k == "comment";
      const bool prom_only = is_prom && (k == "port_label" || k == "match");
      if (!common && !prom_only) fail(path, "unknown key " + quote(k));
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
    const std::string name = str(key_name, true);
    const std::string counter = str("counter", true);
    if (is_prom) rule.port_label = str("port_label", true);
    if (kind == Section::snmp) rule.port_label = "ifName";
    const auto c = parse_counter(counter);
    if (!c) fail(path + ".counter", "unknown canonical counter " + quote(counter));
    rule.counter = *c;
    if (const std::string t = str("transform", false); !t.empty()) {
      const auto tr = parse_transform(t);
      if (!tr) {
        fail(path + ".transform",
             "unknown transform " + quote(t) + " (none, mw_to_dbm, ifoper_status, up, oc_oper_status)");
      }
      rule.transform = *tr;
    }
    if (const std::string a = str("aggregate", false); !a.empty()) {
      const auto ag = parse_aggregate(a);
      if (!ag) fail(path + ".aggregate", "unknown aggregate " + quote(a) + " (last, min, max, sum)");
      rule.aggregate = *ag;
    }
    if (const auto sc = r.find("scale"); sc != r.end()) {
      if (!sc->is_number() || !std::isfinite(sc->get<double>())) fail(path + ".scale", "expected a finite number");
      rule.scale = sc->get<double>();
    }
    if (const auto mt = r.find("match"); mt != r.end()) {
      if (!mt->is_object()) fail(path + ".match", "expected an object of label: value");
      for (const auto& [k, v] : mt->items()) {
        if (!v.is_string()) fail(path + ".match." + k, "expected a string");
        rule.match.emplace_back(k, v.get<std::string>());
      }
    }
    into[name].push_back(std::move(rule));
  }
}

}  // namespace

CounterMap CounterMap::parse(std::string_view text, const std::string& source) {
  auto parsed = parse_json(text, source);
  if (!parsed) throw CounterMapError(parsed.error());
  const json doc = std::move(*parsed);
  if (!doc.is_object()) throw CounterMapError(source + ": $: expected an object");
  for (const auto& [k, v] : doc.items()) {
    if (k != "version" && k != "prometheus" && k != "openconfig" && k != "snmp" && k != "comment") {
      throw CounterMapError(source + ": $: unknown key " + quote(k));
    }
  }
  if (const auto v = doc.find("version"); v != doc.end() && (!v->is_number_integer() || *v != 1)) {
    throw CounterMapError(source + ": $.version: unsupported version " + v->dump() + " (this build reads version 1)");
  }
  CounterMap m;
  read_rules(doc, "prometheus", Section::prometheus, source, m.prom_);
  read_rules(doc, "openconfig", Section::openconfig, source, m.oc_);
  read_rules(doc, "snmp", Section::snmp, source, m.snmp_);
  return m;
}

CounterMap CounterMap::load_file(const std::string& path) {
  auto text = read_data_file(path);
  if (!text.ok()) throw CounterMapError(text.error());
  return parse(*text, path);
}

const std::vector<MapRule>* CounterMap::prometheus(std::string_view metric) const {
  const auto it = prom_.find(metric);
  return it == prom_.end() ? nullptr : &it->second;
}

const std::vector<MapRule>* CounterMap::openconfig(std::string_view path) const {
  const auto it = oc_.find(path);
  return it == oc_.end() ? nullptr : &it->second;
}

const std::vector<MapRule>* CounterMap::snmp(std::string_view object) const {
  const auto it = snmp_.find(object);
  return it == snmp_.end() ? nullptr : &it->second;
}

PayloadFormat detect_format(std::string_view content_type, std::string_view body) {
  if (content_type.find("x-medic-snmp") != std::string_view::npos) return PayloadFormat::snmp;
  if (content_type.find("json") != std::string_view::npos) return PayloadFormat::openconfig;
  for (const char c : body) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
    return c == '{' || c == '[' ? PayloadFormat::openconfig : PayloadFormat::prometheus;
  }
  return PayloadFormat::prometheus;
}

// Collects one device's readings into one PortSample per port, applying each rule's
// transform, scale and aggregate.
class ScrapeMapper::Builder {
 public:
  Builder(ScrapeMapper& m, fabric::DeviceId device, Time time, std::vector<PortSample>& out, MapStats& st)
      : m_(m), device_(device), time_(time), out_(out), st_(st), base_(out.size()) {}
  ~Builder() {
    for (size_t i = base_; i < out_.size(); ++i) m_.slot_[out_[i].port] = -1;
  }

  // The port of a name. Every family lists the device's ports in the same order, so the
  // port after the previous one (or the previous one again, for per-lane samples) is tried
  // before the topology's hash map.
  std::optional<fabric::PortId> lookup(std::string_view name) {
    if (!stable_names_) return m_.topology_.find_port(device_, name);
    if (cursor_ > 0 && seen_[cursor_ - 1].first == name) return seen_[cursor_ - 1].second;
    if (cursor_ < seen_.size() && seen_[cursor_].first == name) return seen_[cursor_++].second;
    if (!seen_.empty() && seen_[0].first == name) {
      cursor_ = 1;
      return seen_[0].second;
    }
    const auto port = m_.topology_.find_port(device_, name);
    if (port && cursor_ == seen_.size() && seen_.size() < 4096) {
      seen_.emplace_back(name, *port);
      cursor_ = seen_.size();
    }
    return port;
  }

  // False when the port is not in the topology (counted).
  bool put(std::string_view port_name, const MapRule& r, double raw) {
    const auto port = lookup(port_name);
    if (!port) {
      ++st_.unknown_port;
      return false;
    }
    int32_t& slot = m_.slot_[*port];
    if (slot < 0) {
      slot = static_cast<int32_t>(out_.size());
      out_.emplace_back();
      out_.back().port = *port;
      out_.back().time = time_;
    }
    PortSample& ps = out_[static_cast<size_t>(slot)];
    const double v = apply(r, raw);
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
    return true;
  }

  void discard() {
    for (size_t i = base_; i < out_.size(); ++i) m_.slot_[out_[i].port] = -1;
    out_.resize(base_);
  }

  MapStats& stats() { return st_; }
  const CounterMap& map() const { return m_.map_; }

 private:
  ScrapeMapper& m_;
  fabric::DeviceId device_;
  Time time_;
  std::vector<PortSample>& out_;
  MapStats& st_;
  size_t base_;
  // Names (pointing into the payload, which outlives this builder) in first-seen order.
  // Only for sources whose names point into the payload (Prometheus labels); the OpenConfig
  // parser hands out names from buffers it reuses.
  std::vector<std::pair<std::string_view, fabric::PortId>> seen_;

 public:
  bool stable_names_ = true;

 private:
  size_t cursor_ = 0;
};

class ScrapeMapper::Sink final : public PromSink {
 public:
  // `rules_of`: CounterMap::prometheus, or CounterMap::snmp for the SNMP collector's answers.
  using RulesOf = const std::vector<MapRule>* (CounterMap::*)(std::string_view) const;
  explicit Sink(Builder& b, RulesOf rules_of = &CounterMap::prometheus) : b_(b), rules_of_(rules_of) {}
  std::string_view last_name_;
  const std::vector<MapRule>* last_rules_ = nullptr;

  void on_sample(const PromSample& s) override {
    MapStats& st = b_.stats();
    ++st.samples;
    if (s.type == MetricType::histogram || s.type == MetricType::summary) {
      ++st.skipped;
      return;
    }
    // Consecutive samples usually share a metric name (the parser says when they do).
    if (!s.name_repeats && (s.name != last_name_ || last_name_.empty())) {
      last_name_ = s.name;
      last_rules_ = (b_.map().*rules_of_)(s.name);
    }
    const auto* rules = last_rules_;
    if (rules == nullptr) {
      ++st.unmapped;
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
        ++st.unknown_port;
        continue;
      }
      b_.put(*port_name, r, s.value);
    }
  }

 private:
  Builder& b_;
  RulesOf rules_of_;
};

class ScrapeMapper::OcSinkImpl final : public OcSink {
 public:
  explicit OcSinkImpl(Builder& b) : b_(b) {}

  void on_leaf(std::string_view port, std::string_view path, std::string_view value, OcKind kind) override {
    if (!error_.empty()) return;
    MapStats& st = b_.stats();
    ++st.samples;
    const auto* rules = b_.map().openconfig(path);
    if (rules == nullptr) {
      ++st.unmapped;
      return;
    }
    // A counter of the wrong type is a broken answer, not a reading: the payload is refused
    // (and the device counts as silent for this poll), never mapped to something.
    auto refuse = [&](const std::string& want) {
      error_ = path_of(port, path) + ": expected " + want + ", got " +
               (kind == OcKind::string ? quote(value, 64) : std::string(to_string(kind)));
    };
    for (const MapRule& r : *rules) {
      double v = 0;
      if (r.transform == Transform::oc_oper_status) {
        if (kind != OcKind::string) return refuse("an oper-status string (UP, DOWN, ...)");
        v = value == "UP" ? 1.0 : 0.0;
      } else if ((kind != OcKind::number && kind != OcKind::string) || !parse_prom_float(value, v)) {
        return refuse("a number");
      } else if (!is_gauge(r.counter) && !(v >= 0)) {
        return refuse("a counter (a number >= 0)");
      }
      b_.put(port, r, v);
    }
  }

  const std::string& error() const { return error_; }

 private:
  static std::string path_of(std::string_view port, std::string_view path) {
    return std::string(path) + " of " + quote(port, 64);
  }
  Builder& b_;
  std::string error_;
};

ScrapeMapper::ScrapeMapper(const fabric::Topology& topology, const CounterMap& map)
    : topology_(topology), map_(map), slot_(topology.ports().size(), -1) {}

namespace {
void add_stats(MapStats* to, const MapStats& from) {
  if (to == nullptr) return;
  to->samples += from.samples;
  to->mapped += from.mapped;
  to->unmapped += from.unmapped;
  to->unknown_port += from.unknown_port;
  to->skipped += from.skipped;
  to->unparsable += from.unparsable;
}
}  // namespace

Status ScrapeMapper::map_prometheus(fabric::DeviceId device, std::string_view body, Time time,
                                    std::vector<PortSample>& out, MapStats* stats) {
  return map_text(device, body, time, out, stats, false);
}

Status ScrapeMapper::map_snmp(fabric::DeviceId device, std::string_view body, Time time,
                              std::vector<PortSample>& out, MapStats* stats) {
  return map_text(device, body, time, out, stats, true);
}

Status ScrapeMapper::map_text(fabric::DeviceId device, std::string_view body, Time time,
                              std::vector<PortSample>& out, MapStats* stats, bool snmp) {
  MapStats local;
  Builder b(*this, device, time, out, local);
  Sink sink(b, snmp ? &CounterMap::snmp : &CounterMap::prometheus);
  Status st = parser_.parse(body, sink);
  if (!st.ok()) {
    b.discard();
    return st;
  }
  add_stats(stats, local);
  return st;
}

Status ScrapeMapper::map_openconfig(fabric::DeviceId device, std::string_view body, Time time,
                                    std::vector<PortSample>& out, MapStats* stats) {
  MapStats local;
  Builder b(*this, device, time, out, local);
  b.stable_names_ = false;
  OcSinkImpl sink(b);
  Status st = parse_openconfig(body, sink);
  if (st.ok() && !sink.error().empty()) st = Error::invalid(sink.error());
  if (!st.ok()) {
    b.discard();
    return st;
  }
  add_stats(stats, local);
  return st;
}

Status ScrapeMapper::map(fabric::DeviceId device, PayloadFormat format, std::string_view body, Time time,
                         std::vector<PortSample>& out, MapStats* stats) {
  switch (format) {
    case PayloadFormat::openconfig: return map_openconfig(device, body, time, out, stats);
    case PayloadFormat::snmp: return map_snmp(device, body, time, out, stats);
    case PayloadFormat::prometheus: break;
  }
  return map_prometheus(device, body, time, out, stats);
}

}  // namespace medic::telemetry
