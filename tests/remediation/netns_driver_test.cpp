// The network-namespace driver's pure core, no root needed: `ip -j route` output as the kernel
// and iproute2 print it, the drain and undrain plans, the exact `ip route replace` arguments,
// the state file, and the driver's checks that fail before touching anything.
#include "remediation/netns_driver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "fabric/loader.h"
#include "tests/support/testing.h"

namespace medic::remediation::netns {

// Readable failures (found by argument-dependent lookup, so here and not in the anonymous namespace).
void PrintTo(const NextHop& h, std::ostream* os) {
  *os << "{" << (h.gateway.empty() ? "" : "via " + h.gateway + " ") << "dev " << h.dev << " weight " << h.weight
      << (h.onlink ? " onlink" : "") << (h.down ? " down" : "") << "}";
}

namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

using Args = std::vector<std::string>;

// Real outputs of iproute2 6.1 (`ip -j -4 route show table main`, `ip -j -6 ...`), taken from a
// namespace set up as the comments say.
// 198.18.200.0/31 on va, 198.18.200.2/31 on vc; `route add 198.18.210.0/24 nexthop via
// 198.18.200.1 dev va weight 3 nexthop via 198.18.200.3 dev vc weight 1`;
// `route add 198.18.211.0/24 via 198.18.200.1 dev va metric 50`.
const char* kIpv4Table =
    R"([{"dst":"198.18.200.0/31","dev":"va","protocol":"kernel","scope":"link","prefsrc":"198.18.200.0","flags":[]},)"
    R"({"dst":"198.18.200.2/31","dev":"vc","protocol":"kernel","scope":"link","prefsrc":"198.18.200.2","flags":[]},)"
    R"({"dst":"198.18.210.0/24","flags":[],"nexthops":[{"gateway":"198.18.200.1","dev":"va","weight":3,"flags":[]},)"
    R"({"gateway":"198.18.200.3","dev":"vc","weight":1,"flags":[]}]},)"
    R"({"dst":"198.18.211.0/24","gateway":"198.18.200.1","dev":"va","metric":50,"flags":[]}])";

// `route add 198.18.212.0/24 proto static metric 10 mtu 1400 advmss 1300 nexthop via ... dev va
// nexthop via ... dev vc`.
const char* kMetricsRoute =
    R"([{"dst":"198.18.212.0/24","protocol":"static","metric":10,"flags":[],"metrics":[{"mtu":1400,"advmss":1300}],)"
    R"("nexthops":[{"gateway":"198.18.200.1","dev":"va","weight":1,"flags":[]},)"
    R"({"gateway":"198.18.200.3","dev":"vc","weight":1,"flags":[]}]}])";

// `route add 198.18.213.0/24 nexthop via 198.18.201.1 dev va onlink nexthop via 198.18.200.3 dev vc`.
const char* kOnlinkRoute =
    R"([{"dst":"198.18.213.0/24","flags":[],"nexthops":[{"gateway":"198.18.201.1","dev":"va","weight":1,"flags":["onlink"]},)"
    R"({"gateway":"198.18.200.3","dev":"vc","weight":1,"flags":[]}]}])";

// 2001:db8:0:1::/127 on va, 2001:db8:0:2::/127 on vc; `-6 route add 2001:db8:100::/64 nexthop via
// 2001:db8:0:1::1 dev va weight 2 nexthop via 2001:db8:0:2::1 dev vc`; `-6 route add
// 2001:db8:101::/64 metric 20 nexthop via fe80::1 dev va nexthop via fe80::2 dev vc`.
const char* kIpv6Table =
    R"([{"dst":"2001:db8:0:1::/127","dev":"va","protocol":"kernel","metric":256,"flags":[],"pref":"medium"},)"
    R"({"dst":"2001:db8:0:2::/127","dev":"vc","protocol":"kernel","metric":256,"flags":[],"pref":"medium"},)"
    R"({"dst":"2001:db8:100::/64","metric":1024,"flags":[],"pref":"medium","nexthops":[)"
    R"({"gateway":"2001:db8:0:1::1","dev":"va","weight":2,"flags":[]},{"gateway":"2001:db8:0:2::1","dev":"vc","weight":1,"flags":[]}]},)"
    R"({"dst":"2001:db8:101::/64","metric":20,"flags":[],"pref":"medium","nexthops":[)"
    R"({"gateway":"fe80::1","dev":"va","weight":1,"flags":[]},{"gateway":"fe80::2","dev":"vc","weight":1,"flags":[]}]},)"
    R"({"dst":"fe80::/64","dev":"va","protocol":"kernel","metric":256,"flags":[],"pref":"medium"},)"
    R"({"dst":"fe80::/64","dev":"vc","protocol":"kernel","metric":256,"flags":[],"pref":"medium"}])";

std::vector<Route> parse_ok(const std::string& text, int family = 4) {
  auto r = parse_routes(text, family);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? *r : std::vector<Route>{};
}

std::string parse_error(const std::string& text) {
  auto r = parse_routes(text, 4);
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error();
}

NextHop hop(std::string gw, std::string dev, int weight = 1, bool onlink = false) {
  NextHop h;
  h.gateway = std::move(gw);
  h.dev = std::move(dev);
  h.weight = weight;
  h.onlink = onlink;
  return h;
}

Route multipath(std::string dst, std::vector<NextHop> hops) {
  Route r;
  r.dst = std::move(dst);
  r.nexthops = std::move(hops);
  return r;
}

// ---------------------------------------------------------------- parse_routes

TEST(NetnsParseRoutes, SinglePathAndConnectedRoutes) {
  const auto routes = parse_ok(kIpv4Table);
  ASSERT_EQ(routes.size(), 4u);
  const Route& kernel = routes[0];
  EXPECT_EQ(kernel.dst, "198.18.200.0/31");
  EXPECT_EQ(kernel.protocol, "kernel");
  EXPECT_EQ(kernel.scope, "link");
  EXPECT_EQ(kernel.prefsrc, "198.18.200.0");
  EXPECT_THAT(kernel.nexthops, ElementsAre(hop("", "va")));
  EXPECT_FALSE(kernel.multipath());
  const Route& single = routes[3];
  EXPECT_EQ(single.family, 4);
  EXPECT_EQ(single.dst, "198.18.211.0/24");
  EXPECT_TRUE(single.has_metric);
  EXPECT_EQ(single.metric, 50);
  EXPECT_THAT(single.nexthops, ElementsAre(hop("198.18.200.1", "va")));
  EXPECT_EQ(single.unsupported, "");
}

TEST(NetnsParseRoutes, MultipathKeepsWeightsInOrder) {
  const auto routes = parse_ok(kIpv4Table);
  const Route& r = routes[2];
  EXPECT_EQ(r.dst, "198.18.210.0/24");
  EXPECT_TRUE(r.multipath());
  EXPECT_FALSE(r.has_metric);  // IPv4 metric 0 is not printed
  EXPECT_EQ(r.metric, 0);
  EXPECT_THAT(r.nexthops, ElementsAre(hop("198.18.200.1", "va", 3), hop("198.18.200.3", "vc", 1)));
  EXPECT_EQ(r.unsupported, "");
}

TEST(NetnsParseRoutes, ProtocolMetricAndRouteMetrics) {
  const auto routes = parse_ok(kMetricsRoute);
  ASSERT_EQ(routes.size(), 1u);
  const Route& r = routes[0];
  EXPECT_EQ(r.protocol, "static");
  EXPECT_EQ(r.metric, 10);
  // nlohmann keeps object keys sorted: the order does not matter to `ip`.
  EXPECT_THAT(r.metrics, ElementsAre(std::pair<std::string, int64_t>{"advmss", 1300},
                                     std::pair<std::string, int64_t>{"mtu", 1400}));
  EXPECT_EQ(r.unsupported, "");
}

TEST(NetnsParseRoutes, OnlinkNextHop) {
  const auto routes = parse_ok(kOnlinkRoute);
  ASSERT_EQ(routes.size(), 1u);
  EXPECT_THAT(routes[0].nexthops, ElementsAre(hop("198.18.201.1", "va", 1, true), hop("198.18.200.3", "vc")));
  // A single-path onlink route carries the flag on the route.
  const auto single = parse_ok(R"([{"dst":"198.18.9.0/24","gateway":"198.18.201.1","dev":"va","flags":["onlink"]}])");
  EXPECT_THAT(single[0].nexthops, ElementsAre(hop("198.18.201.1", "va", 1, true)));
}

TEST(NetnsParseRoutes, Ipv6WithMetricPrefAndLinkLocalGateways) {
  const auto routes = parse_ok(kIpv6Table, 6);
  ASSERT_EQ(routes.size(), 6u);
  const Route& r = routes[2];
  EXPECT_EQ(r.family, 6);
  EXPECT_EQ(r.dst, "2001:db8:100::/64");
  EXPECT_EQ(r.metric, 1024);
  EXPECT_TRUE(r.has_metric);
  EXPECT_EQ(r.pref, "medium");
  EXPECT_THAT(r.nexthops, ElementsAre(hop("2001:db8:0:1::1", "va", 2), hop("2001:db8:0:2::1", "vc", 1)));
  EXPECT_THAT(routes[3].nexthops, ElementsAre(hop("fe80::1", "va"), hop("fe80::2", "vc")));
  EXPECT_EQ(routes[3].metric, 20);
  EXPECT_EQ(routes[4].protocol, "kernel");
}

TEST(NetnsParseRoutes, TosAndDefaultAndDevOnlyNextHops) {
  // `route add 198.18.216.0/24 tos 0x10 nexthop ...`, `route add default nexthop ...`,
  // `route add 198.18.217.0/24 nexthop dev va nexthop dev vc`.
  const auto routes = parse_ok(
      R"([{"dst":"198.18.216.0/24","tos":"0x10","flags":[],"nexthops":[{"gateway":"198.18.200.1","dev":"va","weight":1,"flags":[]},)"
      R"({"gateway":"198.18.200.3","dev":"vc","weight":1,"flags":[]}]},)"
      R"({"dst":"default","flags":[],"nexthops":[{"gateway":"198.18.200.1","dev":"va","weight":1,"flags":[]},)"
      R"({"gateway":"198.18.200.3","dev":"vc","weight":1,"flags":[]}]},)"
      R"({"dst":"198.18.217.0/24","flags":[],"nexthops":[{"dev":"va","weight":1,"flags":[]},{"dev":"vc","weight":1,"flags":[]}]}])");
  ASSERT_EQ(routes.size(), 3u);
  EXPECT_EQ(routes[0].tos, "0x10");
  EXPECT_EQ(routes[1].dst, "default");
  EXPECT_EQ(routes[1].unsupported, "");
  EXPECT_THAT(routes[2].nexthops, ElementsAre(hop("", "va"), hop("", "vc")));
}

TEST(NetnsParseRoutes, DeadAndLinkdownNextHopsAreDown) {
  // vc's peer down (carrier): "linkdown"; vc itself down: "dead", "linkdown".
  const auto routes = parse_ok(
      R"([{"dst":"198.18.210.0/24","flags":[],"nexthops":[{"gateway":"198.18.200.1","dev":"va","weight":3,"flags":[]},)"
      R"({"gateway":"198.18.200.3","dev":"vc","weight":1,"flags":["linkdown"]}]},)"
      R"({"dst":"198.18.212.0/24","flags":[],"nexthops":[{"gateway":"198.18.200.1","dev":"va","weight":1,"flags":[]},)"
      R"({"gateway":"198.18.200.3","dev":"vc","weight":1,"flags":["dead","linkdown"]}]},)"
      R"({"dst":"198.18.211.0/24","gateway":"198.18.200.3","dev":"vc","flags":["linkdown"]}])");
  EXPECT_FALSE(routes[0].nexthops[0].down);
  EXPECT_TRUE(routes[0].nexthops[1].down);
  EXPECT_TRUE(routes[1].nexthops[1].down);
  EXPECT_TRUE(routes[2].nexthops[0].down);
  // Down is state, not configuration: it does not make two next hops different.
  EXPECT_EQ(routes[0].nexthops[1], hop("198.18.200.3", "vc", 1));
}

TEST(NetnsParseRoutes, WhatReplaceCannotReproduceIsMarkedUnsupported) {
  const auto one = [](const std::string& text) {
    const auto routes = parse_ok(text);
    return routes.empty() ? std::string("<none>") : routes[0].unsupported;
  };
  // Real: `route add 198.18.218.0/24 nhid 10` (a nexthop group object).
  EXPECT_EQ(one(R"([{"dst":"198.18.218.0/24","nhid":10,"flags":[],"nexthops":[{"gateway":"198.18.200.1","dev":"va","weight":1,"flags":[]},)"
                R"({"gateway":"198.18.200.3","dev":"vc","weight":1,"flags":[]}]}])"),
            "nhid");
  // Real: `route add 198.18.219.0/24 rtt 100ms nexthop ...`.
  EXPECT_EQ(one(R"([{"dst":"198.18.219.0/24","flags":[],"metrics":[{"rtt":100}],"nexthops":[{"gateway":"198.18.200.1","dev":"va","weight":1,"flags":[]},)"
                R"({"gateway":"198.18.200.3","dev":"vc","weight":1,"flags":[]}]}])"),
            "metric rtt");
  EXPECT_EQ(one(R"([{"dst":"198.18.9.0/24","type":"blackhole","flags":[]}])"), "type blackhole");
  EXPECT_EQ(one(R"([{"dst":"198.18.9.0/24","table":"7","dev":"va","flags":[]}])"), "table 7");
  EXPECT_EQ(one(R"([{"dst":"2001:db8:9::/64","dev":"va","expires":"299sec","flags":[]}])"), "expires");
  EXPECT_EQ(one(R"([{"dst":"198.18.9.0/24","flags":[],"nexthops":[{"encap":"mpls","dev":"va","weight":1,"flags":[]},)"
                R"({"dev":"vc","weight":1,"flags":[]}]}])"),
            "nexthop encap");
  EXPECT_EQ(one(R"([{"dst":"198.18.9.0/24","flags":[],"nexthops":[{"via":{"family":"inet6","host":"fe80::1"},"dev":"va","weight":1,"flags":[]},)"
                R"({"dev":"vc","weight":1,"flags":[]}]}])"),
            "nexthop via");
  EXPECT_EQ(one(R"([{"dst":"198.18.9.0/24","flags":[],"metrics":[{"congctl":"cubic"}],"dev":"va"}])"), "metric congctl");
  EXPECT_EQ(one(R"([{"dst":"table","dev":"va","flags":[]}])"), "destination \"table\"");
  EXPECT_EQ(one(R"([{"dst":"198.18.9.0/24","protocol":186,"scope":253,"dev":"va","flags":[]}])"), "");
}

TEST(NetnsParseRoutes, EmptyTable) { EXPECT_THAT(parse_ok("[]"), IsEmpty()); }

TEST(NetnsParseRoutes, MalformedOutputGetsExactErrors) {
  EXPECT_EQ(parse_error(""), "output is not valid JSON");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24")"), "output is not valid JSON");
  EXPECT_EQ(parse_error(R"({"dst":"198.18.9.0/24"})"), "expected an array, got object");
  EXPECT_EQ(parse_error("[1]"), "[0]: expected an object, got number");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","dev":"va"},{"dev":"va"}])"), "[1]: no \"dst\" string");
  EXPECT_EQ(parse_error(R"([{"dst":7}])"), "[0]: no \"dst\" string");
  EXPECT_EQ(parse_error(R"([{"dst":""}])"), "[0]: no \"dst\" string");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","metric":-1}])"),
            "[0] (198.18.9.0/24): \"metric\": expected a non-negative integer, got -1");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","metric":"10"}])"),
            "[0] (198.18.9.0/24): \"metric\": expected a non-negative integer, got \"10\"");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","dev":5}])"),
            "[0] (198.18.9.0/24): \"dev\": expected a string, got number");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","gateway":null}])"),
            "[0] (198.18.9.0/24): \"gateway\": expected a string, got null");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","protocol":true}])"),
            "[0] (198.18.9.0/24): \"protocol\": expected a string, got boolean");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","prefsrc":[]}])"),
            "[0] (198.18.9.0/24): \"prefsrc\": expected a string, got array");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","flags":"onlink"}])"),
            "[0] (198.18.9.0/24): \"flags\": expected an array, got string");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","metrics":{"mtu":1400}}])"),
            "[0] (198.18.9.0/24): \"metrics\": expected an array, got object");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","metrics":[1400]}])"),
            "[0] (198.18.9.0/24): \"metrics\": expected objects, got number");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","nexthops":{}}])"),
            "[0] (198.18.9.0/24): \"nexthops\": expected an array, got object");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","nexthops":[{"dev":"va"},"vc"]}])"),
            "[0] (198.18.9.0/24): nexthops[1]: expected an object, got string");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","nexthops":[{"dev":"va"},{"gateway":"198.18.200.3"}]}])"),
            "[0] (198.18.9.0/24): nexthops[1]: no \"dev\" string");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","nexthops":[{"dev":"va","gateway":1}]}])"),
            "[0] (198.18.9.0/24): nexthops[0]: \"gateway\": expected a string, got number");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","nexthops":[{"dev":"va","weight":0}]}])"),
            "[0] (198.18.9.0/24): nexthops[0]: \"weight\": expected an integer 1..256, got 0");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","nexthops":[{"dev":"va","weight":257}]}])"),
            "[0] (198.18.9.0/24): nexthops[0]: \"weight\": expected an integer 1..256, got 257");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","nexthops":[{"dev":"va","weight":"2"}]}])"),
            "[0] (198.18.9.0/24): nexthops[0]: \"weight\": expected an integer 1..256, got \"2\"");
  EXPECT_EQ(parse_error(R"([{"dst":"198.18.9.0/24","nexthops":[{"dev":"va","flags":"onlink"}]}])"),
            "[0] (198.18.9.0/24): nexthops[0]: \"flags\": expected an array, got string");
}

// ---------------------------------------------------------------- plan_drain

TEST(NetnsPlanDrain, RemovesOnlyTheInterfaceAndKeepsTheOthersWeights) {
  const std::vector<Route> routes = {
      multipath("198.18.20.0/24", {hop("198.18.1.1", "eth2", 3), hop("198.18.2.1", "eth3", 2), hop("198.18.3.1", "eth4", 5)}),
      multipath("198.18.21.0/24", {hop("198.18.2.1", "eth3"), hop("198.18.3.1", "eth4")}),  // not through eth2
  };
  const DrainPlan plan = plan_drain(routes, "eth2");
  ASSERT_EQ(plan.edits.size(), 1u);
  EXPECT_EQ(plan.edits[0].route.dst, "198.18.20.0/24");
  EXPECT_THAT(plan.edits[0].keep, ElementsAre(hop("198.18.2.1", "eth3", 2), hop("198.18.3.1", "eth4", 5)));
  EXPECT_THAT(plan.edits[0].removed, ElementsAre(hop("198.18.1.1", "eth2", 3)));
  EXPECT_THAT(plan.single_path, IsEmpty());
  EXPECT_THAT(plan.skipped, IsEmpty());
  EXPECT_TRUE(is_multipath_member(routes, "eth2"));
  EXPECT_TRUE(is_multipath_member(routes, "eth3"));
  EXPECT_FALSE(is_multipath_member(routes, "eth9"));
}

TEST(NetnsPlanDrain, EveryNextHopThroughTheInterfaceGoes) {
  const std::vector<Route> routes = {
      multipath("198.18.20.0/24", {hop("198.18.1.1", "eth2"), hop("198.18.1.3", "eth2"), hop("198.18.2.1", "eth3")})};
  const DrainPlan plan = plan_drain(routes, "eth2");
  ASSERT_EQ(plan.edits.size(), 1u);
  EXPECT_THAT(plan.edits[0].keep, ElementsAre(hop("198.18.2.1", "eth3")));
  EXPECT_THAT(plan.edits[0].removed, ElementsAre(hop("198.18.1.1", "eth2"), hop("198.18.1.3", "eth2")));
}

TEST(NetnsPlanDrain, SinglePathRoutesStayAndConnectedRoutesAreNotListed) {
  const auto v4 = parse_ok(kIpv4Table);
  const DrainPlan plan = plan_drain(v4, "va");
  ASSERT_EQ(plan.edits.size(), 1u);
  EXPECT_EQ(plan.edits[0].route.dst, "198.18.210.0/24");
  EXPECT_THAT(plan.single_path, ElementsAre("198.18.211.0/24"));  // not the kernel's 198.18.200.0/31
  // Several next hops, all through the interface: still its only way out.
  const std::vector<Route> only = {
      multipath("198.18.20.0/24", {hop("198.18.1.1", "eth2"), hop("198.18.1.3", "eth2")}),
      multipath("default", {hop("198.18.1.1", "eth2")}),
  };
  const DrainPlan p2 = plan_drain(only, "eth2");
  EXPECT_THAT(p2.edits, IsEmpty());
  EXPECT_THAT(p2.single_path, ElementsAre("198.18.20.0/24", "0.0.0.0/0"));
  EXPECT_FALSE(is_multipath_member(only, "eth2"));
}

TEST(NetnsPlanDrain, Ipv6RoutesAndTheIpv6Default) {
  auto routes = parse_ok(kIpv6Table, 6);
  Route def = multipath("default", {hop("fe80::1", "va")});
  def.family = 6;
  routes.push_back(def);
  const DrainPlan plan = plan_drain(routes, "va");
  ASSERT_EQ(plan.edits.size(), 2u);
  EXPECT_EQ(plan.edits[0].route.dst, "2001:db8:100::/64");
  EXPECT_THAT(plan.edits[0].keep, ElementsAre(hop("2001:db8:0:2::1", "vc", 1)));
  EXPECT_THAT(plan.edits[0].removed, ElementsAre(hop("2001:db8:0:1::1", "va", 2)));
  EXPECT_EQ(plan.edits[1].route.dst, "2001:db8:101::/64");
  EXPECT_THAT(plan.single_path, ElementsAre("::/0"));
}

TEST(NetnsPlanDrain, SkipsRoutesReplaceCannotReproduceAndRoutesWhoseOtherHopsAreDown) {
  Route nhid = multipath("198.18.20.0/24", {hop("198.18.1.1", "eth2"), hop("198.18.2.1", "eth3")});
  nhid.unsupported = "nhid";
  Route dead = multipath("198.18.21.0/24", {hop("198.18.1.1", "eth2"), hop("198.18.2.1", "eth3"), hop("198.18.3.1", "eth4")});
  dead.nexthops[1].down = true;
  dead.nexthops[2].down = true;
  Route half = multipath("198.18.22.0/24", {hop("198.18.1.1", "eth2"), hop("198.18.2.1", "eth3"), hop("198.18.3.1", "eth4")});
  half.nexthops[1].down = true;  // eth4 still carries it
  Route own_down = multipath("198.18.23.0/24", {hop("198.18.1.1", "eth2"), hop("198.18.2.1", "eth3")});
  own_down.nexthops[0].down = true;  // the drained interface's own hop being down does not matter
  const std::vector<Route> routes = {nhid, dead, half, own_down};
  const DrainPlan plan = plan_drain(routes, "eth2");
  EXPECT_THAT(plan.skipped, ElementsAre("198.18.20.0/24: nhid", "198.18.21.0/24: every other next hop is down"));
  ASSERT_EQ(plan.edits.size(), 2u);
  EXPECT_EQ(plan.edits[0].route.dst, "198.18.22.0/24");
  EXPECT_THAT(plan.edits[0].keep, ElementsAre(hop("198.18.2.1", "eth3"), hop("198.18.3.1", "eth4")));
  EXPECT_EQ(plan.edits[1].route.dst, "198.18.23.0/24");
  // Still in routes it could not leave: a member, so not drained.
  EXPECT_TRUE(is_multipath_member({nhid}, "eth2"));
  EXPECT_TRUE(is_multipath_member({dead}, "eth2"));
}

TEST(NetnsPlanDrain, InterfaceInNoRoute) {
  const DrainPlan plan = plan_drain(parse_ok(kIpv4Table), "eth9");
  EXPECT_THAT(plan.edits, IsEmpty());
  EXPECT_THAT(plan.single_path, IsEmpty());
  EXPECT_THAT(plan.skipped, IsEmpty());
}

// ---------------------------------------------------------------- replace_args

TEST(NetnsReplaceArgs, PlainMultipathWithWeights) {
  const auto routes = parse_ok(kIpv4Table);
  EXPECT_EQ(replace_args(routes[2], routes[2].nexthops),
            (Args{"-4", "route", "replace", "198.18.210.0/24", "nexthop", "via", "198.18.200.1", "dev", "va", "weight",
                  "3", "nexthop", "via", "198.18.200.3", "dev", "vc", "weight", "1"}));
  // Down to one next hop: still written as a nexthop, the kernel stores it as a single path.
  EXPECT_EQ(replace_args(routes[2], {routes[2].nexthops[1]}),
            (Args{"-4", "route", "replace", "198.18.210.0/24", "nexthop", "via", "198.18.200.3", "dev", "vc", "weight", "1"}));
}

TEST(NetnsReplaceArgs, KeepsProtocolMetricAndMetrics) {
  const auto routes = parse_ok(kMetricsRoute);
  EXPECT_EQ(replace_args(routes[0], {routes[0].nexthops[1]}),
            (Args{"-4", "route", "replace", "198.18.212.0/24", "proto", "static", "metric", "10", "advmss", "1300", "mtu",
                  "1400", "nexthop", "via", "198.18.200.3", "dev", "vc", "weight", "1"}));
}

TEST(NetnsReplaceArgs, EveryAttribute) {
  Route r = multipath("default", {hop("198.18.201.1", "va", 4, true), hop("", "vc", 2)});
  r.tos = "0x10";
  r.protocol = "186";
  r.scope = "link";
  r.metric = 7;
  r.has_metric = true;
  r.prefsrc = "198.18.200.0";
  r.metrics = {{"initcwnd", 10}};
  EXPECT_EQ(replace_args(r, r.nexthops),
            (Args{"-4", "route", "replace", "default", "tos", "0x10", "proto", "186", "scope", "link", "metric", "7",
                  "src", "198.18.200.0", "initcwnd", "10", "nexthop", "via", "198.18.201.1", "dev", "va", "weight", "4",
                  "onlink", "nexthop", "dev", "vc", "weight", "2"}));
}

TEST(NetnsReplaceArgs, Ipv6) {
  const auto routes = parse_ok(kIpv6Table, 6);
  EXPECT_EQ(replace_args(routes[2], routes[2].nexthops),
            (Args{"-6", "route", "replace", "2001:db8:100::/64", "metric", "1024", "pref", "medium", "nexthop", "via",
                  "2001:db8:0:1::1", "dev", "va", "weight", "2", "nexthop", "via", "2001:db8:0:2::1", "dev", "vc",
                  "weight", "1"}));
}

TEST(NetnsLockedMetric, ReadsTheTextForm) {
  // Real `ip route show table main exact 198.18.215.0/24` after `route add ... mtu lock 1400 nexthop ...`.
  EXPECT_TRUE(shows_locked_metric("198.18.215.0/24 mtu lock 1400 \n\tnexthop via 198.18.200.1 dev va weight 1 \n"
                                  "\tnexthop via 198.18.200.3 dev vc weight 1 \n"));
  EXPECT_TRUE(shows_locked_metric("198.18.9.0/24 via 198.18.200.1 dev va mtu 1500 advmss lock 1300\n"));
  EXPECT_FALSE(shows_locked_metric("198.18.212.0/24 proto static metric 10 mtu 1400 advmss 1300 \n"));
  EXPECT_FALSE(shows_locked_metric("198.18.9.0/24 via 198.18.200.1 dev lock \n"));  // a device named "lock"
  EXPECT_FALSE(shows_locked_metric(""));
}

// ---------------------------------------------------------------- state file

SavedDrain sample_saved() {
  SavedDrain s;
  s.device = "r1";
  s.netns = "mt1-r1";
  s.interface = "eth2";
  s.routes.push_back(SavedRoute{4, "198.18.2.0/31", "", 0, {hop("198.18.3.1", "eth2", 3), hop("198.18.4.1", "eth3", 1)},
                                {hop("198.18.3.1", "eth2", 3)}});
  s.routes.push_back(SavedRoute{4, "198.18.9.0/24", "0x10", 20, {hop("198.18.7.1", "eth2", 1, true), hop("", "eth4", 2)},
                                {hop("198.18.7.1", "eth2", 1, true)}});
  s.routes.push_back(SavedRoute{6, "2001:db8:100::/64", "", 1024, {hop("fe80::1", "eth2", 2), hop("fe80::2", "eth3")},
                                {hop("fe80::1", "eth2", 2)}});
  s.single_path = {"198.18.1.0/31"};
  return s;
}

TEST(NetnsStateFile, RoundTrip) {
  const SavedDrain s = sample_saved();
  const std::string text = to_json(s);
  auto back = parse_saved(text);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, s);
  EXPECT_EQ(to_json(*back), text);
  // An empty record (an interface in no multipath route) too.
  SavedDrain empty;
  empty.device = "c1";
  empty.netns = "mt1-c1";
  empty.interface = "eth1";
  auto e = parse_saved(to_json(empty));
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(*e, empty);
}

std::string saved_error(const std::string& text) {
  auto r = parse_saved(text);
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error();
}

// The sample with one field replaced (a JSON pointer) or removed (null).
std::string mutated(const std::string& pointer, const nlohmann::json& value) {
  nlohmann::json doc = nlohmann::json::parse(to_json(sample_saved()));
  const nlohmann::json::json_pointer p(pointer);
  if (value.is_null()) {
    doc.at(p.parent_pointer()).erase(p.back());
  } else {
    doc[p] = value;
  }
  return doc.dump();
}

TEST(NetnsStateFile, CorruptFilesGetExactErrors) {
  const std::string text = to_json(sample_saved());
  EXPECT_EQ(saved_error(""), "not valid JSON");
  EXPECT_EQ(saved_error(text.substr(0, text.size() / 2)), "not valid JSON");  // torn write
  EXPECT_EQ(saved_error("[]"), "expected an object, got array");
  EXPECT_EQ(saved_error(mutated("/version", 2)), "version: expected 1");
  EXPECT_EQ(saved_error(mutated("/version", nullptr)), "version: expected 1");
  EXPECT_EQ(saved_error(mutated("/device", nullptr)), "device: expected a string");
  EXPECT_EQ(saved_error(mutated("/namespace", 3)), "namespace: expected a string");
  EXPECT_EQ(saved_error(mutated("/interface", false)), "interface: expected a string");
  EXPECT_EQ(saved_error(mutated("/routes", "x")), "routes: expected an array");
  EXPECT_EQ(saved_error(mutated("/routes/1", 5)), "routes[1]: expected an object");
  EXPECT_EQ(saved_error(mutated("/routes/0/family", 5)), "routes[0].family: expected 4 or 6");
  EXPECT_EQ(saved_error(mutated("/routes/0/dst", "")), "routes[0].dst: expected a string");
  EXPECT_EQ(saved_error(mutated("/routes/2/dst", nullptr)), "routes[2].dst: expected a string");
  EXPECT_EQ(saved_error(mutated("/routes/1/tos", 16)), "routes[1].tos: expected a string");
  EXPECT_EQ(saved_error(mutated("/routes/0/metric", -1)), "routes[0].metric: expected a non-negative integer");
  EXPECT_EQ(saved_error(mutated("/routes/0/original", nullptr)), "routes[0].original: expected an array");
  EXPECT_EQ(saved_error(mutated("/routes/0/removed", "eth2")), "routes[0].removed: expected an array");
  EXPECT_EQ(saved_error(mutated("/routes/0/removed/0", "eth2")), "routes[0].removed[0]: expected an object");
  EXPECT_EQ(saved_error(mutated("/routes/0/original/1/dev", 5)), "routes[0].original[1].dev: expected a string");
  EXPECT_EQ(saved_error(mutated("/routes/0/original/1/dev", "")), "routes[0].original[1].dev: expected a string");
  EXPECT_EQ(saved_error(mutated("/routes/1/original/0/gateway", 1)), "routes[1].original[0].gateway: expected a string");
  EXPECT_EQ(saved_error(mutated("/routes/2/removed/0/weight", 0)), "routes[2].removed[0].weight: expected an integer 1..256");
  EXPECT_EQ(saved_error(mutated("/routes/1/removed/0/onlink", "yes")), "routes[1].removed[0].onlink: expected a boolean");
  EXPECT_EQ(saved_error(mutated("/single_path", "198.18.1.0/31")), "single_path: expected an array");
  EXPECT_EQ(saved_error(mutated("/single_path/0", 1)), "single_path: expected strings");
}

TEST(NetnsMerge, FirstDrainRecordsTheOriginalAndTheRemoved) {
  const auto routes = parse_ok(kIpv4Table);
  const DrainPlan plan = plan_drain(routes, "va");
  const SavedDrain s = merge(std::nullopt, plan, "sw", "ns1", "va");
  EXPECT_EQ(s.device, "sw");
  EXPECT_EQ(s.netns, "ns1");
  EXPECT_EQ(s.interface, "va");
  ASSERT_EQ(s.routes.size(), 1u);
  EXPECT_EQ(s.routes[0], (SavedRoute{4, "198.18.210.0/24", "", 0, {hop("198.18.200.1", "va", 3), hop("198.18.200.3", "vc", 1)},
                                     {hop("198.18.200.1", "va", 3)}}));
  EXPECT_THAT(s.single_path, ElementsAre("198.18.211.0/24"));
  // The same plan again (a drain repeated after a crash before its edits): the same record.
  EXPECT_EQ(merge(s, plan, "sw", "ns1", "va"), s);
}

TEST(NetnsMerge, ANextHopBackMeanwhileKeepsTheFirstRecordOfWeights) {
  const auto routes = parse_ok(kIpv4Table);
  const SavedDrain first = merge(std::nullopt, plan_drain(routes, "va"), "sw", "ns1", "va");
  // Someone put va back with weight 1 and added a third next hop.
  const std::vector<Route> now = {multipath(
      "198.18.210.0/24", {hop("198.18.200.1", "va", 1), hop("198.18.200.3", "vc", 1), hop("198.18.200.5", "ve", 1)})};
  const SavedDrain again = merge(first, plan_drain(now, "va"), "sw", "ns1", "va");
  ASSERT_EQ(again.routes.size(), 1u);
  EXPECT_THAT(again.routes[0].original,
              ElementsAre(hop("198.18.200.1", "va", 3), hop("198.18.200.3", "vc", 1), hop("198.18.200.5", "ve", 1)));
  EXPECT_THAT(again.routes[0].removed, ElementsAre(hop("198.18.200.1", "va", 3)));
}

// ---------------------------------------------------------------- plan_undrain

TEST(NetnsPlanUndrain, RestoresTheOriginalOrderAndWeights) {
  const auto before = parse_ok(kIpv4Table);
  const SavedDrain saved = merge(std::nullopt, plan_drain(before, "va"), "sw", "ns1", "va");
  // After the drain the kernel shows a single-path route through vc (no weight).
  const auto after = parse_ok(R"([{"dst":"198.18.210.0/24","gateway":"198.18.200.3","dev":"vc","flags":[]}])");
  const UndrainPlan plan = plan_undrain(after, saved);
  ASSERT_EQ(plan.restores.size(), 1u);
  EXPECT_THAT(plan.restores[0].hops, ElementsAre(hop("198.18.200.1", "va", 3), hop("198.18.200.3", "vc", 1)));
  EXPECT_THAT(plan.missing, IsEmpty());
  EXPECT_EQ(replace_args(plan.restores[0].route, plan.restores[0].hops),
            (Args{"-4", "route", "replace", "198.18.210.0/24", "nexthop", "via", "198.18.200.1", "dev", "va", "weight",
                  "3", "nexthop", "via", "198.18.200.3", "dev", "vc", "weight", "1"}));
}

TEST(NetnsPlanUndrain, NothingToDoWhenWholeOrEditsNeverHappened) {
  const auto before = parse_ok(kIpv4Table);
  const SavedDrain saved = merge(std::nullopt, plan_drain(before, "va"), "sw", "ns1", "va");
  // The record written, then a crash before the first `ip route replace`: the routes are whole.
  EXPECT_THAT(plan_undrain(before, saved).restores, IsEmpty());
  // Whole but with the weights changed: put back.
  const auto reweighted = parse_ok(
      R"([{"dst":"198.18.210.0/24","flags":[],"nexthops":[{"gateway":"198.18.200.1","dev":"va","weight":1,"flags":[]},)"
      R"({"gateway":"198.18.200.3","dev":"vc","weight":1,"flags":[]}]}])");
  const UndrainPlan p = plan_undrain(reweighted, saved);
  ASSERT_EQ(p.restores.size(), 1u);
  EXPECT_THAT(p.restores[0].hops, ElementsAre(hop("198.18.200.1", "va", 3), hop("198.18.200.3", "vc", 1)));
}

TEST(NetnsPlanUndrain, RoutesGoneOrChangedMeanwhile) {
  const auto before = parse_ok(kIpv4Table);
  const SavedDrain saved = merge(std::nullopt, plan_drain(before, "va"), "sw", "ns1", "va");
  EXPECT_THAT(plan_undrain({}, saved).missing, ElementsAre("198.18.210.0/24"));
  // A next hop added by someone else while drained is kept, after the original ones.
  const std::vector<Route> now = {multipath("198.18.210.0/24", {hop("198.18.200.3", "vc"), hop("198.18.200.5", "ve", 2)})};
  const UndrainPlan p = plan_undrain(now, saved);
  ASSERT_EQ(p.restores.size(), 1u);
  EXPECT_THAT(p.restores[0].hops,
              ElementsAre(hop("198.18.200.1", "va", 3), hop("198.18.200.3", "vc", 1), hop("198.18.200.5", "ve", 2)));
  // A route that became one replace cannot reproduce is reported, not rewritten.
  Route nhid = now[0];
  nhid.unsupported = "nhid";
  const UndrainPlan q = plan_undrain({nhid}, saved);
  EXPECT_THAT(q.restores, IsEmpty());
  EXPECT_THAT(q.missing, ElementsAre("198.18.210.0/24 (now nhid)"));
  // Another metric is another route.
  Route other = before[2];
  other.metric = 5;
  EXPECT_THAT(plan_undrain({other}, saved).missing, ElementsAre("198.18.210.0/24"));
}

// ---------------------------------------------------------------- links, names, commands

TEST(NetnsLink, OperStateFromIpLink) {
  // Real `ip -j link show dev vc`, up and then down.
  auto up = parse_link(
      R"([{"ifindex":5,"link":"vd","ifname":"vc","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1500,)"
      R"("qdisc":"noqueue","operstate":"UP","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"ether"}])");
  ASSERT_TRUE(up.ok()) << up.error();
  EXPECT_TRUE(oper_up(*up));
  auto down = parse_link(
      R"([{"ifindex":5,"link":"vd","ifname":"vc","flags":["BROADCAST","MULTICAST","M-DOWN"],"mtu":1500,)"
      R"("qdisc":"noqueue","operstate":"DOWN","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"ether"}])");
  ASSERT_TRUE(down.ok()) << down.error();
  EXPECT_FALSE(oper_up(*down));
  EXPECT_TRUE(oper_up(LinkState{"UNKNOWN", {"UP", "LOWER_UP"}}));
  EXPECT_FALSE(oper_up(LinkState{"UNKNOWN", {"UP"}}));
  EXPECT_FALSE(oper_up(LinkState{"LOWERLAYERDOWN", {"UP"}}));

  EXPECT_EQ(parse_link("").error(), "output is not valid JSON");
  EXPECT_EQ(parse_link("[]").error(), "expected an array of one interface, got []");
  EXPECT_EQ(parse_link(R"([{"operstate":1}])").error(), "\"operstate\": expected a string");
  EXPECT_EQ(parse_link(R"([{"flags":"UP"}])").error(), "\"flags\": expected an array");
}

TEST(NetnsNames, InterfaceNamesAsTheKernelTakesThem) {
  EXPECT_TRUE(valid_interface_name("eth2"));
  EXPECT_TRUE(valid_interface_name("enp1s0f0np0"));
  EXPECT_TRUE(valid_interface_name("abcdefghijklmno"));  // 15 bytes
  EXPECT_FALSE(valid_interface_name("abcdefghijklmnop"));
  EXPECT_FALSE(valid_interface_name(""));
  EXPECT_FALSE(valid_interface_name("."));
  EXPECT_FALSE(valid_interface_name(".."));
  EXPECT_FALSE(valid_interface_name("../x"));
  EXPECT_FALSE(valid_interface_name("eth2 x"));
  EXPECT_TRUE(valid_interface_name("eth2;ls"));  // the kernel takes it; no shell ever sees it
  EXPECT_FALSE(valid_interface_name("eth2:1"));
  EXPECT_FALSE(valid_interface_name(std::string("eth\n2")));
}

TEST(NetnsCommand, RunsWithoutAShellAndCapturesBothStreams) {
  auto echo = run_command({"/bin/echo", "a; echo injected", "$(id)"}, std::chrono::seconds(10));
  ASSERT_TRUE(echo.ok()) << echo.error();
  EXPECT_EQ(echo->exit_code, 0);
  EXPECT_EQ(echo->out, "a; echo injected $(id)\n");  // passed as arguments, never interpreted
  EXPECT_EQ(echo->err, "");

  auto fail = run_command({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, std::chrono::seconds(10));
  ASSERT_TRUE(fail.ok()) << fail.error();
  EXPECT_EQ(fail->exit_code, 3);
  EXPECT_EQ(fail->out, "out\n");
  EXPECT_EQ(fail->err, "err\n");

  auto stdin_closed = run_command({"/bin/cat"}, std::chrono::seconds(10));  // stdin is /dev/null
  ASSERT_TRUE(stdin_closed.ok()) << stdin_closed.error();
  EXPECT_EQ(stdin_closed->out, "");
}

TEST(NetnsCommand, MissingBinaryAndTimeout) {
  EXPECT_EQ(run_command({"/nonexistent/ip", "route"}, std::chrono::seconds(5)).error(),
            "cannot run /nonexistent/ip: No such file or directory");
  EXPECT_EQ(run_command({}, std::chrono::seconds(5)).error(), "no command");
  // Killed by its pid at the deadline, and reaped (no zombie left to this test).
  auto slow = run_command({"/bin/sleep", "30"}, std::chrono::milliseconds(200));
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(slow.error(), "timed out after 200 ms (killed)");
}

// ---------------------------------------------------------------- the driver, before any I/O

TEST(NetnsDriverConfig, UrlNamesTheNamespace) {
  testing::TempDir dir;
  NetnsDriver by_url("r1", "netns:mt1-r1", dir.path());
  EXPECT_EQ(by_url.netns(), "mt1-r1");
  EXPECT_EQ(by_url.kind(), "netns");
  EXPECT_EQ(by_url.state_file("eth2"), dir.path() + "/mt1-r1/eth2.json");
  NetnsDriver by_name("r1", "", dir.path());
  EXPECT_EQ(by_name.netns(), "r1");
  NetnsDriver defaults("r1", "");
  EXPECT_EQ(defaults.state_file("eth2"), std::string(kNetnsStateDir) + "/r1/eth2.json");

  const auto error_of = [](const std::string& url) {
    try {
      NetnsDriver d("r1", url);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_EQ(error_of("http://198.18.0.1/rpc"), "r1: netns driver url \"http://198.18.0.1/rpc\" is not netns:NAME");
  EXPECT_EQ(error_of("netns:"), "r1: netns driver url \"netns:\" is not netns:NAME");
  EXPECT_EQ(error_of("netns:a/b"), "r1: netns driver url \"netns:a/b\" is not netns:NAME");
  EXPECT_EQ(error_of("netns:.."), "r1: netns driver url \"netns:..\" is not netns:NAME");
  EXPECT_EQ(error_of("netns:a b"), "r1: netns driver url \"netns:a b\" is not netns:NAME");
}

TEST(NetnsDriverConfig, BadInterfaceOrNamespaceFailsBeforeAnyChange) {
  testing::TempDir dir;
  NetnsDriver d("r1", "netns:medic-test-no-such-netns", dir.path());
  EXPECT_EQ(d.drain("eth2").error(),
            "r1: drain eth2: namespace medic-test-no-such-netns not found (no /var/run/netns/medic-test-no-such-netns)");
  EXPECT_EQ(d.undrain("eth2").error(),
            "r1: undrain eth2: namespace medic-test-no-such-netns not found (no /var/run/netns/medic-test-no-such-netns)");
  EXPECT_EQ(d.get_state("eth2").error(),
            "r1: get_state eth2: namespace medic-test-no-such-netns not found (no /var/run/netns/medic-test-no-such-netns)");
  EXPECT_EQ(d.drain("../../etc/x").error(), "r1: drain \"../../etc/x\": invalid interface name");
  EXPECT_EQ(d.drain("").error(), "r1: drain \"\": invalid interface name");
  EXPECT_EQ(d.undrain("eth2 eth3").error(), "r1: undrain \"eth2 eth3\": invalid interface name");
  // Nothing was written.
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(NetnsDriverConfig, DriverSetBuildsOnePerNetnsSwitch) {
  const auto topology = [](const std::string& r1_driver) {
    return fabric::parse_topology(
        R"({"version": 1, "switches": [
              {"name": "r1", "role": "rtsw", "telemetry": "http://198.19.0.11:9100/metrics", "driver": )" +
            r1_driver + R"(},
              {"name": "c1", "role": "ctsw", "telemetry": "http://198.19.0.1:9100/metrics", "driver": {"kind": "netns"}}],
            "links": [{"a": "r1:eth2", "b": "c1:eth1", "speed_gbps": 400}]})",
        "netns.json");
  };
  const fabric::Topology t = topology(R"({"kind": "netns", "url": "netns:mt1-r1"})");
  DriverSet set(t, JsonRpcOptions{});
  auto* r1 = dynamic_cast<NetnsDriver*>(set.for_device(*t.find_device("r1")));
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ(r1->netns(), "mt1-r1");
  auto* c1 = dynamic_cast<NetnsDriver*>(set.for_device(*t.find_device("c1")));
  ASSERT_NE(c1, nullptr);
  EXPECT_EQ(c1->netns(), "c1");  // no url: the namespace named as the switch

  const fabric::Topology bad = topology(R"({"kind": "netns", "url": "http://198.19.0.11/rpc"})");
  try {
    DriverSet b(bad, JsonRpcOptions{});
    ADD_FAILURE() << "no error for a netns url that is not netns:NAME";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "r1: netns driver url \"http://198.19.0.11/rpc\" is not netns:NAME");
  }
}

}  // namespace
}  // namespace medic::remediation::netns
