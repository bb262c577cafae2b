#include "fabric/generator.h"

#include <arpa/inet.h>

#include <cstdio>
#include <stdexcept>

namespace medic::fabric {

namespace {

std::string numbered(const char* prefix, int width, int n) {
  std::string digits = std::to_string(n);
  if (static_cast<int>(digits.size()) < width) digits.insert(0, static_cast<size_t>(width) - digits.size(), '0');
  return prefix + digits;
}

int digits(int n) {
  int d = 1;
  while (n >= 10) {
    n /= 10;
    ++d;
  }
  return d;
}

void check(const std::string& err) {
  if (!err.empty()) throw std::logic_error("generator produced an invalid fabric: " + err);
}

}  // namespace

std::optional<ClosShape> preset(std::string_view name) {
  if (name == "demo") {
    ClosShape s;
    s.zones = 2;
    s.rtsw_per_zone = 4;
    s.ctsw_per_zone = 4;
    s.gpus_per_rtsw = 4;
    s.gpus_per_host = 4;
    s.atsw_per_plane = 1;
    s.ctsw_uplinks = 2;
    return s;
  }
  if (name == "zone32k") {
    // The 32k-GPU shape published for Meta's RoCE training clusters: 8 AI zones of 252
    // RTSW, each RTSW with 16 GPU-facing 400G links and one 400G uplink to each of the
    // zone's 18 CTSW; CTSWs reach the aggregation layer at 7:1 oversubscription
    // (252 downlinks, 36 uplinks). The ATSW layer is modelled as 18 planes of 4 ATSW.
    ClosShape s;
    s.zones = 8;
    s.rtsw_per_zone = 252;
    s.ctsw_per_zone = 18;
    s.gpus_per_rtsw = 16;
    s.gpus_per_host = 8;
    s.atsw_per_plane = 4;
    s.ctsw_uplinks = 36;
    return s;
  }
  return std::nullopt;
}

std::vector<std::string> preset_names() { return {"demo", "zone32k"}; }

Topology generate_clos(const ClosShape& s) {
  if (s.zones < 1 || s.rtsw_per_zone < 1 || s.ctsw_per_zone < 1 || s.gpus_per_rtsw < 1 ||
      s.gpus_per_host < 1 || s.atsw_per_plane < 0 || s.ctsw_uplinks < 0 || !(s.speed_gbps > 0) ||
      !(s.tor_uplink_floor > 0 && s.tor_uplink_floor <= 1)) {
    throw std::invalid_argument("Clos shape has a non-positive count, speed or floor");
  }
  if (s.ctsw_uplinks > 0 && s.atsw_per_plane == 0) {
    throw std::invalid_argument("CTSW uplinks need at least one ATSW per plane");
  }
  if (s.telemetry_format != "prometheus" && s.telemetry_format != "openconfig" && s.telemetry_format != "mixed") {
    throw std::invalid_argument("telemetry format must be prometheus, openconfig or mixed");
  }
  if (s.gpus_per_rtsw % s.gpus_per_host != 0) {
    throw std::invalid_argument("gpus_per_rtsw must be a multiple of gpus_per_host");
  }
  const int n_rtsw = s.zones * s.rtsw_per_zone;
  const int n_ctsw = s.zones * s.ctsw_per_zone;
  const int n_planes = s.ctsw_per_zone;
  const int n_atsw = n_planes * s.atsw_per_plane;
  const int hosts_per_rtsw = s.gpus_per_rtsw / s.gpus_per_host;
  const int n_hosts = n_rtsw * hosts_per_rtsw;
  const int wr = std::max(4, digits(n_rtsw)), wc = std::max(3, digits(n_ctsw)),
            wa = std::max(2, digits(n_atsw)), wh = std::max(4, digits(n_hosts));

  Topology::Builder b;
  // Link addresses: the next two of the block for every link.
  uint32_t next_addr = 0;
  if (!s.address_base.empty()) {
    in_addr a{};
    if (inet_pton(AF_INET, s.address_base.c_str(), &a) != 1) {
      throw std::invalid_argument("address base " + s.address_base + " is not an IPv4 address");
    }
    next_addr = ntohl(a.s_addr);
  }
  auto addr = [&]() -> std::string {
    if (s.address_base.empty()) return "";
    in_addr a{};
    a.s_addr = htonl(next_addr++);
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a, buf, sizeof buf);
    return buf;
  };
  auto link = [&](const std::string& ad, const std::string& ap, const std::string& bd, const std::string& bp,
                  const std::string& optic) {
    const std::string a_ip = addr();
    const std::string b_ip = addr();
    check(b.add_link(ad, ap, bd, bp, s.speed_gbps, "", optic, a_ip, b_ip));
  };
  auto add_switch = [&](const std::string& name, Role role, int zone, int plane) {
    Device d;
    d.name = name;
    d.role = role;
    d.zone = zone;
    d.plane = plane;
    const bool oc = s.telemetry_format == "openconfig" || (s.telemetry_format == "mixed" && role != Role::rtsw);
    d.telemetry_url = s.base_url + "/s/" + name + (oc ? "/gnmi" : "/metrics");
    if (!s.address_base.empty()) {
      d.probe_source = "local";
      d.reflector_port = s.reflector_port;
    }
    d.driver_kind = s.driver_kind;
    if (s.driver_kind == "jsonrpc") d.driver_url = s.base_url + "/s/" + name + "/rpc";
    check(b.add_device(std::move(d)));
  };
  auto rtsw = [&](int z, int i) { return numbered("rtsw", wr, z * s.rtsw_per_zone + i + 1); };
  auto ctsw = [&](int z, int i) { return numbered("ctsw", wc, z * s.ctsw_per_zone + i + 1); };
  auto atsw = [&](int p, int i) { return numbered("atsw", wa, p * s.atsw_per_plane + i + 1); };

  for (int z = 0; z < s.zones; ++z) {
    for (int i = 0; i < s.rtsw_per_zone; ++i) add_switch(rtsw(z, i), Role::rtsw, z + 1, -1);
    for (int i = 0; i < s.ctsw_per_zone; ++i) add_switch(ctsw(z, i), Role::ctsw, z + 1, i + 1);
  }
  for (int p = 0; p < n_planes; ++p) {
    for (int i = 0; i < s.atsw_per_plane; ++i) add_switch(atsw(p, i), Role::atsw, -1, p + 1);
  }

  // Hosts and their GPU NIC links.
  int host_no = 0;
  for (int z = 0; z < s.zones; ++z) {
    for (int r = 0; r < s.rtsw_per_zone; ++r) {
      const std::string tor = rtsw(z, r);
      for (int h = 0; h < hosts_per_rtsw; ++h) {
        Device d;
        d.name = numbered("host", wh, ++host_no);
        d.role = Role::host;
        d.zone = z + 1;
        if (s.host_telemetry) d.telemetry_url = s.base_url + "/h/" + d.name + "/metrics";
        if (!s.address_base.empty()) {
          d.probe_source = "local";
          d.reflector_port = s.reflector_port;
        }
        const std::string host = d.name;
        check(b.add_device(std::move(d)));
        for (int n = 0; n < s.gpus_per_host; ++n) {
          const int tor_port = h * s.gpus_per_host + n + 1;
          link(host, "nic" + std::to_string(n), tor, "eth" + std::to_string(tor_port), s.host_optic);
        }
      }
    }
  }

  // RTSW uplinks: one to each CTSW of the zone; each ToR's uplinks form a capacity group.
  std::vector<std::vector<std::string>> tor_uplinks(n_rtsw);
  for (int z = 0; z < s.zones; ++z) {
    for (int r = 0; r < s.rtsw_per_zone; ++r) {
      const std::string tor = rtsw(z, r);
      for (int c = 0; c < s.ctsw_per_zone; ++c) {
        const std::string up = "eth" + std::to_string(s.gpus_per_rtsw + c + 1);
        link(tor, up, ctsw(z, c), "eth" + std::to_string(r + 1), s.fabric_optic);
        tor_uplinks[z * s.rtsw_per_zone + r].push_back(tor + ":" + up);
      }
    }
  }

  // CTSW uplinks spread round-robin over the ATSWs of the CTSW's plane.
  for (int z = 0; z < s.zones; ++z) {
    for (int c = 0; c < s.ctsw_per_zone; ++c) {
      for (int u = 0; u < s.ctsw_uplinks; ++u) {
        const int a = u % s.atsw_per_plane;
        const int slot = u / s.atsw_per_plane;  // which of this CTSW's links to that ATSW
        const int per_atsw = (s.ctsw_uplinks + s.atsw_per_plane - 1) / s.atsw_per_plane;
        const int atsw_port = z * per_atsw + slot + 1;
        link(ctsw(z, c), "eth" + std::to_string(s.rtsw_per_zone + u + 1), atsw(c, a),
             "eth" + std::to_string(atsw_port), s.fabric_optic);
      }
    }
  }

  for (int t = 0; t < n_rtsw; ++t) {
    const int z = t / s.rtsw_per_zone, r = t % s.rtsw_per_zone;
    std::vector<LinkId> ids;
    for (const auto& ref : tor_uplinks[t]) ids.push_back(*b.partial().find_link(ref));
    check(b.add_group(rtsw(z, r) + " uplinks", "tor_uplinks", s.tor_uplink_floor, std::move(ids)));
  }
  return std::move(b).build();
}

}  // namespace medic::fabric
