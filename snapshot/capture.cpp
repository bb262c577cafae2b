#include <algorithm>
#include <cassert>
#include <cmath>

#include "snapshot/snapshot.h"

namespace medic::snapshot {

namespace {

// A floor is broken when the group is below it by more than rounding.
constexpr double kEpsilon = 1e-9;

PortReading read_port(const FabricState& st, fabric::PortId p) {
  const fabric::Topology& t = st.topology;
  const fabric::Port& port = t.port(p);
  PortReading r;
  r.device = t.device(port.device).name;
  r.port = port.name;
  if (port.link != fabric::kNone) {
    r.link = t.link(port.link).name;
    r.drained = st.capacity.drained(port.link);
  }
  const int oper = st.port_oper ? st.port_oper(p) : -1;
  r.oper = oper < 0 ? -1 : oper > 0 ? 1 : 0;
  if (st.latest) {
    const telemetry::PortSample& s = st.latest(p);
    if (s.present != 0) {
      r.sampled_at = s.time;
      for (size_t c = 0; c < telemetry::kCounterCount; ++c) {
        const auto counter = static_cast<telemetry::Counter>(c);
        // A non-finite value is not a reading (and neither JSON nor the tables keep it).
        if (s.has(counter) && std::isfinite(s.get(counter))) r.set(counter, s.get(counter));
      }
    }
  }
  return r;
}

GroupReading read_group(const FabricState& st, fabric::GroupId g) {
  const fabric::CapacityGroup& grp = st.topology.group(g);
  GroupReading r;
  r.name = grp.name;
  r.kind = grp.kind;
  r.floor = grp.floor;
  r.capacity_gbps = grp.total_gbps;
  r.available_gbps = st.capacity.available_gbps(g);
  r.links = static_cast<int>(grp.links.size());
  for (const fabric::LinkId l : grp.links) r.links_in_service += st.capacity.in_service(l) ? 1 : 0;
  return r;
}

Snapshot empty_snapshot(const FabricState& st, std::string scope, std::string reason) {
  // Group and link ids are the capacity model's: it must model this very topology.
  assert(&st.capacity.topology() == &st.topology);
  Snapshot s;
  s.scope = std::move(scope);
  s.reason = std::move(reason);
  s.taken_at = st.now;
  return s;
}

}  // namespace

bool valid_scope(std::string_view scope) {
  return scope == kScopeIncident || scope == kScopeAction || scope == kScopeFabric;
}

bool GroupReading::below_floor() const { return fraction() < floor - kEpsilon; }

Snapshot capture_devices(const FabricState& st, const std::vector<fabric::DeviceId>& devices, std::string scope,
                         std::string reason) {
  const fabric::Topology& t = st.topology;
  Snapshot s = empty_snapshot(st, std::move(scope), std::move(reason));
  std::vector<fabric::DeviceId> devs = devices;
  std::sort(devs.begin(), devs.end());
  devs.erase(std::unique(devs.begin(), devs.end()), devs.end());

  std::vector<fabric::GroupId> groups;
  for (const fabric::DeviceId d : devs) {
    assert(d < t.devices().size());
    for (const fabric::PortId p : t.ports_of(d)) {
      s.ports.push_back(read_port(st, p));
      const fabric::LinkId l = t.port(p).link;
      if (l == fabric::kNone) continue;
      for (const fabric::GroupId g : t.groups_of(l)) groups.push_back(g);
    }
  }
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  for (const fabric::GroupId g : groups) s.groups.push_back(read_group(st, g));

  // Incidents are named by link and device; an incident touches the snapshot when its
  // device is one of ours or its link ends on one of ours.
  auto ours = [&](std::optional<fabric::DeviceId> d) { return d && std::binary_search(devs.begin(), devs.end(), *d); };
  for (const IncidentReading& inc : st.open_incidents) {
    bool touches = !inc.device.empty() && ours(t.find_device(inc.device));
    if (!touches && !inc.link.empty()) {
      if (const auto l = t.find_link(inc.link)) {
        touches = ours(t.port(t.link(*l).a).device) || ours(t.port(t.link(*l).b).device);
      }
    }
    if (touches) s.incidents.push_back(inc);
  }
  return s;
}

Snapshot capture_link(const FabricState& st, fabric::LinkId link, std::string scope, std::string reason) {
  const fabric::Topology& t = st.topology;
  assert(link < t.links().size());
  const fabric::Link& l = t.link(link);
  Snapshot s = capture_devices(st, {t.port(l.a).device, t.port(l.b).device}, std::move(scope), std::move(reason));
  s.link = l.name;
  return s;
}

Snapshot capture_fabric(const FabricState& st, std::string reason) {
  const fabric::Topology& t = st.topology;
  Snapshot s = empty_snapshot(st, std::string(kScopeFabric), std::move(reason));
  s.ports.reserve(t.ports().size());
  // Device by device, as `show` lists them (ports_of keeps each device's creation order).
  for (fabric::DeviceId d = 0; d < t.devices().size(); ++d) {
    for (const fabric::PortId p : t.ports_of(d)) s.ports.push_back(read_port(st, p));
  }
  s.groups.reserve(t.groups().size());
  for (fabric::GroupId g = 0; g < t.groups().size(); ++g) s.groups.push_back(read_group(st, g));
  s.incidents = st.open_incidents;
  return s;
}

}  // namespace medic::snapshot
