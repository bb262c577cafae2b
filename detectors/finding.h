// A finding: one detector's observation that something is wrong with a link, a port or a
// device, with the evidence that made it say so. Findings from every detector and prober
// are plain data that triage correlates into incidents.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/time.h"
#include "fabric/topology.h"

namespace medic::detectors {

enum class FindingKind : uint8_t {
  link_flap,           // carrier flapping (damped; info for a noted flap, critical once suppressed)
  link_down,           // oper down for longer than the hold time
  optics_rx_power,     // receive power below (or above) the optic type's thresholds
  optics_tx_power,     // transmit power below the thresholds: the transmitting optic
  optics_loss,         // one end's transmit vs the other end's receive: fiber or connector
  optics_drift,        // receive power sliding away from its own baseline
  optics_temperature,  // transceiver too hot
  optics_bias,         // laser bias current out of range
  corruption,          // CRC/FCS and symbol errors as a share of frames received
  discards,            // discards: congestion (info) or unexplained by load (warning)
  fec_ber,             // pre-FEC bit error rate near or over the code's limit
  fec_uncorrectable,   // uncorrectable codewords: frames lost
  slow_receiver,       // sustained pause frames from a host port
  pfc_storm,           // sustained pause frames between switches
  telemetry_stale,     // a device stopped answering
  probe_loss,          // active probes lose packets (gray failure when counters are clean)
  probe_latency,       // active probes see latency far above the fabric's baseline
  // The measurement, not the fabric (never about a link, never drained):
  prober_loss,         // a prober lost most of its probes at once, or all alike: the prober's side
  reflector_loss,      // every probe a device's reflector answers is lost alike: the reflector
  telemetry_outage,    // most devices unanswered at once: the collector's side
  telemetry_invalid,   // a device reported counter values no link can produce
  kCount
};
inline constexpr size_t kFindingKindCount = static_cast<size_t>(FindingKind::kCount);
std::string_view to_string(FindingKind k);
std::optional<FindingKind> parse_finding_kind(std::string_view s);

enum class Severity : uint8_t { info, warning, critical };
std::string_view to_string(Severity s);
std::optional<Severity> parse_severity(std::string_view s);

struct Finding {
  FindingKind kind = FindingKind::link_flap;
  Severity severity = Severity::warning;
  fabric::LinkId link = fabric::kNone;
  fabric::PortId port = fabric::kNone;      // the port that reported it, if any
  fabric::DeviceId device = fabric::kNone;  // the device that reported it, or the device at fault
  Time first_seen{};   // best estimate of when the fault began
  Time observed_at{};  // when the detector concluded
  std::string summary; // "8 carrier transitions in 60s on rtsw0001:eth17"
  // Which end is to blame, when the evidence says (optics asymmetry): the port whose
  // transceiver should be replaced, and a sentence saying why.
  fabric::PortId suspect_port = fabric::kNone;
  std::string suspect;
  std::map<std::string, double> evidence;
  // A measurement finding saying its condition is over (the prober, reflector or collector
  // works again): the incident it opened closes by itself, since nobody repairs it.
  bool clears = false;
};

// The kinds that are about the measurement, not the fabric.
bool is_measurement(FindingKind k);

// A finding of `kind` and `severity`, begun at `first_seen`, concluded at `observed_at`;
// the caller adds its scope, summary and evidence.
Finding make_finding(FindingKind kind, Severity severity, Time first_seen, Time observed_at);
// The same about one port: its link, the port and its device set from the topology.
Finding port_finding(const fabric::Topology& topology, fabric::PortId port, FindingKind kind, Severity severity,
                     Time first_seen, Time observed_at);

}  // namespace medic::detectors
