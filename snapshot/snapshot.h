// Fabric-state snapshots: what the fabric looked like around an incident (both switches of
// the link: every port's counters, optics, oper and drain state; the capacity groups
// touching them; the open incidents) or across the whole fabric, and what changed between
// two of them. Plain data and pure functions: capture reads a FabricState the caller
// assembles, nothing here does I/O or reads a clock. db/ stores snapshots; `medic snapshot`
// shows and diffs them.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "detectors/config.h"
#include "fabric/topology.h"
#include "remediation/capacity.h"
#include "telemetry/counters.h"

namespace medic::snapshot {

// Scopes, as stored (snapshots.scope).
inline constexpr std::string_view kScopeIncident = "incident";  // when an incident opens
inline constexpr std::string_view kScopeAction = "action";      // before and after a drain/undrain
inline constexpr std::string_view kScopeFabric = "fabric";      // every port of the fabric
bool valid_scope(std::string_view scope);

// One port: its latest readings when the snapshot was taken.
struct PortReading {
  std::string device, port;
  std::string link;  // "" when the port has no link
  int oper = -1;     // -1 unknown, 0 down, 1 up
  bool drained = false;               // its link is drained
  std::optional<Time> sampled_at;     // when the readings were scraped (nullopt: never answered)
  uint32_t present = 0;               // telemetry::bit(Counter) of every valid reading
  std::array<double, telemetry::kCounterCount> v{};

  bool has(telemetry::Counter c) const { return (present & telemetry::bit(c)) != 0; }
  double get(telemetry::Counter c) const { return v[static_cast<size_t>(c)]; }
  void set(telemetry::Counter c, double value) {
    v[static_cast<size_t>(c)] = value;
    present |= telemetry::bit(c);
  }
};

struct GroupReading {
  std::string name, kind;
  double floor = 0;           // fraction that must stay in service
  double capacity_gbps = 0;   // all its links
  double available_gbps = 0;  // its links in service
  int links = 0;
  int links_in_service = 0;
  double fraction() const { return capacity_gbps > 0 ? available_gbps / capacity_gbps : 0.0; }
  bool below_floor() const;
};

struct IncidentReading {
  int64_t id = 0;
  std::string incident_class, state, severity;
  std::string link, device;  // either may be "" (device incidents have no link)
};

struct Snapshot {
  int64_t id = 0;  // 0 until stored
  std::string scope;
  std::string reason;
  int64_t incident_id = 0, action_id = 0;  // 0: none
  Time taken_at{};
  std::string link;  // the link an incident or action snapshot is about ("" for fabric)
  std::vector<PortReading> ports;
  std::vector<GroupReading> groups;
  std::vector<IncidentReading> incidents;
};

// What capture reads. The daemon passes its pipeline's latest samples and port oper states,
// its capacity model and the open incidents; `medic snapshot take` its own scrape.
struct FabricState {
  const fabric::Topology& topology;
  const remediation::CapacityModel& capacity;  // a model of `topology` itself (same ids)
  // The port's latest readings (present == 0 when it never answered).
  std::function<const telemetry::PortSample&(fabric::PortId)> latest;
  // -1 unknown, 0 down, 1 up.
  std::function<int(fabric::PortId)> port_oper;
  std::vector<IncidentReading> open_incidents;
  Time now{};
};

// Every port of the devices at both ends of `link` (two switches, or a switch and a host),
// every capacity group containing a link of any of those ports, the open incidents whose
// device is one of them or whose link ends on one of them. `scope`: incident or action.
Snapshot capture_link(const FabricState& state, fabric::LinkId link, std::string scope, std::string reason);
// The same for a set of devices (a switch_fault incident has no link).
Snapshot capture_devices(const FabricState& state, const std::vector<fabric::DeviceId>& devices, std::string scope,
                         std::string reason);
// Every port, every group, every open incident; scope fabric.
Snapshot capture_fabric(const FabricState& state, std::string reason);

// --- Diff -----------------------------------------------------------------------------

// How much a port's change matters, most first.
enum class Importance : uint8_t {
  state,   // oper or drain state changed
  fault,   // an error or flap counter rose; discards or pause frames rose past the
           // detectors' thresholds (DiffThresholds); or a counter was reset
  optics,  // an optical reading moved beyond its noise (DiffThresholds)
  minor,   // only traffic counters or readings within their noise
};

// What makes a counter's change notable. Discards and pause frames are judged as the
// detectors judge them (data/detectors.json: corruption.discard_rate, pfc.pause_rate:
// diff_thresholds() takes them from there); the optics steps are how far a reading moves
// beyond its noise.
struct DiffThresholds {
  double discard_share = 1e-6;  // discards per packet moved in the same direction
  double pause_rate = 500;      // pause frames per second
  double power_db = 0.5;        // rx or tx power
  double temperature_c = 3.0;
  double bias_ma = 1.0;
  double ber_factor = 10;       // pre-FEC BER up or down by this factor
};
std::string_view to_string(Importance i);

struct CounterChange {
  telemetry::Counter counter = telemetry::Counter::oper_up;
  std::optional<double> before, after;  // nullopt: not read in that snapshot
  // Discards and pause frames also come with load; they are judged against the packets the
  // port moved in the same direction meanwhile (nullopt: unknown) and the seconds between
  // the two readings (0: unknown). diff fills both in.
  std::optional<double> packets;
  double interval_s = 0;
  double delta() const { return before && after ? *after - *before : 0.0; }
  // A monotonic counter that went down: the device restarted its counters.
  bool reset() const { return before && after && !telemetry::is_gauge(counter) && *after < *before; }
  bool notable = false;  // counts toward fault or optics importance (diff judges it)
};

struct PortChange {
  std::string device, port, link;
  int oper_before = -1, oper_after = -1;
  bool drained_before = false, drained_after = false;
  std::vector<CounterChange> counters;  // in canonical counter order
  Importance importance = Importance::minor;
};

struct GroupChange {
  std::string name, kind;
  double floor = 0;
  double before = 0, after = 0;  // fraction in service
  int links = 0;
  int in_service_before = 0, in_service_after = 0;
  bool below_floor_before = false, below_floor_after = false;
};

struct IncidentChange {
  enum class Kind : uint8_t { opened, changed, closed };  // closed: no longer open
  Kind kind = Kind::opened;
  int64_t id = 0;
  std::string incident_class, link, device;
  std::string state_before, state_after;        // "" where the incident is absent
  std::string severity_before, severity_after;
};
std::string_view to_string(IncidentChange::Kind k);

struct SnapshotRef {
  int64_t id = 0;
  std::string scope, reason, link;
  int64_t incident_id = 0, action_id = 0;
  Time taken_at{};
};

struct SnapshotDiff {
  SnapshotRef a, b;
  std::vector<GroupChange> groups;        // floors newly broken first, then by drop
  std::vector<IncidentChange> incidents;  // opened, changed, closed; by id
  std::vector<PortChange> ports;          // by importance, then in b's order
  size_t ports_compared = 0;              // in both snapshots
  size_t ports_only_in_a = 0, ports_only_in_b = 0;
  size_t groups_compared = 0;
  bool empty() const { return groups.empty() && incidents.empty() && ports.empty(); }
};

SnapshotDiff diff(const Snapshot& a, const Snapshot& b, const DiffThresholds& thresholds);
// The detectors' thresholds for discards and pause frames, the optics steps as given.
DiffThresholds diff_thresholds(const detectors::DetectorConfig& detectors);
// Whether `c` is notable under `t` (what diff sets CounterChange::notable from).
bool is_notable(const CounterChange& c, const DiffThresholds& t);
// For a terminal: what matters most first; ports with minor changes only are counted, not
// listed.
std::string render_text(const SnapshotDiff& d);
nlohmann::json diff_to_json(const SnapshotDiff& d);

// --- JSON (docs/formats.md "Snapshots") -----------------------------------------------

inline constexpr int kFormatVersion = 1;

nlohmann::json to_json(const Snapshot& s);
// Without "ports" (a fabric snapshot stores its ports as rows) and without "id".
nlohmann::json to_json_without_ports(const Snapshot& s);
// Exact errors: "SOURCE: $.ports[3].oper: expected -1 (unknown), 0 (down) or 1 (up), got 2";
// invalid JSON names the line and column.
Result<Snapshot> parse_snapshot(std::string_view text, const std::string& source);
Result<Snapshot> from_json(const nlohmann::json& doc, const std::string& source);
// The stored form: like from_json but "ports" may be absent (read from rows instead).
Result<Snapshot> from_stored_json(const nlohmann::json& doc, const std::string& source);

// Time as the JSON carries it: "2026-11-21T16:14:03.123456Z" (RFC 3339, UTC or an offset).
std::optional<Time> parse_time(std::string_view s);

}  // namespace medic::snapshot
