// Findings -> incidents, with the context a person would use:
//  - both ends of a link report the same fault: one incident per link (later findings of
//    any kind attach to it; its severity only rises);
//  - many links of one switch (or host) failing at once are one switch_fault (host_fault)
//    incident for the device, never an incident and a drain per link;
//  - which end is to blame comes from the optics findings (the suspect);
//  - a closed incident whose fault comes back within the reopen window is reopened;
//  - findings on links or devices under declared maintenance are recorded but open nothing;
//  - info findings (a single flap, congestion discards) are recorded, attached to an open
//    incident of their link if there is one, and never open one;
//  - measurement findings (prober, reflector, collector, impossible counters) open
//    measurement incidents scoped to the device or to medicd itself, never a link's; a
//    finding that says the measurement works again resolves its open incident.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <span>
#include <unordered_map>
#include <vector>

#include "detectors/finding.h"
#include "triage/incident.h"

namespace medic::triage {

struct TriageConfig {
  int device_fault_links = 4;  // distinct failing links of one device within the window
  Duration device_fault_window = std::chrono::seconds(120);
  Duration reopen_window = std::chrono::hours(24);
  void validate() const;  // throws std::invalid_argument
};

struct Maintenance {
  int64_t id = 0;
  fabric::LinkId link = fabric::kNone;      // a link, or
  fabric::DeviceId device = fabric::kNone;  // a whole device (all its links)
  Time starts_at{}, ends_at{};
  std::string reason;
  bool covers(const detectors::Finding& f, const fabric::Topology& t, Time now) const;
};

struct OpenIncident {
  int64_t id = 0;
  IncidentClass cls = IncidentClass::link_flap;
  fabric::LinkId link = fabric::kNone;
  fabric::DeviceId device = fabric::kNone;
  detectors::Severity severity = detectors::Severity::warning;
};

struct ClosedIncident {
  int64_t id = 0;
  IncidentClass cls = IncidentClass::link_flap;
  fabric::LinkId link = fabric::kNone;
  fabric::DeviceId device = fabric::kNone;
  Time closed_at{};
};

struct IncidentUpdate {
  int64_t incident_id = 0;  // 0: a new incident, to be inserted (its id comes back in Recorded)
  bool reopened = false;    // incident_id is a closed incident whose fault came back
  IncidentClass cls = IncidentClass::link_flap;
  fabric::LinkId link = fabric::kNone;
  fabric::DeviceId device = fabric::kNone;
  detectors::Severity severity = detectors::Severity::warning;           // after this update
  detectors::Severity previous_severity = detectors::Severity::warning;  // before it
  Time started_at{};   // earliest first_seen of its findings
  Time detected_at{};  // when the first finding concluded
  std::string summary;
  fabric::PortId suspect_port = fabric::kNone;
  std::string suspect;
  std::vector<detectors::Finding> findings;

  // Counters and probes agree: a counter finding joined a probe-found incident, or the
  // other way round. Two independent signals make the incident certain.
  bool corroborated = false;
  // A measurement incident whose measurement works again: close it (triage has forgotten it).
  bool resolved = false;
  // In a batch from Triage::resolve: the index of an earlier update of the batch that opens
  // (or reopens) this one's incident; the recorder gives this one that update's id (-1: none).
  int follows = -1;

  bool is_new() const { return incident_id == 0; }
  bool escalated() const { return !is_new() && !reopened && severity > previous_severity; }
};

// A finding recorded without opening an incident, and why.
struct NotedFinding {
  detectors::Finding finding;
  std::string note;  // "noted", "maintenance #3: optics swap"
};

struct TriageResult {
  std::vector<IncidentUpdate> updates;
  std::vector<NotedFinding> noted;
};

// What recording updates gave back, as plain data for the next Triage::process: the
// database id of every incident the updates opened or reopened, and the incidents closed
// since (by the workflow, by a person, or a measurement that works again). Triage owns
// incident identity; the recorder only reports what the database said.
struct Recorded {
  struct Opened {
    int64_t id = 0;
    IncidentClass cls = IncidentClass::link_flap;
    fabric::LinkId link = fabric::kNone;
    fabric::DeviceId device = fabric::kNone;
    detectors::Severity severity = detectors::Severity::warning;
    Time detected_at{};
    bool device_fault_evidence = false;  // counts toward its switches' switch_fault grouping
  };
  std::vector<Opened> opened;
  std::vector<std::pair<int64_t, Time>> closed;

  // The update `u`, recorded as incident `id`.
  void add_opened(const IncidentUpdate& u, int64_t id);
  bool empty() const { return opened.empty() && closed.empty(); }
};

class Triage {
 public:
  explicit Triage(const fabric::Topology& topology, TriageConfig config = {});

  // State from the database at start-up (after reset(), when leading again).
  void reset();
  void load_open(std::span<const OpenIncident> open);
  void load_closed(std::span<const ClosedIncident> closed);

  // `recorded`: what recording the earlier updates gave back, taken in before the findings.
  TriageResult process(std::span<const detectors::Finding> findings, Time now,
                       std::span<const Maintenance> maintenance = {}, const Recorded& recorded = {});

  // Updates made while they could not be recorded, about to be, in order: each gets the
  // identity the incidents known now say (an open incident of its scope takes it; a
  // recently closed one is reopened; otherwise it is new). A later one whose incident an
  // earlier one of the batch opens `follows` that one. `recorded` is taken in first.
  std::vector<IncidentUpdate> resolve(std::vector<IncidentUpdate> kept, Time now, const Recorded& recorded = {});
  // Takes in what recording gave back (what process and resolve do first).
  void apply(const Recorded& r);

  size_t open_count() const { return open_.size(); }
  // The incidents open now, by id.
  std::vector<OpenIncident> open_incidents() const;
  std::optional<int64_t> open_for_link(fabric::LinkId link) const;

 private:
  struct Scope {
    IncidentClass cls;
    fabric::LinkId link;
    fabric::DeviceId device;
    bool operator<(const Scope& o) const {
      return std::tie(cls, link, device) < std::tie(o.cls, o.link, o.device);
    }
  };
  void start_update(IncidentUpdate& u, const Scope& scope, Time now);
  void bind(const Recorded::Opened& o);
  void close(int64_t id, Time at);
  void resolve_identity(IncidentUpdate& u, Time now);

  const fabric::Topology& topology_;
  TriageConfig config_;
  std::unordered_map<int64_t, OpenIncident> open_;
  std::unordered_map<fabric::LinkId, int64_t> by_link_;
  std::map<std::pair<IncidentClass, fabric::DeviceId>, int64_t> by_device_;
  std::unordered_map<fabric::LinkId, ClosedIncident> closed_by_link_;
  std::map<std::pair<IncidentClass, fabric::DeviceId>, ClosedIncident> closed_by_device_;
  // Links of each device that opened an incident recently (for switch-level grouping).
  std::unordered_map<fabric::DeviceId, std::deque<std::pair<Time, fabric::LinkId>>> recent_;
};

}  // namespace medic::triage
