// Localization with the measurement endpoints as candidate causes: a paused prober, a dead
// reflector on a switch or a host, loss that one endpoint explains, is named as that
// endpoint and never as a link; a real lossy link, with sampling noise and stray timeouts
// everywhere, is named as the link and never as an endpoint. Probes are drawn as medicd's
// prober sends them on the demo fabric (its plan, round-trip paths, one prober, every
// device a reflector), with directional losses and binomial noise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>

#include "fabric/generator.h"
#include "tests/probes/demo_fabric.h"
#include "probes/localize.h"
#include "probes/plan.h"

namespace medic::probes {
namespace {

using testing::demo;
using testing::link;

using fabric::DeviceId;
using fabric::LinkId;
using fabric::PortId;
using fabric::Topology;

// What the prober would see over one window, given per-port "into" loss (a share of what
// arrives at the port vanishes), a dead reflector or prober, and uniform stray loss.
struct Prober {
  const Topology& t = demo();
  EcmpModel ecmp{t, 1};
  ProbePlan plan = make_plan(t, ecmp);
  std::vector<ProbeEndpoint> endpoints;
  std::map<std::string, uint32_t> sender_of;
  std::map<DeviceId, uint32_t> reflector_of;
  std::vector<double> into;          // per port
  std::set<DeviceId> dead_reflectors;
  std::map<DeviceId, double> lossy_reflectors;  // answers all but this share
  std::map<std::string, std::string> source_of_host;  // host -> probe source (default "local")
  std::set<std::string> dead_probers;
  double stray = 0;                  // every probe, anywhere
  double uniform = 0;                // every probe of every session (a prober losing alike)
  uint64_t probes = 120;             // per session over the window (medicd: 20 a round, 6 rounds)
  std::mt19937_64 rng{1};

  Prober() : into(demo().ports().size(), 0.0) {}

  uint32_t sender(const std::string& source) {
    auto [it, fresh] = sender_of.emplace(source, static_cast<uint32_t>(endpoints.size()));
    if (fresh) endpoints.push_back({ProbeEndpoint::Kind::sender, source, fabric::kNone});
    return it->second;
  }
  uint32_t reflector(DeviceId d) {
    auto [it, fresh] = reflector_of.emplace(d, static_cast<uint32_t>(endpoints.size()));
    if (fresh) endpoints.push_back({ProbeEndpoint::Kind::reflector, t.device(d).name, d});
    return it->second;
  }
  std::string source(PortId from) {
    const auto it = source_of_host.find(t.device(t.port(from).device).name);
    return it == source_of_host.end() ? "local" : it->second;
  }

  // Delivery of one crossing of `path` leaving from port `from`.
  double one_way(const Path& path, PortId from) const {
    double d = 1;
    DeviceId at = t.port(from).device;
    for (const LinkId l : path) {
      const auto& k = t.link(l);
      const PortId arrive = t.port(k.a).device == at ? k.b : k.a;
      d *= 1 - into[arrive];
      at = t.port(arrive).device;
    }
    return d;
  }

  uint64_t draw(double delivery, bool dead) {
    const double keep = dead ? 0.0 : delivery * (1 - stray) * (1 - uniform);
    std::binomial_distribution<uint64_t> lost(probes, std::clamp(1 - keep, 0.0, 1.0));
    return lost(rng);
  }

  std::pair<std::vector<LinkObservation>, std::vector<PathObservation>> observe() {
    std::vector<LinkObservation> pinned;
    for (const LinkId l : plan.pinned) {
      const auto& k = t.link(l);
      const std::string src = source(k.a);
      const double d = one_way({l}, k.a) * one_way({l}, k.b);
      const bool dead = dead_reflectors.count(t.port(k.b).device) != 0 || dead_probers.count(src) != 0;
      pinned.push_back({l, probes, draw(d, dead), sender(src), reflector(t.port(k.b).device)});
    }
    std::vector<PathObservation> paths;
    for (const Flow& f : plan.flows) {
      const Path there = ecmp.path_of(f);
      const Path back = ecmp.path_of({f.dst, f.src, f.dport, f.sport});
      Path both = there;
      for (const LinkId l : back) {
        if (std::find(both.begin(), both.end(), l) == both.end()) both.push_back(l);
      }
      const std::string src = source(f.src);
      const auto partial = lossy_reflectors.find(t.port(f.dst).device);
      const double d = one_way(there, f.src) * one_way(back, f.dst) *
                       (partial == lossy_reflectors.end() ? 1.0 : 1 - partial->second);
      const bool dead = dead_reflectors.count(t.port(f.dst).device) != 0 || dead_probers.count(src) != 0;
      paths.push_back({{both}, probes, draw(d, dead), sender(src), reflector(t.port(f.dst).device)});
    }
    return {pinned, paths};
  }

  Localization run() {
    auto [pinned, paths] = observe();
    return localize(t, pinned, paths, {}, endpoints);
  }
};

std::set<std::string> endpoint_names(const Localization& l) {
  std::set<std::string> out;
  for (const auto& e : l.endpoints) out.insert(std::string(e.kind == ProbeEndpoint::Kind::sender ? "prober " : "reflector ") + e.name);
  return out;
}

TEST(LocalizeEndpoints, WithoutEndpointsNothingChanges) {
  Prober p;
  const LinkId bad = link(p.t, "rtsw0004:eth8");
  p.into[p.t.link(bad).a] = 0.05;
  auto [pinned, paths] = p.observe();
  const auto plain = localize(p.t, pinned, paths);
  const auto with = localize(p.t, pinned, paths, {}, p.endpoints);
  EXPECT_TRUE(with.endpoints.empty());
  ASSERT_EQ(plain.size(), with.links.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(plain[i].link, with.links[i].link);
    EXPECT_DOUBLE_EQ(plain[i].loss, with.links[i].loss);
  }
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0].link, bad);
}

TEST(LocalizeEndpoints, APausedProberIsNamedAndNoLink) {
  for (const double share : {0.01, 0.03, 0.2, 1.0}) {
    Prober p;
    p.uniform = share;
    const Localization l = p.run();
    EXPECT_EQ(endpoint_names(l), (std::set<std::string>{"prober local"})) << share;
    EXPECT_TRUE(l.links.empty()) << share << ": " << p.t.link(l.links.front().link).name;
    ASSERT_FALSE(l.endpoints.empty());
    EXPECT_NEAR(l.endpoints[0].loss, share, std::max(0.005, share * 0.15));
    EXPECT_EQ(l.endpoints[0].observations, p.plan.pinned.size() + p.plan.flows.size());
  }
}

TEST(LocalizeEndpoints, ADeadReflectorOnASwitchIsNamedAndNoLink) {
  for (const char* dev : {"ctsw003", "rtsw0006", "atsw02"}) {
    Prober p;
    p.dead_reflectors.insert(*p.t.find_device(dev));
    const Localization l = p.run();
    EXPECT_EQ(endpoint_names(l), (std::set<std::string>{std::string("reflector ") + dev})) << dev;
    EXPECT_TRUE(l.links.empty()) << dev;
    if (!l.endpoints.empty()) {
      EXPECT_DOUBLE_EQ(l.endpoints[0].loss, 1.0);
    }
  }
}

TEST(LocalizeEndpoints, ADeadReflectorOnAHostIsNamedNotItsLinks) {
  // Every probe to host0005 crosses one of its links; its own flows out cross them too and
  // come back clean, so the links are not the cause.
  Prober p;
  p.dead_reflectors.insert(*p.t.find_device("host0005"));
  const Localization l = p.run();
  EXPECT_EQ(endpoint_names(l), (std::set<std::string>{"reflector host0005"}));
  EXPECT_TRUE(l.links.empty());
}

TEST(LocalizeEndpoints, ADeadProberOfOneHostIsNamed) {
  Prober p;
  for (int h = 1; h <= 8; ++h) {
    char name[16];
    std::snprintf(name, sizeof name, "host%04d", h);
    p.source_of_host[name] = std::string("netns:") + name;
  }
  p.dead_probers.insert("netns:host0003");
  const Localization l = p.run();
  EXPECT_EQ(endpoint_names(l), (std::set<std::string>{"prober netns:host0003"}));
  EXPECT_TRUE(l.links.empty());
}

// The other way round: a lossy link, whichever it is, is the link, never an endpoint; with
// binomial noise and stray timeouts on every probe (a loaded host), over many draws.
TEST(LocalizeEndpoints, ALossyLinkIsNeverTakenForAnEndpoint) {
  const Topology& t = demo();
  int named = 0, trials = 0;
  for (LinkId bad = 0; bad < t.links().size(); ++bad) {
    for (const bool a_end : {true, false}) {
      for (const double stray : {0.0, 2e-3}) {
        Prober p;
        p.rng.seed(bad * 4 + (a_end ? 2 : 0) + (stray > 0 ? 1 : 0));
        p.stray = stray;
        const PortId end = a_end ? t.link(bad).a : t.link(bad).b;
        p.into[end] = 0.1;
        const Localization l = p.run();
        ++trials;
        EXPECT_TRUE(l.endpoints.empty()) << t.endpoint_name(end) << " stray " << stray << ": "
                                         << *endpoint_names(l).begin();
        for (const auto& v : l.links) named += v.link == bad;
      }
    }
  }
  // The links are found too (each end of every link, with and without stray loss).
  EXPECT_GE(named, trials * 9 / 10) << named << " of " << trials;
}

// Loss spread alike over everything one prober sends is that prober's (a loaded host, a
// short pause), never a link's: links must lose clearly more than the rest of the fabric.
TEST(LocalizeEndpoints, LossAlikeEverywhereIsTheProberNotTheLinks) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Prober p;
    p.rng.seed(seed);
    p.stray = 3e-3;
    auto [pinned, paths] = p.observe();
    EXPECT_TRUE(localize(p.t, pinned, paths).empty()) << "seed " << seed;
    const Localization l = localize(p.t, pinned, paths, {}, p.endpoints);
    EXPECT_EQ(endpoint_names(l), (std::set<std::string>{"prober local"})) << "seed " << seed;
    EXPECT_TRUE(l.links.empty()) << "seed " << seed;
  }
}

// A handful of lone losses is noise: nobody, link or endpoint.
TEST(LocalizeEndpoints, ScatteredLossesNameNobody) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Prober p;
    auto [pinned, paths] = p.observe();
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 5; ++i) paths[rng() % paths.size()].lost += 1;
    for (int i = 0; i < 3; ++i) pinned[rng() % pinned.size()].lost += 1;
    const Localization l = localize(p.t, pinned, paths, {}, p.endpoints);
    EXPECT_TRUE(l.endpoints.empty()) << "seed " << seed << ": " << *endpoint_names(l).begin();
    EXPECT_TRUE(l.links.empty()) << "seed " << seed;
  }
}

TEST(LocalizeEndpoints, ARealFaultBesideADeadReflectorIsStillFound) {
  Prober p;
  p.dead_reflectors.insert(*p.t.find_device("ctsw007"));
  const LinkId bad = link(p.t, "rtsw0002:eth6");
  p.into[p.t.link(bad).a] = 0.1;
  auto [pinned, paths] = p.observe();
  const Localization l = localize(p.t, pinned, paths, {}, p.endpoints);
  EXPECT_EQ(endpoint_names(l), (std::set<std::string>{"reflector ctsw007"}));
  ASSERT_EQ(l.links.size(), 1u);
  EXPECT_EQ(l.links[0].link, bad);
  // The verdict's counts are its observations': every probe to ctsw007 lost, on all of them;
  // the lossy link explains at most its 10% of the few crossing it.
  ASSERT_EQ(l.endpoints.size(), 1u);
  const EndpointVerdict& v = l.endpoints[0];
  uint64_t sent = 0, lost = 0;
  uint32_t n = 0;
  const uint32_t e = p.reflector_of.at(*p.t.find_device("ctsw007"));
  for (const auto& o : pinned) {
    if (o.reflector == e) sent += o.sent, lost += o.lost, ++n;
  }
  for (const auto& o : paths) {
    if (o.reflector == e) sent += o.sent, lost += o.lost, ++n;
  }
  EXPECT_EQ(v.probes, sent);
  EXPECT_EQ(v.lost, lost);
  EXPECT_EQ(v.lost, v.probes);
  EXPECT_EQ(v.observations, n);
  EXPECT_EQ(v.lossy_observations, n);
  EXPECT_LE(v.explained_by_links, 0.2 * static_cast<double>(v.lost));
}


// A host whose sessions cross several lossy links, a different one each (flapping uplinks
// of its ToR, a few lossy links elsewhere: 1% of a fabric's links failing at once), loses
// a little on many of its sessions, spread alike, and no one link lies under 90% of it.
// Every one of those losses is a link's: each of those links loses on the sessions of other
// hosts too. The host's reflector is not named; the links are (bench/load at 1% named four
// or five host reflectors before this).
TEST(LocalizeEndpoints, LossOnManyLinksUnderOneHostIsTheLinksNotItsReflector) {
  const Topology& t = demo();
  int hosts = 0, named_host = 0, with = 0, without = 0, lossy_links = 0;
  for (DeviceId h = 0; h < t.devices().size(); ++h) {
    if (t.device(h).role != fabric::Role::host) continue;
    Prober p;
    p.probes = 60;
    p.rng.seed(h);
    // One switch-to-switch link on each of (up to six of) the host's inbound flows.
    std::set<LinkId> bad;
    for (const Flow& f : p.plan.flows) {
      if (t.port(f.dst).device != h || bad.size() >= 6) continue;
      for (const LinkId l : p.ecmp.path_of(f)) {
        const auto& k = t.link(l);
        const bool host_link = t.device(t.port(k.a).device).role == fabric::Role::host ||
                               t.device(t.port(k.b).device).role == fabric::Role::host;
        if (host_link || bad.count(l)) continue;
        bad.insert(l);
        p.into[k.a] = p.into[k.b] = 0.02;
        break;
      }
    }
    if (bad.size() < 3) continue;
    ++hosts;
    auto [pinned, paths] = p.observe();
    const Localization l = localize(t, pinned, paths, {}, p.endpoints);
    const std::string name = "reflector " + t.device(h).name;
    named_host += static_cast<int>(endpoint_names(l).count(name));
    EXPECT_EQ(endpoint_names(l).count(name), 0u) << t.device(h).name << " with " << bad.size() << " lossy links";
    lossy_links += static_cast<int>(bad.size());
    for (const auto& v : l.links) with += static_cast<int>(bad.count(v.link));
    for (const auto& v : localize(t, pinned, paths)) without += static_cast<int>(bad.count(v.link));
  }
  std::printf("hosts %d, their reflector named %d; lossy links %d, found %d with endpoints, %d without\n", hosts,
              named_host, lossy_links, with, without);
  ASSERT_GT(hosts, 0);
  // The links are found as often as without endpoints as candidates (2% over 60 probes a
  // session is thin evidence, and these are many at once on a small fabric).
  EXPECT_GE(with, without);
  EXPECT_GT(with, 0);
}

// The other way round: a host's reflector that loses 5% of what it should answer is named,
// with lossy links elsewhere in the fabric (some under its sessions): the links explain only
// what they surely lose elsewhere, never the reflector's own loss.
TEST(LocalizeEndpoints, AReflectorLosingSomeIsNamedBesideLossyLinks) {
  const Topology& t = demo();
  int hosts = 0, named = 0;
  for (DeviceId h = 0; h < t.devices().size(); ++h) {
    if (t.device(h).role != fabric::Role::host) continue;
    for (const uint64_t seed : {1, 2, 3}) {
      Prober p;
      p.probes = 60;
      p.rng.seed(h * 16 + seed);
      p.lossy_reflectors[h] = 0.05;
      // Six switch-to-switch links at 2%, one on each of (up to six of) its inbound flows.
      std::set<LinkId> bad;
      for (const Flow& f : p.plan.flows) {
        if (t.port(f.dst).device != h || bad.size() >= 6) continue;
        for (const LinkId l : p.ecmp.path_of(f)) {
          const auto& k = t.link(l);
          if (t.device(t.port(k.a).device).role == fabric::Role::host ||
              t.device(t.port(k.b).device).role == fabric::Role::host || bad.count(l)) {
            continue;
          }
          bad.insert(l);
          p.into[k.a] = p.into[k.b] = 0.02;
          break;
        }
      }
      ++hosts;
      const Localization l = p.run();
      const bool is_named = endpoint_names(l).count("reflector " + t.device(h).name) != 0;
      named += is_named ? 1 : 0;
      if (!is_named) std::printf("not named: %s, seed %llu\n", t.device(h).name.c_str(), static_cast<unsigned long long>(seed));
    }
  }
  ASSERT_GT(hosts, 0);
  std::printf("reflectors losing 5%% named: %d of %d\n", named, hosts);
  // One draw in 24 (host0007, seed 3) is not named, with or without the links' excuse: its
  // sessions across the 2% links lose clearly more than the others, and loss concentrated
  // on some of an endpoint's sessions fails its dispersion test (a lossy link under some of
  // them, not the endpoint). Never more than that.
  EXPECT_GE(named, hosts - hosts / 12);
}

// At medicd's own evidence (60 probes a session: 10 a round over 6 rounds) and with stray
// loss everywhere, naming the prober must not hide a real lossy link: the links found with
// endpoints are as many as without them, and nothing healthy is named either way.
TEST(LocalizeEndpoints, ANamedProberDoesNotHideARealLink) {
  const Topology& t = demo();
  for (const double loss : {0.01, 0.02}) {
    for (const double stray : {0.002, 0.005}) {
      int with = 0, without = 0, false_with = 0, false_without = 0, prober_named = 0, trials = 0;
      for (LinkId bad = 0; bad < t.links().size(); ++bad) {
        Prober p;
        p.probes = 60;
        p.rng.seed(bad * 7 + static_cast<uint64_t>(stray * 1e4) + static_cast<uint64_t>(loss * 1e3));
        p.stray = stray;
        p.into[t.link(bad).a] = loss;
        p.into[t.link(bad).b] = loss;
        auto [pinned, paths] = p.observe();
        ++trials;
        for (const auto& v : localize(t, pinned, paths)) (v.link == bad ? without : false_without)++;
        const Localization l = localize(t, pinned, paths, {}, p.endpoints);
        for (const auto& v : l.links) (v.link == bad ? with : false_with)++;
        prober_named += !l.endpoints.empty();
      }
      std::printf("loss %.3f stray %.3f: found %d with endpoints, %d without, of %d; healthy named %d with, %d without; "
                  "prober named %d\n",
                  loss, stray, with, without, trials, false_with, false_without, prober_named);
      EXPECT_GE(with, without * 9 / 10) << "loss " << loss << " stray " << stray;
      // Thin evidence (60 probes a session) under stray loss names a healthy neighbour now
      // and then, as it did without endpoints; never more often.
      EXPECT_LE(false_with, false_without + 1) << "loss " << loss << " stray " << stray;
      EXPECT_LE(false_with, trials / 10) << "loss " << loss << " stray " << stray;
    }
  }
}

}  // namespace
}  // namespace medic::probes
