#include "detectors/config.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/files.h"
#include "common/json.h"
#include "common/strings.h"

namespace medic::detectors {

using nlohmann::json;

namespace {

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw ConfigError(source_ + ": " + path + ": " + what);
  }

  const json& object(const json& parent, const std::string& path, const char* key, bool& present) const {
    static const json empty = json::object();
    const auto it = parent.find(key);
    present = it != parent.end();
    if (!present) return empty;
    if (!it->is_object()) fail(path + "." + key, "expected an object");
    return *it;
  }

  void keys(const json& obj, const std::string& path, std::initializer_list<const char*> allowed) const {
    for (const auto& [k, v] : obj.items()) {
      bool ok = k == "comment";
      for (const char* a : allowed) ok = ok || k == a;
      if (!ok) fail(path, "unknown key " + quote(k));
    }
  }

  void number(const json& obj, const std::string& path, const char* key, double& into) const {
    const auto it = obj.find(key);
    if (it == obj.end()) return;
    if (!it->is_number() || !std::isfinite(it->get<double>())) {
      fail(path + "." + key, "expected a finite number, got " + it->dump());
    }
    into = it->get<double>();
  }

  // A whole, non-negative count an int holds.
  void count(const json& obj, const std::string& path, const char* key, int& into) const {
    double v = into;
    number(obj, path, key, v);
    if (v < 0 || v > 1e9 || v != std::floor(v)) {
      fail(path + "." + key, "expected a whole number in [0, 1000000000], got " + obj.at(key).dump());
    }
    into = static_cast<int>(v);
  }

  void seconds_field(const json& obj, const std::string& path, const char* key, Duration& into) const {
    double s = medic::seconds(into);
    number(obj, path, key, s);
    if (s < 0) fail(path + "." + key, "must not be negative");
    // Before it becomes a Duration (which 1e308 s would overflow).
    if (s > 30 * 86400.0) fail(path + "." + key, "must be at most 2592000, got " + format_number(s));
    into = from_seconds(s);
  }

  void band(const json& obj, const std::string& path, const char* key, Band& b) const {
    bool present = false;
    const json& o = object(obj, path, key, present);
    if (!present) return;
    const std::string p = path + "." + key;
    keys(o, p, {"alarm_low", "warn_low", "warn_high", "alarm_high"});
    number(o, p, "alarm_low", b.alarm_low);
    number(o, p, "warn_low", b.warn_low);
    number(o, p, "warn_high", b.warn_high);
    number(o, p, "alarm_high", b.alarm_high);
    if (!(b.alarm_low <= b.warn_low && b.warn_low < b.warn_high && b.warn_high <= b.alarm_high)) {
      fail(p, "thresholds must be ordered alarm_low <= warn_low < warn_high <= alarm_high");
    }
  }

  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

}  // namespace

void FlapConfig::validate() const {
  if (!(penalty_per_flap > 0)) throw ConfigError("flap.penalty_per_flap must be positive");
  if (half_life.count() <= 0) throw ConfigError("flap.half_life_s must be positive");
  if (!(reuse > 0 && reuse < suppress)) throw ConfigError("flap.reuse must be positive and below flap.suppress");
  if (!(suppress <= max_penalty)) throw ConfigError("flap.max_penalty must be at least flap.suppress");
  if (down_hold.count() <= 0) throw ConfigError("flap.down_hold_s must be positive");
  if (trap_confirm.count() <= 0) throw ConfigError("flap.trap_confirm_s must be positive");
}

const OpticType* OpticsConfig::type_for(std::string_view optic) const {
  const auto it = types.find(optic.empty() ? std::string_view(default_type) : optic);
  return it == types.end() ? nullptr : &it->second;
}

bool telemetry_outage(size_t asked, size_t failed, const StaleConfig& c) {
  return asked > 0 && static_cast<int64_t>(failed) >= c.outage_min_devices &&
         static_cast<double>(failed) >= c.outage_share * static_cast<double>(asked);
}

void DetectorConfig::validate(const std::string& source) const {
  auto fail = [&](const std::string& path, const std::string& what) {
    throw ConfigError(source + ": " + path + ": " + what);
  };
  // Every threshold has a range a fabric can use; a value outside it (1e308, a negative
  // count) is a typo, and a detector fed one would never fire or always fire. The lower
  // bounds keep their own messages below; these are the upper ones.
  auto num = [](double v) {
    return v == std::floor(v) && std::fabs(v) < 1e15 ? std::to_string(static_cast<int64_t>(v)) : format_number(v);
  };
  auto at_most = [&](const std::string& path, double v, double hi) {
    if (v > hi) fail(path, "must be at most " + num(hi) + ", got " + format_number(v));
  };
  auto in = [&](const std::string& path, double v, double lo, double hi) {
    if (!(v >= lo && v <= hi)) fail(path, "must be in [" + num(lo) + ", " + num(hi) + "], got " + format_number(v));
  };
  auto secs = [&](const std::string& path, Duration d) {
    if (d.count() <= 0) fail(path, "must be positive");
    at_most(path, seconds(d), 30 * 86400.0);
  };
  try {
    flap.validate();
  } catch (const ConfigError& e) {
    fail("$.flap", e.what());
  }
  at_most("$.flap.penalty_per_flap", flap.penalty_per_flap, 1e9);
  at_most("$.flap.max_penalty", flap.max_penalty, 1e12);
  secs("$.flap.half_life_s", flap.half_life);
  secs("$.flap.down_hold_s", flap.down_hold);
  secs("$.flap.trap_confirm_s", flap.trap_confirm);
  if (!optics.default_type.empty() && optics.types.find(optics.default_type) == optics.types.end()) {
    fail("$.optics.default_type", "names no type in $.optics.types: " + quote(optics.default_type));
  }
  if (optics.hysteresis_db < 0) fail("$.optics.hysteresis_db", "must not be negative");
  at_most("$.optics.hysteresis_db", optics.hysteresis_db, 20);
  if (!(optics.drift_db > 0)) fail("$.optics.drift_db", "must be positive");
  at_most("$.optics.drift_db", optics.drift_db, 40);
  secs("$.optics.drift_baseline_s", optics.drift_baseline);
  secs("$.optics.drift_recent_s", optics.drift_recent);
  if (seconds(optics.drift_min_history) < 0 || seconds(optics.drift_min_history) > 30 * 86400.0) {
    fail("$.optics.drift_min_history_s", "must be in [0, 2592000] s");
  }
  if (!(optics.drift_recent < optics.drift_baseline)) {
    fail("$.optics.drift_recent_s", "must be shorter than drift_baseline_s");
  }
  for (const auto& [name, t] : optics.types) {
    const std::string p = "$.optics.types." + name;
    auto band = [&](const char* key, const Band& b, double lo, double hi) {
      for (const auto& [k, v] : {std::pair{"alarm_low", b.alarm_low}, std::pair{"warn_low", b.warn_low},
                                 std::pair{"warn_high", b.warn_high}, std::pair{"alarm_high", b.alarm_high}}) {
        // Unset bounds are infinite (no threshold on that side).
        if (std::isinf(v)) continue;
        in(p + "." + key + "." + k, v, lo, hi);
      }
    };
    band("rx_power_dbm", t.rx_power_dbm, -60, 30);
    band("tx_power_dbm", t.tx_power_dbm, -60, 30);
    band("temperature_c", t.temperature_c, -60, 200);
    band("laser_bias_ma", t.laser_bias_ma, 0, 1000);
    at_most(p + ".max_link_loss_db", t.max_link_loss_db, 100);
  }
  secs("$.corruption.window_s", corruption.window);
  if (!(corruption.corrupting > 0 && corruption.corrupting < corruption.critical && corruption.critical < 1)) {
    fail("$.corruption", "need 0 < corrupting < critical < 1");
  }
  if (corruption.min_errors < 1) fail("$.corruption.min_errors", "must be at least 1");
  at_most("$.corruption.min_errors", corruption.min_errors, 1e9);
  if (!(corruption.discard_rate > 0 && corruption.discard_rate < 1)) {
    fail("$.corruption.discard_rate", "must be in (0, 1)");
  }
  if (!(corruption.congestion_utilization > 0 && corruption.congestion_utilization <= 1)) {
    fail("$.corruption.congestion_utilization", "must be in (0, 1]");
  }
  secs("$.fec.window_s", fec.window);
  if (!(fec.warning_ber > 0 && fec.warning_ber < fec.limit_ber && fec.limit_ber < 1)) {
    fail("$.fec", "need 0 < warning_ber < limit_ber < 1");
  }
  if (!(pfc.pause_rate > 0)) fail("$.pfc.pause_rate", "must be positive");
  at_most("$.pfc.pause_rate", pfc.pause_rate, 1e10);
  secs("$.pfc.sustain_s", pfc.sustain);
  secs("$.stale.after_s", stale.after);
  if (!(stale.outage_share > 0 && stale.outage_share <= 1)) fail("$.stale.outage_share", "must be in (0, 1]");
  in("$.stale.outage_min_devices", stale.outage_min_devices, 1, 1e6);
  if (!(probe.critical_loss > 0 && probe.critical_loss <= 1)) fail("$.probe.critical_loss", "must be in (0, 1]");
  if (!(probe.min_confidence >= 0 && probe.min_confidence <= 1)) fail("$.probe.min_confidence", "must be in [0, 1]");
  if (!(probe.latency_factor > 1)) fail("$.probe.latency_factor", "must be above 1");
  at_most("$.probe.latency_factor", probe.latency_factor, 1e4);
  if (seconds(probe.latency_floor) > 100) fail("$.probe.latency_floor_ms", "must be at most 100000");
  // At most what the prober keeps: 6 rounds of 64 round trips (probes::SchedulerConfig).
  in("$.probe.latency_min_rtts", probe.latency_min_rtts, 1, 384);
  if (probe.clear_rounds < 1) fail("$.probe.clear_rounds", "must be at least 1");
  in("$.probe.confirm_rounds", probe.confirm_rounds, 1, 1000);
  if (!(probe.outage_share > 0 && probe.outage_share <= 1)) fail("$.probe.outage_share", "must be in (0, 1]");
  in("$.probe.outage_min_sessions", probe.outage_min_sessions, 1, 1e6);
}

DetectorConfig DetectorConfig::parse(std::string_view text, const std::string& source) {
  auto parsed = parse_json(text, source);
  if (!parsed) throw ConfigError(parsed.error());
  const json doc = std::move(*parsed);
  Reader r(source);
  if (!doc.is_object()) r.fail("$", "expected an object");
  r.keys(doc, "$", {"version", "flap", "optics", "corruption", "fec", "pfc", "stale", "probe"});
  if (const auto v = doc.find("version"); v != doc.end() && !(v->is_number_integer() && v->get<int64_t>() == 1)) {
    r.fail("$.version", "unsupported version " + v->dump() + " (this build reads version 1)");
  }
  DetectorConfig c;
  bool present = false;

  const json& flap = r.object(doc, "$", "flap", present);
  r.keys(flap, "$.flap", {"penalty_per_flap", "half_life_s", "suppress", "reuse", "max_penalty", "down_hold_s",
                           "trap_confirm_s"});
  r.number(flap, "$.flap", "penalty_per_flap", c.flap.penalty_per_flap);
  r.seconds_field(flap, "$.flap", "half_life_s", c.flap.half_life);
  r.number(flap, "$.flap", "suppress", c.flap.suppress);
  r.number(flap, "$.flap", "reuse", c.flap.reuse);
  r.number(flap, "$.flap", "max_penalty", c.flap.max_penalty);
  r.seconds_field(flap, "$.flap", "down_hold_s", c.flap.down_hold);
  r.seconds_field(flap, "$.flap", "trap_confirm_s", c.flap.trap_confirm);

  const json& optics = r.object(doc, "$", "optics", present);
  r.keys(optics, "$.optics", {"default_type", "hysteresis_db", "drift_db", "drift_baseline_s", "drift_recent_s",
                              "drift_min_history_s", "types"});
  if (const auto it = optics.find("default_type"); it != optics.end()) {
    if (!it->is_string()) r.fail("$.optics.default_type", "expected a string");
    c.optics.default_type = it->get<std::string>();
  }
  r.number(optics, "$.optics", "hysteresis_db", c.optics.hysteresis_db);
  r.number(optics, "$.optics", "drift_db", c.optics.drift_db);
  r.seconds_field(optics, "$.optics", "drift_baseline_s", c.optics.drift_baseline);
  r.seconds_field(optics, "$.optics", "drift_recent_s", c.optics.drift_recent);
  r.seconds_field(optics, "$.optics", "drift_min_history_s", c.optics.drift_min_history);
  const json& types = r.object(optics, "$.optics", "types", present);
  for (const auto& [name, t] : types.items()) {
    if (name == "comment") continue;  // a note, like everywhere else in the file
    const std::string p = "$.optics.types." + name;
    if (!t.is_object()) r.fail(p, "expected an object");
    r.keys(t, p, {"rx_power_dbm", "tx_power_dbm", "temperature_c", "laser_bias_ma", "max_link_loss_db"});
    OpticType ot;
    ot.name = name;
    r.band(t, p, "rx_power_dbm", ot.rx_power_dbm);
    r.band(t, p, "tx_power_dbm", ot.tx_power_dbm);
    r.band(t, p, "temperature_c", ot.temperature_c);
    r.band(t, p, "laser_bias_ma", ot.laser_bias_ma);
    r.number(t, p, "max_link_loss_db", ot.max_link_loss_db);
    if (!(ot.max_link_loss_db > 0)) r.fail(p + ".max_link_loss_db", "must be positive");
    c.optics.types.emplace(name, std::move(ot));
  }

  const json& corr = r.object(doc, "$", "corruption", present);
  r.keys(corr, "$.corruption",
         {"window_s", "corrupting", "critical", "min_errors", "discard_rate", "congestion_utilization"});
  r.seconds_field(corr, "$.corruption", "window_s", c.corruption.window);
  r.number(corr, "$.corruption", "corrupting", c.corruption.corrupting);
  r.number(corr, "$.corruption", "critical", c.corruption.critical);
  r.number(corr, "$.corruption", "min_errors", c.corruption.min_errors);
  r.number(corr, "$.corruption", "discard_rate", c.corruption.discard_rate);
  r.number(corr, "$.corruption", "congestion_utilization", c.corruption.congestion_utilization);

  const json& fec = r.object(doc, "$", "fec", present);
  r.keys(fec, "$.fec", {"window_s", "warning_ber", "limit_ber"});
  r.seconds_field(fec, "$.fec", "window_s", c.fec.window);
  r.number(fec, "$.fec", "warning_ber", c.fec.warning_ber);
  r.number(fec, "$.fec", "limit_ber", c.fec.limit_ber);

  const json& pfc = r.object(doc, "$", "pfc", present);
  r.keys(pfc, "$.pfc", {"pause_rate", "sustain_s"});
  r.number(pfc, "$.pfc", "pause_rate", c.pfc.pause_rate);
  r.seconds_field(pfc, "$.pfc", "sustain_s", c.pfc.sustain);

  const json& stale = r.object(doc, "$", "stale", present);
  r.keys(stale, "$.stale", {"after_s", "outage_share", "outage_min_devices"});
  r.seconds_field(stale, "$.stale", "after_s", c.stale.after);
  r.number(stale, "$.stale", "outage_share", c.stale.outage_share);
  r.count(stale, "$.stale", "outage_min_devices", c.stale.outage_min_devices);

  const json& probe = r.object(doc, "$", "probe", present);
  r.keys(probe, "$.probe", {"critical_loss", "min_confidence", "latency_factor", "latency_floor_ms", "latency_min_rtts",
                            "clear_rounds", "confirm_rounds", "outage_share", "outage_min_sessions"});
  r.number(probe, "$.probe", "outage_share", c.probe.outage_share);
  r.count(probe, "$.probe", "outage_min_sessions", c.probe.outage_min_sessions);
  r.number(probe, "$.probe", "critical_loss", c.probe.critical_loss);
  r.number(probe, "$.probe", "min_confidence", c.probe.min_confidence);
  r.number(probe, "$.probe", "latency_factor", c.probe.latency_factor);
  double floor_ms = seconds(c.probe.latency_floor) * 1000;
  r.number(probe, "$.probe", "latency_floor_ms", floor_ms);
  if (floor_ms < 0) r.fail("$.probe.latency_floor_ms", "must not be negative");
  c.probe.latency_floor = from_seconds(floor_ms / 1000);
  r.count(probe, "$.probe", "latency_min_rtts", c.probe.latency_min_rtts);
  double clear = c.probe.clear_rounds;
  r.number(probe, "$.probe", "clear_rounds", clear);
  // A count of rounds: a whole number an int holds (casting 2.5 would truncate it silently,
  // 1e12 would be undefined).
  if (clear < 1) r.fail("$.probe.clear_rounds", "must be at least 1");
  if (clear > 1'000'000) r.fail("$.probe.clear_rounds", "must be at most 1000000");
  if (clear != std::floor(clear)) r.fail("$.probe.clear_rounds", "must be a whole number of rounds, got " + json(clear).dump());
  c.probe.clear_rounds = static_cast<int>(clear);
  double confirm = c.probe.confirm_rounds;
  r.number(probe, "$.probe", "confirm_rounds", confirm);
  if (confirm < 1) r.fail("$.probe.confirm_rounds", "must be at least 1");
  if (confirm > 1000) r.fail("$.probe.confirm_rounds", "must be at most 1000");
  if (confirm != std::floor(confirm)) {
    r.fail("$.probe.confirm_rounds", "must be a whole number of rounds, got " + json(confirm).dump());
  }
  c.probe.confirm_rounds = static_cast<int>(confirm);

  c.validate(source);
  return c;
}

DetectorConfig DetectorConfig::load_file(const std::string& path) {
  auto text = read_data_file(path);
  if (!text.ok()) throw ConfigError(text.error());
  return parse(*text, path);
}

}  // namespace medic::detectors
