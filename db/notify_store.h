// The notification outbox (migration 008): the receivers medicd is configured with, and per
// receiver the changes of incidents still owed to it, in commit order. Rows are written by
// a trigger in the transaction that changes the incident; this store reads what is due and
// records each delivery's outcome.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "db/connection.h"

namespace medic::db {

struct NotifyReceiver {
  std::string name;  // "alertmanager http://host:9093": unique, no credentials
  std::string kind;  // "alertmanager" or "webhook"
};

// One incident as a notification tells it: an outbox event, or (event "firing", id 0) an
// open incident re-sent to Alertmanager.
struct NotifyEvent {
  int64_t id = 0;  // the event id (0: a repeat)
  std::string receiver, event, state, severity, old_severity;
  Time at{};  // when the change was committed (a repeat: when it was read)
  int attempts = 0;
  // The incident (its identity never changes).
  int64_t incident_id = 0;
  std::string incident_class, link, device, summary, blocked_reason;
  std::string zone, plane;       // "zone1": of its suspect end, else its link's switch end, else its device
  bool device_is_switch = false;  // its suspect (else its device) is a switch
  Time detected_at{};
  std::optional<Time> ended_at;  // closed or dismissed
};

struct NotifyReceiverStatus {
  std::string name, kind;
  bool enabled = false;
  int64_t pending = 0, delivered = 0, failed = 0;
  std::optional<Time> oldest_pending;
  std::string last_error;  // of the oldest pending row, or of the last refused one
};

class NotifyStore {
 public:
  explicit NotifyStore(Connection& c) : c_(c) {}

  // The receivers now configured: added or enabled; every other one disabled (its rows
  // still owed stay, and are delivered if it comes back).
  Status set_receivers(const std::vector<NotifyReceiver>& receivers);
  // Up to `limit` events owed to `receiver`, oldest first.
  Result<std::vector<NotifyEvent>> due(const std::string& receiver, int limit);
  // Every open incident, as "firing" events for `receiver` (Alertmanager's repeats).
  Result<std::vector<NotifyEvent>> open_incidents(const std::string& receiver, Time now);
  Status delivered(const std::vector<int64_t>& ids, Time at);
  // A failed attempt: counted with its error; `permanent` (a 4xx): not retried.
  Status attempt_failed(const std::vector<int64_t>& ids, const std::string& error, bool permanent, Time at);
  // Every receiver's counts, by name; or only `receiver`'s (none if it is not listed).
  Result<std::vector<NotifyReceiverStatus>> status(const std::optional<std::string>& receiver = std::nullopt);
  // Deletes delivered and refused rows older than `before`; returns how many.
  Result<int64_t> prune(Time before);

 private:
  Connection& c_;
};

}  // namespace medic::db
