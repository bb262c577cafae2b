// Generated Clos fabrics: RTSW (ToR) -> CTSW (spine) -> ATSW (aggregation), GPU hosts below.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/topology.h"

namespace medic::fabric {

struct ClosShape {
  int zones = 1;
  int rtsw_per_zone = 4;
  int ctsw_per_zone = 4;     // also the number of planes: CTSW i of every zone is in plane i
  int gpus_per_rtsw = 4;     // GPU-facing links per RTSW, one per GPU NIC
  int gpus_per_host = 4;     // NICs per host
  int atsw_per_plane = 1;
  int ctsw_uplinks = 2;      // links from each CTSW up to the ATSWs of its plane
  double speed_gbps = 400;
  double tor_uplink_floor = 0.75;
  std::string base_url = "http://127.0.0.1:18080";  // fabsim serves /s/NAME/metrics and /s/NAME/rpc
  std::string driver_kind = "jsonrpc";
  std::string fabric_optic = "400G-DR4";   // switch-to-switch links
  std::string host_optic = "400G-SR8";     // GPU NIC to ToR
  bool host_telemetry = true;              // hosts get BASE/h/NAME/metrics (NIC counters)
  // How switches are scraped: "prometheus" (BASE/s/NAME/metrics), "openconfig" (BASE/s/NAME/gnmi,
  // JSON as a gNMI gateway returns it) or "mixed" (ToRs Prometheus, spines and aggregation
  // OpenConfig, as fleets with two vendors have it).
  std::string telemetry_format = "mixed";
  // Link addresses for active probing: consecutive pairs from this IPv4 base ("" for none).
  // The default block in 127/8 is local on every Linux host, which is how fabsim's
  // reflectors and a local prober meet on loopback.
  std::string address_base = "127.64.0.0";
  uint16_t reflector_port = 862;  // every device's STAMP reflector (0: none)
};

// "demo" and "zone32k"; nullopt for an unknown name.
std::optional<ClosShape> preset(std::string_view name);
std::vector<std::string> preset_names();

// Throws std::invalid_argument when the shape does not describe a fabric.
Topology generate_clos(const ClosShape& shape);

}  // namespace medic::fabric
