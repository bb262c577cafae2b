// Mapping vendor and exporter metric names onto canonical counters, driven by a data file
// (data/counter_map.json, documented in docs/formats.md) rather than code.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/hash.h"
#include "common/result.h"
#include "fabric/topology.h"
#include "telemetry/counters.h"
#include "telemetry/prometheus.h"

namespace medic::telemetry {

enum class Transform : uint8_t {
  none,
  mw_to_dbm,      // milliwatts -> dBm (0 mW -> -40 dBm, the "no light" reading)
  ifoper_status,  // IF-MIB ifOperStatus: 1 (up) -> 1, anything else -> 0
  up_string,      // 1 stays 1; used for exporters whose "up" gauge is already 0/1
  oc_oper_status, // OpenConfig oper-status enumeration: "UP" -> 1, anything else -> 0
};

enum class Aggregate : uint8_t { last, min, max, sum };

struct MapRule {
  Counter counter = Counter::oper_up;
  std::string port_label;                                  // label naming the interface
  std::vector<std::pair<std::string, std::string>> match;  // extra labels that must match
  double scale = 1.0;
  Transform transform = Transform::none;
  Aggregate aggregate = Aggregate::last;  // several samples for one port (e.g. optic lanes)
};

class CounterMapError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CounterMap {
 public:
  // Throws CounterMapError "FILE: $.path: problem".
  static CounterMap load_file(const std::string& path);
  static CounterMap parse(std::string_view text, const std::string& source);

  // Rules for a Prometheus metric name, or nullptr.
  const std::vector<MapRule>* prometheus(std::string_view metric) const;
  // Rules for an OpenConfig leaf path without keys or module prefixes, or nullptr.
  const std::vector<MapRule>* openconfig(std::string_view path) const;
  // Rules for a MIB object the SNMP collector reads (telemetry/snmp.h), or nullptr.
  const std::vector<MapRule>* snmp(std::string_view object) const;
  size_t size() const { return prom_.size() + oc_.size() + snmp_.size(); }

 private:
  StringMap<std::vector<MapRule>> prom_;
  StringMap<std::vector<MapRule>> oc_;
  StringMap<std::vector<MapRule>> snmp_;
};

struct MapStats {
  size_t samples = 0;        // samples in the payload
  size_t mapped = 0;         // samples that became a canonical counter of a known port
  size_t unmapped = 0;       // metric names the map does not know (ignored)
  size_t unknown_port = 0;   // known metric for a port not in the topology (ignored)
  size_t skipped = 0;        // histogram and summary samples (ignored)
  size_t unparsable = 0;     // OpenConfig leaves whose value is not a number (ignored)
  MapStats& operator+=(const MapStats& o) {
    samples += o.samples;
    mapped += o.mapped;
    unmapped += o.unmapped;
    unknown_port += o.unknown_port;
    skipped += o.skipped;
    unparsable += o.unparsable;
    return *this;
  }
};

enum class PayloadFormat : uint8_t { prometheus, openconfig, snmp };
// The SNMP collector's answers (by their content type, kSnmpContentType) are snmp; JSON
// answers (by content type, or by a body starting with '{') are OpenConfig; the rest is the
// Prometheus text format.
PayloadFormat detect_format(std::string_view content_type, std::string_view body);

// Turns one device's scrape into one PortSample per port it reported on.
class ScrapeMapper {
 public:
  ScrapeMapper(const fabric::Topology& topology, const CounterMap& map);

  // Appends to `out`; on a malformed payload returns the parser's error and appends nothing.
  Status map_prometheus(fabric::DeviceId device, std::string_view body, Time time,
                        std::vector<PortSample>& out, MapStats* stats = nullptr);
  Status map_openconfig(fabric::DeviceId device, std::string_view body, Time time,
                        std::vector<PortSample>& out, MapStats* stats = nullptr);
  // An SNMP walk as the SNMP collector renders it: the counter map's "snmp" rules.
  Status map_snmp(fabric::DeviceId device, std::string_view body, Time time, std::vector<PortSample>& out,
                  MapStats* stats = nullptr);
  Status map(fabric::DeviceId device, PayloadFormat format, std::string_view body, Time time,
             std::vector<PortSample>& out, MapStats* stats = nullptr);

 private:
  Status map_text(fabric::DeviceId device, std::string_view body, Time time, std::vector<PortSample>& out,
                  MapStats* stats, bool snmp);
  class Builder;
  class Sink;
  class OcSinkImpl;
  const fabric::Topology& topology_;
  const CounterMap& map_;
  PromParser parser_;
  std::vector<int32_t> slot_;  // port -> index in the output being built, -1 if none
};

}  // namespace medic::telemetry
