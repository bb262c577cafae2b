#include "pipeline/pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fabric/loader.h"
#include "tests/support/epoch.h"
#include "tests/support/testing.h"

namespace medic::pipeline {
namespace {

using detectors::FindingKind;
using detectors::Severity;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

constexpr Duration kPoll = seconds(10);

// rtsw1 answers in the Prometheus text format (node_exporter names, as fabsim serves them),
// ctsw1 in OpenConfig JSON. Two 400G links between them.
fabric::Topology topology() {
  return fabric::parse_topology(R"({
    "switches": [
      {"name": "rtsw1", "role": "rtsw", "telemetry": "http://sim/s/rtsw1/metrics", "driver": {"kind": "dryrun"}},
      {"name": "ctsw1", "role": "ctsw", "telemetry": "http://sim/s/ctsw1/gnmi", "driver": {"kind": "dryrun"}}
    ],
    "links": [
      {"a": "rtsw1:eth1", "b": "ctsw1:eth1", "speed_gbps": 400},
      {"a": "rtsw1:eth2", "b": "ctsw1:eth2", "speed_gbps": 400}
    ]
  })",
                                "pipeline.json");
}

// One port's counters as its switch would report them.
struct PortCounters {
  bool up = true;
  double carrier = 2;
  double rx_packets = 5e9, tx_packets = 5e9;
  double rx_bytes = 6e12, tx_bytes = 6e12;
  double crc = 0;
};

// A tiny emulated fabric: traffic flows on every up port each poll; tests change the rest.
class Fabric {
 public:
  std::map<std::string, PortCounters> rtsw1 = {{"eth1", {}}, {"eth2", {}}};
  std::map<std::string, PortCounters> ctsw1 = {{"eth1", {}}, {"eth2", {}}};

  void traffic() {
    for (auto* dev : {&rtsw1, &ctsw1}) {
      for (auto& [name, c] : *dev) {
        if (!c.up) continue;
        c.rx_packets += 1e6;
        c.tx_packets += 1e6;
        c.rx_bytes += 1e9;
        c.tx_bytes += 1e9;
      }
    }
  }

  // node_exporter style, with HELP and TYPE lines.
  std::string prometheus() const {
    std::string out;
    char buf[256];
    struct Family {
      const char* name;
      const char* type;
      double PortCounters::*field;
    };
    out += "# HELP node_network_up Value is 1 if operstate is 'up', 0 otherwise.\n# TYPE node_network_up gauge\n";
    for (const auto& [name, c] : rtsw1) out += "node_network_up{device=\"" + name + "\"} " + (c.up ? "1\n" : "0\n");
    static const Family kFamilies[] = {
        {"node_network_carrier_changes_total", "counter", &PortCounters::carrier},
        {"node_network_receive_packets_total", "counter", &PortCounters::rx_packets},
        {"node_network_transmit_packets_total", "counter", &PortCounters::tx_packets},
        {"node_network_receive_bytes_total", "counter", &PortCounters::rx_bytes},
        {"node_network_transmit_bytes_total", "counter", &PortCounters::tx_bytes},
        {"node_ethtool_received_crc_errors_phy", "untyped", &PortCounters::crc},
    };
    for (const Family& f : kFamilies) {
      out += std::string("# HELP ") + f.name + " counter\n# TYPE " + f.name + " " + f.type + "\n";
      for (const auto& [name, c] : rtsw1) {
        std::snprintf(buf, sizeof buf, "%s{device=\"%s\"} %.17g\n", f.name, name.c_str(), c.*f.field);
        out += buf;
      }
    }
    return out;
  }

  // OpenConfig JSON_IETF: counters as strings.
  std::string openconfig() const {
    std::string out = "{\"openconfig-interfaces:interfaces\":{\"interface\":[";
    char buf[512];
    bool first = true;
    for (const auto& [name, c] : ctsw1) {
      std::snprintf(buf, sizeof buf,
                    "%s{\"name\":\"%s\",\"state\":{\"oper-status\":\"%s\",\"counters\":{\"carrier-transitions\":\"%.0f\","
                    "\"in-pkts\":\"%.0f\",\"out-pkts\":\"%.0f\",\"in-octets\":\"%.0f\",\"out-octets\":\"%.0f\","
                    "\"in-fcs-errors\":\"%.0f\"}}}",
                    first ? "" : ",", name.c_str(), c.up ? "UP" : "DOWN", c.carrier, c.rx_packets, c.tx_packets,
                    c.rx_bytes, c.tx_bytes, c.crc);
      out += buf;
      first = false;
    }
    out += "]}}";
    return out;
  }
};

// What a poll's answers differ in from the emulated fabric's.
struct Overrides {
  const char* rtsw1_body = nullptr;
  const char* ctsw1_body = nullptr;
  bool rtsw1_silent = false;  // rtsw1 did not answer
  std::string rtsw1_error;
  bool ctsw1_silent = false;
};
Overrides rtsw1_body(const char* body) {
  Overrides o;
  o.rtsw1_body = body;
  return o;
}
Overrides ctsw1_body(const char* body) {
  Overrides o;
  o.ctsw1_body = body;
  return o;
}
Overrides rtsw1_silent(std::string error) {
  Overrides o;
  o.rtsw1_silent = true;
  o.rtsw1_error = std::move(error);
  return o;
}

using Changes = std::vector<std::pair<fabric::LinkId, bool>>;
Changes changes(const PollOutcome& out) {
  Changes r;
  for (const auto& c : out.link_changes) r.emplace_back(c.link, c.up);
  return r;
}

class PipelineTest : public ::testing::Test {
 protected:
  PipelineTest() : detector_config(detectors::DetectorConfig::load_file(testing::source_dir() + "/data/detectors.json")) {}

  // One poll at kT0 + n * 10 s, with the bodies rendered from `fabric` unless overridden.
  PollOutcome poll(Pipeline& p, int n, const Overrides& o = {}, std::span<const probes::RoundResult> rounds = {}) {
    const Time t = at(n);
    const std::string prom = o.rtsw1_body ? o.rtsw1_body : fabric.prometheus();
    const std::string oc = o.ctsw1_body ? o.ctsw1_body : fabric.openconfig();
    std::vector<DeviceAnswer> answers(2);
    answers[0].device = rtsw1;
    answers[0].time = t;
    answers[0].mono = mono_at(n);
    answers[0].answered = !o.rtsw1_silent;
    answers[0].error = o.rtsw1_error;
    answers[0].format = telemetry::detect_format("text/plain; version=0.0.4", prom);
    answers[0].body = o.rtsw1_silent ? std::string_view() : std::string_view(prom);
    answers[1].device = ctsw1;
    answers[1].time = t;
    answers[1].mono = mono_at(n);
    answers[1].answered = !o.ctsw1_silent;
    answers[1].format = telemetry::detect_format("application/json", oc);
    answers[1].body = o.ctsw1_silent ? std::string_view() : std::string_view(oc);
    if (ahead == Ahead::viewed) {
      // Each answer mapped as it arrives, here the last first.
      for (auto it = answers.rbegin(); it != answers.rend(); ++it) p.map_ahead(*it);
    } else if (ahead == Ahead::handed_over) {
      // As medicd does: the bytes go with the answer; the poll gets it without them.
      for (auto it = answers.rbegin(); it != answers.rend(); ++it) {
        p.map_ahead(*it, std::string(it->body));
        it->body = {};
      }
    }
    PollOutcome out = p.poll(answers, t, {}, rounds, recorded);
    recorded = {};
    return out;
  }
  // What medicd's recorder hands back: incident `id` for update `u`, taken in at the next poll.
  void bind_id(Pipeline&, const triage::IncidentUpdate& u, int64_t id) { recorded.add_opened(u, id); }
  triage::Recorded recorded;
  // Each answer mapped in poll(), or ahead of it (its bytes viewed, or handed over as medicd does).
  enum class Ahead { no, viewed, handed_over };
  Ahead ahead = Ahead::no;
  static Time at(int n) { return kT0 + n * kPoll; }
  // The same on the monotonic clock, as medicd's answers carry it.
  static Duration mono_at(int n) { return std::chrono::hours(1) + n * kPoll; }

  fabric::Topology topo = topology();
  telemetry::CounterMap map = telemetry::CounterMap::load_file(testing::source_dir() + "/data/counter_map.json");
  detectors::DetectorConfig detector_config;
  fabric::DeviceId rtsw1 = *topo.find_device("rtsw1");
  fabric::DeviceId ctsw1 = *topo.find_device("ctsw1");
  fabric::LinkId l1 = *topo.find_link("rtsw1:eth1");
  fabric::LinkId l2 = *topo.find_link("rtsw1:eth2");
  Fabric fabric;
};

TEST_F(PipelineTest, BothFormatsBecomeSamplesOfEveryPort) {
  Pipeline p(topo, map, detector_config);
  const PollOutcome out = poll(p, 0);
  EXPECT_THAT(out.rejected, IsEmpty());
  EXPECT_EQ(out.samples, 4u);
  // rtsw1: 7 families x 2 ports; ctsw1: 7 mapped leaves of 8 per interface (the name is not).
  EXPECT_EQ(out.stats.mapped, 28u);
  EXPECT_EQ(out.stats.unmapped, 2u);
  EXPECT_EQ(out.stats.samples, 30u);
  EXPECT_THAT(out.findings, IsEmpty());
}

TEST_F(PipelineTest, LinkStateChangesAreReported) {
  Pipeline p(topo, map, detector_config);
  EXPECT_EQ(p.link_oper(l1), -1);
  PollOutcome out = poll(p, 0);
  EXPECT_EQ(changes(out), (Changes{{l1, true}, {l2, true}}));
  EXPECT_EQ(p.link_oper(l1), 1);

  // Both ends of the first link go down.
  fabric.traffic();
  for (auto* c : {&fabric.rtsw1["eth1"], &fabric.ctsw1["eth1"]}) {
    c->up = false;
    c->carrier += 1;
  }
  out = poll(p, 1);
  EXPECT_EQ(changes(out), (Changes{{l1, false}}));
  EXPECT_EQ(p.link_oper(l1), 0);
  EXPECT_EQ(p.link_oper(l2), 1);
  EXPECT_THAT(out.triage.updates, IsEmpty());  // one flap is only noted

  // Still down: no change; after the hold time (30 s) a link_down incident.
  for (int n = 2; n <= 3; ++n) {
    fabric.traffic();
    out = poll(p, n);
    EXPECT_THAT(out.link_changes, IsEmpty()) << n;
    EXPECT_THAT(out.triage.updates, IsEmpty()) << n;
  }
  fabric.traffic();
  out = poll(p, 4);
  EXPECT_THAT(out.link_changes, IsEmpty());
  ASSERT_EQ(out.findings.size(), 2u);
  for (const auto& f : out.findings) {
    EXPECT_EQ(f.kind, FindingKind::link_down);
    EXPECT_EQ(f.link, l1);
  }
  ASSERT_EQ(out.triage.updates.size(), 1u);
  EXPECT_TRUE(out.triage.updates[0].is_new());
  EXPECT_EQ(out.triage.updates[0].cls, triage::IncidentClass::link_down);
  EXPECT_EQ(out.triage.updates[0].link, l1);
  EXPECT_EQ(out.triage.updates[0].findings.size(), 2u);
  EXPECT_EQ(out.triage.updates[0].started_at, at(1));

  // Back up.
  fabric.traffic();
  for (auto* c : {&fabric.rtsw1["eth1"], &fabric.ctsw1["eth1"]}) {
    c->up = true;
    c->carrier += 1;
  }
  out = poll(p, 5);
  EXPECT_EQ(changes(out), (Changes{{l1, true}}));

  // One end saying down is enough.
  fabric.traffic();
  fabric.ctsw1["eth2"].up = false;
  fabric.ctsw1["eth2"].carrier += 1;
  out = poll(p, 6);
  EXPECT_EQ(changes(out), (Changes{{l2, false}}));
  EXPECT_EQ(p.link_oper(l2), 0);
}

// What the prober is told: every end whose carrier changed since its last reading (a flap
// between two polls, the link going down or coming up), with the span since that reading on
// the monotonic clock; a link that stays down is no change.
TEST_F(PipelineTest, LinksDownOrChangingCarrierAreGivenToTheProber) {
  Pipeline p(topo, map, detector_config);
  using Span = std::tuple<fabric::LinkId, Duration, Duration>;
  auto spans = [](const PollOutcome& out) {
    std::vector<Span> r;
    for (const auto& d : out.links_down) r.emplace_back(d.link, d.from, d.to);
    std::sort(r.begin(), r.end());
    return r;
  };
  // Both ends of l1 turn (down or up), their carrier counting it.
  auto turn_l1 = [&](bool up) {
    fabric.traffic();
    for (auto* c : {&fabric.rtsw1["eth1"], &fabric.ctsw1["eth1"]}) {
      c->up = up;
      c->carrier += 1;
    }
  };
  PollOutcome out = poll(p, 0);
  EXPECT_THAT(out.links_down, IsEmpty());
  fabric.traffic();
  out = poll(p, 1);
  EXPECT_THAT(out.links_down, IsEmpty());  // all up, carrier unchanged

  // A flap between two polls: up at both readings, the carrier counted it, on one end.
  fabric.traffic();
  fabric.rtsw1["eth2"].carrier += 2;
  out = poll(p, 2);
  EXPECT_EQ(spans(out), (std::vector<Span>{{l2, mono_at(1), mono_at(2)}}));
  EXPECT_THAT(out.link_changes, IsEmpty());

  // Down on both ends: each end says so; while it stays down, nothing more.
  turn_l1(false);
  out = poll(p, 3);
  EXPECT_EQ(spans(out), (std::vector<Span>{{l1, mono_at(2), mono_at(3)}, {l1, mono_at(2), mono_at(3)}}));
  fabric.traffic();
  out = poll(p, 4);
  EXPECT_THAT(out.links_down, IsEmpty());

  // Up again: a change; then nothing.
  turn_l1(true);
  out = poll(p, 5);
  EXPECT_EQ(spans(out), (std::vector<Span>{{l1, mono_at(4), mono_at(5)}, {l1, mono_at(4), mono_at(5)}}));
  fabric.traffic();
  out = poll(p, 6);
  EXPECT_THAT(out.links_down, IsEmpty());

  // The oper state turning without a carrier count (an SNMP-style source) is a change too.
  fabric.traffic();
  fabric.ctsw1["eth2"].up = false;
  out = poll(p, 7);
  EXPECT_EQ(spans(out), (std::vector<Span>{{l2, mono_at(6), mono_at(7)}}));
}

TEST_F(PipelineTest, AFlappingPortGivesFindingsAndAnIncident) {
  Pipeline p(topo, map, detector_config);
  poll(p, 0);
  // Carrier +2 per poll on both ends of the second link (a flap per poll, up at each scrape).
  auto flap = [&] {
    fabric.traffic();
    fabric.rtsw1["eth2"].carrier += 2;
    fabric.ctsw1["eth2"].carrier += 2;
  };
  for (int n = 1; n <= 2; ++n) {
    flap();
    const PollOutcome out = poll(p, n);
    ASSERT_EQ(out.findings.size(), 2u) << n;
    for (const auto& f : out.findings) {
      EXPECT_EQ(f.kind, FindingKind::link_flap);
      EXPECT_EQ(f.severity, Severity::info);
      EXPECT_EQ(f.link, l2);
    }
    EXPECT_THAT(out.triage.updates, IsEmpty()) << n;
    ASSERT_EQ(out.triage.noted.size(), 2u);
    EXPECT_EQ(out.triage.noted[0].note, "noted");
    EXPECT_THAT(out.link_changes, IsEmpty());
  }
  // The third flap in 30 s takes the penalty over the suppress threshold.
  flap();
  PollOutcome out = poll(p, 3);
  ASSERT_EQ(out.findings.size(), 2u);
  EXPECT_EQ(out.findings[0].severity, Severity::critical);
  EXPECT_EQ(out.findings[1].severity, Severity::critical);
  ASSERT_EQ(out.triage.updates.size(), 1u);
  const triage::IncidentUpdate& u = out.triage.updates[0];
  EXPECT_TRUE(u.is_new());
  EXPECT_EQ(u.cls, triage::IncidentClass::link_flap);
  EXPECT_EQ(u.link, l2);
  EXPECT_EQ(u.severity, Severity::critical);
  EXPECT_EQ(u.findings.size(), 2u);
  EXPECT_TRUE(p.detectors().flap().suppressed(l2, at(3)));
  bind_id(p, u, 1);

  // Suppressed: more flaps say nothing new; corrupted frames on the link join the incident
  // (whose id the recorder handed back with this poll).
  flap();
  fabric.rtsw1["eth2"].crc += 500;
  out = poll(p, 4);
  EXPECT_EQ(p.triage().open_for_link(l2), 1);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].kind, FindingKind::corruption);
  ASSERT_EQ(out.triage.updates.size(), 1u);
  EXPECT_EQ(out.triage.updates[0].incident_id, 1);
  EXPECT_EQ(out.triage.updates[0].cls, triage::IncidentClass::link_flap);
  EXPECT_FALSE(out.triage.updates[0].is_new());
}

// What a poll gives, in a form two outcomes can be compared by.
std::string outcome_text(const PollOutcome& out, const fabric::Topology& topo) {
  std::string t = "samples " + std::to_string(out.samples) + ", mapped " + std::to_string(out.stats.mapped) +
                  ", unmapped " + std::to_string(out.stats.unmapped) + ", of " + std::to_string(out.stats.samples) +
                  ", implausible " + std::to_string(out.implausible) + "\n";
  for (const auto& f : out.findings) {
    t += std::string(to_string(f.kind)) + " " + std::string(to_string(f.severity)) + " " +
         (f.link != fabric::kNone ? topo.link(f.link).name : "-") + ": " + f.summary + "\n";
  }
  for (const auto& c : out.link_changes) t += "link " + topo.link(c.link).name + (c.up ? " up\n" : " down\n");
  for (const auto& [dev, err] : out.rejected) t += "rejected " + topo.device(dev).name + ": " + err + "\n";
  for (const auto& u : out.triage.updates) t += "update " + std::string(to_string(u.cls)) + "\n";
  return t;
}

// medicd maps each answer the moment it arrives, in whatever order they come; the poll's
// outcome is the one poll() gives mapping them itself: the same findings in the same order,
// the same link changes, rejections, counts and incidents, poll after poll (a flap, errors,
// a link going down, a malformed answer, a silent device).
TEST_F(PipelineTest, AnswersMappedAheadAsTheyArriveGiveTheSameOutcome) {
  // In poll(); ahead on the caller's thread; ahead on 3 map workers, the bytes handed over.
  Pipeline in_poll(topo, map, detector_config), mapped_ahead(topo, map, detector_config),
      on_workers(topo, map, detector_config, {}, 3);
  EXPECT_EQ(on_workers.map_workers(), 3u);
  auto both = [&](int n, const Overrides& o = {}) {
    ahead = Ahead::no;
    const std::string want = outcome_text(poll(in_poll, n, o), topo);
    ahead = Ahead::viewed;
    const std::string got = outcome_text(poll(mapped_ahead, n, o), topo);
    ahead = Ahead::handed_over;
    const std::string by_workers = outcome_text(poll(on_workers, n, o), topo);
    ahead = Ahead::no;
    EXPECT_EQ(got, want) << "poll " << n;
    EXPECT_EQ(by_workers, want) << "poll " << n;
    return want;
  };
  both(0);
  std::string all;
  for (int n = 1; n <= 4; ++n) {
    fabric.traffic();
    fabric.rtsw1["eth2"].carrier += 2;
    fabric.ctsw1["eth2"].carrier += 2;
    if (n == 3) fabric.rtsw1["eth1"].crc += 500;
    if (n == 4) fabric.ctsw1["eth1"].up = false;
    all += both(n);
  }
  fabric.traffic();
  all += both(5, rtsw1_body("node_network_up{device=\"eth1\" 1\n"));
  fabric.traffic();
  all += both(6, rtsw1_silent("timeout after 2000 ms"));
  // The comparison is of something: flaps, corruption, a link down and a rejection.
  EXPECT_THAT(all, HasSubstr("link_flap"));
  EXPECT_THAT(all, HasSubstr("corruption"));
  EXPECT_THAT(all, HasSubstr(" down\n"));
  EXPECT_THAT(all, HasSubstr("rejected rtsw1: line 1"));
  EXPECT_THAT(all, HasSubstr("update "));
}

// An answer mapped ahead counts only for the poll it is given to: one the poll is not given
// (or given with another time) is dropped, never judged, never left for the next poll.
TEST_F(PipelineTest, AnAnswerMappedAheadButNotGivenToThePollIsDropped) {
  for (const size_t workers : {0u, 2u}) {
  SCOPED_TRACE(std::to_string(workers) + " map workers");
  Pipeline p(topo, map, detector_config, {}, workers);
  poll(p, 0);
  const std::string bad = "node_network_up{device=\"eth1\" 1\n";
  DeviceAnswer stray;
  stray.device = rtsw1;
  stray.time = at(1);
  stray.answered = true;
  stray.body = bad;
  p.map_ahead(stray);
  // Poll 1 hears nothing from rtsw1: its stray answer is not used.
  fabric.traffic();
  PollOutcome out = poll(p, 1, rtsw1_silent("timeout after 2000 ms"));
  EXPECT_THAT(out.rejected, IsEmpty());
  EXPECT_EQ(out.samples, 2u);  // ctsw1's two ports
  // Nor in poll 2, whose own answer from rtsw1 is whole.
  fabric.traffic();
  out = poll(p, 2);
  EXPECT_THAT(out.rejected, IsEmpty());
  EXPECT_EQ(out.samples, 4u);
  // Mapped ahead with another time than the poll's answer: the poll's own is mapped.
  p.map_ahead(stray);
  fabric.traffic();
  out = poll(p, 3);
  EXPECT_THAT(out.rejected, IsEmpty());
  EXPECT_EQ(out.samples, 4u);
  EXPECT_EQ(out.stats.mapped, 28u);
  }
}

// The map workers map every answer handed to them exactly once, as the caller's thread
// would, however many arrive at once; a pool stopped with work in hand finishes it first.
TEST_F(PipelineTest, MapWorkersMapEveryAnswerOnceAsTheCallersThreadWould) {
  MapPool pool(topo, map, 4);
  ASSERT_EQ(pool.workers(), 4u);
  const std::string prom = fabric.prometheus(), oc = fabric.openconfig(), bad = "node_network_up{device=\"eth1\" 1\n";
  constexpr int kJobs = 600;
  auto job = [&](int i) {
    MapJob j;
    j.device = i % 2 == 0 ? rtsw1 : ctsw1;
    j.time = at(i);
    j.mono = Duration(std::chrono::seconds(i));
    j.format = i % 2 == 0 ? telemetry::PayloadFormat::prometheus : telemetry::PayloadFormat::openconfig;
    j.body = i % 2 == 1 ? oc : i % 6 == 0 ? bad : prom;
    return j;
  };
  for (int round = 0; round < 2; ++round) {  // the pool is used again after a take()
    for (int i = 0; i < kJobs; ++i) pool.submit(job(i));
    std::vector<Mapped> got = pool.take();
    ASSERT_EQ(got.size(), static_cast<size_t>(kJobs));
    std::vector<int> seen(kJobs, 0);
    for (Mapped& m : got) {
      const int i = static_cast<int>((m.time - at(0)) / kPoll);
      ASSERT_TRUE(i >= 0 && i < kJobs);
      ++seen[i];
      const MapJob j = job(i);
      const Mapped want = pool.map(j.device, j.time, j.mono, j.format, j.body);
      EXPECT_EQ(m.device, j.device);
      EXPECT_EQ(m.ok, want.ok) << i;
      EXPECT_EQ(m.error, want.error) << i;
      EXPECT_EQ(m.stats.mapped, want.stats.mapped) << i;
      ASSERT_EQ(m.samples.size(), want.samples.size()) << i;
      for (size_t k = 0; k < m.samples.size(); ++k) {
        EXPECT_EQ(m.samples[k].port, want.samples[k].port);
        EXPECT_EQ(m.samples[k].present, want.samples[k].present);
        EXPECT_EQ(m.samples[k].mono, j.mono);
      }
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), kJobs);
    EXPECT_TRUE(pool.take().empty());  // taken once
  }
  // Stopped with work in hand: the destructor waits for it (ASan and TSan would see otherwise).
  auto stopped = std::make_unique<MapPool>(topo, map, 2);
  for (int i = 0; i < 50; ++i) stopped->submit(job(i));
  stopped.reset();
}

TEST_F(PipelineTest, AMalformedAnswerIsRejectedAndTheDeviceCountsAsSilent) {
  Pipeline p(topo, map, detector_config);
  PollOutcome out = poll(p, 0);
  ASSERT_THAT(out.rejected, IsEmpty());
  const char* bad = "node_network_up{device=\"eth1\"} 1\nnode_network_up{device=\"eth2\" 1\n";
  const std::string expected = "line 2: expected ',' or '}' after the value of label device";
  for (int n = 1; n <= 2; ++n) {
    fabric.traffic();
    out = poll(p, n, rtsw1_body(bad));
    ASSERT_EQ(out.rejected.size(), 1u);
    EXPECT_EQ(out.rejected[0].first, rtsw1);
    EXPECT_EQ(out.rejected[0].second, expected);
    EXPECT_EQ(out.samples, 2u);         // ctsw1's ports only: nothing of the bad answer is used
    EXPECT_EQ(out.stats.mapped, 14u);   // nor counted
    EXPECT_THAT(out.findings, IsEmpty()) << n;
    EXPECT_THAT(out.link_changes, IsEmpty());
  }
  // Silent since its last good answer at kT0: stale after 30 s.
  fabric.traffic();
  out = poll(p, 3, rtsw1_body(bad));
  ASSERT_EQ(out.findings.size(), 1u);
  const auto& f = out.findings[0];
  EXPECT_EQ(f.kind, FindingKind::telemetry_stale);
  EXPECT_EQ(f.device, rtsw1);
  EXPECT_EQ(f.first_seen, at(0));
  EXPECT_EQ(f.summary, "rtsw1 has not answered for 30.0s (last error: malformed answer: " + expected + ")");
  ASSERT_EQ(out.triage.updates.size(), 1u);
  EXPECT_EQ(out.triage.updates[0].cls, triage::IncidentClass::telemetry_stale);
  EXPECT_EQ(out.triage.updates[0].device, rtsw1);
  EXPECT_TRUE(p.detectors().stale().stale(rtsw1));
  // Once per silence.
  fabric.traffic();
  out = poll(p, 4, rtsw1_body(bad));
  EXPECT_THAT(out.findings, IsEmpty());
}

TEST_F(PipelineTest, AMalformedOpenConfigAnswerIsRejectedWithTheParsersError) {
  Pipeline p(topo, map, detector_config);
  poll(p, 0);
  fabric.traffic();
  const PollOutcome out = poll(p, 1, ctsw1_body("{\"openconfig-interfaces:interfaces\": {\"interface\": [{\"name\": \"eth1\"}"));
  ASSERT_EQ(out.rejected.size(), 1u);
  EXPECT_EQ(out.rejected[0].first, ctsw1);
  EXPECT_THAT(out.rejected[0].second, StartsWith("byte "));
  EXPECT_THAT(out.rejected[0].second, HasSubstr("unexpected end of input"));
  EXPECT_EQ(out.samples, 2u);  // rtsw1's ports
  EXPECT_FALSE(p.detectors().stale().stale(ctsw1));
}

TEST_F(PipelineTest, ADeviceThatDoesNotAnswerIsStaleAfterTheConfiguredTime) {
  detector_config.stale.after = seconds(20);
  Pipeline p(topo, map, detector_config);
  const Overrides silent = rtsw1_silent("connect timeout after 2.0s");
  for (int n = 0; n <= 1; ++n) {
    const PollOutcome out = poll(p, n, silent);
    EXPECT_THAT(out.findings, IsEmpty()) << n;
    EXPECT_THAT(out.rejected, IsEmpty());
    EXPECT_EQ(out.samples, 2u);
  }
  PollOutcome out = poll(p, 2, silent);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].kind, FindingKind::telemetry_stale);
  EXPECT_EQ(out.findings[0].summary, "rtsw1 has not answered for 20.0s (last error: connect timeout after 2.0s)");
  ASSERT_EQ(out.triage.updates.size(), 1u);
  EXPECT_EQ(out.triage.updates[0].cls, triage::IncidentClass::telemetry_stale);
  bind_id(p, out.triage.updates[0], 3);
  EXPECT_THAT(poll(p, 3, silent).findings, IsEmpty());

  // It answers again, then falls silent: counted from its last answer.
  EXPECT_THAT(poll(p, 4).findings, IsEmpty());
  EXPECT_FALSE(p.detectors().stale().stale(rtsw1));
  EXPECT_THAT(poll(p, 5, silent).findings, IsEmpty());
  out = poll(p, 6, silent);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].first_seen, at(4));
  ASSERT_EQ(out.triage.updates.size(), 1u);
  EXPECT_EQ(out.triage.updates[0].incident_id, 3);  // the open incident of that device
}

TEST_F(PipelineTest, CounterResetsMakeNoFalseFindings) {
  Pipeline p(topo, map, detector_config);
  for (auto* dev : {&fabric.rtsw1, &fabric.ctsw1}) {
    for (auto& [name, c] : *dev) {
      c.carrier = 40;
      c.crc = 5000;
    }
  }
  auto reboot = [](std::map<std::string, PortCounters>& dev) {
    for (auto& [name, c] : dev) {
      c.carrier = 1;
      c.crc = 0;
      c.rx_packets = c.tx_packets = 1000;
      c.rx_bytes = c.tx_bytes = 1.5e6;
    }
  };
  for (int n = 0; n <= 7; ++n) {
    if (n > 0) fabric.traffic();
    if (n == 3) reboot(fabric.rtsw1);  // Prometheus side
    if (n == 5) reboot(fabric.ctsw1);  // OpenConfig side
    const PollOutcome out = poll(p, n);
    EXPECT_THAT(out.findings, IsEmpty()) << "poll " << n;
    EXPECT_THAT(out.triage.updates, IsEmpty()) << "poll " << n;
    EXPECT_THAT(out.triage.noted, IsEmpty()) << "poll " << n;
    EXPECT_THAT(out.rejected, IsEmpty());
    if (n > 0) {
      EXPECT_THAT(out.link_changes, IsEmpty()) << "poll " << n;
    }
  }
  // Detection works from the new baseline: a real flap after the reset is seen.
  fabric.traffic();
  fabric.rtsw1["eth1"].carrier += 2;
  const PollOutcome out = poll(p, 8);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].kind, FindingKind::link_flap);
  EXPECT_EQ(out.findings[0].link, l1);
}

// ---------------------------------------------------------------------------------------
// Probe rounds

size_t probe_findings(const PollOutcome& out, fabric::LinkId l) {
  size_t n = 0;
  for (const auto& f : out.findings) n += f.kind == FindingKind::probe_loss && f.link == l ? 1 : 0;
  return n;
}

// A prober's round finished at `t` naming `link` as losing `loss` of its probes.
probes::RoundResult lossy_round(Time t, int round, fabric::LinkId link, double loss) {
  probes::RoundResult r;
  r.at = t;
  r.round = round;
  r.sent = 400;
  r.received = 380;
  r.sessions = 20;
  probes::LinkVerdict v;
  v.link = link;
  v.loss = loss;
  v.confidence = 0.9;
  v.probes = 240;
  v.method = "link-pinned";
  r.verdicts.push_back(v);
  return r;
}

TEST_F(PipelineTest, ProbeRoundsBecomeFindingsThatGoThroughTriage) {
  Pipeline p(topo, map, detector_config);
  poll(p, 0);
  // Counters clean, probes losing 5% across the first link: a gray failure.
  fabric.traffic();
  const std::vector<probes::RoundResult> rounds = {lossy_round(at(1) - seconds(4), 7, l1, 0.05)};
  PollOutcome out = poll(p, 1, {}, rounds);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].kind, FindingKind::probe_loss);
  EXPECT_EQ(out.findings[0].severity, Severity::critical);
  EXPECT_EQ(out.findings[0].link, l1);
  EXPECT_EQ(out.findings[0].observed_at, at(1) - seconds(4));  // when the round ended
  ASSERT_EQ(out.triage.updates.size(), 1u);
  const triage::IncidentUpdate& u = out.triage.updates[0];
  EXPECT_TRUE(u.is_new());
  EXPECT_EQ(u.cls, triage::IncidentClass::gray_failure);
  EXPECT_EQ(u.link, l1);
  EXPECT_EQ(u.severity, Severity::critical);
  EXPECT_FALSE(u.corroborated);
  bind_id(p, u, 1);

  // The same verdict in the next rounds is no news; no rounds at all is no news either.
  fabric.traffic();
  const std::vector<probes::RoundResult> more = {lossy_round(at(2) - seconds(8), 8, l1, 0.05),
                                                 lossy_round(at(2) - seconds(1), 9, l1, 0.06)};
  out = poll(p, 2, {}, more);
  EXPECT_THAT(out.findings, IsEmpty());
  EXPECT_THAT(out.triage.updates, IsEmpty());
  fabric.traffic();
  EXPECT_THAT(poll(p, 3).findings, IsEmpty());

  // Then the counters see corrupted frames on it too: the two signals agree.
  fabric.traffic();
  fabric.rtsw1["eth1"].crc += 500;
  out = poll(p, 4);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].kind, FindingKind::corruption);
  ASSERT_EQ(out.triage.updates.size(), 1u);
  EXPECT_EQ(out.triage.updates[0].incident_id, 1);
  EXPECT_TRUE(out.triage.updates[0].corroborated);
  EXPECT_EQ(out.triage.updates[0].cls, triage::IncidentClass::gray_failure);
  EXPECT_EQ(out.triage.updates[0].started_at, out.findings[0].first_seen);
}

TEST_F(PipelineTest, AProbeVerdictJoinsTheCounterIncidentOfItsLink) {
  Pipeline p(topo, map, detector_config);
  poll(p, 0);
  fabric.traffic();
  fabric.ctsw1["eth2"].crc += 500;
  PollOutcome out = poll(p, 1);
  ASSERT_EQ(out.triage.updates.size(), 1u);
  EXPECT_EQ(out.triage.updates[0].cls, triage::IncidentClass::corruption);
  bind_id(p, out.triage.updates[0], 5);

  fabric.traffic();
  const std::vector<probes::RoundResult> rounds = {lossy_round(at(2), 3, l2, 0.004)};
  out = poll(p, 2, {}, rounds);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].kind, FindingKind::probe_loss);
  EXPECT_EQ(out.findings[0].severity, Severity::warning);
  ASSERT_EQ(out.triage.updates.size(), 1u);
  EXPECT_EQ(out.triage.updates[0].incident_id, 5);
  EXPECT_EQ(out.triage.updates[0].cls, triage::IncidentClass::corruption);
  EXPECT_TRUE(out.triage.updates[0].corroborated);
  EXPECT_EQ(out.triage.updates[0].severity, Severity::critical);
}

TEST_F(PipelineTest, AVerdictOnALinkWhosePortsReportDownIsIgnored) {
  Pipeline p(topo, map, detector_config);
  poll(p, 0);
  // One end of the first link reports oper down: the link is down, and probes across it are
  // lost for that reason, not a gray failure. The second link is up and its verdict counts.
  fabric.traffic();
  fabric.ctsw1["eth1"].up = false;
  fabric.ctsw1["eth1"].carrier += 1;
  std::vector<probes::RoundResult> rounds = {lossy_round(at(1), 1, l1, 1.0)};
  rounds[0].verdicts.push_back(lossy_round(at(1), 1, l2, 0.02).verdicts[0]);
  PollOutcome out = poll(p, 1, {}, rounds);
  EXPECT_EQ(p.link_oper(l1), 0);
  ASSERT_EQ(probe_findings(out, l1), 0u);
  ASSERT_EQ(probe_findings(out, l2), 1u);
  for (const auto& u : out.triage.updates) {
    if (u.cls == triage::IncidentClass::gray_failure) {
      EXPECT_EQ(u.link, l2);
    }
  }

  // Still down a poll later: still nothing from the probes on it.
  fabric.traffic();
  const std::vector<probes::RoundResult> again = {lossy_round(at(2), 2, l1, 1.0)};
  out = poll(p, 2, {}, again);
  EXPECT_EQ(probe_findings(out, l1), 0u);
  EXPECT_THAT(out.triage.updates, IsEmpty());
}

// Most devices unanswered for a while, then all back with counters that moved on
// meanwhile: no device is stale for it, the outage is one finding, and no link finding
// comes from counters that were merely not read.
TEST_F(PipelineTest, ACollectorOutageMakesNoLinkFindingFromCountersItDidNotRead) {
  detector_config.stale.outage_min_devices = 2;  // this fabric has two devices
  Pipeline p(topo, map, detector_config);
  for (int n = 0; n <= 2; ++n) {
    fabric.traffic();
    EXPECT_THAT(poll(p, n).findings, IsEmpty()) << n;
  }
  Overrides gone = rtsw1_silent("timeout after 2000 ms");
  gone.ctsw1_silent = true;
  std::vector<detectors::Finding> during;
  for (int n = 3; n <= 9; ++n) {
    fabric.traffic();
    const PollOutcome out = poll(p, n, gone);
    EXPECT_TRUE(out.telemetry_outage) << n;
    for (const auto& f : out.findings) during.push_back(f);
  }
  ASSERT_EQ(during.size(), 1u);
  EXPECT_EQ(during[0].kind, FindingKind::telemetry_outage);
  EXPECT_FALSE(p.detectors().stale().stale(rtsw1));
  // Back, with 70 s of traffic counted in one interval (nothing flapped or erred: the
  // counters only moved on): the only finding is the outage's end.
  fabric.traffic();
  const PollOutcome back = poll(p, 10);
  EXPECT_FALSE(back.telemetry_outage);
  ASSERT_EQ(back.findings.size(), 1u);
  EXPECT_EQ(back.findings[0].kind, FindingKind::telemetry_outage);
  EXPECT_TRUE(back.findings[0].clears);
  EXPECT_EQ(back.implausible, 0u);
  for (int n = 11; n <= 14; ++n) {
    fabric.traffic();
    EXPECT_THAT(poll(p, n).findings, IsEmpty()) << n;
  }
}

TEST_F(PipelineTest, AnAbsurdSampleIsTheDevicesTelemetryNeverItsLink) {
  Pipeline p(topo, map, detector_config);
  fabric.traffic();
  poll(p, 0);
  fabric.traffic();
  poll(p, 1);
  fabric.traffic();
  fabric.rtsw1["eth1"].carrier = 18446744073709551616.0;  // 2^64 carrier transitions
  const PollOutcome out = poll(p, 2);
  EXPECT_EQ(out.implausible, 1u);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].kind, FindingKind::telemetry_invalid);
  EXPECT_EQ(out.findings[0].link, fabric::kNone);
  EXPECT_EQ(out.findings[0].device, rtsw1);
  ASSERT_EQ(out.triage.updates.size(), 1u);
  EXPECT_EQ(out.triage.updates[0].cls, triage::IncidentClass::telemetry_invalid);
  // The exporter is sound again: no flap, no spike, nothing about the link.
  fabric.rtsw1["eth1"].carrier = 2;
  for (int n = 3; n <= 6; ++n) {
    fabric.traffic();
    for (const auto& f : poll(p, n).findings) EXPECT_NE(f.link, l1) << n << ": " << f.summary;
  }
}

}  // namespace
}  // namespace medic::pipeline
