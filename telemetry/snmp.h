// SNMP as a counter source, the part without I/O: where an agent is (snmp://host:port),
// the credentials medicd polls with, which IF-MIB and EtherLike-MIB columns it walks, and
// how one agent's walk becomes an answer the counter map reads (docs/formats.md, "SNMP").
// The walking itself is telemetry/snmp_collector.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/url.h"  // SnmpAddress, parse_snmp_url

namespace medic::telemetry {

// The one set of credentials every agent is polled with: SNMPv2c with a community, or
// SNMPv3 USM at authPriv with SHA and AES-128. They come from a file or the environment,
// never from a command line, and describe() never shows a secret.
struct SnmpCredentials {
  enum class Version : uint8_t { v2c, v3 };
  Version version = Version::v2c;
  std::string community;      // v2c
  std::string user;           // v3
  std::string auth_password;  // v3, SHA (at least 8 characters)
  std::string priv_password;  // v3, AES-128 (at least 8 characters)

  // JSON: {"version": "2c", "community": "..."} or {"version": "3", "user": "...",
  // "auth_protocol": "SHA", "auth_password": "...", "priv_protocol": "AES",
  // "priv_password": "..."}. Errors say "FILE: $.key: problem".
  static Result<SnmpCredentials> parse(std::string_view text, const std::string& source);
  static Result<SnmpCredentials> load_file(const std::string& path);
  // MEDIC_SNMP_COMMUNITY, or MEDIC_SNMP_USER with MEDIC_SNMP_AUTH_PASSWORD and
  // MEDIC_SNMP_PRIV_PASSWORD; not_found when none of them is set.
  static Result<SnmpCredentials> from_env();
  std::string describe() const;  // "SNMPv2c (community set)", "SNMPv3 user medic, authPriv SHA/AES"
};

// One variable of a response, as the collector hands it over.
struct SnmpValue {
  enum class Type : uint8_t { integer, counter32, counter64, gauge32, timeticks, octets, object_id, no_such, end_of_view, other };
  std::vector<uint32_t> oid;
  Type type = Type::other;
  uint64_t number = 0;  // integer (as int64 bits), counters, gauges, timeticks
  std::string text;     // octets
  std::vector<uint32_t> object;  // object_id
};

// The columns walked, in the order one GETBULK asks for them.
struct SnmpColumn {
  std::string_view name;         // the MIB object's name, as counter_map.json's "snmp" rules name it
  std::vector<uint32_t> oid;     // the column (a table entry's OID with the column number)
  bool low_counterpart = false;  // a 32-bit counter read only from agents without its HC twin
};
const std::vector<SnmpColumn>& snmp_columns();
// sysUpTime, asked with every walk's first request: it going back says the agent restarted.
std::span<const uint32_t> snmp_sys_uptime_oid();

// The counter the collector adds from ifOperStatus and ifLastChange: transitions seen
// between polls (a down-and-up between two polls counts 2), so polling hides no flap.
inline constexpr std::string_view kSnmpFlapObject = "ifOperStatusChanges";

// One agent seen across polls: names its interfaces by ifName (re-learned every poll, so a
// renumbering of ifIndex after a reboot moves nothing), counts flaps, and renders a poll's
// values as the text counter_map.json's "snmp" rules read: `OBJECT{ifName="NAME"} VALUE`.
class SnmpAgentState {
 public:
  struct Poll {
    std::string body;
    size_t interfaces = 0;  // interfaces with an ifName and at least one value read
    size_t values = 0;      // values rendered
    bool restarted = false; // sysUpTime went back: the agent restarted since the last poll
    bool renumbered = false;// an ifName now has another ifIndex than last poll
    std::string problem;    // a value of the wrong type or an answer without ifName, for the log
  };
  // `values`: sysUpTime.0 and every column's rows, in any order.
  Poll render(std::span<const SnmpValue> values);

  // The ifName the latest poll read for `if_index`, if it named one (traps name ifIndex only).
  std::optional<std::string> name_of(uint32_t if_index) const;

  // Whether the agent has 64-bit (HC) counters on every interface: its 32-bit twins are then
  // no longer walked. Unknown (true: walk them) until the first poll.
  bool wants_low_counters() const { return !hc_everywhere_; }

 private:
  struct Link {
    bool known = false;
    int64_t oper = 0;
    uint64_t last_change = 0;  // ifLastChange, in sysUpTime's hundredths of a second
    uint64_t flaps = 0;
    uint32_t if_index = 0;
    uint64_t seen = 0;  // the poll that last named it
  };
  std::map<std::string, Link, std::less<>> links_;
  uint64_t polls_ = 0;
  std::optional<uint64_t> uptime_;
  bool hc_everywhere_ = false;
};

// A notification (trap or inform) as far as medicd reads it: IF-MIB's linkDown and linkUp
// (RFC 2863), which name the interface by ifIndex (and, from some agents, by ifName too).
struct SnmpLinkTrap {
  enum class Kind : uint8_t { link_down, link_up, other };
  Kind kind = Kind::other;
  uint32_t if_index = 0;
  std::string if_name;  // when the notification carries ifName
};
// Reads a notification's variables (snmpTrapOID.0 and what follows). Another notification
// is Kind::other; a linkDown or linkUp that names no interface, or a notification without
// snmpTrapOID.0, is an error saying what is missing.
Result<SnmpLinkTrap> decode_link_trap(std::span<const SnmpValue> values);

}  // namespace medic::telemetry
