#include "remediation/executor.h"

#include <spdlog/spdlog.h>

namespace medic::remediation {

std::string_view to_string(ActionKind k) { return k == ActionKind::drain ? "drain" : "undrain"; }

Executor::Executor(const fabric::Topology& topology, CapacityModel& capacity, DriverSet& drivers,
                   ActionJournal& journal, const Clock& clock)
    : topology_(topology), capacity_(capacity), drivers_(drivers), journal_(journal), clock_(clock) {}

bool apply_to_link(const fabric::Topology& topology, DriverSet& drivers, fabric::LinkId link, bool drain,
                   ActionOutcome& out) {
  const fabric::Link& l = topology.link(link);
  std::vector<fabric::PortId> done;
  // Put back the ends already changed so the link is not left half drained.
  auto rollback = [&] {
    for (const fabric::PortId q : done) {
      const fabric::Port& qp = topology.port(q);
      auto back = drain ? drivers.for_device(qp.device)->undrain(qp.name)
                        : drivers.for_device(qp.device)->drain(qp.name);
      out.steps.push_back(std::string("rollback ") + topology.endpoint_name(q) + " -> " +
                          (back.ok() ? "ok" : "error: " + back.error()));
    }
  };
  int driven = 0;
  for (const fabric::PortId p : {l.a, l.b}) {
    const fabric::Port& port = topology.port(p);
    Driver* d = drivers.for_device(port.device);
    if (d == nullptr) continue;
    ++driven;
    const std::string ep = topology.endpoint_name(p);
    auto r = drain ? d->drain(port.name) : d->undrain(port.name);
    if (!r.ok()) {
      out.error = r.error();
      out.steps.push_back(std::string(drain ? "drain " : "undrain ") + ep + " -> error: " + r.error());
      rollback();
      return false;
    }
    out.steps.push_back(std::string(drain ? "drain " : "undrain ") + ep + " -> " +
                        (r->drained ? "drained" : "undrained"));
    done.push_back(p);
  }
  if (driven == 0) {
    out.error = "no drain driver for either end of " + l.name;
    return false;
  }
  // Read back: the switch must now say what we asked for.
  for (const fabric::PortId p : done) {
    const fabric::Port& port = topology.port(p);
    auto st = drivers.for_device(port.device)->get_state(port.name);
    const std::string ep = topology.endpoint_name(p);
    if (!st.ok()) {
      out.error = "verify " + ep + ": " + st.error();
      rollback();
      return false;
    }
    if (st->drained != drain) {
      out.error = "verify " + ep + ": switch reports " + (st->drained ? "drained" : "undrained") +
                  " after " + (drain ? "drain" : "undrain");
      rollback();
      return false;
    }
    out.steps.push_back("verify " + ep + " -> " + (st->drained ? "drained" : "undrained"));
  }
  return true;
}

LinkReadBack read_back(const fabric::Topology& topology, DriverSet& drivers, fabric::LinkId link) {
  LinkReadBack rb;
  const fabric::Link& l = topology.link(link);
  for (const fabric::PortId p : {l.a, l.b}) {
    const fabric::Port& port = topology.port(p);
    Driver* d = drivers.for_device(port.device);
    if (d == nullptr) continue;
    ++rb.driven;
    auto st = d->get_state(port.name);
    if (!st.ok()) {
      rb.error = topology.endpoint_name(p) + ": " + st.error();
      return rb;
    }
    if (st->drained) {
      ++rb.drained;
      rb.drained_ports.push_back(p);
    }
  }
  return rb;
}

DrainResult Executor::drain_link(int64_t incident_id, fabric::LinkId link) {
  DrainResult res;
  ActionIntent intent{incident_id, link, ActionKind::drain, clock_.now()};
  res.check = capacity_.check_drain(link);
  if (capacity_.drained(link)) {
    res.status = DrainStatus::drained;
    res.reason = "already drained: nothing to do";
    res.at = intent.at;
    return res;
  }
  if (!res.check.allowed) {
    res.status = DrainStatus::refused;
    res.reason = res.check.reason;
    res.at = intent.at;
    if (auto st = journal_.write_refusal(intent, res.reason); !st.ok()) {
      spdlog::error("could not record refusal for {}: {}", topology_.link(link).name, st.error());
    }
    return res;
  }
  capacity_.set_reserved(link, true);
  auto id = journal_.write_intent(intent);
  if (!id.ok()) {
    capacity_.set_reserved(link, false);
    res.status = DrainStatus::failed;
    res.reason = "intent not recorded, switch not touched: " + id.error();
    res.at = clock_.now();
    return res;
  }
  res.action_id = *id;
  ActionOutcome out;
  const bool ok = apply_to_link(topology_, drivers_, link, true, out);
  out.succeeded = ok;
  out.link_drained = ok;
  out.at = clock_.now();
  capacity_.set_reserved(link, false);
  if (ok) capacity_.set_drained(link, true);
  if (auto st = journal_.write_result(*id, intent, out); !st.ok()) {
    // The intent row stays open; reconciliation at the next start asks the switch.
    spdlog::error("could not record result of action {}: {}", *id, st.error());
  }
  res.status = ok ? DrainStatus::drained : DrainStatus::failed;
  res.reason = ok ? "" : out.error;
  res.at = out.at;
  return res;
}

}  // namespace medic::remediation
