// Every passive detector behind one call: each port delta goes to each detector, each poll
// outcome to the staleness detector.
#pragma once

#include <vector>

#include "detectors/config.h"
#include "detectors/corruption.h"
#include "detectors/fec.h"
#include "detectors/finding.h"
#include "detectors/flap.h"
#include "detectors/optics.h"
#include "detectors/pfc.h"
#include "detectors/stale.h"

namespace medic::detectors {

class DetectorSet {
 public:
  DetectorSet(const fabric::Topology& topology, const DetectorConfig& config);

  void observe(const telemetry::PortDelta& d, std::vector<Finding>& out);
  // Before a poll's devices: how many were asked, how many of them did not answer.
  void begin_poll(size_t asked, size_t failed, Time now, std::vector<Finding>& out);
  void observe_poll(fabric::DeviceId device, bool answered, Time now, const std::string& error,
                    std::vector<Finding>& out);
  // A link event between polls (an SNMP linkDown/linkUp notification): flaps only.
  void link_event(fabric::PortId port, bool up, Time at, std::vector<Finding>& out) { flap_.link_event(port, up, at, out); }
  // After every delta of a poll: checks that need both ends of a link.
  void end_poll(Time now, std::vector<Finding>& out);

  const FlapDetector& flap() const { return flap_; }
  const CorruptionDetector& corruption() const { return corruption_; }
  const FecDetector& fec() const { return fec_; }
  const StaleDetector& stale() const { return stale_; }

 private:
  FlapDetector flap_;
  OpticsDetector optics_;
  CorruptionDetector corruption_;
  FecDetector fec_;
  PfcDetector pfc_;
  StaleDetector stale_;
  InvalidTelemetryDetector invalid_;
};

}  // namespace medic::detectors
