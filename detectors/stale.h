// A silent device is not a healthy one: every device polled is expected to answer; one
// that has not answered for the configured time gets a telemetry_stale finding (once per
// silence), so its links are not taken for healthy just because nothing is reported.
#pragma once

#include <vector>

#include "detectors/config.h"
#include "detectors/finding.h"

namespace medic::detectors {

class StaleDetector {
 public:
  StaleDetector(const fabric::Topology& topology, StaleConfig config);

  // One poll's outcome for a device. `error` says why it failed ("" when it answered).
  void observe(fabric::DeviceId device, bool answered, Time now, const std::string& error,
               std::vector<Finding>& out);
  bool stale(fabric::DeviceId device) const { return devices_[device].reported; }

 private:
  struct DeviceState {
    Time last_ok{};
    Time first_poll{};
    bool polled = false;
    bool reported = false;
  };
  const fabric::Topology& topology_;
  StaleConfig config_;
  std::vector<DeviceState> devices_;
};

}  // namespace medic::detectors
