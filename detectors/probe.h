// Probe results into findings: links that localization says lose probes (probe_loss; a
// gray failure when the link's counters are clean, triage decides), and links whose
// link-pinned round trips are far slower than the fabric's own (probe_latency): every one of
// them (the fastest), over enough round trips, several rounds in a row, since a busy reflector
// or prober host delays some answers, even most, and a slow link delays all. Links
// known to be down are left to the flap and down detectors: no light is not a gray failure.
//
// The measurement is doubted first: a prober that lost a round to an outage, or whose
// probes all lose alike, is a prober_loss finding; a reflector that loses everything it
// should answer is a reflector_loss finding on its device; a lossy link with an end on a
// device that did not answer its telemetry during the probe window is that device's
// silence, noted (info), not the link's fault. Each measurement finding is made once while
// its condition lasts, and a `clears` finding follows after clear_rounds quiet rounds.
#pragma once

#include <algorithm>
#include <vector>

#include "detectors/config.h"
#include "detectors/finding.h"
#include "probes/round.h"

namespace medic::detectors {

class ProbeDetector {
 public:
  ProbeDetector(const fabric::Topology& topology, ProbeConfig config);

  // `link_down(l)`: what telemetry says of the link now. `device_silent(d)`: the device
  // missed a poll since `round.window_from`.
  template <class LinkDown, class DeviceSilent>
  void observe(const probes::RoundResult& round, LinkDown link_down, DeviceSilent device_silent,
               std::vector<Finding>& out);
  template <class LinkDown>
  void observe(const probes::RoundResult& round, LinkDown link_down, std::vector<Finding>& out) {
    observe(round, link_down, [](fabric::DeviceId) { return false; }, out);
  }

  // Link verdicts left to a silent device rather than the link (summed over rounds).
  uint64_t attributed_to_silence() const { return attributed_to_silence_; }
  // The last round's latency judgement: links with enough round trips to be judged, and of
  // those the links over the threshold (named or not yet: a few rounds in a row are needed).
  struct LatencyJudgement {
    size_t judged = 0, over = 0;
  };
  LatencyJudgement last_latency() const { return last_latency_; }

 private:
  struct LinkState {
    int loss_level = 0;  // 0 none, 1 warning, 2 critical
    int quiet_rounds = 0;
    bool latency_reported = false;
    bool silence_noted = false;
    int latency_over_rounds = 0;  // judged rounds in a row over the threshold
  };
  // One measurement condition (the prober, or one device's reflector).
  struct MeasurementState {
    bool reported = false;
    int quiet_rounds = 0;
    int named_rounds = 0;  // rounds in a row it was named, before it is reported
  };
  void on_verdict(const probes::LinkVerdict& v, Time at, std::vector<Finding>& out);
  void on_silent_link(const probes::LinkVerdict& v, fabric::DeviceId silent, Time at, std::vector<Finding>& out);
  // Whether the link is over the threshold this round.
  bool on_latency(const probes::LinkProbeStats& s, double baseline_s, Time at, std::vector<Finding>& out);
  void on_measurement(const probes::RoundResult& round, std::vector<Finding>& out);

  const fabric::Topology& topology_;
  ProbeConfig config_;
  std::vector<LinkState> links_;
  MeasurementState prober_;
  std::vector<MeasurementState> reflectors_;  // by device
  uint64_t attributed_to_silence_ = 0;
  LatencyJudgement last_latency_;
};

template <class LinkDown, class DeviceSilent>
void ProbeDetector::observe(const probes::RoundResult& round, LinkDown link_down, DeviceSilent device_silent,
                            std::vector<Finding>& out) {
  on_measurement(round, out);
  std::vector<uint8_t> seen(links_.size(), 0);
  for (const auto& v : round.verdicts) {
    if (v.link >= links_.size() || link_down(v.link) || v.confidence < config_.min_confidence) continue;
    seen[v.link] = 1;
    const auto& l = topology_.link(v.link);
    fabric::DeviceId silent = fabric::kNone;
    for (const fabric::PortId p : {l.a, l.b}) {
      if (device_silent(topology_.port(p).device)) silent = topology_.port(p).device;
    }
    if (silent != fabric::kNone) {
      on_silent_link(v, silent, round.at, out);
      continue;
    }
    links_[v.link].silence_noted = false;
    on_verdict(v, round.at, out);
  }
  for (size_t l = 0; l < links_.size(); ++l) {
    if (!seen[l]) links_[l].silence_noted = false;
    if (seen[l] || links_[l].loss_level == 0) continue;
    if (++links_[l].quiet_rounds >= config_.clear_rounds) {
      links_[l].loss_level = 0;
      links_[l].quiet_rounds = 0;
      links_[l].silence_noted = false;
    }
  }
  // Latency: each link's fastest round trip against the fabric's median of them, each over
  // enough round trips.
  const auto judged = [&](const probes::LinkProbeStats& s) {
    return s.rtt_min_s > 0 && s.rtts >= static_cast<uint64_t>(config_.latency_min_rtts);
  };
  std::vector<double> fastest;
  for (const auto& s : round.links) {
    if (s.sent > s.lost && judged(s)) fastest.push_back(s.rtt_min_s);
  }
  last_latency_ = {};
  if (fastest.size() < 3) return;
  std::nth_element(fastest.begin(), fastest.begin() + static_cast<long>(fastest.size() / 2), fastest.end());
  const double baseline = fastest[fastest.size() / 2];
  for (const auto& s : round.links) {
    if (s.link >= links_.size() || !judged(s)) continue;
    if (link_down(s.link)) {
      links_[s.link].latency_over_rounds = 0;
      continue;
    }
    ++last_latency_.judged;
    if (on_latency(s, baseline, round.at, out)) ++last_latency_.over;
  }
}

}  // namespace medic::detectors
