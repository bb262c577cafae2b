// The Linux network-namespace driver: a switch is a namespace (the testbed's, or any Linux
// router's), an interface is drained by taking it out of every multipath route of the main
// table, with `ip route replace` (atomic per route), and undrained by putting it back. The
// link stays up and keeps its addresses, so it can still be probed (DESIGN: drain).
//
// What was removed is written to a state file first (/run/medic-netns/NS/IF.json), so an
// undrain after a crash of the caller restores exactly those next hops. Routes the interface
// is the only way out of are left alone (removing them would blackhole, not move, their
// traffic). A drain that could not take the interface out of every multipath route changes
// nothing and fails. Errors read "DEVICE: drain IF: ...", with the `ip` command and its stderr.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "remediation/driver.h"

namespace medic::remediation {

inline constexpr const char* kNetnsStateDir = "/run/medic-netns";

// The route rewriting as pure functions over plain data (unit-tested without root).
namespace netns {

struct NextHop {
  std::string gateway;  // "" for a next hop that is only a device
  std::string dev;
  int weight = 1;
  bool onlink = false;
  // Flagged "dead" or "linkdown" by the kernel: state, not configuration, so it is neither
  // saved in the state file nor compared.
  bool down = false;
  bool same_path(const NextHop& o) const { return dev == o.dev && gateway == o.gateway; }
  bool operator==(const NextHop& o) const {
    return gateway == o.gateway && dev == o.dev && weight == o.weight && onlink == o.onlink;
  }
};

// One route of the main table as `ip -j route show table main` prints it.
struct Route {
  int family = 4;  // 4 or 6
  std::string dst;  // "198.18.2.0/31", "default", "2001:db8::/64"
  int64_t metric = 0;
  bool has_metric = false;
  std::string tos, protocol, scope, prefsrc, pref;
  std::vector<std::pair<std::string, int64_t>> metrics;  // mtu, advmss, ... (in order)
  std::vector<NextHop> nexthops;                         // one for a single-path route
  std::string unsupported;  // why `ip route replace` could not reproduce it ("" if it can)

  bool multipath() const { return nexthops.size() > 1; }
  // Identity for `ip route replace`: family, prefix, tos, metric.
  bool same_key(int family, const std::string& dst, const std::string& tos, int64_t metric) const;
};

// family 4 or 6. Errors are exact and say where: `[2] (198.18.2.0/31): nexthops[1]: no "dev" string`
// (the driver puts the command in front).
Result<std::vector<Route>> parse_routes(const std::string& json_text, int family);

struct RouteEdit {
  Route route;                  // as it is now
  std::vector<NextHop> keep;    // the next hops it keeps, with their weights
  std::vector<NextHop> removed;
};

struct DrainPlan {
  std::vector<RouteEdit> edits;
  // Routes whose only way out is the interface (not counting the kernel's connected routes):
  // left alone, because removing them would blackhole their traffic.
  std::vector<std::string> single_path;
  // Multipath routes through the interface that `ip route replace` cannot reproduce
  // faithfully (nexthop objects, encapsulation, expiry, a locked metric, ...) or whose other
  // next hops are all down: "DST: reason". Any of them and the drain changes nothing.
  std::vector<std::string> skipped;
};

// A multipath route whose every other next hop is down is skipped too: taking the interface
// out would move its traffic onto a dead link.
DrainPlan plan_drain(const std::vector<Route>& routes, const std::string& interface);
// The interface is still a member of a multipath route drain would take it out of.
bool is_multipath_member(const std::vector<Route>& routes, const std::string& interface);

// `ip -j` prints a locked metric ("mtu lock 1400") like an unlocked one, so a rewrite would
// drop the lock. This reads the text form of `ip route show exact DST` for it.
bool shows_locked_metric(const std::string& ip_route_text);

// Arguments after `ip -n NS`: {"-4", "route", "replace", DST, ..., "nexthop", "via", GW, "dev", IF,
// "weight", "1", ...}, keeping the route's tos, protocol, scope, metric, source, preference and metrics.
std::vector<std::string> replace_args(const Route& route, const std::vector<NextHop>& hops);

// The state file: what a drain removed, so an undrain restores exactly that.
struct SavedRoute {
  int family = 4;
  std::string dst;
  std::string tos;
  int64_t metric = 0;
  std::vector<NextHop> original;  // the next hops before the drain, with their weights
  std::vector<NextHop> removed;
  bool operator==(const SavedRoute&) const = default;
};

struct SavedDrain {
  std::string device, netns, interface;
  std::vector<SavedRoute> routes;
  std::vector<std::string> single_path;  // routes left alone (see DrainPlan)
  bool operator==(const SavedDrain&) const = default;
};

std::string to_json(const SavedDrain& saved);
// Errors are exact: "routes[0].removed[1].dev: expected a string".
Result<SavedDrain> parse_saved(const std::string& json_text);
// The record after a drain: what was saved before (a drain repeated after a crash, or after a
// routing change put the next hop back) plus this plan's removals, without duplicates.
SavedDrain merge(std::optional<SavedDrain> saved, const DrainPlan& plan, const std::string& device,
                 const std::string& netns, const std::string& interface);

struct RouteRestore {
  Route route;                // as it is now
  std::vector<NextHop> hops;  // what it gets back to
};

struct UndrainPlan {
  std::vector<RouteRestore> restores;
  std::vector<std::string> missing;  // saved routes whose prefix is gone (or cannot be rewritten)
};

// For every saved route still present: its current next hops plus the removed ones, in the
// original order and with the original weights. Routes that are already whole are left out.
UndrainPlan plan_undrain(const std::vector<Route>& routes, const SavedDrain& saved);

struct LinkState {
  std::string operstate;            // "UP", "DOWN", "UNKNOWN", ...
  std::vector<std::string> flags;   // "UP", "LOWER_UP", ...
};
// `ip -j link show dev IF`. Errors as parse_routes'.
Result<LinkState> parse_link(const std::string& json_text);
// operstate UP, or UNKNOWN with LOWER_UP (drivers that report no operstate).
bool oper_up(const LinkState& link);

// Interface names as the kernel accepts them: 1..15 bytes, no '/', ':' or whitespace, not "." or "..".
bool valid_interface_name(const std::string& name);

struct CommandOutput {
  int exit_code = 0;  // or -signal
  std::string out, err;
};
// Runs argv[0] (an absolute path) with posix_spawn, no shell, stdin from /dev/null, stdout and
// stderr captured. On timeout the child is killed by its pid (SIGKILL) and reaped: an Error.
Result<CommandOutput> run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

}  // namespace netns

class NetnsDriver final : public Driver {
 public:
  // url is "netns:NAME", NAME a namespace under /var/run/netns; an empty url means the
  // namespace named as the device. Any other url throws std::invalid_argument.
  // Construction does no I/O: the namespace is looked up on every call.
  NetnsDriver(std::string device, const std::string& url, std::string state_dir = kNetnsStateDir,
              std::chrono::milliseconds ip_timeout = std::chrono::seconds(5));
  std::string kind() const override { return "netns"; }
  Result<InterfaceState> drain(const std::string& interface) override;
  Result<InterfaceState> undrain(const std::string& interface) override;
  Result<InterfaceState> get_state(const std::string& interface) override;

  const std::string& netns() const { return netns_; }
  std::string state_file(const std::string& interface) const;

 private:
  // "DEVICE: OP IF: WHAT", the one form of every error this driver returns.
  // kind: ErrorKind::indeterminate once routes may have changed.
  Error failure(const char* op, const std::string& interface, const std::string& what,
                ErrorKind kind = ErrorKind::internal) const;
  std::string command_text(const std::vector<std::string>& args) const;  // "ip -n NS ARGS"
  Result<netns::CommandOutput> run_ip(const std::vector<std::string>& args);
  Result<std::string> ip(const std::vector<std::string>& args);  // stdout; a failure is an Error
  Result<netns::LinkState> read_link(const std::string& interface);
  Result<std::vector<netns::Route>> read_routes();
  Result<std::optional<netns::SavedDrain>> load_state(const std::string& interface);
  Status write_state(const netns::SavedDrain& saved);
  Status remove_state(const std::string& interface);
  Result<InterfaceState> state_of(const std::string& interface, const netns::LinkState& link);
  Result<netns::LinkState> check(const std::string& interface);

  std::string device_;
  std::string netns_;
  std::string state_dir_;
  std::chrono::milliseconds timeout_;
  std::string ip_binary_;
  std::mutex mu_;  // one change at a time per namespace driver
};

}  // namespace medic::remediation
