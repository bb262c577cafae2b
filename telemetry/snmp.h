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
#include <unordered_map>
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
  // Which table: an interface's (indexed by ifIndex, walked every poll); the entities'
  // layout and their sensors' kinds (ENTITY-MIB, ENTITY-SENSOR-MIB: walked when an agent is
  // new, restarted, or every kEntityRefreshPolls); the sensors' readings (walked every
  // kSensorEveryPolls, from agents that have sensors under a port).
  enum class Table : uint8_t { interface, entity, sensor_value };
  std::string_view name;         // the MIB object's name, as counter_map.json's "snmp" rules name it
  std::vector<uint32_t> oid;     // the column (a table entry's OID with the column number)
  bool low_counterpart = false;  // a 32-bit counter read only from agents without its HC twin
  Table table = Table::interface;
};
const std::vector<SnmpColumn>& snmp_columns();
// sysUpTime, asked with every walk's first request: it going back says the agent restarted.
std::span<const uint32_t> snmp_sys_uptime_oid();

// The counter the collector adds from ifOperStatus and ifLastChange: transitions seen
// between polls (a down-and-up between two polls counts 2), so polling hides no flap.
inline constexpr std::string_view kSnmpFlapObject = "ifOperStatusChanges";

// Optics readings from ENTITY-SENSOR-MIB, rendered per sensor under the port it sits in
// (the sensor's entity, or the entity it is contained in, up to 8 levels, that ENTITY-MIB's
// entAliasMappingTable maps to an ifIndex), in these units, with a "sensor" label
// (entPhysicalIndex): what kind a sensor is comes from entPhySensorType and its name.
inline constexpr std::string_view kSensorRxPowerMw = "entSensorRxPowerMilliwatts";
inline constexpr std::string_view kSensorTxPowerMw = "entSensorTxPowerMilliwatts";
inline constexpr std::string_view kSensorRxPowerDbm = "entSensorRxPowerDbm";
inline constexpr std::string_view kSensorTxPowerDbm = "entSensorTxPowerDbm";
inline constexpr std::string_view kSensorBiasMa = "entSensorLaserBiasMilliamps";
inline constexpr std::string_view kSensorTemperatureC = "entSensorTemperatureCelsius";
inline constexpr uint64_t kEntityRefreshPolls = 300;  // the entities' layout is read again this often
inline constexpr uint64_t kSensorEveryPolls = 10;     // sensor readings are read every this many polls

// One agent seen across polls: names its interfaces by ifName (re-learned every poll, so a
// renumbering of ifIndex after a reboot moves nothing), counts flaps, and renders a poll's
// values as the text counter_map.json's "snmp" rules read: `OBJECT{ifName="NAME"} VALUE`.
class SnmpAgentState {
 public:
  struct Poll {
    std::string body;
    size_t interfaces = 0;  // interfaces with an ifName and at least one value read
    size_t values = 0;      // values rendered
    size_t sensors = 0;     // of which optics readings (ENTITY-SENSOR-MIB)
    bool restarted = false; // sysUpTime went back: the agent restarted since the last poll
    bool renumbered = false;// an ifName now has another ifIndex than last poll
    std::string problem;    // a value of the wrong type or an answer without ifName, for the log
  };
  // `values`: sysUpTime.0 and every column's rows, in any order.
  Poll render(std::span<const SnmpValue> values);

  // The ifName the latest poll read for `if_index`, if it named one (traps name ifIndex only).
  std::optional<std::string> name_of(uint32_t if_index) const;

  // Whether a linkDown/linkUp for `if_index` sent at the agent's `uptime` is news: not the
  // same notification again (a resent inform, a replayed trap: the same sysUpTime), and not
  // from before the agent's latest poll read its interfaces (that poll counted the flap).
  enum class Notification : uint8_t { fresh, duplicate, before_poll };
  Notification judge_notification(uint32_t if_index, bool up, std::optional<uint64_t> uptime);

  // Whether the agent has 64-bit (HC) counters on every interface: its 32-bit twins are then
  // no longer walked. Unknown (true: walk them) until the first poll.
  bool wants_low_counters() const { return !hc_everywhere_; }
  // Whether the next poll walks `column`: the 32-bit twins as above; the entity tables when
  // due (new agent, restarted, every kEntityRefreshPolls); sensor readings every
  // kSensorEveryPolls polls (and with the entity tables), from agents with port sensors.
  bool wants(const SnmpColumn& column) const;
  size_t port_sensors() const { return sensors_.size(); }  // sensors found under a port

 private:
  struct Link {
    bool known = false;
    int64_t oper = 0;
    uint64_t last_change = 0;  // ifLastChange, in sysUpTime's hundredths of a second
    uint64_t flaps = 0;
    uint32_t if_index = 0;
    uint64_t seen = 0;  // the poll that last named it
  };
  struct Sensor {
    uint32_t if_index = 0;
    std::string_view object;  // one of the kSensor* objects
    int exponent = 0;         // 10^exponent: the reading's unit in the object's (scale, precision)
  };
  bool entities_due() const { return !entities_read_ || polls_ - entities_read_at_ >= kEntityRefreshPolls || restart_seen_; }
  // Reads the entity columns of a walk into sensors_.
  void learn_sensors(std::span<const SnmpValue> values);
  // Appends the readings of the sensors under a port this walk named.
  void render_sensors(std::span<const SnmpValue> values, const std::unordered_map<uint32_t, std::string_view>& named_rows,
                      Poll& p) const;
  std::map<std::string, Link, std::less<>> links_;
  std::map<uint32_t, Sensor> sensors_;  // by entPhysicalIndex
  std::map<uint32_t, std::pair<bool, uint64_t>> notified_;  // by ifIndex: the last notification (up, uptime)
  uint64_t polls_ = 0;
  uint64_t entities_read_at_ = 0;
  bool entities_read_ = false;
  bool restart_seen_ = false;  // the entities are read again after an agent restarts
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
  std::optional<uint64_t> uptime;  // its sysUpTime.0: when the agent sent it, on the agent's clock
};
// Reads a notification's variables (snmpTrapOID.0 and what follows). Another notification
// is Kind::other; a linkDown or linkUp that names no interface, or a notification without
// snmpTrapOID.0, is an error saying what is missing.
Result<SnmpLinkTrap> decode_link_trap(std::span<const SnmpValue> values);

}  // namespace medic::telemetry
