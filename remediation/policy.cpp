#include "remediation/policy.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/files.h"
#include "common/json.h"
#include "common/strings.h"

namespace medic::remediation {

using nlohmann::json;

Mitigation mitigation_for(triage::IncidentClass cls, detectors::Severity severity) {
  if (severity != detectors::Severity::critical) return Mitigation::none;
  return drainable(cls) ? Mitigation::drain : Mitigation::none;
}

bool drainable(triage::IncidentClass cls) {
  using C = triage::IncidentClass;
  switch (cls) {
    case C::link_flap:
    case C::optics:
    case C::corruption:
    case C::fec:
    case C::gray_failure:
      return true;
    case C::link_down:        // nothing flows on it already
    case C::discards:         // congestion or a switch problem, not the link
    case C::slow_receiver:    // routed to the host's owner, never drained as a link fault
    case C::pfc_storm:
    case C::telemetry_stale:
    case C::switch_fault:     // a drain per link would take the switch apart piecemeal
    case C::host_fault:
    case C::prober_fault:     // the measurement failed, not the fabric: never a drain
    case C::reflector_fault:
    case C::telemetry_outage:
    case C::telemetry_invalid:
    case C::kCount:
      return false;
  }
  return false;
}

double loss_estimate(const triage::IncidentUpdate& u) {
  using K = detectors::FindingKind;
  double loss = 0;
  for (const auto& f : u.findings) {
    auto ev = [&](const char* key) {
      const auto it = f.evidence.find(key);
      return it == f.evidence.end() ? 0.0 : it->second;
    };
    double l = 0;
    switch (f.kind) {
      case K::link_flap:
      case K::link_down: l = f.severity == detectors::Severity::critical ? 1.0 : 0.1; break;
      case K::corruption: l = ev("loss_rate"); break;
      case K::probe_loss: l = ev("loss"); break;
      // An uncorrectable codeword is a lost frame; past the FEC limit they come in bursts.
      case K::fec_uncorrectable: l = 1e-3; break;
      case K::fec_ber: l = f.severity == detectors::Severity::critical ? 1e-4 : 0.0; break;
      // Light below the alarm threshold: the receiver is at its sensitivity edge.
      case K::optics_rx_power:
      case K::optics_loss: l = f.severity == detectors::Severity::critical ? 1e-2 : 0.0; break;
      default: l = 0; break;
    }
    loss = std::max(loss, std::clamp(l, 0.0, 1.0));
  }
  return loss;
}

std::string_view to_string(Mode m) { return m == Mode::automatic ? "auto" : "approval"; }

namespace {

// 0.1 -> "0.1", 2592000 -> "2592000" (not "2.592e+06").
std::string bound(double v) {
  return v == static_cast<double>(static_cast<int64_t>(v)) ? std::to_string(static_cast<int64_t>(v)) : format_number(v);
}

Duration seconds_field(const json& v, const std::string& path, double min_s, double max_s,
                       const std::function<void(const std::string&, const std::string&)>& fail) {
  if (!v.is_number() || v.get<double>() < min_s || v.get<double>() > max_s) {
    fail(path, "expected seconds in [" + bound(min_s) + ", " + bound(max_s) + "], got " + v.dump());
  }
  return from_seconds(v.get<double>());
}

int count_field(const json& v, const std::string& path, int min, int max,
                const std::function<void(const std::string&, const std::string&)>& fail) {
  if (!v.is_number_integer() || v.get<int64_t>() < min || v.get<int64_t>() > max) {
    fail(path, "expected a whole number in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                   v.dump());
  }
  return static_cast<int>(v.get<int64_t>());
}

}  // namespace

RemediationPolicy RemediationPolicy::parse(std::string_view text, const std::string& source) {
  const std::function<void(const std::string&, const std::string&)> fail = [&](const std::string& path,
                                                                              const std::string& what) {
    throw PolicyError(source + ": " + path + ": " + what);
  };
  auto parsed = parse_json(text, source);
  if (!parsed) throw PolicyError(parsed.error());
  const json doc = std::move(*parsed);
  if (!doc.is_object()) fail("$", std::string("expected an object, got ") + json_type_name(doc));
  auto keys = [&](const json& o, const std::string& path, std::initializer_list<std::string_view> allowed) {
    if (!o.is_object()) fail(path, std::string("expected an object, got ") + json_type_name(o));
    for (const auto& [k, v] : o.items()) {
      if (k == "comment") continue;
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) fail(path, "unknown key " + quote(k));
    }
  };
  keys(doc, "$", {"version", "classes", "approvals", "rate_limits", "breaker", "blast_radius", "verify", "validation"});
  if (const auto v = doc.find("version"); v != doc.end() && (!v->is_number_integer() || *v != 1)) {
    fail("$.version", "unsupported version " + v->dump() + " (this build reads version 1)");
  }
  RemediationPolicy p;
  if (const auto c = doc.find("classes"); c != doc.end()) {
    if (!c->is_object()) fail("$.classes", "expected an object of class: \"auto\" or \"approval\"");
    for (const auto& [name, v] : c->items()) {
      if (name == "comment") continue;
      const auto cls = triage::parse_incident_class(name);
      if (!cls) fail("$.classes", "unknown incident class " + quote(name));
      if (!drainable(*cls)) {
        fail("$.classes." + name, "incidents of class " + name + " are never drained; only link_flap, optics, "
                                  "corruption, fec and gray_failure take a mode");
      }
      if (!v.is_string() || (v != "auto" && v != "approval")) {
        fail("$.classes." + name, "expected \"auto\" or \"approval\", got " + v.dump());
      }
      p.modes[static_cast<size_t>(*cls)] = v == "auto" ? Mode::automatic : Mode::approval;
    }
  }
  if (const auto a = doc.find("approvals"); a != doc.end()) {
    if (!a->is_object()) fail("$.approvals", "expected an object of class: the number of people who must approve");
    for (const auto& [name, v] : a->items()) {
      if (name == "comment") continue;
      const auto cls = triage::parse_incident_class(name);
      if (!cls) fail("$.approvals", "unknown incident class " + quote(name));
      if (!drainable(*cls)) fail("$.approvals." + name, "incidents of class " + name + " are never drained");
      p.approvals[static_cast<size_t>(*cls)] = count_field(v, "$.approvals." + name, 1, 5, fail);
    }
  }
  if (const auto r = doc.find("rate_limits"); r != doc.end()) {
    keys(*r, "$.rate_limits", {"per_switch", "fabric"});
    for (const char* which : {"per_switch", "fabric"}) {
      const auto it = r->find(which);
      if (it == r->end()) continue;
      const std::string path = std::string("$.rate_limits.") + which;
      keys(*it, path, {"drains", "window_s"});
      RateLimit& lim = std::string_view(which) == "fabric" ? p.fabric : p.per_switch;
      if (const auto d = it->find("drains"); d != it->end()) lim.actions = count_field(*d, path + ".drains", 0, 1000000, fail);
      if (const auto w = it->find("window_s"); w != it->end()) lim.window = seconds_field(*w, path + ".window_s", 1, 7 * 86400, fail);
    }
  }
  if (const auto b = doc.find("breaker"); b != doc.end()) {
    keys(*b, "$.breaker", {"incidents", "window_s"});
    if (const auto i = b->find("incidents"); i != b->end()) p.breaker_incidents = count_field(*i, "$.breaker.incidents", 1, 1000000, fail);
    if (const auto w = b->find("window_s"); w != b->end()) p.breaker_window = seconds_field(*w, "$.breaker.window_s", 1, 86400, fail);
  }
  if (const auto b = doc.find("blast_radius"); b != doc.end()) {
    keys(*b, "$.blast_radius", {"drains", "share"});
    if (const auto d = b->find("drains"); d != b->end()) p.blast_drains = count_field(*d, "$.blast_radius.drains", 1, 1000000, fail);
    if (const auto f = b->find("share"); f != b->end()) {
      if (!f->is_number() || !(f->get<double>() > 0 && f->get<double>() <= 1)) {
        fail("$.blast_radius.share", "expected a share of the fabric's links in (0, 1], got " + f->dump());
      }
      p.blast_share = f->get<double>();
    }
  }
  if (const auto v = doc.find("verify"); v != doc.end()) {
    keys(*v, "$.verify", {"window_s", "min_pps", "moved_fraction"});
    if (const auto w = v->find("window_s"); w != v->end()) p.verify_window = seconds_field(*w, "$.verify.window_s", 0.1, 3600, fail);
    if (const auto m = v->find("min_pps"); m != v->end()) {
      if (!m->is_number() || m->get<double>() < 0) fail("$.verify.min_pps", "expected packets per second >= 0, got " + m->dump());
      if (m->get<double>() > 1e12) fail("$.verify.min_pps", "expected at most 1000000000000 packets per second, got " + m->dump());
      p.verify_min_pps = m->get<double>();
    }
    if (const auto m = v->find("moved_fraction"); m != v->end()) {
      if (!m->is_number() || !(m->get<double>() > 0 && m->get<double>() < 1)) {
        fail("$.verify.moved_fraction", "expected a fraction in (0, 1), got " + m->dump());
      }
      p.verify_moved_fraction = m->get<double>();
    }
  }
  if (const auto v = doc.find("validation"); v != doc.end()) {
    keys(*v, "$.validation", {"soak_s", "max_failures"});
    if (const auto s = v->find("soak_s"); s != v->end()) p.soak = seconds_field(*s, "$.validation.soak_s", 0.1, 30 * 86400, fail);
    if (const auto m = v->find("max_failures"); m != v->end()) p.max_validation_failures = count_field(*m, "$.validation.max_failures", 1, 100, fail);
  }
  return p;
}

RemediationPolicy RemediationPolicy::load_file(const std::string& path) {
  auto text = read_data_file(path);
  if (!text.ok()) throw PolicyError(text.error());
  return parse(*text, path);
}

}  // namespace medic::remediation
