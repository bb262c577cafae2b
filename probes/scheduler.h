// medicd's prober: every round, each session (link-pinned: one end of a link to the far
// end's address; path: a host NIC to another host's NIC with a source port that picks one
// of the ECMP paths) gets a few STAMP probes, spread over the round and capped at a probe
// rate. After each round the last window of rounds is summed per link and per flow and
// localization says which links lose packets. Runs on its own thread ("medic-prober"),
// which wakes once a tick (SchedulerConfig::tick_s) to send what is due and read what
// came back; results are taken by the daemon's poll loop.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "fabric/topology.h"
#include "probes/ecmp.h"
#include "probes/localize.h"
#include "probes/round.h"
#include "probes/plan.h"

namespace medic::probes {

struct SchedulerConfig {
  double round_s = 10;        // every session is probed `per_round` times per round
  int per_round = 10;
  double max_rate = 20000;    // probes per second over all sessions (the round stretches to fit)
  double timeout_s = 1.0;     // unanswered this long after sending: lost
  // The prober wakes once a tick: sends the probes that fell due since the last one (a
  // sendmmsg per socket) and reads the replies that arrived (a recvmmsg per socket with any).
  // Replies carry the kernel's receive time, so the tick changes no round-trip time; at
  // 20,000 probes/s a 5-ms tick sends about 100 at a time. At 2 ms, the wake-ups alone
  // (the sleep and the switch back) were a tenth of the prober's CPU on zone32k (perf).
  double tick_s = 0.005;
  int window_rounds = 6;      // localization looks at this many rounds (about the detectors' minute)
  bool link_pinned = true;
  bool paths = true;
  bool paths_known = true;    // the fabric hashes as EcmpModel does (fabsim); else all ECMP paths are candidates
  // A round in which at least this share of one prober's sessions (and at least
  // outage_min_sessions of them) lost probes lost them to the measurement, not the fabric
  // (a paused prober or reflector host, its network): the prober's counts of that round are
  // left out of the window and the outage is reported instead.
  double outage_share = 0.5;
  int outage_min_sessions = 4;
  // Once the poll loop tells the prober what telemetry saw (note_telemetry), a round is
  // judged only when telemetry has been read past its end, waiting at most this long: a link
  // that flapped in the round's last moments is known before the round is judged. Replies
  // arriving in this wait are late, as after any round. 0: never wait.
  double telemetry_wait_s = 0;
  PlanConfig plan;
  LocalizeConfig localize;
  uint64_t seed = 1;
  void validate() const;      // throws std::invalid_argument
  // Round trips a link-pinned session keeps a round (a uniform sample past it), and in its
  // window: what a link's latency quantiles can rest on at most.
  static constexpr int kKeptRttsPerRound = 64;
  size_t window_rtts() const {
    return static_cast<size_t>(window_rounds) * static_cast<size_t>(std::min(per_round, kKeptRttsPerRound));
  }
};

struct SchedulerCounters {
  std::atomic<uint64_t> rounds{0};
  std::atomic<uint64_t> sent{0};
  std::atomic<uint64_t> received{0};
  std::atomic<uint64_t> late_or_foreign{0};  // replies to nothing outstanding
  std::atomic<uint64_t> send_failed{0};
  std::atomic<uint64_t> outage_rounds{0};  // prober rounds left out as measurement outages
  // Sessions' rounds left out of localization because a link they may cross changed
  // carrier in them.
  std::atomic<uint64_t> rounds_left_to_down_links{0};
  // What the probes cost in system calls: batches handed to sendmmsg, recvmmsg calls, and
  // wake-ups (ticks).
  std::atomic<uint64_t> send_calls{0};
  std::atomic<uint64_t> receive_calls{0};
  std::atomic<uint64_t> ticks{0};
};

class ProbeScheduler {
 public:
  ProbeScheduler(const fabric::Topology& topology, SchedulerConfig config, const Clock& clock);
  ~ProbeScheduler();

  // Plans the sessions and opens the sockets (one per probe source and source port, in the
  // source's network namespace); starts the thread. Errors name the socket that failed.
  Status start();
  void stop();

  size_t link_sessions() const;
  size_t path_sessions() const;
  std::vector<RoundResult> take_results();
  // From the poll loop, after each poll: the links whose carrier telemetry saw change, and
  // when the poll began on the monotonic clock (the devices it read were read after it). A
  // session's round in which a link it may cross changed carrier is left out of
  // localization: a path that crossed a flapping uplink says nothing of its other links
  // (the flap is the link flap detector's). Cheap; never waits on the prober's work.
  void note_telemetry(std::span<const LinkDownSpan> down, Duration read_after);
  const SchedulerCounters& counters() const { return counters_; }

 private:
  struct Impl;
  const fabric::Topology& topology_;
  SchedulerConfig config_;
  const Clock& clock_;
  SchedulerCounters counters_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace medic::probes
