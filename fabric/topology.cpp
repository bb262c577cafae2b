#include "fabric/topology.h"

#include <cassert>
#include <cmath>
#include <unordered_set>

#include "common/strings.h"

namespace medic::fabric {

std::string_view to_string(Role r) {
  switch (r) {
    case Role::rtsw: return "rtsw";
    case Role::ctsw: return "ctsw";
    case Role::atsw: return "atsw";
    case Role::host: return "host";
  }
  return "?";
}

std::optional<Role> parse_role(std::string_view s) {
  if (s == "rtsw") return Role::rtsw;
  if (s == "ctsw") return Role::ctsw;
  if (s == "atsw") return Role::atsw;
  if (s == "host") return Role::host;
  return std::nullopt;
}

std::span<const GroupId> Topology::groups_of(LinkId id) const {
  const uint32_t b = link_group_offsets_[id];
  const uint32_t e = link_group_offsets_[id + 1];
  return {link_groups_.data() + b, e - b};
}

std::span<const PortId> Topology::ports_of(DeviceId id) const {
  const uint32_t b = device_port_offsets_[id];
  const uint32_t e = device_port_offsets_[id + 1];
  return {device_ports_.data() + b, e - b};
}

std::optional<DeviceId> Topology::find_device(std::string_view name) const {
  const auto it = device_index_.find(name);
  if (it == device_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<PortId> Topology::find_port(DeviceId device, std::string_view port) const {
  if (device >= port_index_.size()) return std::nullopt;
  const auto& idx = port_index_[device];
  const auto it = idx.find(port);
  if (it == idx.end()) return std::nullopt;
  return it->second;
}

std::optional<PortId> Topology::find_port(std::string_view device, std::string_view port) const {
  const auto d = find_device(device);
  if (!d) return std::nullopt;
  return find_port(*d, port);
}

std::optional<GroupId> Topology::find_group(std::string_view name) const {
  const auto it = group_index_.find(name);
  if (it == group_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<LinkId> Topology::find_link(std::string_view ref) const {
  if (const auto it = link_index_.find(ref); it != link_index_.end()) {
    return it->second;
  }
  const size_t colon = ref.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const auto p = find_port(ref.substr(0, colon), ref.substr(colon + 1));
  if (!p || ports_[*p].link == kNone) return std::nullopt;
  return ports_[*p].link;
}

std::optional<PortId> Topology::find_port_by_ip(std::string_view ip) const {
  const auto it = ip_index_.find(ip);
  if (it == ip_index_.end()) return std::nullopt;
  return it->second;
}

std::string Topology::endpoint_name(PortId p) const {
  const Port& port = ports_[p];
  return devices_[port.device].name + ":" + port.name;
}

PortId Topology::peer(PortId p) const {
  const LinkId l = ports_[p].link;
  if (l == kNone) return kNone;
  return links_[l].a == p ? links_[l].b : links_[l].a;
}

double Topology::total_capacity_gbps() const {
  double total = 0;
  for (const auto& l : links_) total += l.speed_gbps;
  return total;
}

std::string Topology::Builder::add_device(Device d) {
  if (d.name.empty()) return "device name is empty";
  if (d.name.find(':') != std::string::npos) {
    return "device name " + quote(d.name) + " contains ':'";
  }
  if (t_.device_index_.count(d.name)) {
    const Device& prev = t_.devices_[t_.device_index_.at(d.name)];
    return std::string("duplicate ") + (d.is_switch() ? "switch " : "host ") + quote(d.name) +
           " (already defined as a " + std::string(prev.is_switch() ? "switch" : "host") + ")";
  }
  const auto id = static_cast<DeviceId>(t_.devices_.size());
  t_.device_index_.emplace(d.name, id);
  t_.devices_.push_back(std::move(d));
  t_.port_index_.emplace_back();
  return "";
}

std::string Topology::Builder::add_port(std::string_view device, std::string_view port) {
  const auto d = t_.find_device(device);
  if (!d) return "unknown device " + quote(device);
  if (port.empty()) return "empty port name on " + quote(device);
  auto& idx = t_.port_index_[*d];
  if (idx.find(port) != idx.end()) return "";
  const auto id = static_cast<PortId>(t_.ports_.size());
  t_.ports_.push_back(Port{*d, std::string(port), kNone, ""});
  idx.emplace(std::string(port), id);
  return "";
}

std::string Topology::Builder::add_link(std::string_view a_device, std::string_view a_port,
                                        std::string_view b_device, std::string_view b_port,
                                        double speed_gbps, std::string name, std::string optic, std::string a_ip,
                                        std::string b_ip) {
  for (const auto dev : {a_device, b_device}) {
    if (!t_.find_device(dev)) return "unknown switch or host " + quote(dev);
  }
  if (a_device == b_device) {
    return "link from " + quote(a_device) + " to itself (" + std::string(a_device) + ":" +
           std::string(a_port) + " -- " + std::string(b_device) + ":" + std::string(b_port) + ")";
  }
  if (!(speed_gbps > 0) || !std::isfinite(speed_gbps)) {
    return "speed_gbps must be a positive number, got " + std::to_string(speed_gbps);
  }
  if (speed_gbps > kMaxLinkSpeedGbps) {
    return "speed_gbps must be at most " + std::to_string(static_cast<int64_t>(kMaxLinkSpeedGbps)) + " Gb/s, got " +
           format_number(speed_gbps);
  }
  PortId ends[2];
  const std::string_view devs[2] = {a_device, b_device};
  const std::string_view ports[2] = {a_port, b_port};
  for (int i = 0; i < 2; ++i) {
    if (ports[i].empty()) return "empty port name on " + quote(devs[i]);
    if (auto err = add_port(devs[i], ports[i]); !err.empty()) return err;
    ends[i] = *t_.find_port(devs[i], ports[i]);
    const LinkId used = t_.ports_[ends[i]].link;
    if (used != kNone) {
      return "port " + std::string(devs[i]) + ":" + std::string(ports[i]) +
             " is already used by link " + quote(t_.links_[used].name);
    }
  }
  if (name.empty()) {
    name = std::string(a_device) + ":" + std::string(a_port) + "--" + std::string(b_device) + ":" +
           std::string(b_port);
  }
  if (t_.link_index_.count(name)) return "duplicate link name " + quote(name);
  for (const std::string* ip : {&a_ip, &b_ip}) {
    if (ip->empty()) continue;
    if (const auto it = t_.ip_index_.find(*ip); it != t_.ip_index_.end()) {
      return "address " + *ip + " is already used by " + t_.endpoint_name(it->second);
    }
  }
  if (!a_ip.empty() && a_ip == b_ip) return "both ends have the address " + a_ip;
  const auto id = static_cast<LinkId>(t_.links_.size());
  t_.ports_[ends[0]].link = id;
  t_.ports_[ends[1]].link = id;
  if (!a_ip.empty()) {
    t_.ports_[ends[0]].ip = a_ip;
    t_.ip_index_.emplace(a_ip, ends[0]);
  }
  if (!b_ip.empty()) {
    t_.ports_[ends[1]].ip = b_ip;
    t_.ip_index_.emplace(b_ip, ends[1]);
  }
  t_.link_index_.emplace(name, id);
  t_.links_.push_back(Link{std::move(name), ends[0], ends[1], speed_gbps, std::move(optic)});
  return "";
}

std::string Topology::Builder::add_group(std::string name, std::string kind, double floor,
                                         std::vector<LinkId> links) {
  if (name.empty()) return "capacity group name is empty";
  if (t_.group_index_.count(name)) return "duplicate capacity group " + quote(name);
  if (!(floor > 0.0 && floor <= 1.0)) {
    return "floor must be in (0, 1], got " + std::to_string(floor);
  }
  if (links.empty()) return "capacity group " + quote(name) + " has no links";
  // Check every link before recording any: a rejected group must leave no trace on its
  // links, or the next group (which gets the same id) would look like a duplicate.
  std::unordered_set<LinkId> seen;
  for (const LinkId l : links) {
    assert(l < t_.links_.size());
    if (!seen.insert(l).second) {
      return "link " + quote(t_.links_[l].name) + " is listed twice in group " + quote(name);
    }
  }
  const auto id = static_cast<GroupId>(t_.groups_.size());
  if (link_groups_.size() < t_.links_.size()) link_groups_.resize(t_.links_.size());
  double total = 0;
  for (const LinkId l : links) {
    link_groups_[l].push_back(id);
    total += t_.links_[l].speed_gbps;
  }
  t_.group_index_.emplace(name, id);
  t_.groups_.push_back(CapacityGroup{std::move(name), std::move(kind), floor, std::move(links), total});
  return "";
}

Topology Topology::Builder::build() && {
  link_groups_.resize(t_.links_.size());
  t_.link_group_offsets_.assign(1, 0);
  t_.link_groups_.clear();
  for (const auto& gs : link_groups_) {
    t_.link_groups_.insert(t_.link_groups_.end(), gs.begin(), gs.end());
    t_.link_group_offsets_.push_back(static_cast<uint32_t>(t_.link_groups_.size()));
  }
  std::vector<std::vector<PortId>> by_device(t_.devices_.size());
  for (PortId p = 0; p < t_.ports_.size(); ++p) by_device[t_.ports_[p].device].push_back(p);
  t_.device_port_offsets_.assign(1, 0);
  t_.device_ports_.clear();
  for (const auto& ps : by_device) {
    t_.device_ports_.insert(t_.device_ports_.end(), ps.begin(), ps.end());
    t_.device_port_offsets_.push_back(static_cast<uint32_t>(t_.device_ports_.size()));
  }
  return std::move(t_);
}

}  // namespace medic::fabric
