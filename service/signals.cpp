#include "service/signals.h"

#include <algorithm>

namespace medic::service {

double PipelineSignals::tx_pps(fabric::LinkId link) const {
  const auto& l = topology_.link(link);
  return std::max(pipeline_.tx_pps(l.a), pipeline_.tx_pps(l.b));
}

Time PipelineSignals::measured_from(fabric::LinkId link) const {
  const auto& l = topology_.link(link);
  Time from = Time::max();
  for (const fabric::PortId p : {l.a, l.b}) {
    if (pipeline_.tx_pps(p) >= 0) from = std::min(from, pipeline_.tx_from(p));
  }
  return from == Time::max() ? Time{} : from;
}

double PipelineSignals::peer_pps(fabric::LinkId link) const {
  const auto groups = topology_.groups_of(link);
  if (groups.empty()) return -1;
  double sum = 0;
  int n = 0;
  for (const fabric::LinkId peer : topology_.group(groups.front()).links) {
    if (peer == link || !capacity_.in_service(peer)) continue;
    const double pps = tx_pps(peer);
    if (pps < 0) continue;
    sum += pps;
    ++n;
  }
  return n == 0 ? -1 : sum / n;
}

double PipelineSignals::error_events(fabric::LinkId link) const {
  const auto& l = topology_.link(link);
  return pipeline_.error_events(l.a) + pipeline_.error_events(l.b);
}

bool PipelineSignals::flap_suppressed(fabric::LinkId link, Time now) const {
  return pipeline_.detectors().flap().suppressed(link, now);
}

}  // namespace medic::service
