// Bad optics, from the transceiver readings of both ends of a link:
//  - receive and transmit power, temperature and laser bias against the optic type's
//    warning and alarm thresholds (data/detectors.json), with hysteresis;
//  - one end's transmit power against the other end's receive power: a loss larger than
//    the type's link budget points at the fiber or a connector, a weak transmitter at the
//    transmitting end, a weak receiver at the receiving end (the suspect end);
//  - receive power drifting below its own long-term baseline, before any threshold.
#pragma once

#include <vector>

#include "detectors/config.h"
#include "detectors/finding.h"
#include "telemetry/counters.h"

namespace medic::detectors {

class OpticsDetector {
 public:
  OpticsDetector(const fabric::Topology& topology, OpticsConfig config);

  void observe(const telemetry::PortDelta& d, std::vector<Finding>& out);
  // Compares each link's two ends once every answer of the poll is in, so a transmitter
  // that weakened since the last poll is not taken for a bad receiver.
  void end_poll(Time now, std::vector<Finding>& out);

 private:
  enum Level : int8_t { ok = 0, warn = 1, alarm = 2 };
  struct PortState {
    double rx = NAN, tx = NAN;
    Time rx_time{}, tx_time{};
    Level rx_level = ok, tx_level = ok, temp_level = ok, bias_level = ok, loss_level = ok;
    // Drift: a slow and a fast exponential average of receive power.
    double baseline = NAN, recent = NAN;
    Time history_start{}, last_drift_update{};
    bool drift_reported = false;
    bool down = false;
  };
  // Level of a reading against a band; `previous` applies hysteresis on the way back.
  Level level_of(const Band& b, double v, Level previous) const;
  void check_band(const telemetry::PortDelta& d, PortState& s, const Band& b, double v, Level& level,
                  FindingKind kind, const char* what, const char* unit, std::vector<Finding>& out);
  void check_loss(fabric::PortId rx_port, Time now, std::vector<Finding>& out);
  void check_drift(const telemetry::PortDelta& d, PortState& s, std::vector<Finding>& out);
  Finding base(const telemetry::PortDelta& d, FindingKind kind, Severity sev) const;

  const fabric::Topology& topology_;
  OpticsConfig config_;
  std::vector<PortState> ports_;
  std::vector<const OpticType*> link_type_;
  std::vector<fabric::LinkId> dirty_;  // links with a new reading this poll
  std::vector<uint8_t> is_dirty_;
};

}  // namespace medic::detectors
