#include "detectors/detectors.h"

namespace medic::detectors {

DetectorSet::DetectorSet(const fabric::Topology& topology, const DetectorConfig& config)
    : flap_(topology, config.flap),
      optics_(topology, config.optics),
      corruption_(topology, config.corruption),
      fec_(topology, config.fec),
      pfc_(topology, config.pfc),
      stale_(topology, config.stale),
      invalid_(topology, config.stale) {}

void DetectorSet::observe(const telemetry::PortDelta& d, std::vector<Finding>& out) {
  invalid_.observe(d, out);
  flap_.observe(d, out);
  optics_.observe(d, out);
  corruption_.observe(d, out);
  fec_.observe(d, out);
  pfc_.observe(d, out);
}

void DetectorSet::begin_poll(size_t asked, size_t failed, Time now, std::vector<Finding>& out) {
  stale_.begin_poll(asked, failed, now, out);
}

void DetectorSet::end_poll(Time now, std::vector<Finding>& out) {
  optics_.end_poll(now, out);
  invalid_.end_poll(now, out);
}

void DetectorSet::observe_poll(fabric::DeviceId device, bool answered, Time now, const std::string& error,
                               std::vector<Finding>& out) {
  stale_.observe(device, answered, now, error, out);
}

}  // namespace medic::detectors
