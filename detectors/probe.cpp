#include "detectors/probe.h"

#include <algorithm>
#include <cstdio>

namespace medic::detectors {

ProbeDetector::ProbeDetector(const fabric::Topology& topology, ProbeConfig config)
    : topology_(topology),
      config_(config),
      links_(topology.links().size()),
      reflectors_(topology.devices().size()) {}

namespace {

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * share);
  return buf;
}

Finding measurement_finding(FindingKind kind, fabric::DeviceId device, Time at) {
  Finding f = make_finding(kind, Severity::warning, at, at);
  f.device = device;
  return f;
}

}  // namespace

void ProbeDetector::on_measurement(const probes::RoundResult& round, std::vector<Finding>& out) {
  // The prober: an outage round, or probes that all lose alike.
  std::string prober_summary;
  Finding prober = measurement_finding(FindingKind::prober_loss, fabric::kNone, round.at);
  for (const auto& o : round.outages) {
    if (!prober_summary.empty()) continue;
    prober_summary = "prober " + o.sender + ": " + std::to_string(o.lossy_sessions) + " of " +
                     std::to_string(o.sessions) + " probe sessions lost probes at once in round " +
                     std::to_string(round.round) + " (" + std::to_string(o.lost) + " of " + std::to_string(o.sent) +
                     " probes): the prober, its host or network, or the reflectors it probes failed; the round is "
                     "left out of localization";
    prober.evidence["sessions"] = static_cast<double>(o.sessions);
    prober.evidence["lossy_sessions"] = static_cast<double>(o.lossy_sessions);
    prober.evidence["sent"] = static_cast<double>(o.sent);
    prober.evidence["lost"] = static_cast<double>(o.lost);
  }
  std::vector<uint8_t> reflector_now(reflectors_.size(), 0);
  for (const auto& e : round.endpoints) {
    if (e.confidence < config_.min_confidence) continue;
    if (e.kind == probes::ProbeEndpoint::Kind::sender) {
      if (!prober_summary.empty()) continue;
      prober_summary = "prober " + e.name + " loses " + percent(e.loss) + " of its probes alike across " +
                       std::to_string(e.observations) + " sessions (" + std::to_string(e.probes) +
                       " probes): the prober or its host, not the links they cross";
      prober.evidence["loss"] = e.loss;
      prober.evidence["confidence"] = e.confidence;
      prober.evidence["probes"] = static_cast<double>(e.probes);
      prober.evidence["sessions"] = static_cast<double>(e.observations);
      continue;
    }
    if (e.device >= reflectors_.size()) continue;
    reflector_now[e.device] = 1;
    MeasurementState& st = reflectors_[e.device];
    st.quiet_rounds = 0;
    if (st.reported) continue;
    if (++st.named_rounds < config_.confirm_rounds) continue;
    st.reported = true;
    Finding f = measurement_finding(FindingKind::reflector_loss, e.device, round.at);
    f.summary = "the STAMP reflector of " + e.name + " loses " + percent(e.loss) + " of what it should answer, alike on " +
                std::to_string(e.observations) + " sessions (" + std::to_string(e.lost) + " of " +
                std::to_string(e.probes) + " probes lost, on " + std::to_string(e.lossy_observations) +
                " sessions): the reflector or its host, not the links under it";
    f.evidence["loss"] = e.loss;
    f.evidence["confidence"] = e.confidence;
    f.evidence["probes"] = static_cast<double>(e.probes);
    f.evidence["lost"] = static_cast<double>(e.lost);
    f.evidence["sessions"] = static_cast<double>(e.observations);
    f.evidence["lossy_sessions"] = static_cast<double>(e.lossy_observations);
    f.evidence["explained_by_links"] = e.explained_by_links;
    out.push_back(std::move(f));
  }
  if (!prober_summary.empty()) {
    prober_.quiet_rounds = 0;
    if (!prober_.reported) {
      prober_.reported = true;
      prober.summary = prober_summary;
      out.push_back(std::move(prober));
    }
  } else if (prober_.reported && ++prober_.quiet_rounds >= config_.clear_rounds) {
    prober_ = {};
    Finding f = measurement_finding(FindingKind::prober_loss, fabric::kNone, round.at);
    f.severity = Severity::info;
    f.clears = true;
    f.summary = "the prober's probes are answered again (" + std::to_string(config_.clear_rounds) + " rounds)";
    out.push_back(std::move(f));
  }
  for (fabric::DeviceId d = 0; d < reflectors_.size(); ++d) {
    MeasurementState& st = reflectors_[d];
    if (!reflector_now[d] && !st.reported) st.named_rounds = 0;  // not in a row
    if (!st.reported || reflector_now[d]) continue;
    if (++st.quiet_rounds < config_.clear_rounds) continue;
    st = {};
    Finding f = measurement_finding(FindingKind::reflector_loss, d, round.at);
    f.severity = Severity::info;
    f.clears = true;
    f.summary = "the STAMP reflector of " + topology_.device(d).name + " answers again (" +
                std::to_string(config_.clear_rounds) + " rounds)";
    out.push_back(std::move(f));
  }
}

void ProbeDetector::on_silent_link(const probes::LinkVerdict& v, fabric::DeviceId silent, Time at,
                                   std::vector<Finding>& out) {
  ++attributed_to_silence_;
  LinkState& s = links_[v.link];
  if (s.silence_noted) return;
  s.silence_noted = true;
  Finding f = make_finding(FindingKind::probe_loss, Severity::info, at, at);
  f.link = v.link;
  f.device = silent;
  f.summary = "probes lose " + percent(v.loss) + " across " + topology_.link(v.link).name + " while " +
              topology_.device(silent).name + " did not answer its telemetry: left to the device, not the link";
  f.evidence["loss"] = v.loss;
  f.evidence["confidence"] = v.confidence;
  out.push_back(std::move(f));
}

void ProbeDetector::on_verdict(const probes::LinkVerdict& v, Time at, std::vector<Finding>& out) {
  LinkState& s = links_[v.link];
  s.quiet_rounds = 0;
  const int level = v.loss >= config_.critical_loss ? 2 : 1;
  if (level <= s.loss_level) return;
  s.loss_level = level;
  Finding f = make_finding(FindingKind::probe_loss, level == 2 ? Severity::critical : Severity::warning, at, at);
  f.link = v.link;
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

bool ProbeDetector::on_latency(const probes::LinkProbeStats& st, double baseline, Time at, std::vector<Finding>& out) {
  LinkState& s = links_[st.link];
  const double threshold = std::max(baseline * config_.latency_factor, baseline + seconds(config_.latency_floor));
  if (st.rtt_min_s < threshold) {
    s.latency_over_rounds = 0;
    if (st.rtt_min_s < (baseline + threshold) / 2) s.latency_reported = false;
    return false;
  }
  if (s.latency_reported || ++s.latency_over_rounds < config_.confirm_rounds) return true;
  s.latency_reported = true;
  Finding f = make_finding(FindingKind::probe_latency, Severity::warning, at, at);
  f.link = st.link;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "every one of %llu round trips across %s took %.0fus or more (median %.0fus), the fabric's %.0fus, %d "
                "rounds in a row",
                static_cast<unsigned long long>(st.rtts), topology_.link(st.link).name.c_str(), st.rtt_min_s * 1e6,
                st.rtt_p50_s * 1e6, baseline * 1e6, s.latency_over_rounds);
  f.summary = buf;
  f.evidence["rtt_min_s"] = st.rtt_min_s;
  f.evidence["rtt_p25_s"] = st.rtt_p25_s;
  f.evidence["rtt_p50_s"] = st.rtt_p50_s;
  f.evidence["rtt_p99_s"] = st.rtt_p99_s;
  f.evidence["fabric_min_s"] = baseline;
  f.evidence["jitter_s"] = st.jitter_s;
  f.evidence["rtts"] = static_cast<double>(st.rtts);
  f.evidence["rounds"] = s.latency_over_rounds;
  out.push_back(std::move(f));
  return true;
}

}  // namespace medic::detectors
