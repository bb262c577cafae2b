#include "pipeline/pipeline.h"

#include <algorithm>

namespace medic::pipeline {

namespace {
std::vector<double> port_speeds(const fabric::Topology& t) {
  std::vector<double> out(t.ports().size(), 0.0);
  for (const auto& l : t.links()) out[l.a] = out[l.b] = l.speed_gbps;
  return out;
}
}  // namespace

Pipeline::Pipeline(const fabric::Topology& topology, const telemetry::CounterMap& map,
                   const detectors::DetectorConfig& detector_config, triage::TriageConfig triage_config,
                   size_t map_workers)
    : topology_(topology),
      maps_(topology, map, map_workers),
      tracker_(port_speeds(topology)),
      detectors_(topology, detector_config),
      probe_detector_(topology, detector_config.probe),
      triage_(topology, triage_config),
      port_oper_(topology.ports().size(), -1),
      link_oper_(topology.links().size(), -1),
      tx_pps_(topology.ports().size(), -1.0),
      tx_from_(topology.ports().size(), Time{}),
      error_events_(topology.ports().size(), 0.0),
      last_missed_(topology.devices().size(), Time{}),
      stale_config_(detector_config.stale),
      ahead_of_(topology.devices().size(), 0) {}

int Pipeline::link_oper(fabric::LinkId link) const { return link_oper_[link]; }

void Pipeline::map_ahead(const DeviceAnswer& a, std::string body) {
  if (!a.answered || a.device >= ahead_of_.size()) return;
  maps_.submit({a.device, a.time, a.mono, a.format, std::move(body)});
}

std::optional<Mapped> Pipeline::take_ahead(std::vector<Mapped>& ahead, const DeviceAnswer& a) {
  if (a.device >= ahead_of_.size() || ahead_of_[a.device] == 0) return std::nullopt;
  auto it = ahead.begin() + (ahead_of_[a.device] - 1);
  if (it->device != a.device || it->time != a.time) {
    // Not its latest: a device handed over twice (never in medicd); look for this one.
    it = std::find_if(ahead.begin(), ahead.end(), [&](const Mapped& m) { return m.device == a.device && m.time == a.time; });
    if (it == ahead.end()) return std::nullopt;
  }
  if (ahead_of_[a.device] - 1 == static_cast<size_t>(it - ahead.begin())) ahead_of_[a.device] = 0;  // used once
  std::optional<Mapped> m(std::move(*it));
  it->device = fabric::kNone;
  return m;
}

PollOutcome Pipeline::poll(std::span<const DeviceAnswer> answers, Time now,
                           std::span<const triage::Maintenance> maintenance,
                           std::span<const probes::RoundResult> rounds, const triage::Recorded& recorded) {
  PollOutcome out;
  // What was mapped ahead, in the order it finished; judged below in the answers' order.
  std::vector<Mapped> ahead = maps_.take();
  for (size_t i = 0; i < ahead.size(); ++i) ahead_of_[ahead[i].device] = static_cast<uint32_t>(i + 1);
  std::vector<Mapped> judged;
  judged.reserve(answers.size());
  size_t asked = 0, failed = 0;
  for (const auto& a : answers) {
    if (!a.asked) continue;
    ++asked;
    if (!a.answered) ++failed;
  }
  out.telemetry_outage = detectors::telemetry_outage(asked, failed, stale_config_);
  detectors_.begin_poll(asked, failed, now, out.findings);
  for (const auto& a : answers) {
    if (a.device < last_missed_.size() && !a.answered) last_missed_[a.device] = a.time;
    if (!a.answered) {
      detectors_.observe_poll(a.device, false, a.time, a.error, out.findings);
      continue;
    }
    std::optional<Mapped> was_ahead = take_ahead(ahead, a);
    Mapped m = was_ahead ? std::move(*was_ahead) : maps_.map(a.device, a.time, a.mono, a.format, a.body);
    out.stats += m.stats;
    if (!m.ok) {
      // A malformed answer is not an answer: the device counts as silent for this poll.
      out.rejected.emplace_back(a.device, m.error);
      if (a.device < last_missed_.size()) last_missed_[a.device] = a.time;
      detectors_.observe_poll(a.device, false, a.time, "malformed answer: " + m.error, out.findings);
      continue;
    }
    out.samples += m.samples.size();
    detectors_.observe_poll(a.device, true, a.time, "", out.findings);
    judged.push_back(std::move(m));
  }
  for (const Mapped& m : ahead) {  // what the poll was not given is dropped
    if (m.device != fabric::kNone) ahead_of_[m.device] = 0;
  }
  for (Mapped& m : judged) {
    for (const telemetry::PortSample& s : m.samples) {
      const telemetry::PortDelta d = tracker_.observe(s);
      if (d.implausible != 0) out.implausible += static_cast<size_t>(__builtin_popcount(d.implausible));
      using telemetry::Counter;
      const double secs = seconds(d.interval);
      if (d.has(Counter::tx_packets) && secs > 0) {
        tx_pps_[s.port] = d.get(Counter::tx_packets) / secs;
        tx_from_[s.port] = s.time - d.interval;
      }
      for (const Counter c : {Counter::rx_errors, Counter::rx_crc_errors, Counter::rx_symbol_errors,
                              Counter::fec_uncorrectable_codewords, Counter::carrier_changes}) {
        if (d.has(c)) error_events_[s.port] += d.get(c);
      }
      // A carrier change since the last reading (a flap, even one between two polls; or the
      // oper state turning) for the prober; a link that stays down is no change.
      const bool oper_turned = d.has(Counter::oper_up) && port_oper_[s.port] >= 0 &&
                               (d.get(Counter::oper_up) > 0.5 ? 1 : 0) != port_oper_[s.port];
      if (s.mono && ((d.has(Counter::carrier_changes) && d.get(Counter::carrier_changes) > 0) ||
                     (d.has(Counter::link_down_events) && d.get(Counter::link_down_events) > 0) || oper_turned)) {
        const fabric::LinkId l = topology_.port(s.port).link;
        if (l != fabric::kNone) out.links_down.push_back({l, *s.mono - d.interval, *s.mono});
      }
      if (d.has(telemetry::Counter::oper_up)) {
        port_oper_[s.port] = d.get(telemetry::Counter::oper_up) > 0.5 ? 1 : 0;
        const fabric::LinkId l = topology_.port(s.port).link;
        if (l != fabric::kNone) {
          const auto& link = topology_.link(l);
          // A link is up when no end that reports says it is down.
          const int8_t up = (port_oper_[link.a] != 0 && port_oper_[link.b] != 0) ? 1 : 0;
          if (link_oper_[l] != up) {
            link_oper_[l] = up;
            out.link_changes.push_back({l, up == 1});
          }
        }
      }
      detectors_.observe(d, out.findings);
    }
  }
  detectors_.end_poll(now, out.findings);
  for (const auto& r : rounds) {
    // A device that missed a poll while the window's probes were sent may have been what
    // lost them (a hung switch, a paused emulator): its links' loss is not theirs to answer.
    probe_detector_.observe(
        r, [&](fabric::LinkId l) { return link_oper_[l] == 0; },
        [&](fabric::DeviceId d) { return d < last_missed_.size() && last_missed_[d] != Time{} && last_missed_[d] >= r.window_from; },
        out.findings);
  }
  out.triage = triage_.process(out.findings, now, maintenance, recorded);
  return out;
}

EventOutcome Pipeline::link_events(std::span<const LinkEvent> events, Time now,
                                   std::span<const triage::Maintenance> maintenance, const triage::Recorded& recorded) {
  EventOutcome out;
  for (const LinkEvent& e : events) {
    if (e.port < topology_.ports().size()) detectors_.link_event(e.port, e.up, e.time, out.findings);
  }
  out.triage = triage_.process(out.findings, now, maintenance, recorded);
  return out;
}

}  // namespace medic::pipeline
