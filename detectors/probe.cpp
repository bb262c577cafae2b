#include "detectors/probe.h"

#include <algorithm>
#include <cstdio>

namespace medic::detectors {

ProbeDetector::ProbeDetector(const fabric::Topology& topology, ProbeConfig config)
    : topology_(topology), config_(config), links_(topology.links().size()) {}

void ProbeDetector::on_verdict(const probes::LinkVerdict& v, Time at, std::vector<Finding>& out) {
  LinkState& s = links_[v.link];
  s.quiet_rounds = 0;
  const int level = v.loss >= config_.critical_loss ? 2 : 1;
  if (level <= s.loss_level) return;
  s.loss_level = level;
  Finding f;
  f.kind = FindingKind::probe_loss;
  f.severity = level == 2 ? Severity::critical : Severity::warning;
  f.link = v.link;
  f.first_seen = at;
  f.observed_at = at;
  char buf[240];
  std::snprintf(buf, sizeof buf, "probes lose %.2f%% across %s (confidence %.2f, %llu probes, %s)", 100 * v.loss,
                topology_.link(v.link).name.c_str(), v.confidence, static_cast<unsigned long long>(v.probes),
                v.method.c_str());
  f.summary = buf;
  f.evidence["loss"] = v.loss;
  f.evidence["confidence"] = v.confidence;
  f.evidence["probes"] = static_cast<double>(v.probes);
  f.evidence["lossy_paths"] = static_cast<double>(v.lossy_paths);
  f.evidence["explained_paths"] = static_cast<double>(v.explained_paths);
  f.evidence["link_pinned"] = v.method.find("link-pinned") != std::string::npos ? 1 : 0;
  out.push_back(std::move(f));
}

void ProbeDetector::on_latency(const probes::LinkProbeStats& st, double baseline, Time at, std::vector<Finding>& out) {
  LinkState& s = links_[st.link];
  const double threshold = std::max(baseline * config_.latency_factor, baseline + seconds(config_.latency_floor));
  if (st.rtt_p50_s < threshold) {
    if (st.rtt_p50_s < (baseline + threshold) / 2) s.latency_reported = false;
    return;
  }
  if (s.latency_reported) return;
  s.latency_reported = true;
  Finding f;
  f.kind = FindingKind::probe_latency;
  f.severity = Severity::warning;
  f.link = st.link;
  f.first_seen = at;
  f.observed_at = at;
  char buf[240];
  std::snprintf(buf, sizeof buf, "round trips across %s take %.0fus (median), the fabric's %.0fus", topology_.link(st.link).name.c_str(),
                st.rtt_p50_s * 1e6, baseline * 1e6);
  f.summary = buf;
  f.evidence["rtt_p50_s"] = st.rtt_p50_s;
  f.evidence["rtt_p99_s"] = st.rtt_p99_s;
  f.evidence["fabric_p50_s"] = baseline;
  f.evidence["jitter_s"] = st.jitter_s;
  out.push_back(std::move(f));
}

}  // namespace medic::detectors
