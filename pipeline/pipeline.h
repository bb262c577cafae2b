// The functional core of one poll, shared by medicd and `medic replay`: the answers of
// every device -> canonical samples -> deltas -> detectors -> triage. No I/O and no clock:
// the caller passes the answers and the time, and persists and acts on what comes out.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "detectors/detectors.h"
#include "detectors/probe.h"
#include "probes/round.h"
#include "fabric/topology.h"
#include "pipeline/map_pool.h"
#include "telemetry/mapping.h"
#include "telemetry/tracker.h"
#include "triage/triage.h"

namespace medic::pipeline {

struct DeviceAnswer {
  fabric::DeviceId device = fabric::kNone;
  Time time{};
  std::optional<Duration> mono;  // when it arrived on the monotonic clock, where known
  bool answered = false;        // false: it failed or was not asked (backoff)
  bool asked = true;            // false: not asked this poll (in backoff)
  std::string error;            // why it failed
  telemetry::PayloadFormat format = telemetry::PayloadFormat::prometheus;
  std::string_view body;
};

struct LinkStateChange {
  fabric::LinkId link = fabric::kNone;
  bool up = true;
};

// A port's state change reported between polls (an SNMP linkDown or linkUp notification).
struct LinkEvent {
  fabric::PortId port = fabric::kNone;
  bool up = true;
  Time time{};
};

struct EventOutcome {
  std::vector<detectors::Finding> findings;
  triage::TriageResult triage;
};

struct PollOutcome {
  std::vector<detectors::Finding> findings;
  triage::TriageResult triage;
  std::vector<LinkStateChange> link_changes;  // links whose oper state changed this poll
  // Links whose carrier changed at an end since its last reading (carrier transitions,
  // link-down events, the oper state turning), on the monotonic clock: for the prober
  // (ProbeScheduler::note_telemetry). One entry an end; none for answers without a
  // monotonic time (replays).
  std::vector<probes::LinkDownSpan> links_down;
  std::vector<std::pair<fabric::DeviceId, std::string>> rejected;  // malformed answers
  telemetry::MapStats stats;
  size_t samples = 0;       // port samples produced
  size_t implausible = 0;   // counter values left out as impossible (telemetry::CounterTracker)
  bool telemetry_outage = false;  // most devices asked did not answer (detectors::StaleConfig)
};

class Pipeline {
 public:
  // `map_workers`: threads that map answers handed to map_ahead (0: mapped on the caller's
  // thread, as they are handed over).
  Pipeline(const fabric::Topology& topology, const telemetry::CounterMap& map,
           const detectors::DetectorConfig& detector_config, triage::TriageConfig triage_config = {},
           size_t map_workers = 0);

  // `rounds`: probe rounds finished since the last poll (medicd's prober); `recorded`: what
  // recording the earlier updates gave back (incident ids, closed incidents).
  PollOutcome poll(std::span<const DeviceAnswer> answers, Time now,
                   std::span<const triage::Maintenance> maintenance = {},
                   std::span<const probes::RoundResult> rounds = {}, const triage::Recorded& recorded = {});

  // Link events between polls: what the flap detector makes of them, through triage. They
  // never change a link's oper state (the polls' answers do) and never suppress a port by
  // themselves (detectors/flap.h).
  EventOutcome link_events(std::span<const LinkEvent> events, Time now,
                           std::span<const triage::Maintenance> maintenance = {}, const triage::Recorded& recorded = {});

  // Maps one answer ahead of poll(), as medicd does with each answer the moment it arrives
  // while the others are still on their way (on the map workers, when there are any). The
  // next poll() given that answer (same device, same time) uses what was mapped instead of
  // mapping it again; what it is not given is dropped. Answers are still judged in poll()'s
  // order: the outcome is the same as if poll() had mapped them all.
  void map_ahead(const DeviceAnswer& answer) { map_ahead(answer, std::string(answer.body)); }
  // The same with the answer's bytes handed over (`answer.body` is not read): the answer
  // given to poll() may then come without its body.
  void map_ahead(const DeviceAnswer& answer, std::string body);
  size_t map_workers() const { return maps_.workers(); }

  // Updates kept while they could not be recorded, given the identity triage knows now
  // (triage::Triage::resolve), after taking in `recorded`.
  std::vector<triage::IncidentUpdate> resolve_kept(std::vector<triage::IncidentUpdate> kept, Time now,
                                                   const triage::Recorded& recorded = {}) {
    return triage_.resolve(std::move(kept), now, recorded);
  }
  // Triage starts over from what the database holds (leading again).
  void reload(std::span<const triage::OpenIncident> open, std::span<const triage::ClosedIncident> closed) {
    triage_.reset();
    triage_.load_open(open);
    triage_.load_closed(closed);
  }
  const triage::Triage& triage() const { return triage_; }
  const detectors::DetectorSet& detectors() const { return detectors_; }
  // -1 unknown, 0 down, 1 up, as the link's ends last reported.
  int link_oper(fabric::LinkId link) const;
  int port_oper(fabric::PortId port) const { return port_oper_[port]; }
  // The port's latest readings (present == 0 before its first answer), for snapshots.
  const telemetry::PortSample& latest(fabric::PortId port) const { return tracker_.last(port); }
  // Packets per second the port sent over its latest interval (-1 before two samples), and
  // the errors it has counted since medicd started (monotonic; for the validation soak).
  double tx_pps(fabric::PortId port) const { return tx_pps_[port]; }
  // When the interval tx_pps was measured over began ({} before two samples).
  Time tx_from(fabric::PortId port) const { return tx_from_[port]; }
  double error_events(fabric::PortId port) const { return error_events_[port]; }
  // Link verdicts the probe detector left to a silent device (summed over rounds).
  uint64_t probe_verdicts_left_to_silence() const { return probe_detector_.attributed_to_silence(); }
  // The last probe round's latency judgement (links judged, links over the threshold).
  detectors::ProbeDetector::LatencyJudgement probe_latency() const { return probe_detector_.last_latency(); }

 private:
  const fabric::Topology& topology_;
  MapPool maps_;
  telemetry::CounterTracker tracker_;
  detectors::DetectorSet detectors_;
  detectors::ProbeDetector probe_detector_;
  triage::Triage triage_;
  std::vector<int8_t> port_oper_;
  std::vector<int8_t> link_oper_;
  std::vector<double> tx_pps_;
  std::vector<Time> tx_from_;
  std::vector<double> error_events_;
  std::vector<Time> last_missed_;  // per device: the last poll it missed (silent devices)
  detectors::StaleConfig stale_config_;
  // During poll(): per device, 1 + the index of its latest answer mapped ahead, 0 if none.
  std::vector<uint32_t> ahead_of_;
  // The answer's mapping from `ahead` (left there with device kNone), if it was mapped ahead.
  std::optional<Mapped> take_ahead(std::vector<Mapped>& ahead, const DeviceAnswer& a);
};

}  // namespace medic::pipeline
