#include "detectors/optics.h"

#include <cmath>
#include <cstdio>

namespace medic::detectors {

using telemetry::Counter;

namespace {
std::string fmt(double v, const char* unit) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, unit);
  return buf;
}
// A reading is fresh enough to compare with the other end's if taken within this long.
constexpr auto kPairWindow = std::chrono::seconds(120);
// Transceivers report about -40 dBm when there is no light at all: a dark or down link,
// which is the flap and down detectors' business, not a power level to judge.
constexpr double kNoLight = -30;
}  // namespace

OpticsDetector::OpticsDetector(const fabric::Topology& topology, OpticsConfig config)
    : topology_(topology), config_(std::move(config)), ports_(topology.ports().size()),
      link_type_(topology.links().size(), nullptr), is_dirty_(topology.links().size(), 0) {
  for (fabric::LinkId l = 0; l < topology.links().size(); ++l) link_type_[l] = config_.type_for(topology.link(l).optic);
}

OpticsDetector::Level OpticsDetector::level_of(const Band& b, double v, Level previous) const {
  const double h = config_.hysteresis_db;
  // Entering a level needs the threshold; leaving it needs the threshold plus hysteresis.
  auto below = [&](double threshold, Level lvl) { return v < threshold + (previous >= lvl ? h : 0.0); };
  auto above = [&](double threshold, Level lvl) { return v > threshold - (previous >= lvl ? h : 0.0); };
  if (below(b.alarm_low, alarm) || above(b.alarm_high, alarm)) return alarm;
  if (below(b.warn_low, warn) || above(b.warn_high, warn)) return warn;
  return ok;
}

Finding OpticsDetector::base(const telemetry::PortDelta& d, FindingKind kind, Severity sev) const {
  return port_finding(topology_, d.port, kind, sev, d.time, d.time);
}

void OpticsDetector::check_band(const telemetry::PortDelta& d, PortState&, const Band& b, double v, Level& level,
                                FindingKind kind, const char* what, const char* unit, std::vector<Finding>& out) {
  const Level now = level_of(b, v, level);
  const Level before = level;
  level = now;
  if (now <= before) return;  // report on the way up only
  const bool low = v < b.warn_low + config_.hysteresis_db;
  const double threshold = now == alarm ? (low ? b.alarm_low : b.alarm_high) : (low ? b.warn_low : b.warn_high);
  Finding f = base(d, kind, now == alarm ? Severity::critical : Severity::warning);
  const std::string ep = topology_.endpoint_name(d.port);
  f.summary = std::string(what) + " " + fmt(v, unit) + " on " + ep + (low ? " below " : " above ") +
              (now == alarm ? "alarm " : "warning ") + fmt(threshold, unit);
  f.evidence["value"] = v;
  f.evidence["threshold"] = threshold;
  if (kind == FindingKind::optics_tx_power || kind == FindingKind::optics_bias ||
      kind == FindingKind::optics_temperature) {
    f.suspect_port = d.port;
    f.suspect = "the transceiver in " + ep + " (" + what + " out of range)";
  } else if (kind == FindingKind::optics_rx_power) {
    // Whether the far transmitter or this receiver (or the fiber) is to blame is decided by
    // the loss check, which sees both ends.
    const fabric::PortId peer = topology_.peer(d.port);
    if (peer != fabric::kNone) {
      const PortState& ps = ports_[peer];
      if (!std::isnan(ps.tx) && ps.tx_level != ok) {
        f.suspect_port = peer;
        f.suspect = "the transceiver in " + topology_.endpoint_name(peer) + " (weak transmitter: " +
                    fmt(ps.tx, "dBm") + ")";
      }
    }
  }
  out.push_back(std::move(f));
}

void OpticsDetector::check_loss(fabric::PortId rx_port, Time now, std::vector<Finding>& out) {
  // rx_port received; its peer transmitted.
  const fabric::Port& port = topology_.port(rx_port);
  if (port.link == fabric::kNone) return;
  const OpticType* type = link_type_[port.link];
  if (type == nullptr) return;
  const fabric::PortId peer = topology_.peer(rx_port);
  PortState& rs = ports_[rx_port];
  const PortState& ts = ports_[peer];
  if (std::isnan(rs.rx) || std::isnan(ts.tx) || rs.rx <= kNoLight || now - ts.tx_time > kPairWindow ||
      now - rs.rx_time > kPairWindow) {
    return;
  }
  const double loss = ts.tx - rs.rx;
  const double budget = type->max_link_loss_db;
  const Level now_level = loss > budget + (rs.loss_level != ok ? -config_.hysteresis_db : 0.0)
                              ? (loss > budget + 3.0 ? alarm : warn)
                              : ok;
  const Level before = rs.loss_level;
  rs.loss_level = now_level;
  if (now_level <= before) return;
  // The reverse direction tells a bad strand or receiver from a bad cable or connector.
  double reverse = NAN;
  if (!std::isnan(ts.rx) && !std::isnan(rs.tx) && ts.rx > kNoLight) reverse = rs.tx - ts.rx;
  const std::string here = topology_.endpoint_name(rx_port), there = topology_.endpoint_name(peer);
  Finding f = port_finding(topology_, rx_port, FindingKind::optics_loss,
                           now_level == alarm ? Severity::critical : Severity::warning, rs.rx_time, now);
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.2f dB lost from %s (tx %.2f dBm) to %s (rx %.2f dBm), budget %.1f dB",
                loss, there.c_str(), ts.tx, here.c_str(), rs.rx, budget);
  f.summary = buf;
  f.evidence["loss_db"] = loss;
  f.evidence["budget_db"] = budget;
  f.evidence["far_tx_dbm"] = ts.tx;
  f.evidence["rx_dbm"] = rs.rx;
  if (!std::isnan(reverse)) f.evidence["reverse_loss_db"] = reverse;
  if (ts.tx_level != ok) {
    f.suspect_port = peer;
    f.suspect = "the transceiver in " + there + " (its transmit power is low)";
  } else if (!std::isnan(reverse) && reverse > budget) {
    f.suspect = "the fiber or a connector between " + there + " and " + here + " (both directions lossy)";
  } else if (!std::isnan(reverse)) {
    f.suspect_port = rx_port;
    f.suspect = "the transceiver in " + here + " (weak receiver; the reverse direction is clean), or the " +
                there + " -> " + here + " strand";
  } else {
    f.suspect = "the fiber or a connector between " + there + " and " + here;
  }
  out.push_back(std::move(f));
}

void OpticsDetector::end_poll(Time now, std::vector<Finding>& out) {
  for (const fabric::LinkId l : dirty_) {
    is_dirty_[l] = 0;
    const auto& link = topology_.link(l);
    for (const fabric::PortId p : {link.a, link.b}) {
      if (!ports_[p].down) check_loss(p, now, out);
    }
  }
  dirty_.clear();
}

void OpticsDetector::check_drift(const telemetry::PortDelta& d, PortState& s, std::vector<Finding>& out) {
  if (std::isnan(s.rx) || s.rx <= kNoLight) return;  // no light is a down link, not a drift
  if (std::isnan(s.baseline)) {
    s.baseline = s.recent = s.rx;
    s.history_start = s.last_drift_update = d.time;
    return;
  }
  const double dt = seconds(d.time - s.last_drift_update);
  if (dt <= 0) return;
  s.last_drift_update = d.time;
  const double a_slow = 1.0 - std::exp(-dt / seconds(config_.drift_baseline));
  const double a_fast = 1.0 - std::exp(-dt / seconds(config_.drift_recent));
  s.recent += a_fast * (s.rx - s.recent);
  const double drop = s.baseline - s.recent;
  if (d.time - s.history_start >= config_.drift_min_history && drop >= config_.drift_db) {
    if (!s.drift_reported) {
      s.drift_reported = true;
      Finding f = base(d, FindingKind::optics_drift, Severity::warning);
      char buf[160];
      std::snprintf(buf, sizeof buf, "receive power on %s drifted %.2f dB below its baseline (%.2f -> %.2f dBm)",
                    topology_.endpoint_name(d.port).c_str(), drop, s.baseline, s.recent);
      f.summary = buf;
      f.evidence["drop_db"] = drop;
      f.evidence["baseline_dbm"] = s.baseline;
      f.evidence["recent_dbm"] = s.recent;
      out.push_back(std::move(f));
    }
    return;  // the baseline does not learn a degraded level
  }
  if (drop < config_.drift_db - config_.hysteresis_db) s.drift_reported = false;
  s.baseline += a_slow * (s.rx - s.baseline);
}

void OpticsDetector::observe(const telemetry::PortDelta& d, std::vector<Finding>& out) {
  if (d.port >= ports_.size()) return;
  const fabric::Port& port = topology_.port(d.port);
  if (port.link == fabric::kNone) return;
  const OpticType* type = link_type_[port.link];
  if (type == nullptr) return;
  PortState& s = ports_[d.port];
  // Garbage (a non-finite reading) is no reading: it neither raises nor clears a level.
  auto has = [&](Counter c) { return d.has(c) && std::isfinite(d.get(c)); };
  const bool down = has(Counter::oper_up) && d.get(Counter::oper_up) < 0.5;
  if (has(Counter::oper_up)) s.down = down;
  // The loss check needs both ends of this poll: it runs in end_poll().
  if ((has(Counter::tx_power_dbm) || has(Counter::rx_power_dbm)) && !is_dirty_[port.link]) {
    is_dirty_[port.link] = 1;
    dirty_.push_back(port.link);
  }
  if (has(Counter::tx_power_dbm)) {
    s.tx = d.get(Counter::tx_power_dbm);
    s.tx_time = d.time;
    if (!down && s.tx > kNoLight) {
      check_band(d, s, type->tx_power_dbm, s.tx, s.tx_level, FindingKind::optics_tx_power, "transmit power", "dBm",
                 out);
    }
  }
  if (has(Counter::rx_power_dbm)) {
    s.rx = d.get(Counter::rx_power_dbm);
    s.rx_time = d.time;
    // A down link has no light; that is the flap and down detectors' business.
    if (!down && s.rx > kNoLight) {
      check_band(d, s, type->rx_power_dbm, s.rx, s.rx_level, FindingKind::optics_rx_power, "receive power", "dBm",
                 out);
      check_drift(d, s, out);
    }
  }
  if (has(Counter::temperature_c)) {
    check_band(d, s, type->temperature_c, d.get(Counter::temperature_c), s.temp_level,
               FindingKind::optics_temperature, "temperature", "C", out);
  }
  if (has(Counter::laser_bias_ma) && !down) {
    check_band(d, s, type->laser_bias_ma, d.get(Counter::laser_bias_ma), s.bias_level, FindingKind::optics_bias,
               "laser bias", "mA", out);
  }
}

}  // namespace medic::detectors
