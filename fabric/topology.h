// The fabric: devices (switches and GPU hosts), their ports, the links between ports and
// the capacity groups that must keep a floor of their capacity. Immutable once built;
// everything refers to things by dense integer ids so the core can use flat arrays.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/hash.h"

namespace medic::fabric {

using DeviceId = uint32_t;
using PortId = uint32_t;
using LinkId = uint32_t;
using GroupId = uint32_t;
inline constexpr uint32_t kNone = UINT32_MAX;

enum class Role : uint8_t { rtsw, ctsw, atsw, host };
std::string_view to_string(Role r);
std::optional<Role> parse_role(std::string_view s);

struct Device {
  std::string name;
  Role role = Role::host;
  int zone = -1;   // -1: not in a zone
  int plane = -1;  // -1: not in a plane
  std::string telemetry_url;  // switches: counter endpoint; hosts: optional NIC exporter
  std::string driver_kind;    // "jsonrpc", "dryrun", ... ("" for hosts)
  std::string driver_url;
  // Active probing: where probes from this device are sent from ("" cannot send, "local":
  // the daemon's own stack, "netns:NAME": a network namespace), and the UDP port of its
  // STAMP reflector (0: none).
  std::string probe_source;
  uint16_t reflector_port = 0;
  bool is_switch() const { return role != Role::host; }
};

struct Port {
  DeviceId device = kNone;
  std::string name;
  LinkId link = kNone;
  std::string ip;  // the port's address on its link ("" if none): where link-pinned probes go
};

// The fastest link a topology may declare: 100 Tb/s, far beyond any optic, and low enough
// that capacity sums in whole Mb/s never come near 64 bits.
inline constexpr double kMaxLinkSpeedGbps = 100000;

struct Link {
  std::string name;  // "a--b" unless the file names it
  PortId a = kNone;
  PortId b = kNone;
  double speed_gbps = 0;
  std::string optic;  // transceiver type, e.g. "400G-DR4" ("" = the detectors' default)
};

struct CapacityGroup {
  std::string name;  // "rtsw0003 uplinks"
  std::string kind;  // "tor_uplinks", "spine_downlinks", "plane", "custom", ...
  double floor = 0;  // fraction of total capacity that must stay in service, in (0, 1]
  std::vector<LinkId> links;
  double total_gbps = 0;
};

class Topology {
 public:
  class Builder;

  std::span<const Device> devices() const { return devices_; }
  std::span<const Port> ports() const { return ports_; }
  std::span<const Link> links() const { return links_; }
  std::span<const CapacityGroup> groups() const { return groups_; }

  const Device& device(DeviceId id) const { return devices_[id]; }
  const Port& port(PortId id) const { return ports_[id]; }
  const Link& link(LinkId id) const { return links_[id]; }
  const CapacityGroup& group(GroupId id) const { return groups_[id]; }

  // The groups a link belongs to (usually one to three).
  std::span<const GroupId> groups_of(LinkId id) const;
  // Ports of a device, in the order they were created.
  std::span<const PortId> ports_of(DeviceId id) const;

  std::optional<DeviceId> find_device(std::string_view name) const;
  std::optional<PortId> find_port(std::string_view device, std::string_view port) const;
  std::optional<PortId> find_port(DeviceId device, std::string_view port) const;
  std::optional<GroupId> find_group(std::string_view name) const;
  // Accepts a link's name or either endpoint written "device:port".
  std::optional<LinkId> find_link(std::string_view ref) const;
  // The port with this address, if any.
  std::optional<PortId> find_port_by_ip(std::string_view ip) const;

  // "rtsw0001:eth17"
  std::string endpoint_name(PortId p) const;
  // The port on the other end of p's link, or kNone.
  PortId peer(PortId p) const;

  double total_capacity_gbps() const;

 private:
  std::vector<Device> devices_;
  std::vector<Port> ports_;
  std::vector<Link> links_;
  std::vector<CapacityGroup> groups_;
  // CSR adjacency: link -> groups, device -> ports.
  std::vector<uint32_t> link_group_offsets_;
  std::vector<GroupId> link_groups_;
  std::vector<uint32_t> device_port_offsets_;
  std::vector<PortId> device_ports_;
  StringMap<DeviceId> device_index_;
  std::vector<StringMap<PortId>> port_index_;  // per device
  StringMap<GroupId> group_index_;
  StringMap<LinkId> link_index_;
  StringMap<PortId> ip_index_;
};

// Builds a Topology while checking the invariants; every add_* returns an error message
// ("" on success) so the loader can prefix it with the file and JSON path.
class Topology::Builder {
 public:
  std::string add_device(Device d);
  // Creates the two ports if needed. Errors: unknown device, port already used, self link.
  std::string add_link(std::string_view a_device, std::string_view a_port,
                       std::string_view b_device, std::string_view b_port, double speed_gbps,
                       std::string name = "", std::string optic = "", std::string a_ip = "",
                       std::string b_ip = "");
  // Errors: duplicate group name, floor outside (0, 1], a link listed twice.
  std::string add_group(std::string name, std::string kind, double floor,
                        std::vector<LinkId> links);
  // Declares a port with no link (e.g. a host NIC listed in the file).
  std::string add_port(std::string_view device, std::string_view port);
  Topology build() &&;

  const Topology& partial() const { return t_; }

 private:
  Topology t_;
  std::vector<std::vector<GroupId>> link_groups_;
};

}  // namespace medic::fabric
