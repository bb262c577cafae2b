// The data files medicd, fabsim and medic read at start-up, each through its own loader.
// The first input byte picks the kind, the rest is the file:
//   'd' detector thresholds  DetectorConfig::parse        (detectors/config.cpp), then DetectorSet
//   'c' capacity floors      CapacityConfig::parse        (remediation/capacity_config.cpp),
//                            then with_derived_groups on the demo fabric
//   'p' remediation policy   RemediationPolicy::parse     (remediation/policy.cpp)
//   'm' counter map          CounterMap::parse            (telemetry/mapping.cpp), then the
//                            telemetry fixtures mapped with it
//   's' SLO targets          slo::parse_targets           (slo/targets_file.cpp)
// any other first byte: its value modulo 5 in that order. A file that loads holds values
// within the ranges docs/formats.md gives, and validates again.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "detectors/config.h"
#include "detectors/detectors.h"
#include "fabric/generator.h"
#include "remediation/capacity_config.h"
#include "remediation/policy.h"
#include "slo/targets_file.h"
#include "telemetry/mapping.h"
#include "tests/fuzz/fuzz_common.h"
#include "triage/incident.h"

using namespace medic;

namespace {

const fabric::Topology& demo() {
  static const fabric::Topology t = fabric::generate_clos(*fabric::preset("demo"));
  return t;
}

void detectors_file(std::string_view text) {
  detectors::DetectorConfig c;
  try {
    c = detectors::DetectorConfig::parse(text, "detectors.json");
  } catch (const detectors::ConfigError& e) {
    fuzz::check(std::string_view(e.what()).rfind("detectors.json: ", 0) == 0, "error without the file", e.what());
    return;
  }
  try {
    c.validate("detectors.json");
  } catch (const std::exception& e) {
    fuzz::fail("a loaded detector config does not validate again:", e.what());
  }
  detectors::DetectorSet set(fuzz::topology(), c);
  (void)set;
}

void capacity_file(std::string_view text) {
  remediation::CapacityConfig c;
  try {
    c = remediation::CapacityConfig::parse(text, "capacity.json");
  } catch (const remediation::CapacityConfigError& e) {
    fuzz::check(std::string_view(e.what()).rfind("capacity.json: ", 0) == 0, "error without the file", e.what());
    return;
  }
  for (const auto& [kind, floor] : c.floors) fuzz::check(floor > 0 && floor <= 1, "floor out of (0, 1]", kind);
  fuzz::check(c.budget_fabric >= 1 && c.budget_fabric <= 1000000, "budget.fabric out of range");
  fuzz::check(c.budget_per_switch >= 1 && c.budget_per_switch <= 1000000, "budget.per_switch out of range");
  const fabric::Topology t = remediation::with_derived_groups(demo(), c);
  for (const auto& g : t.groups()) fuzz::check(g.floor > 0 && g.floor <= 1, "derived group floor out of (0, 1]", g.name);
}

void policy_file(std::string_view text) {
  remediation::RemediationPolicy p;
  try {
    p = remediation::RemediationPolicy::parse(text, "remediation.json");
  } catch (const remediation::PolicyError& e) {
    fuzz::check(std::string_view(e.what()).rfind("remediation.json: ", 0) == 0, "error without the file", e.what());
    return;
  }
  using std::chrono::milliseconds;
  using S = std::chrono::seconds;
  fuzz::check(p.per_switch.actions >= 0 && p.per_switch.actions <= 1000000, "per_switch.drains out of range");
  fuzz::check(p.fabric.actions >= 0 && p.fabric.actions <= 1000000, "fabric.drains out of range");
  fuzz::check(p.per_switch.window >= S(1) && p.per_switch.window <= S(604800), "per_switch window");
  fuzz::check(p.fabric.window >= S(1) && p.fabric.window <= S(604800), "fabric window");
  fuzz::check(p.breaker_incidents >= 1 && p.breaker_incidents <= 1000000, "breaker.incidents out of range");
  fuzz::check(p.breaker_window >= S(1) && p.breaker_window <= S(86400), "breaker window");
  fuzz::check(p.blast_drains >= 1 && p.blast_drains <= 1000000, "blast_radius.drains out of range");
  fuzz::check(p.blast_share > 0 && p.blast_share <= 1, "blast_radius.share out of range");
  fuzz::check(p.verify_window >= milliseconds(100) && p.verify_window <= S(3600), "verify window");
  fuzz::check(p.verify_min_pps >= 0 && p.verify_min_pps <= 1e12, "verify.min_pps out of range");
  fuzz::check(p.verify_moved_fraction > 0 && p.verify_moved_fraction < 1, "verify.moved_fraction out of range");
  fuzz::check(p.soak >= milliseconds(100) && p.soak <= S(2592000), "validation.soak_s out of range");
  fuzz::check(p.max_validation_failures >= 1 && p.max_validation_failures <= 100, "validation.max_failures");
  for (size_t c = 0; c < triage::kIncidentClassCount; ++c) {
    const auto cls = static_cast<triage::IncidentClass>(c);
    fuzz::check(p.approvals_needed(cls) >= 1, "a class needs no approver");
  }
}

void counter_map_file(std::string_view text) {
  static const std::string prom = fuzz::source_file("tests/fixtures/telemetry/node_exporter_1.5_mlx5_host.prom");
  static const std::string snmp = fuzz::source_file("tests/fixtures/telemetry/snmp_exporter_if_mib_switch.prom");
  static const std::string gnmi = fuzz::source_file("tests/fixtures/telemetry/gnmi_get_json_ietf_switch.json");
  telemetry::CounterMap map;
  try {
    map = telemetry::CounterMap::parse(text, "counter_map.json");
  } catch (const telemetry::CounterMapError& e) {
    fuzz::check(std::string_view(e.what()).rfind("counter_map.json: ", 0) == 0, "error without the file", e.what());
    return;
  }
  const auto& topo = fuzz::topology();
  telemetry::ScrapeMapper mapper(topo, map);
  const struct {
    const char* device;
    const std::string* body;
  } scrapes[] = {{"host1", &prom}, {"rtsw1", &snmp}, {"ctsw1", &gnmi}};
  for (const auto& s : scrapes) {
    std::vector<telemetry::PortSample> out;
    const auto d = *topo.find_device(s.device);
    const auto st = mapper.map(d, telemetry::detect_format("", *s.body), *s.body, from_unix_seconds(1.8e9), out);
    for (const auto& ps : out) fuzz::check(topo.port(ps.port).device == d, "sample for a port of another device");
    if (!st.ok()) fuzz::check(out.empty(), "a refused payload appended samples");
  }
}

void slo_file(std::string_view text) {
  static const std::vector<std::string> classes = [] {
    std::vector<std::string> out;
    for (size_t c = 0; c < triage::kIncidentClassCount; ++c) {
      out.emplace_back(triage::to_string(static_cast<triage::IncidentClass>(c)));
    }
    return out;
  }();
  const auto r = slo::parse_targets(text, "slo.json", classes);
  if (!r.ok()) {
    fuzz::check(r.kind() == ErrorKind::invalid, "a refused SLO file is not 'invalid'", r.error());
    fuzz::check(r.error().rfind("slo.json: ", 0) == 0, "error without the file", r.error());
    return;
  }
  for (const auto& t : *r) {
    fuzz::check(t.target > Duration(0) && t.target <= std::chrono::hours(24 * 366), "target out of (0 s, 366 days]");
    fuzz::check(t.objective > 0 && t.objective <= 1, "objective out of (0, 1]");
    fuzz::check(triage::parse_incident_class(t.incident_class).has_value(), "unknown class", t.incident_class);
    fuzz::check(t.scope_kind.empty() || t.scope_kind == "zone" || t.scope_kind == "plane" || t.scope_kind == "role",
                "unknown scope", t.scope_kind);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  int kind = 0;
  switch (data[0]) {
    case 'd': kind = 0; break;
    case 'c': kind = 1; break;
    case 'p': kind = 2; break;
    case 'm': kind = 3; break;
    case 's': kind = 4; break;
    default: kind = data[0] % 5;
  }
  switch (kind) {
    case 0: detectors_file(text); break;
    case 1: capacity_file(text); break;
    case 2: policy_file(text); break;
    case 3: counter_map_file(text); break;
    default: slo_file(text); break;
  }
  return 0;
}
