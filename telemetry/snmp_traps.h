// Receives SNMP notifications (SNMPv2c and SNMPv3 traps, v2c informs) on a UDP port with
// net-snmp, and hands over the linkDown and linkUp ones from known agents as link events.
// A notification from an address no switch is polled at, or whose community or SNMPv3
// user, keys or security level are not medicd's, is counted and dropped. SNMPv3 traps are
// authenticated with the keys the collector localized for the sending agent's engine, so
// an agent's traps are accepted once medicd has polled it. Not thread-safe: like the
// collector, it is called on medicd's poll loop only (telemetry/netsnmp.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "fabric/topology.h"
#include "telemetry/snmp.h"

namespace medic::telemetry {

// A linkDown or linkUp from a known agent.
struct SnmpLinkNotification {
  fabric::DeviceId device = fabric::kNone;
  bool up = false;
  uint32_t if_index = 0;
  std::string if_name;  // when the notification named it
  std::optional<uint64_t> uptime;  // its sysUpTime.0 (the agent's clock), when it has one
  Time time{};
};

struct SnmpTrapCounters {
  size_t link_down = 0, link_up = 0;  // handed over
  size_t other = 0;            // another notification from a known agent (ignored)
  size_t unknown_agent = 0;    // from an address no switch is polled at
  size_t bad_credentials = 0;  // wrong community, SNMPv3 user, keys or security level
  size_t malformed = 0;        // undecodable, or a linkDown/linkUp naming no interface
  size_t informs_answered = 0;
};

class SnmpTrapReceiver {
 public:
  // `listen`: "ADDR:PORT" ("[ADDR]:PORT" for IPv6; port 0 picks one). `agents`: the address
  // each switch's agent is polled at (its snmp:// host, an IP address) and the switch.
  static Result<std::unique_ptr<SnmpTrapReceiver>> open(const std::string& listen, const SnmpCredentials& credentials,
                                                        std::vector<std::pair<std::string, fabric::DeviceId>> agents);
  ~SnmpTrapReceiver();
  SnmpTrapReceiver(const SnmpTrapReceiver&) = delete;
  SnmpTrapReceiver& operator=(const SnmpTrapReceiver&) = delete;

  int fd() const;              // readable when a notification waits
  uint16_t port() const;       // the port it is bound to
  const std::string& address() const;
  // Reads what waits (at most `max` datagrams; never blocks): the link notifications.
  std::vector<SnmpLinkNotification> read(const Clock& clock, size_t max = 1024);
  const SnmpTrapCounters& counters() const;

 private:
  SnmpTrapReceiver();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace medic::telemetry
