// A silent device is not a healthy one: every device polled is expected to answer; one
// that has not answered for the configured time gets a telemetry_stale finding (once per
// silence), so its links are not taken for healthy just because nothing is reported.
// But when most devices fall silent in the same poll, the collector (medicd's host, its
// network, a paused exporter host) failed, not each device: no device is judged while
// that lasts, one telemetry_outage finding is made once it has lasted `after`, and a
// clearing finding follows when the devices answer again.
#pragma once

#include <vector>

#include "detectors/config.h"
#include "detectors/finding.h"
#include "telemetry/counters.h"

namespace medic::detectors {

class StaleDetector {
 public:
  StaleDetector(const fabric::Topology& topology, StaleConfig config);

  // Before the devices of a poll: how many were asked and how many of those failed.
  void begin_poll(size_t asked, size_t failed, Time now, std::vector<Finding>& out);
  // One poll's outcome for a device. `error` says why it failed ("" when it answered).
  void observe(fabric::DeviceId device, bool answered, Time now, const std::string& error,
               std::vector<Finding>& out);
  bool stale(fabric::DeviceId device) const { return devices_[device].reported; }
  bool in_outage() const { return outage_; }

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
  bool outage_ = false;
  bool outage_reported_ = false;
  Time outage_since_{};
};

// A device that reports counter values no port can produce (telemetry::CounterTracker
// flags them): its telemetry is broken, not its links. One telemetry_invalid finding per
// device, and a clearing one once it has answered `config.after` without another.
class InvalidTelemetryDetector {
 public:
  InvalidTelemetryDetector(const fabric::Topology& topology, StaleConfig config);

  // A port delta with implausible counters (d.implausible != 0).
  void observe(const telemetry::PortDelta& d, std::vector<Finding>& out);
  void end_poll(Time now, std::vector<Finding>& out);

 private:
  struct DeviceState {
    bool reported = false;
    Time last_bad{};
  };
  const fabric::Topology& topology_;
  StaleConfig config_;
  std::vector<DeviceState> devices_;
  std::vector<fabric::DeviceId> reported_;
};

}  // namespace medic::detectors
