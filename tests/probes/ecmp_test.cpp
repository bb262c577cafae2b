#include "probes/ecmp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "fabric/generator.h"
#include "tests/probes/demo_fabric.h"

namespace medic::probes {
namespace {

using testing::demo;
using testing::link;

using fabric::LinkId;
using fabric::PortId;
using fabric::Role;
using fabric::Topology;

const Topology& zone32k() {
  static const Topology t = fabric::generate_clos(*fabric::preset("zone32k"));
  return t;
}

std::string host(int n) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "host%04d", n);
  return buf;
}

PortId port(const Topology& t, const std::string& device, const std::string& name) {
  const auto p = t.find_port(device, name);
  if (!p) throw std::invalid_argument("no port " + device + ":" + name);
  return *p;
}

// A path is a walk from src's device to dst's device, one link after another, in which
// every device in between is a switch.
void expect_walk(const Topology& t, const Path& p, PortId src, PortId dst) {
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p.front(), t.port(src).link);
  EXPECT_EQ(p.back(), t.port(dst).link);
  fabric::DeviceId at = t.port(src).device;
  for (size_t i = 0; i < p.size(); ++i) {
    const auto& l = t.link(p[i]);
    const auto a = t.port(l.a).device, b = t.port(l.b).device;
    ASSERT_TRUE(a == at || b == at) << "link " << l.name << " does not start at " << t.device(at).name;
    at = a == at ? b : a;
    if (i + 1 < p.size()) {
      EXPECT_TRUE(t.device(at).is_switch()) << "path transits " << t.device(at).name;
    }
  }
  EXPECT_EQ(at, t.port(dst).device);
}

TEST(Ecmp, DemoPathCounts) {
  const Topology& t = demo();
  EcmpModel m(t);
  const PortId src = port(t, "host0001", "nic0");
  struct Case {
    PortId dst;
    uint64_t count;
    size_t hops;
  };
  // Same ToR: down again at once. Same zone: up to any of the 4 CTSW and down. Other zone:
  // 4 CTSW, then 2 parallel links up to the plane's ATSW and 2 down to the far CTSW.
  const Case cases[] = {{port(t, "host0001", "nic1"), 1, 2},
                        {port(t, "host0002", "nic0"), 4, 4},
                        {port(t, "host0005", "nic3"), 4 * 2 * 2, 6}};
  for (const Case& c : cases) {
    EXPECT_EQ(m.path_count(src, c.dst), c.count);
    const auto all = m.paths(src, c.dst);
    ASSERT_EQ(all.size(), c.count);
    EXPECT_EQ(std::set<Path>(all.begin(), all.end()).size(), c.count);
    for (const Path& p : all) {
      EXPECT_EQ(p.size(), c.hops);
      expect_walk(t, p, src, c.dst);
    }
    // Every flow's path is one of them.
    for (uint16_t sport = 0; sport < 64; ++sport) {
      const Path p = m.path_of({src, c.dst, sport});
      EXPECT_NE(std::find(all.begin(), all.end(), p), all.end());
    }
  }
}

TEST(Ecmp, DemoPathsStartAndEndOnTheGivenPorts) {
  const Topology& t = demo();
  EcmpModel m(t);
  const PortId src = port(t, "host0003", "nic2"), dst = port(t, "host0007", "nic1");
  for (const Path& p : m.paths(src, dst)) {
    EXPECT_EQ(p.front(), link(t, "host0003:nic2"));
    EXPECT_EQ(p.back(), link(t, "host0007:nic1"));
  }
  // The two ends of one link: that link alone.
  const PortId tor = t.peer(src);
  EXPECT_EQ(m.path_of({src, tor, 1}), Path{t.port(src).link});
  EXPECT_EQ(m.path_count(src, tor), 1u);
  EXPECT_TRUE(m.path_of({src, src, 1}).empty());
}

TEST(Ecmp, Zone32kPathCounts) {
  const Topology& t = zone32k();
  EcmpModel m(t);
  const PortId src = port(t, "host0001", "nic0");
  EXPECT_EQ(m.path_count(src, port(t, "host0002", "nic5")), 1u);  // same ToR
  EXPECT_EQ(m.path_count(src, port(t, "host0003", "nic0")), 18u);  // same zone: via each CTSW
  // Other zone: 18 planes x 4 ATSW x 9 parallel links up x 9 down.
  const PortId far = port(t, "host0505", "nic7");
  EXPECT_EQ(m.path_count(src, far), 18u * 4 * 9 * 9);
  EXPECT_EQ(m.paths(src, far).size(), 4096u);  // the default cap
  EXPECT_EQ(m.paths(src, far, 10).size(), 10u);
  EXPECT_EQ(m.paths(src, far, 10000).size(), 5832u);
  for (const Path& p : m.paths(src, far, 100)) expect_walk(t, p, src, far);
}

TEST(Ecmp, PathOfIsDeterministicAndSeedDependent) {
  const Topology& t = zone32k();
  EcmpModel a(t, 11), b(t, 11), c(t, 12);
  const PortId src = port(t, "host0001", "nic0"), dst = port(t, "host2000", "nic3");
  int differ = 0;
  for (uint16_t sport = 33434; sport < 33434 + 256; ++sport) {
    const Flow f{src, dst, sport};
    const Path p = a.path_of(f);
    ASSERT_EQ(p.size(), 6u);
    EXPECT_EQ(p, a.path_of(f));
    EXPECT_EQ(p, b.path_of(f));
    differ += p != c.path_of(f);
  }
  EXPECT_GT(differ, 200);  // another seed is another hash
}

TEST(Ecmp, SourcePortSweepSpreadsOverEveryUplink) {
  const Topology& t = zone32k();
  EcmpModel m(t, 3);
  const PortId src = port(t, "host0001", "nic0"), dst = port(t, "host0505", "nic0");
  std::map<LinkId, int> tor_uplink, spine_uplink;
  for (uint32_t i = 0; i < 1024; ++i) {
    const Path p = m.path_of({src, dst, static_cast<uint16_t>(33434 + i)});
    ASSERT_EQ(p.size(), 6u);
    expect_walk(t, p, src, dst);
    ++tor_uplink[p[1]];
    ++spine_uplink[p[2]];
  }
  ASSERT_EQ(tor_uplink.size(), 18u);  // every CTSW uplink of the source ToR
  const double mean = 1024.0 / 18;
  for (const auto& [l, n] : tor_uplink) {
    EXPECT_GT(n, mean / 2) << t.link(l).name;
    EXPECT_LT(n, mean * 2) << t.link(l).name;
  }
  // 18 CTSW x 36 uplinks: most of the 648 spine uplinks get some of 1024 flows.
  EXPECT_GT(spine_uplink.size(), 500u);
}

TEST(Ecmp, PathsNeverTransitHostsAndParallelLinksAreSeparateHops) {
  // a -- s1 == s2 -- b, with a host h also wired to both switches: through h would be as
  // short as through s1 == s2 if hosts could forward.
  Topology::Builder bld;
  auto device = [&](const std::string& name, Role role) {
    fabric::Device d;
    d.name = name;
    d.role = role;
    ASSERT_EQ(bld.add_device(std::move(d)), "");
  };
  device("s1", Role::rtsw);
  device("s2", Role::rtsw);
  device("s3", Role::rtsw);
  device("a", Role::host);
  device("b", Role::host);
  device("c", Role::host);
  device("h", Role::host);
  ASSERT_EQ(bld.add_link("a", "nic0", "s1", "eth1", 400), "");
  ASSERT_EQ(bld.add_link("b", "nic0", "s2", "eth1", 400), "");
  ASSERT_EQ(bld.add_link("s1", "eth2", "s2", "eth2", 400), "");
  ASSERT_EQ(bld.add_link("s1", "eth3", "s2", "eth3", 400), "");
  ASSERT_EQ(bld.add_link("h", "nic0", "s1", "eth4", 400), "");
  ASSERT_EQ(bld.add_link("h", "nic1", "s3", "eth4", 400), "");
  ASSERT_EQ(bld.add_link("c", "nic0", "s3", "eth1", 400), "");
  const Topology t = std::move(bld).build();
  EcmpModel m(t);
  const PortId a = port(t, "a", "nic0"), b = port(t, "b", "nic0"), c = port(t, "c", "nic0");
  EXPECT_EQ(m.path_count(a, b), 2u);  // the two parallel s1 == s2 links
  std::set<LinkId> middle;
  for (uint16_t sport = 0; sport < 64; ++sport) {
    const Path p = m.path_of({a, b, sport});
    ASSERT_EQ(p.size(), 3u);
    middle.insert(p[1]);
  }
  EXPECT_EQ(middle.size(), 2u);
  // c hangs off s3, reachable from a only through the host h.
  EXPECT_EQ(m.path_count(a, c), 0u);
  EXPECT_TRUE(m.paths(a, c).empty());
  EXPECT_TRUE(m.path_of({a, c, 1}).empty());
}

TEST(Ecmp, AnswersDoNotDependOnWhatWasAskedBefore) {
  // Distances are cached per destination ToR; a model asked in another order (another
  // cache history) gives the same paths.
  const Topology& t = zone32k();
  EcmpModel m(t, 5), fresh(t, 5);
  const PortId src = port(t, "host0001", "nic0");
  std::vector<Path> first;
  for (int h = 3; h <= 4031; h += 2) first.push_back(m.path_of({src, port(t, host(h), "nic1"), 7}));
  size_t i = first.size();
  for (int h = 4031; h >= 3; h -= 2) {
    const Path p = fresh.path_of({src, port(t, host(h), "nic1"), 7});
    EXPECT_EQ(p, first[--i]);
    EXPECT_TRUE(p.size() == 4 || p.size() == 6);
  }
}

}  // namespace
}  // namespace medic::probes
