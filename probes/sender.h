// The STAMP session-sender for one session: sends test packets at an interval (or as fast
// as a window of outstanding probes allows), matches the reflected packets, and reports
// loss, round-trip times (with the reflector's own holding time taken out), jitter,
// reordering and duplicates, and one-way delays when both clocks say they are synchronized.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "probes/packet.h"
#include "probes/stats.h"
#include "probes/udp.h"

namespace medic::probes {

struct SenderOptions {
  Endpoint target;
  Endpoint bind;            // source address (port 0: any)
  std::string netns;        // send from inside this network namespace
  uint64_t count = 100;
  double interval_s = 0.01;  // 0: as fast as the window allows (benchmarks)
  size_t size = 0;           // octets per packet (0: the mode's base size)
  Mode mode = Mode::unauthenticated;
  HmacKey key;
  uint16_t ssid = 1;
  double wait_s = 1.0;       // after the last probe, how long to wait for late replies
  size_t window = 256;       // outstanding probes in flood mode
  ErrorEstimate error;       // this clock's error (S set when synchronized)
};

struct SessionReport {
  std::string target;
  uint64_t sent = 0, received = 0, lost = 0, duplicates = 0, reordered = 0;
  uint64_t malformed = 0;  // replies that did not decode (or failed the HMAC)
  Interval loss;           // 95% Wilson interval of the loss rate
  std::optional<double> rtt_min_s, rtt_median_s, rtt_p99_s, rtt_max_s;
  double jitter_s = 0;
  bool one_way = false;    // both clocks synchronized: forward/backward are meaningful
  std::optional<double> forward_median_s, backward_median_s;
  std::optional<int> reflector_ttl;  // the TTL the reflector saw on our packets (hops taken)
  double duration_s = 0;
  double cpu_s = 0;        // this process's CPU time during the session
};

// Runs one session to completion (bounded by count, interval and wait_s).
Result<SessionReport> run_session(const SenderOptions& options);

// One round trip's arithmetic (RFC 8762 / TWAMP): T1 sent, T2 received by the reflector,
// T3 sent back, T4 received. RTT without the reflector's holding time: (T4-T1) - (T3-T2).
double round_trip_s(Time t1, Time t2, Time t3, Time t4);

}  // namespace medic::probes
