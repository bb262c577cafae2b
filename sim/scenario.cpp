#include "common/files.h"
#include "sim/scenario.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/json.h"
#include "common/strings.h"

namespace medic::sim {

using nlohmann::json;

namespace {

struct KindSpec {
  FaultKind kind;
  const char* name;
  const char* target;  // "link", "end" or "device"
  std::vector<const char*> keys;      // besides kind, the target, at_s, duration_s, comment
  std::vector<const char*> required;  // of those keys
};

const std::vector<KindSpec>& specs() {
  static const std::vector<KindSpec> s = {
      {FaultKind::flap, "flap", "link", {"count", "period_s", "down_s"}, {"count"}},
      {FaultKind::down, "down", "link", {}, {}},
      {FaultKind::optics_loss, "optics_loss", "end", {"extra_loss_db"}, {"extra_loss_db"}},
      {FaultKind::weak_tx, "weak_tx", "end", {"tx_drop_db"}, {"tx_drop_db"}},
      {FaultKind::optics_drift, "optics_drift", "end", {"db_per_min"}, {"db_per_min"}},
      {FaultKind::corrupt, "corrupt", "end", {"rate"}, {"rate"}},
      {FaultKind::fec, "fec", "end", {"ber", "uncorrectable_per_s"}, {"ber"}},
      {FaultKind::pause, "pause", "end", {"frames_per_s"}, {"frames_per_s"}},
      {FaultKind::congestion, "congestion", "end", {"utilization", "discard_rate"}, {"utilization", "discard_rate"}},
      {FaultKind::silent, "silent", "device", {}, {}},
      {FaultKind::garbage, "garbage", "device", {}, {}},
      {FaultKind::reboot, "reboot", "device", {}, {}},
      {FaultKind::probe_loss, "probe_loss", "end", {"rate"}, {"rate"}},
      {FaultKind::probe_delay, "probe_delay", "end", {"ms"}, {"ms"}},
      {FaultKind::reflector_down, "reflector_down", "device", {}, {}},
      {FaultKind::reflector_busy, "reflector_busy", "device", {"share", "ms"}, {"share", "ms"}},
      {FaultKind::absurd, "absurd", "end", {"counter", "value"}, {"counter", "value"}},
      {FaultKind::rpc_delay, "rpc_delay", "device", {"seconds"}, {"seconds"}},
      {FaultKind::rpc_fault, "rpc_fault", "device", {"answer"}, {"answer"}},
  };
  return s;
}

}  // namespace

const std::vector<std::string>& absurd_counters() {
  static const std::vector<std::string> names = {
      "carrier_changes", "link_down_events", "rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_errors",
      "tx_errors", "rx_discards", "tx_discards", "rx_crc_errors", "rx_symbol_errors", "fec_corrected_bits",
      "fec_uncorrectable_codewords", "rx_pause", "tx_pause", "rx_power_dbm", "tx_power_dbm", "temperature_c",
      "laser_bias_ma"};
  return names;
}

bool absurd_counter_supported(const std::string& name) {
  const auto& n = absurd_counters();
  return std::find(n.begin(), n.end(), name) != n.end();
}

std::string_view to_string(FaultKind k) {
  for (const auto& s : specs()) {
    if (s.kind == k) return s.name;
  }
  return "?";
}

std::string_view to_string(RpcAnswer a) {
  switch (a) {
    case RpcAnswer::none: return "none";
    case RpcAnswer::error: return "error";
    case RpcAnswer::garbage: return "garbage";
    case RpcAnswer::close: return "close";
    case RpcAnswer::lie: return "lie";
  }
  return "?";
}

std::vector<SimEvent> Scenario::events() const {
  std::vector<SimEvent> out;
  for (size_t i = 0; i < faults.size(); ++i) {
    const Fault& f = faults[i];
    if (f.kind == FaultKind::flap) {
      for (int n = 0; n < f.count; ++n) {
        const double t = f.at_s + n * f.period_s;
        out.push_back({t, i, SimEvent::Phase::link_down, f.link, false});
        out.push_back({t + f.down_s, i, SimEvent::Phase::link_up, f.link, true});
      }
    } else if (f.kind == FaultKind::down) {
      out.push_back({f.at_s, i, SimEvent::Phase::link_down, f.link, false});
      if (f.duration_s > 0) out.push_back({f.at_s + f.duration_s, i, SimEvent::Phase::link_up, f.link, true});
    } else {
      out.push_back({f.at_s, i, SimEvent::Phase::start, fabric::kNone, false});
      if (f.duration_s > 0 && f.kind != FaultKind::reboot) {
        out.push_back({f.at_s + f.duration_s, i, SimEvent::Phase::end, fabric::kNone, false});
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const SimEvent& a, const SimEvent& b) { return a.at_s < b.at_s; });
  return out;
}

Scenario parse_scenario(std::string_view text, const std::string& source, const fabric::Topology& topology) {
  auto fail = [&](const std::string& path, const std::string& what) -> void {
    throw ScenarioError(source + ": " + path + ": " + what);
  };
  auto parsed = parse_json(text, source);
  if (!parsed) throw ScenarioError(parsed.error());
  const json doc = std::move(*parsed);
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
    const auto kind = f.find("kind");
    if (kind == f.end() || !kind->is_string()) fail(path + ".kind", "expected a fault kind");
    const KindSpec* spec = nullptr;
    std::vector<std::string> names;
    for (const auto& sp : specs()) {
      names.emplace_back(sp.name);
      if (*kind == sp.name) spec = &sp;
    }
    if (spec == nullptr) fail(path + ".kind", "unknown fault kind " + kind->dump() + " (expected " + join(names, ", ") + ")");
    for (const auto& [k, v] : f.items()) {
      // A flap's length is its count and period; a reboot is a moment.
      const bool has_duration = spec->kind != FaultKind::flap && spec->kind != FaultKind::reboot;
      bool ok = k == "kind" || k == "at_s" || (k == "duration_s" && has_duration) || k == "comment" ||
                k == spec->target;
      for (const char* key : spec->keys) ok = ok || k == key;
      if (!ok) fail(path, "unknown key " + quote(k) + " for a " + spec->name + " fault");
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
    auto required = [&](const char* key) {
      return std::find_if(spec->required.begin(), spec->required.end(),
                          [&](const char* r) { return std::string_view(r) == key; }) != spec->required.end();
    };
    Fault fault;
    fault.kind = spec->kind;
    const std::string target = spec->target;
    const auto t = f.find(target);
    if (t == f.end() || !t->is_string()) {
      fail(path + "." + target, target == "link"   ? "expected a link name or \"device:port\""
                                : target == "end" ? "expected the affected end, written \"device:port\""
                                                  : "expected a device name");
    }
    const std::string ref = t->get<std::string>();
    if (target == "link") {
      const auto id = topology.find_link(ref);
      if (!id) fail(path + ".link", "unknown link " + quote(ref));
      fault.link = *id;
    } else if (target == "end") {
      const size_t colon = ref.rfind(':');
      const auto p = colon == std::string::npos ? std::nullopt
                                                : topology.find_port(ref.substr(0, colon), ref.substr(colon + 1));
      if (!p || topology.port(*p).link == fabric::kNone) fail(path + ".end", "unknown port " + quote(ref));
      fault.port = *p;
      fault.link = topology.port(*p).link;
    } else {
      const auto d = topology.find_device(ref);
      if (!d) fail(path + ".device", "unknown device " + quote(ref));
      fault.device = *d;
    }
    fault.at_s = num("at_s", 0, true);
    fault.duration_s = num("duration_s", 0, false);
    switch (fault.kind) {
      case FaultKind::flap: {
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
        break;
      }
      case FaultKind::optics_loss: fault.value = num("extra_loss_db", 0, required("extra_loss_db")); break;
      case FaultKind::weak_tx: fault.value = num("tx_drop_db", 0, required("tx_drop_db")); break;
      case FaultKind::optics_drift: fault.value = num("db_per_min", 0, required("db_per_min")); break;
      case FaultKind::corrupt:
        fault.value = num("rate", 0, true);
        if (fault.value > 1) fail(path + ".rate", "a share of frames must be at most 1");
        break;
      case FaultKind::fec:
        fault.value = num("ber", 0, true);
        if (fault.value > 0.5) fail(path + ".ber", "a bit error rate must be at most 0.5");
        fault.value2 = num("uncorrectable_per_s", 0, false);
        break;
      case FaultKind::pause: fault.value = num("frames_per_s", 0, true); break;
      case FaultKind::probe_loss:
        fault.value = num("rate", 0, true);
        if (fault.value > 1) fail(path + ".rate", "a share of probes must be at most 1");
        break;
      case FaultKind::probe_delay: fault.value = num("ms", 0, true); break;
      case FaultKind::reflector_busy:
        fault.value = num("share", 0, true);
        if (fault.value > 1) fail(path + ".share", "a share of probes must be at most 1");
        fault.value2 = num("ms", 0, true);
        break;
      case FaultKind::rpc_delay:
        fault.value = num("seconds", 0, true);
        if (fault.value > 600) fail(path + ".seconds", "must be at most 600");
        break;
      case FaultKind::rpc_fault: {
        const auto a = f.find("answer");
        constexpr RpcAnswer kAnswers[] = {RpcAnswer::error, RpcAnswer::garbage, RpcAnswer::close, RpcAnswer::lie};
        for (const RpcAnswer k : kAnswers) {
          if (a != f.end() && a->is_string() && *a == to_string(k)) fault.answer = k;
        }
        if (fault.answer == RpcAnswer::none) {
          fail(path + ".answer", "expected \"error\", \"garbage\", \"close\" or \"lie\", got " +
                                     (a == f.end() ? std::string("nothing") : a->dump()));
        }
        break;
      }
      case FaultKind::absurd: {
        const auto c = f.find("counter");
        if (c == f.end() || !c->is_string() || !absurd_counter_supported(c->get<std::string>())) {
          fail(path + ".counter", "expected one of " + join(absurd_counters(), ", ") + ", got " +
                                      (c == f.end() ? std::string("nothing") : c->dump()));
        }
        fault.counter = c->get<std::string>();
        const auto v = f.find("value");
        if (v == f.end() || !v->is_number()) fail(path + ".value", "expected a number (any, that is the point)");
        fault.value = v->get<double>();
        break;
      }
      case FaultKind::congestion:
        fault.value = num("utilization", 0, true);
        fault.value2 = num("discard_rate", 0, true);
        if (fault.value > 1) fail(path + ".utilization", "must be at most 1");
        if (fault.value2 > 1) fail(path + ".discard_rate", "must be at most 1");
        break;
      default: break;
    }
    s.faults.push_back(fault);
  }
  return s;
}

Scenario load_scenario_file(const std::string& path, const fabric::Topology& topology) {
  auto text = read_data_file(path);
  if (!text.ok()) throw ScenarioError(text.error());
  return parse_scenario(*text, path, topology);
}

}  // namespace medic::sim
