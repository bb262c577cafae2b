// What one round of probing found, as plain data: the prober (probes/scheduler.h) makes
// it, the probe detector (detectors/probe.h) and the pipeline read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/time.h"
#include "fabric/topology.h"
#include "probes/localize.h"

namespace medic::probes {

// One link's link-pinned results over the window.
struct LinkProbeStats {
  fabric::LinkId link = fabric::kNone;
  uint64_t sent = 0, lost = 0;
  uint64_t rtts = 0;  // round trips timed in the window (the quantiles' sample; at most 64 a round)
  double rtt_min_s = 0, rtt_p25_s = 0, rtt_p50_s = 0, rtt_p99_s = 0, jitter_s = 0;
};

// A link whose carrier telemetry saw change (a flap, or going down or up) between two
// readings [from, to], on the monotonic clock (Clock::monotonic): the probes crossing it
// then say nothing of the other links on their way (the poll loop tells the prober; see
// ProbeScheduler::note_telemetry).
struct LinkDownSpan {
  fabric::LinkId link = fabric::kNone;
  Duration from{}, to{};
};

// A round one prober lost to the measurement (see SchedulerConfig::outage_share).
struct ProbeOutage {
  std::string sender;  // the probe source: "local", "netns:h1"
  size_t sessions = 0, lossy_sessions = 0;
  uint64_t sent = 0, lost = 0;
};

struct RoundResult {
  Time at{};
  Time window_from{};  // when the oldest round of the window began
  int round = 0;
  uint64_t sent = 0, received = 0;  // this round
  size_t sessions = 0;
  std::vector<LinkProbeStats> links;         // link-pinned, over the window
  std::vector<LinkVerdict> verdicts;         // localization over the window
  std::vector<EndpointVerdict> endpoints;    // measurement endpoints localization blames
  std::vector<ProbeOutage> outages;          // probers whose round was left out
  double round_s = 0;                        // how long the round took (stretched by the rate cap)
};

}  // namespace medic::probes
