// Probe results into findings: links that localization says lose probes (probe_loss; a
// gray failure when the link's counters are clean, triage decides), and links whose
// link-pinned round trips are far slower than the fabric's own (probe_latency). Links
// known to be down are left to the flap and down detectors: no light is not a gray failure.
#pragma once

#include <algorithm>
#include <vector>

#include "detectors/config.h"
#include "detectors/finding.h"
#include "probes/scheduler.h"

namespace medic::detectors {

class ProbeDetector {
 public:
  ProbeDetector(const fabric::Topology& topology, ProbeConfig config);

  // `link_down(l)`: what telemetry says of the link now.
  template <class LinkDown>
  void observe(const probes::RoundResult& round, LinkDown link_down, std::vector<Finding>& out);

 private:
  struct LinkState {
    int loss_level = 0;  // 0 none, 1 warning, 2 critical
    int quiet_rounds = 0;
    bool latency_reported = false;
  };
  void on_verdict(const probes::LinkVerdict& v, Time at, std::vector<Finding>& out);
  void on_latency(const probes::LinkProbeStats& s, double baseline_s, Time at, std::vector<Finding>& out);

  const fabric::Topology& topology_;
  ProbeConfig config_;
  std::vector<LinkState> links_;
};

template <class LinkDown>
void ProbeDetector::observe(const probes::RoundResult& round, LinkDown link_down, std::vector<Finding>& out) {
  std::vector<uint8_t> seen(links_.size(), 0);
  for (const auto& v : round.verdicts) {
    if (v.link >= links_.size() || link_down(v.link) || v.confidence < config_.min_confidence) continue;
    seen[v.link] = 1;
    on_verdict(v, round.at, out);
  }
  for (size_t l = 0; l < links_.size(); ++l) {
    if (seen[l] || links_[l].loss_level == 0) continue;
    if (++links_[l].quiet_rounds >= config_.clear_rounds) links_[l] = LinkState{0, 0, links_[l].latency_reported};
  }
  // Latency against the fabric's median of link-pinned medians.
  std::vector<double> p50;
  for (const auto& s : round.links) {
    if (s.sent > s.lost && s.rtt_p50_s > 0) p50.push_back(s.rtt_p50_s);
  }
  if (p50.size() < 3) return;
  std::nth_element(p50.begin(), p50.begin() + static_cast<long>(p50.size() / 2), p50.end());
  const double baseline = p50[p50.size() / 2];
  for (const auto& s : round.links) {
    if (s.link >= links_.size() || link_down(s.link) || s.rtt_p50_s <= 0) continue;
    on_latency(s, baseline, round.at, out);
  }
}

}  // namespace medic::detectors
