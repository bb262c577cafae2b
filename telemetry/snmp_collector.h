// Polls switches' SNMP agents with net-snmp's asynchronous single-session API: many agents
// walked at once, each with GETBULK requests that carry every column still being walked,
// a per-request timeout with retries and a deadline for the whole walk. Each agent's walk
// becomes a ScrapeResult whose body counter_map.json's "snmp" rules read (telemetry/snmp.h),
// so SNMP answers go through the same mapping, tracker and detectors as HTTP ones.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <span>
#include <vector>

#include "common/time.h"
#include "telemetry/collector.h"
#include "telemetry/snmp.h"

namespace medic::telemetry {

// The content type of an SNMP answer's body (detect_format reads it as PayloadFormat::snmp).
inline constexpr std::string_view kSnmpContentType = "application/x-medic-snmp";

struct SnmpOptions {
  double timeout_s = 2.0;          // the whole walk of one agent
  double request_timeout_s = 0.5;  // one request, before it is sent again
  int retries = 1;                 // resends of a request that got no answer
  size_t max_in_flight = 256;      // agents walked at once
  size_t max_varbinds = 60;        // values asked for in one GETBULK (split over the columns)
  size_t max_values = 200000;      // values one agent's walk may return before it is cut off
};

struct SnmpCounters {
  size_t requests = 0;       // GETBULK requests sent (not counting net-snmp's resends)
  size_t restarts = 0;       // agents whose sysUpTime went back
  size_t renumbered = 0;     // agents whose ifIndex numbering changed
  size_t opened = 0;         // sessions opened (SNMPv3: with engine discovery)
};

class SnmpCollector {
 public:
  SnmpCollector(SnmpCredentials credentials, SnmpOptions options = {});
  ~SnmpCollector();
  SnmpCollector(const SnmpCollector&) = delete;
  SnmpCollector& operator=(const SnmpCollector&) = delete;

  // Walks every target (url "snmp://HOST[:PORT]") once; one result per target, in order;
  // `on_result` as Collector::scrape's. The targets' agents keep their sessions and their
  // state (ifIndex names, flap counts) from poll to poll, by device.
  std::vector<ScrapeResult> scrape(std::span<const ScrapeTarget> targets, const Clock& clock,
                                   const std::function<void(ScrapeResult&)>& on_result = {});

  const SnmpCounters& counters() const;
  // The ifName the device's agent gave `if_index` in its latest poll (notifications name an
  // interface by ifIndex); nullopt when that poll named none.
  std::optional<std::string> interface_name(fabric::DeviceId device, uint32_t if_index) const;
  // SnmpAgentState::judge_notification of the device's agent (fresh for an agent not polled).
  SnmpAgentState::Notification judge_notification(fabric::DeviceId device, uint32_t if_index, bool up,
                                                  std::optional<uint64_t> uptime);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace medic::telemetry
