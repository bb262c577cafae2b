// What the remediation workflow reads of the fabric (remediation::LinkSignals): the
// pipeline's latest counters and the flap detector's damping, per link.
#pragma once

#include "fabric/topology.h"
#include "pipeline/pipeline.h"
#include "remediation/capacity.h"
#include "remediation/workflow.h"

namespace medic::service {

class PipelineSignals final : public remediation::LinkSignals {
 public:
  // `topology`: the one with capacity groups (a link's peers are its first group's links).
  PipelineSignals(const fabric::Topology& topology, const remediation::CapacityModel& capacity,
                  const pipeline::Pipeline& pipeline)
      : topology_(topology), capacity_(capacity), pipeline_(pipeline) {}

  double tx_pps(fabric::LinkId link) const override;
  Time measured_from(fabric::LinkId link) const override;
  double peer_pps(fabric::LinkId link) const override;
  int oper(fabric::LinkId link) const override { return pipeline_.link_oper(link); }
  double error_events(fabric::LinkId link) const override;
  bool flap_suppressed(fabric::LinkId link, Time now) const override;

 private:
  const fabric::Topology& topology_;
  const remediation::CapacityModel& capacity_;
  const pipeline::Pipeline& pipeline_;
};

}  // namespace medic::service
