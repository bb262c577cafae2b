// Carries out drains and undrains safely: capacity check first, a durable intent before any
// switch is touched, the driver call, a read-back to verify, then the recorded result.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "remediation/capacity.h"
#include "remediation/driver.h"

namespace medic::remediation {

enum class ActionKind : uint8_t { drain, undrain };
std::string_view to_string(ActionKind k);

struct ActionIntent {
  int64_t incident_id = 0;
  fabric::LinkId link = fabric::kNone;
  ActionKind kind = ActionKind::drain;
  Time at{};
};

struct ActionOutcome {
  bool succeeded = false;
  bool link_drained = false;  // the link's drain state after the action, as read back
  std::string error;
  std::vector<std::string> steps;  // "drain rtsw0001:eth17 -> drained", ...
  Time at{};
};

// Where intents and results are made durable (PostgreSQL in medicd, memory in tests).
class ActionJournal {
 public:
  virtual ~ActionJournal() = default;
  // Must be durable when it returns; the switch is touched only after it succeeds.
  virtual Result<int64_t> write_intent(const ActionIntent& intent) = 0;
  virtual Status write_result(int64_t action_id, const ActionIntent& intent, const ActionOutcome& outcome) = 0;
  virtual Status write_refusal(const ActionIntent& intent, const std::string& reason) = 0;
};

// Drains (or undrains) every switch end of the link and reads each end back; on any failure
// puts back the ends already changed and returns false with out.error set. Idempotent.
bool apply_to_link(const fabric::Topology& topology, DriverSet& drivers, fabric::LinkId link, bool drain,
                   ActionOutcome& out);

// What the switches say of the link's ends: how many ends have a driver, how many of them
// report drained, and the first error (then the counts are partial).
struct LinkReadBack {
  int driven = 0;
  int drained = 0;
  std::string error;
  std::vector<fabric::PortId> drained_ports;
};
LinkReadBack read_back(const fabric::Topology& topology, DriverSet& drivers, fabric::LinkId link);

enum class DrainStatus : uint8_t { drained, refused, failed };

struct DrainResult {
  DrainStatus status = DrainStatus::failed;
  std::string reason;  // refusal reason or failure
  DrainCheck check;
  int64_t action_id = 0;
  Time at{};
};

class Executor {
 public:
  Executor(const fabric::Topology& topology, CapacityModel& capacity, DriverSet& drivers,
           ActionJournal& journal, const Clock& clock);

  DrainResult drain_link(int64_t incident_id, fabric::LinkId link);

 private:
  const fabric::Topology& topology_;
  CapacityModel& capacity_;
  DriverSet& drivers_;
  ActionJournal& journal_;
  const Clock& clock_;
};

}  // namespace medic::remediation
