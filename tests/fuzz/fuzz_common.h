// What the harnesses share: a hard failure for a broken invariant, the repository's files,
// and the small topology the payload harnesses map onto.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "fabric/loader.h"

namespace medic::fuzz {

// A violated invariant is a finding: abort so libFuzzer saves the input.
[[noreturn]] inline void fail(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "fuzz invariant violated: %s %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}
inline void check(bool ok, const char* what, std::string_view detail = {}) {
  if (!ok) fail(what, detail);
}

// A file of the repository (MEDIC_SOURCE_DIR is the source tree the harness was built from).
inline std::string source_file(const std::string& relative) {
  std::ifstream in(std::string(MEDIC_SOURCE_DIR) + "/" + relative, std::ios::binary);
  if (!in) fail("cannot read", relative);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The devices of tests/fixtures/telemetry/ (node_exporter hosts, an snmp_exporter ToR, a
// gNMI spine) and of fabsim (rtsw0001, ctsw001: eth ports), so that payloads of each reach
// the mapping of known ports.
inline constexpr const char* kTopology = R"({
  "version": 1,
  "switches": [
    {"name": "rtsw1", "role": "rtsw", "zone": 1, "telemetry": "http://snmp-exporter:9116/snmp?target=rtsw1",
     "driver": {"kind": "dryrun"}},
    {"name": "ctsw1", "role": "ctsw", "zone": 1, "plane": 1, "telemetry": "http://gnmi-gw:8080/ctsw1",
     "driver": {"kind": "dryrun"}},
    {"name": "rtsw0001", "role": "rtsw", "zone": 1, "telemetry": "http://127.0.0.1:18080/s/rtsw0001/metrics",
     "driver": {"kind": "dryrun"}},
    {"name": "ctsw001", "role": "ctsw", "zone": 1, "plane": 1, "telemetry": "http://127.0.0.1:18080/s/ctsw001/gnmi",
     "driver": {"kind": "dryrun"}}
  ],
  "hosts": [
    {"name": "host1", "zone": 1, "nics": ["enp12s0np0", "enp13s0np0"], "telemetry": "http://host1:9100/metrics"},
    {"name": "host2", "zone": 1, "nics": ["eth2", "eth3"], "telemetry": "http://host2:9100/metrics"}
  ],
  "links": [
    {"a": "host1:enp12s0np0", "b": "rtsw1:Eth1/1", "speed_gbps": 400, "optic": "400G-SR8"},
    {"a": "host1:enp13s0np0", "b": "rtsw1:Eth1/2", "speed_gbps": 400, "optic": "400G-SR8"},
    {"a": "host2:eth2", "b": "rtsw1:Eth1/3", "speed_gbps": 400},
    {"a": "host2:eth3", "b": "rtsw1:Eth1/4", "speed_gbps": 400},
    {"a": "rtsw1:Eth1/49", "b": "ctsw1:Ethernet1", "speed_gbps": 400, "optic": "400G-DR4"},
    {"a": "rtsw1:Eth1/50", "b": "ctsw1:Ethernet2", "speed_gbps": 400},
    {"a": "rtsw1:Eth1/51", "b": "ctsw1:Ethernet3", "speed_gbps": 400},
    {"a": "rtsw0001:eth5", "b": "ctsw001:eth1", "speed_gbps": 400, "a_ip": "127.64.0.0", "b_ip": "127.64.0.1"},
    {"a": "rtsw0001:eth6", "b": "ctsw001:eth2", "speed_gbps": 400},
    {"a": "rtsw0001:eth7", "b": "ctsw1:Ethernet4", "speed_gbps": 400},
    {"a": "rtsw1:Eth1/52", "b": "ctsw001:eth3", "speed_gbps": 400}
  ],
  "capacity_groups": [
    {"name": "rtsw1 uplinks", "kind": "tor_uplinks", "floor": 0.75,
     "links": ["rtsw1:Eth1/49", "rtsw1:Eth1/50", "rtsw1:Eth1/51", "rtsw1:Eth1/52"]}
  ]
})";

inline const fabric::Topology& topology() {
  static const fabric::Topology t = fabric::parse_topology(kTopology, "fuzz-topology.json");
  return t;
}

}  // namespace medic::fuzz
