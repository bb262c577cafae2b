// The network-namespace driver against the real kernel: each test makes its own namespaces
// (a "switch" and a neighbour joined by two veth links, 198.18.250.0/29), an ECMP route with
// weights over both links, and drains and undrains one link with NetnsDriver. Needs root (CI
// runs as root); skipped, and reported as skipped, otherwise. No packet is sent: the tests
// only read and rewrite routes, and IPv6 address generation is off so the veths stay silent.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/strings.h"
#include "remediation/netns_driver.h"
#include "tests/support/testing.h"

namespace medic::remediation {
namespace netns {
// Readable failures (found by argument-dependent lookup).
void PrintTo(const NextHop& h, std::ostream* os) {
  *os << "{" << (h.gateway.empty() ? "" : "via " + h.gateway + " ") << "dev " << h.dev << " weight " << h.weight
      << (h.onlink ? " onlink" : "") << (h.down ? " down" : "") << "}";
}
}  // namespace netns

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string& ip_path() {
  static const std::string p = ::access("/usr/sbin/ip", X_OK) == 0 ? "/usr/sbin/ip" : "/sbin/ip";
  return p;
}
using namespace std::chrono_literals;

const std::string& sysctl_path() {
  static const std::string p = ::access("/usr/sbin/sysctl", X_OK) == 0 ? "/usr/sbin/sysctl" : "/sbin/sysctl";
  return p;
}

// Runs `ip ARGS` (no shell) and returns its stdout; throws with its stderr when it fails.
std::string ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {ip_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = netns::run_command(argv, std::chrono::seconds(20));
  if (!r.ok()) throw std::runtime_error("ip " + join(args, " ") + ": " + r.error());
  if (r->exit_code != 0) throw std::runtime_error("ip " + join(args, " ") + ": exit " + std::to_string(r->exit_code) + ": " + r->err);
  return r->out;
}

// Every interface operationally up and no route of the namespace with a next hop down (bounded wait).
bool settled(const std::string& ns, const std::vector<std::string>& interfaces) {
  return testing::eventually(
      [&] {
        for (const std::string& i : interfaces) {
          auto link = netns::parse_link(ip({"-n", ns, "-j", "link", "show", "dev", i}));
          if (!link.ok() || !netns::oper_up(*link)) return false;
        }
        for (const char* fam : {"-4", "-6"}) {
          const std::string out = ip({"-n", ns, "-j", fam, "route", "show", "table", "main"});
          if (out.find("linkdown") != std::string::npos || out.find("dead") != std::string::npos) return false;
        }
        return true;
      },
      20s);
}

// Namespaces made by this test, deleted by their exact names when it ends, passed or not.
class Namespaces {
 public:
  Namespaces() = default;
  Namespaces(const Namespaces&) = delete;
  Namespaces& operator=(const Namespaces&) = delete;
  ~Namespaces() {
    for (const std::string& n : names_) {
      auto r = netns::run_command({ip_path(), "netns", "del", n}, std::chrono::seconds(20));
      if (!r.ok() || r->exit_code != 0) ADD_FAILURE() << "could not delete namespace " << n;
    }
  }
  // "mdt<pid>-<n>-TAG", with IPv6 address generation off so its interfaces send nothing.
  std::string add(const std::string& tag) {
    static int counter = 0;
    const std::string name = "mdt" + std::to_string(::getpid()) + "-" + std::to_string(++counter) + "-" + tag;
    ip({"netns", "add", name});
    names_.push_back(name);
    ip({"netns", "exec", name, sysctl_path(), "-qw", "net.ipv6.conf.all.addr_gen_mode=1",
        "net.ipv6.conf.default.addr_gen_mode=1"});
    return name;
  }

 private:
  std::vector<std::string> names_;
};

// sw: va0 198.18.250.0/31 -- vb0 198.18.250.1/31 :nb
//     va1 198.18.250.2/31 -- vb1 198.18.250.3/31 :nb
// Routes in sw:
//   198.18.251.0/24  nexthop via 198.18.250.1 dev va0 weight 3  nexthop via 198.18.250.3 dev va1 weight 1
//   198.18.252.0/24  via 198.18.250.1 dev va0                     (single path: left alone)
//   198.18.253.0/24  proto static metric 20 nexthop via .1 dev va0 weight 1 nexthop via .3 dev va1 weight 2
class NetnsDriverRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::geteuid(), 0u) << "needs root to make network namespaces (scripts/test runs as root)";
    sw_ = ns_.add("sw");
    nb_ = ns_.add("nb");
    ip({"-n", sw_, "link", "add", "va0", "type", "veth", "peer", "name", "vb0", "netns", nb_});
    ip({"-n", sw_, "link", "add", "va1", "type", "veth", "peer", "name", "vb1", "netns", nb_});
    ip({"-n", sw_, "addr", "add", "198.18.250.0/31", "dev", "va0"});
    ip({"-n", sw_, "addr", "add", "198.18.250.2/31", "dev", "va1"});
    ip({"-n", nb_, "addr", "add", "198.18.250.1/31", "dev", "vb0"});
    ip({"-n", nb_, "addr", "add", "198.18.250.3/31", "dev", "vb1"});
    for (const char* i : {"va0", "va1"}) ip({"-n", sw_, "link", "set", i, "up"});
    for (const char* i : {"vb0", "vb1"}) ip({"-n", nb_, "link", "set", i, "up"});
    ip({"-n", sw_, "route", "add", "198.18.251.0/24", "nexthop", "via", "198.18.250.1", "dev", "va0", "weight", "3",
        "nexthop", "via", "198.18.250.3", "dev", "va1", "weight", "1"});
    ip({"-n", sw_, "route", "add", "198.18.252.0/24", "via", "198.18.250.1", "dev", "va0"});
    ip({"-n", sw_, "route", "add", "198.18.253.0/24", "proto", "static", "metric", "20", "nexthop", "via",
        "198.18.250.1", "dev", "va0", "weight", "1", "nexthop", "via", "198.18.250.3", "dev", "va1", "weight", "2"});
    // Carrier changes reach the routes through the kernel's link watch, a moment later: wait
    // until both links are up and no next hop is flagged linkdown.
    ASSERT_TRUE(settled(sw_, {"va0", "va1"})) << table();
    driver_ = std::make_unique<NetnsDriver>("sw", "netns:" + sw_, state_.path());
    before_ = table();
  }

  // The IPv4 main table exactly as `ip -j` prints it.
  std::string table() { return ip({"-n", sw_, "-j", "-4", "route", "show", "table", "main"}); }
  netns::Route route(const std::string& dst) {
    auto routes = netns::parse_routes(ip({"-n", sw_, "-j", "-4", "route", "show", "table", "main", "exact", dst}), 4);
    if (!routes.ok()) throw std::runtime_error(routes.error());
    if (routes->size() != 1) throw std::runtime_error("expected one route " + dst + ", got " + std::to_string(routes->size()));
    return routes->front();
  }
  std::string state_file() { return driver_->state_file("va0"); }
  // What a drain writes before its first route edit, written without the edits: the state a
  // kill -9 between the two leaves.
  void write_record_only() {
    auto routes = netns::parse_routes(table(), 4);
    ASSERT_TRUE(routes.ok()) << routes.error();
    const netns::SavedDrain rec =
        netns::merge(std::nullopt, netns::plan_drain(*routes, "va0"), "sw", sw_, "va0");
    std::filesystem::create_directories(std::filesystem::path(state_file()).parent_path());
    testing::write_file(state_file(), netns::to_json(rec));
  }

  Namespaces ns_;
  testing::TempDir state_;
  std::string sw_, nb_;
  std::unique_ptr<NetnsDriver> driver_;
  std::string before_;
};

netns::NextHop hop(std::string gw, std::string dev, int weight = 1) {
  netns::NextHop h;
  h.gateway = std::move(gw);
  h.dev = std::move(dev);
  h.weight = weight;
  return h;
}

TEST_F(NetnsDriverRoot, DrainTakesTheNextHopOutAndUndrainPutsItBackWithItsWeight) {
  auto st = driver_->get_state("va0");
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_FALSE(st->drained);
  EXPECT_TRUE(st->oper_up);

  auto d = driver_->drain("va0");
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->interface, "va0");
  EXPECT_TRUE(d->drained);
  EXPECT_TRUE(d->oper_up);  // the link stays up so that it can be probed
  // Only the other next hop is left; the kernel stores a one-hop route as a single path.
  EXPECT_THAT(route("198.18.251.0/24").nexthops, ElementsAre(hop("198.18.250.3", "va1")));
  const netns::Route r3 = route("198.18.253.0/24");
  EXPECT_THAT(r3.nexthops, ElementsAre(hop("198.18.250.3", "va1")));
  EXPECT_EQ(r3.protocol, "static");
  EXPECT_EQ(r3.metric, 20);
  // The single-path route stays where it was.
  EXPECT_THAT(route("198.18.252.0/24").nexthops, ElementsAre(hop("198.18.250.1", "va0")));
  // The record of what was removed.
  auto saved = netns::parse_saved(testing::read_file(state_file()));
  ASSERT_TRUE(saved.ok()) << saved.error();
  EXPECT_EQ(saved->netns, sw_);
  ASSERT_EQ(saved->routes.size(), 2u);
  EXPECT_THAT(saved->routes[0].removed, ElementsAre(hop("198.18.250.1", "va0", 3)));
  EXPECT_THAT(saved->single_path, ElementsAre("198.18.252.0/24"));

  st = driver_->get_state("va0");
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_TRUE(st->drained);
  EXPECT_TRUE(st->oper_up);
  auto other = driver_->get_state("va1");
  ASSERT_TRUE(other.ok()) << other.error();
  EXPECT_FALSE(other->drained);

  // Drain again: nothing changes, not the routes and not the record.
  const std::string drained_table = table();
  const std::string record = testing::read_file(state_file());
  d = driver_->drain("va0");
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_TRUE(d->drained);
  EXPECT_EQ(table(), drained_table);
  EXPECT_EQ(testing::read_file(state_file()), record);

  // Undrain: both next hops back, with their weights, byte for byte as before.
  auto u = driver_->undrain("va0");
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_FALSE(u->drained);
  EXPECT_TRUE(u->oper_up);
  EXPECT_EQ(table(), before_);
  EXPECT_THAT(route("198.18.251.0/24").nexthops, ElementsAre(hop("198.18.250.1", "va0", 3), hop("198.18.250.3", "va1", 1)));
  EXPECT_THAT(route("198.18.253.0/24").nexthops, ElementsAre(hop("198.18.250.1", "va0", 1), hop("198.18.250.3", "va1", 2)));
  EXPECT_FALSE(std::filesystem::exists(state_file()));

  // Undrain again: nothing changes.
  u = driver_->undrain("va0");
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_FALSE(u->drained);
  EXPECT_EQ(table(), before_);
  st = driver_->get_state("va0");
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_FALSE(st->drained);
}

TEST_F(NetnsDriverRoot, UndrainWithoutARecordChangesNothing) {
  auto u = driver_->undrain("va0");
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_FALSE(u->drained);
  EXPECT_EQ(table(), before_);
  EXPECT_FALSE(std::filesystem::exists(state_file()));
}

TEST_F(NetnsDriverRoot, KilledAfterTheRecordBeforeTheRouteEditsUndrainRestores) {
  write_record_only();
  // Still in its ECMP routes: not drained, whatever the record says.
  auto st = driver_->get_state("va0");
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_FALSE(st->drained);
  auto u = driver_->undrain("va0");
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_FALSE(u->drained);
  EXPECT_EQ(table(), before_);
  EXPECT_FALSE(std::filesystem::exists(state_file()));
}

TEST_F(NetnsDriverRoot, KilledHalfwayThroughTheRouteEditsUndrainRestores) {
  write_record_only();
  // The first route rewritten, then the kill: the second still has both next hops.
  ip({"-n", sw_, "route", "replace", "198.18.251.0/24", "nexthop", "via", "198.18.250.3", "dev", "va1", "weight", "1"});
  auto u = driver_->undrain("va0");
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_EQ(table(), before_);
  EXPECT_FALSE(std::filesystem::exists(state_file()));
}

TEST_F(NetnsDriverRoot, KilledAfterTheRecordADrainRetryFinishesIt) {
  write_record_only();
  const std::string record = testing::read_file(state_file());
  auto d = driver_->drain("va0");
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_TRUE(d->drained);
  EXPECT_THAT(route("198.18.251.0/24").nexthops, ElementsAre(hop("198.18.250.3", "va1")));
  EXPECT_EQ(testing::read_file(state_file()), record);
  auto u = driver_->undrain("va0");
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_EQ(table(), before_);
}

TEST_F(NetnsDriverRoot, BadNamespaceAndInterfaceGetExactErrors) {
  const std::string gone = sw_ + "-gone";
  NetnsDriver missing("sw", "netns:" + gone, state_.path());
  EXPECT_EQ(missing.drain("va0").error(), "sw: drain va0: namespace " + gone + " not found (no /var/run/netns/" + gone + ")");
  EXPECT_EQ(driver_->drain("eth9").error(), "sw: drain eth9: no interface eth9 in namespace " + sw_);
  EXPECT_EQ(driver_->undrain("eth9").error(), "sw: undrain eth9: no interface eth9 in namespace " + sw_);
  EXPECT_EQ(driver_->get_state("eth9").error(), "sw: get_state eth9: no interface eth9 in namespace " + sw_);
  EXPECT_EQ(driver_->drain("va0 x").error(), "sw: drain \"va0 x\": invalid interface name");
  EXPECT_NE(driver_->drain("eth9").kind(), ErrorKind::indeterminate) << "refused before any route changed";
  EXPECT_EQ(table(), before_);
  EXPECT_FALSE(std::filesystem::exists(state_file()));
}

TEST_F(NetnsDriverRoot, FailedRestoreNamesTheCommandAndWhatIpSaidAndKeepsTheRecord) {
  ASSERT_TRUE(driver_->drain("va0").ok());
  // va0 loses its address while drained (it stays up): its old gateway is unreachable now.
  ip({"-n", sw_, "addr", "del", "198.18.250.0/31", "dev", "va0"});
  auto u = driver_->undrain("va0");
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.error(), "sw: undrain va0: 2 of 2 route(s) not restored: ip -n " + sw_ +
                           " -4 route replace 198.18.251.0/24 nexthop via 198.18.250.1 dev va0 weight 3 nexthop via "
                           "198.18.250.3 dev va1 weight 1: exit 2: Error: Nexthop has invalid gateway.");
  EXPECT_EQ(u.kind(), ErrorKind::indeterminate) << "some routes may be back: the caller must not take it as untouched";
  EXPECT_TRUE(std::filesystem::exists(state_file()));  // a retry restores it
  ip({"-n", sw_, "addr", "add", "198.18.250.0/31", "dev", "va0"});
  u = driver_->undrain("va0");
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_THAT(route("198.18.251.0/24").nexthops, ElementsAre(hop("198.18.250.1", "va0", 3), hop("198.18.250.3", "va1", 1)));
  EXPECT_THAT(route("198.18.253.0/24").nexthops, ElementsAre(hop("198.18.250.1", "va0", 1), hop("198.18.250.3", "va1", 2)));
  EXPECT_FALSE(std::filesystem::exists(state_file()));
}

TEST_F(NetnsDriverRoot, ADamagedRecordIsNeverOverwritten) {
  std::filesystem::create_directories(std::filesystem::path(state_file()).parent_path());
  testing::write_file(state_file(), "{\"version\": 1, \"device\"");
  EXPECT_EQ(driver_->drain("va0").error(), "sw: drain va0: state file " + state_file() + ": not valid JSON");
  EXPECT_EQ(driver_->undrain("va0").error(), "sw: undrain va0: state file " + state_file() + ": not valid JSON");
  EXPECT_EQ(testing::read_file(state_file()), "{\"version\": 1, \"device\"");
  EXPECT_EQ(table(), before_);
}

TEST_F(NetnsDriverRoot, NeverDrainsOntoALinkThatIsDown) {
  ip({"-n", nb_, "link", "set", "vb1", "down"});  // va1 loses its carrier: its next hops become "linkdown"
  ASSERT_TRUE(testing::eventually([&] { return route("198.18.251.0/24").nexthops.at(1).down; }, 20s)) << table();
  const std::string now = table();
  auto d = driver_->drain("va0");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error(),
            "sw: drain va0: still in route(s) that cannot be rewritten: 198.18.251.0/24: every other next hop is down; "
            "198.18.253.0/24: every other next hop is down (nothing changed)");
  EXPECT_EQ(table(), now);
  EXPECT_FALSE(std::filesystem::exists(state_file()));
  auto st = driver_->get_state("va0");
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_FALSE(st->drained);
  // The rollback an executor does: undrain, which finds nothing to put back.
  ASSERT_TRUE(driver_->undrain("va0").ok());
  EXPECT_EQ(table(), now);
}

TEST_F(NetnsDriverRoot, LeavesALockedMetricRouteAloneAndChangesNothing) {
  ip({"-n", sw_, "route", "add", "198.18.254.0/24", "mtu", "lock", "1400", "nexthop", "via", "198.18.250.1", "dev",
      "va0", "nexthop", "via", "198.18.250.3", "dev", "va1"});
  const std::string with_lock = table();
  auto d = driver_->drain("va0");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error(),
            "sw: drain va0: still in route(s) that cannot be rewritten: 198.18.254.0/24: a locked metric (nothing changed)");
  // All or nothing: no route touched, the lock kept, no record.
  EXPECT_EQ(table(), with_lock);
  EXPECT_THAT(ip({"-n", sw_, "route", "show", "exact", "198.18.254.0/24"}), HasSubstr("mtu lock 1400"));
  EXPECT_FALSE(std::filesystem::exists(state_file()));
}

TEST_F(NetnsDriverRoot, AnInterfaceInNoMultipathRouteDrainsWithNothingToMove) {
  // vb0 in the neighbour: only its connected route. Drained at this end means "out of every
  // ECMP group here", which it already is; the record says there is nothing to put back.
  NetnsDriver nb("nb", "netns:" + nb_, state_.path());
  const std::string nb_table = ip({"-n", nb_, "-j", "-4", "route", "show", "table", "main"});
  auto d = nb.drain("vb0");
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_TRUE(d->drained);
  auto saved = netns::parse_saved(testing::read_file(nb.state_file("vb0")));
  ASSERT_TRUE(saved.ok()) << saved.error();
  EXPECT_TRUE(saved->routes.empty());
  auto u = nb.undrain("vb0");
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_FALSE(u->drained);
  EXPECT_EQ(ip({"-n", nb_, "-j", "-4", "route", "show", "table", "main"}), nb_table);
}

// IPv6: one namespace, two veth pairs inside it, no IPv6 address on any of them (a link-local
// gateway needs none); the route is only rewritten, never used.
TEST(NetnsDriverRootIpv6, DrainAndUndrainAnIpv6EcmpRoute) {
  ASSERT_EQ(::geteuid(), 0u) << "needs root to make network namespaces (scripts/test runs as root)";
  Namespaces ns;
  testing::TempDir state;
  const std::string sw = ns.add("v6");
  ip({"-n", sw, "link", "add", "va0", "type", "veth", "peer", "name", "vb0"});
  ip({"-n", sw, "link", "add", "va1", "type", "veth", "peer", "name", "vb1"});
  for (const char* i : {"va0", "vb0", "va1", "vb1"}) ip({"-n", sw, "link", "set", i, "up"});
  ASSERT_TRUE(settled(sw, {"va0", "va1"}));
  ip({"-n", sw, "-6", "route", "add", "2001:db8:7::/64", "nexthop", "via", "fe80::1", "dev", "va0", "weight", "2",
      "nexthop", "via", "fe80::2", "dev", "va1"});
  const auto v6 = [&] { return ip({"-n", sw, "-j", "-6", "route", "show", "table", "main"}); };
  const std::string before = v6();
  NetnsDriver d("sw", "netns:" + sw, state.path());
  auto r = d.drain("va0");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->drained);
  auto routes = netns::parse_routes(v6(), 6);
  ASSERT_TRUE(routes.ok()) << routes.error();
  ASSERT_EQ(routes->size(), 1u);
  EXPECT_THAT(routes->front().nexthops, ElementsAre(hop("fe80::2", "va1")));
  EXPECT_EQ(routes->front().metric, 1024);
  ASSERT_TRUE(d.drain("va0").ok());
  auto u = d.undrain("va0");
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_FALSE(u->drained);
  EXPECT_EQ(v6(), before);
}

}  // namespace
}  // namespace medic::remediation
