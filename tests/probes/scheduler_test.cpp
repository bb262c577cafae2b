// medicd's prober against an emulated fabric in this process: one STAMP reflector on
// loopback answers for every link address of the demo fabric, and fabsim's model decides
// each probe's fate (as fabsim itself does), so a fault injected into the model is what the
// prober has to find. Rounds are short (0.5 s, 20 probes per session, 0.3 s timeout); every
// wait is bounded.
#include "probes/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/asio.h"
#include "fabric/generator.h"
#include "fabric/loader.h"
#include "probes/reflector.h"
#include "probes/udp.h"
#include "sim/fabric_sim.h"
#include "tests/support/testing.h"

namespace medic::probes {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

// The demo fabric's reflectors, in-process: fabsim's STAMP policy over a FabricSim, on an
// io_context thread of its own. The topology is generated once the reflector's port is known.
class EmulatedFabric {
 public:
  EmulatedFabric() {
    auto sock = UdpSocket::open(*Endpoint::parse("0.0.0.0:0"));
    if (!sock.ok()) throw std::runtime_error("reflector socket: " + sock.error());
    // Only what arrives on loopback, as fabsim does (best effort, as there).
    const char lo[] = "lo";
    setsockopt(sock->fd(), SOL_SOCKET, SO_BINDTODEVICE, lo, sizeof lo);
    ReflectorOptions ropt;
    ropt.rate_limit_pps = 0;  // one socket answers for the whole fabric
    reflector_ = std::make_unique<Reflector>(io_, std::move(*sock), ropt, clock_);
    port_ = reflector_->local().port();

    fabric::ClosShape shape = *fabric::preset("demo");
    shape.reflector_port = port_;
    topology_ = fabric::generate_clos(shape);
    sim_ = std::make_unique<sim::FabricSim>(topology_, 1);

    reflector_->core().set_policy([this](const Datagram& d, const SenderPacket&) {
      Reflection r;
      const auto src = topology_.find_port_by_ip(d.peer.host());
      const auto dst = d.local ? topology_.find_port_by_ip(d.local->host()) : std::nullopt;
      if (!src || !dst) {
        ++foreign_;
        return r;
      }
      std::lock_guard lock(mu_);
      const sim::ProbeFate fate = sim_->probe(*src, *dst, d.peer.port(), port_, rng_);
      r.answer = fate.delivered;
      r.delay = fate.delay;
      return r;
    });
    reflector_->start();
    thread_ = std::thread([this] { io_.run(); });
  }

  ~EmulatedFabric() {
    asio::post(io_, [this] { reflector_->stop(); });
    work_.reset();
    io_.stop();
    thread_.join();
  }

  const fabric::Topology& topology() const { return topology_; }
  uint16_t port() const { return port_; }
  const ReflectorCounters& reflector_counters() const { return reflector_->counters(); }
  uint64_t foreign() const { return foreign_; }

  // Changes the model between probes (the reflector thread reads it).
  void apply(sim::FaultKind kind, const std::string& end, double value, sim::SimEvent::Phase phase) {
    sim::Fault f;
    f.kind = kind;
    const auto colon = end.find(':');
    f.port = *topology_.find_port(end.substr(0, colon), end.substr(colon + 1));
    f.value = value;
    std::lock_guard lock(mu_);
    sim_->apply(f, phase, seconds_since_start());
  }
  // Blocks the reflector's thread for `d`, as a busy host or a reflector sharing its thread
  // with other work does: what arrives meanwhile is answered late.
  void stall(std::chrono::milliseconds d) {
    asio::post(io_, [d] { std::this_thread::sleep_for(d); });
  }
  void set_link_up(fabric::LinkId l, bool up) {
    std::lock_guard lock(mu_);
    sim_->set_link_up(l, up, seconds_since_start());
  }

 private:
  double seconds_since_start() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

  SystemClock clock_;
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_{asio::make_work_guard(io_)};
  std::unique_ptr<Reflector> reflector_;
  uint16_t port_ = 0;
  fabric::Topology topology_;
  std::unique_ptr<sim::FabricSim> sim_;
  std::mutex mu_;
  std::mt19937_64 rng_{7};
  std::atomic<uint64_t> foreign_{0};
  std::thread thread_;
  const std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

SchedulerConfig short_rounds() {
  SchedulerConfig c;
  c.round_s = 0.5;
  c.per_round = 20;
  c.timeout_s = 0.3;
  return c;
}

// For tests that assert every probe is answered: a reply has a second, not 0.3 s, so a
// reflector thread held up by a loaded machine (ctest runs tests two at a time beside the
// daemons of end-to-end tests) answers late but in time.
SchedulerConfig short_rounds_patient() {
  SchedulerConfig c = short_rounds();
  c.timeout_s = 1.0;
  return c;
}

// Takes rounds until `done` holds for the last one taken (or `timeout` passes); returns all
// rounds taken.
std::vector<RoundResult> rounds_until(ProbeScheduler& s, const std::function<bool(const RoundResult&)>& done,
                                      std::chrono::milliseconds timeout) {
  std::vector<RoundResult> all;
  testing::eventually(
      [&] {
        bool hit = false;
        for (auto& r : s.take_results()) {
          hit = hit || done(r);
          all.push_back(std::move(r));
        }
        return hit;
      },
      timeout);
  return all;
}

std::vector<RoundResult> take_rounds(ProbeScheduler& s, size_t n, std::chrono::milliseconds timeout) {
  std::vector<RoundResult> all;
  testing::eventually(
      [&] {
        for (auto& r : s.take_results()) all.push_back(std::move(r));
        return all.size() >= n;
      },
      timeout);
  return all;
}

const LinkProbeStats* stats_of(const RoundResult& r, fabric::LinkId l) {
  for (const auto& s : r.links) {
    if (s.link == l) return &s;
  }
  return nullptr;
}

// stop() from another thread, waited for a bounded time: true when it returned.
bool stops(ProbeScheduler& s) {
  auto done = std::async(std::launch::async, [&] { s.stop(); });
  return done.wait_for(30s) == std::future_status::ready;
}

class SchedulerTest : public ::testing::Test {
 protected:
  EmulatedFabric emu;
  const fabric::Topology& topo = emu.topology();
  SystemClock clock;
};

TEST_F(SchedulerTest, TheDemoFabricIsProbedEndToEnd) {
  ASSERT_EQ(topo.links().size(), 80u);
  ProbeScheduler s(topo, short_rounds_patient(), clock);
  EXPECT_EQ(s.link_sessions(), 0u);  // nothing planned before start()
  EXPECT_THAT(s.take_results(), IsEmpty());
  ASSERT_TRUE(s.start().ok());
  EXPECT_EQ(s.link_sessions(), 80u);  // every link, from one of its ends
  EXPECT_GT(s.path_sessions(), 0u);
  const size_t sessions = s.link_sessions() + s.path_sessions();

  const auto rounds = take_rounds(s, 3, 60s);
  ASSERT_GE(rounds.size(), 3u) << "no rounds from the prober";
  for (size_t i = 0; i < rounds.size(); ++i) {
    const RoundResult& r = rounds[i];
    SCOPED_TRACE("round " + std::to_string(r.round));
    EXPECT_EQ(r.round, static_cast<int>(i) + 1);  // numbered from 1, none skipped
    EXPECT_EQ(r.sessions, sessions);
    EXPECT_EQ(r.sent, sessions * 20);
    // A healthy fabric answers every probe, and nothing is named.
    EXPECT_EQ(r.received, r.sent);
    EXPECT_THAT(r.verdicts, IsEmpty());
    ASSERT_EQ(r.links.size(), 80u);
    for (const auto& l : r.links) {
      EXPECT_EQ(l.lost, 0u) << topo.link(l.link).name;
      EXPECT_EQ(l.sent, 20u * static_cast<uint64_t>(std::min<int>(r.round, 6))) << topo.link(l.link).name;
      EXPECT_EQ(l.rtts, l.sent) << topo.link(l.link).name;  // every answer timed (20 a round, under 64)
      EXPECT_GT(l.rtt_p50_s, 0) << topo.link(l.link).name;
      EXPECT_LE(l.rtt_min_s, l.rtt_p25_s);
      EXPECT_LE(l.rtt_p25_s, l.rtt_p50_s);
      EXPECT_LE(l.rtt_p50_s, l.rtt_p99_s);
    }
    if (i > 0) {
      EXPECT_GE(r.at, rounds[i - 1].at);
    }
  }
  // Every link shows up once.
  std::vector<fabric::LinkId> seen;
  for (const auto& l : rounds.back().links) seen.push_back(l.link);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end());

  // Counters moved with the rounds (and the reflector saw the probes, all of this fabric's).
  const auto& c = s.counters();
  EXPECT_GE(c.rounds.load(), 3u);
  uint64_t sent = 0, received = 0;
  for (const auto& r : rounds) {
    sent += r.sent;
    received += r.received;
  }
  EXPECT_GE(c.sent.load(), sent);
  EXPECT_GE(c.received.load(), received);
  EXPECT_EQ(c.send_failed.load(), 0u);
  EXPECT_GE(emu.reflector_counters().reflected.load(), received);
  EXPECT_EQ(emu.reflector_counters().dropped_by_policy.load(), 0u);
  EXPECT_EQ(emu.foreign(), 0u);

  ASSERT_TRUE(stops(s)) << "stop() did not return";
  // Stopped: the thread is gone, so nothing moves any more; a second stop is harmless.
  const uint64_t after = s.counters().sent.load();
  s.take_results();
  s.stop();
  EXPECT_EQ(s.counters().sent.load(), after);
}

// Round-trip times: every answer of a round is kept up to 64, a uniform sample of them past
// that (here 100 probes a session a round). A link whose far end holds probes 30 ms shows
// it in its p50 and p99 and only there; the healthy links stay far below. Link-pinned
// sessions only (theirs are the times kept), 4,000 probes/s: at the 21,000/s that path
// sessions add, the emulator's reflector under ASan, beside other tests, queued every
// answer past 30 ms.
TEST_F(SchedulerTest, RoundTripTimesPastTheSixtyFourKeptStillShowASlowLink) {
  const std::string end = "rtsw0002:eth6";
  const fabric::LinkId slow = *topo.find_link(end);
  SchedulerConfig c = short_rounds();
  c.paths = false;
  c.per_round = 100;
  c.round_s = 2.0;
  c.timeout_s = 1.0;
  emu.apply(sim::FaultKind::probe_delay, end, 30, sim::SimEvent::Phase::start);
  ProbeScheduler s(topo, c, clock);
  ASSERT_TRUE(s.start().ok());
  const auto rounds = take_rounds(s, 2, 60s);
  ASSERT_GE(rounds.size(), 2u);
  const RoundResult& r = rounds.back();
  EXPECT_EQ(r.received, r.sent);
  const LinkProbeStats* st = stats_of(r, slow);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->sent, 200u);  // two rounds of 100
  EXPECT_EQ(st->rtts, 128u);  // 64 of each round's 100 kept
  EXPECT_GE(st->rtt_p25_s, 0.030);  // every probe across it held
  EXPECT_GE(st->rtt_p50_s, st->rtt_p25_s);
  EXPECT_GE(st->rtt_p99_s, st->rtt_p50_s);
  EXPECT_LE(st->rtt_min_s, st->rtt_p50_s);
  size_t fast = 0;
  for (const auto& l : r.links) {
    if (l.link == slow) continue;
    EXPECT_GT(l.rtt_p50_s, 0) << topo.link(l.link).name;
    EXPECT_LE(l.rtt_min_s, l.rtt_p25_s) << topo.link(l.link).name;
    EXPECT_LE(l.rtt_p25_s, l.rtt_p50_s) << topo.link(l.link).name;
    EXPECT_LE(l.rtt_p50_s, l.rtt_p99_s) << topo.link(l.link).name;
    if (l.rtt_p50_s < 0.030) ++fast;
  }
  // Paths through the slow end are not these links' sessions: none of them is held.
  EXPECT_EQ(fast, r.links.size() - 1);
}

// A reflector that stalls now and then (its host busy) answers a run of consecutive probes
// too late: those are lost, but on sessions of every endpoint alike, so no reflector is
// named and no link is blamed (the probes of a pass are sent in a fresh random order).
TEST_F(SchedulerTest, AReflectorThatStallsNowAndThenNamesNoReflectorAndNoLink) {
  ProbeScheduler s(topo, short_rounds(), clock);
  ASSERT_TRUE(s.start().ok());
  ASSERT_FALSE(take_rounds(s, 1, 60s).empty());
  std::atomic<bool> done{false};
  std::atomic<int> stalls{0};
  std::thread staller([&] {
    std::mt19937 rng(11);
    // About one stall of 400-600 ms per round (longer than the 0.3 s timeout: what arrives
    // early in it is answered too late), at a random point of it; 12 of them.
    for (int i = 0; i < 12 && !done; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250 + rng() % 500));
      emu.stall(std::chrono::milliseconds(400 + rng() % 200));
      ++stalls;
    }
  });
  const auto rounds = take_rounds(s, 14, 90s);
  done = true;
  staller.join();
  ASSERT_GE(rounds.size(), 14u);
  EXPECT_GE(stalls.load(), 12);
  uint64_t sent = 0, received = 0;
  for (const auto& r : rounds) {
    sent += r.sent;
    received += r.received;
    for (const auto& e : r.endpoints) {
      EXPECT_NE(e.kind, ProbeEndpoint::Kind::reflector) << "round " << r.round << " named reflector " << e.name;
    }
    for (const auto& v : r.verdicts) {
      ADD_FAILURE() << "round " << r.round << " blamed " << topo.link(v.link).name << " (" << v.method << ")";
    }
  }
  EXPECT_LT(received, sent) << "the stalls lost no probe: the test did not stall anything";
  ASSERT_TRUE(stops(s));
}

// A lossy ToR uplink lies under many of the probes into the hosts below that ToR: the
// link is blamed, never the reflector of a host under it (which would look lossy "alike").
TEST_F(SchedulerTest, AGrayUplinkNamesNoReflectorOfTheHostsBelowIt) {
  ProbeScheduler s(topo, short_rounds(), clock);
  ASSERT_TRUE(s.start().ok());
  emu.apply(sim::FaultKind::probe_loss, "rtsw0002:eth6", 0.1, sim::SimEvent::Phase::start);
  const auto rounds = take_rounds(s, 30, 120s);
  ASSERT_GE(rounds.size(), 30u);
  int blamed = 0;
  for (const auto& r : rounds) {
    for (const auto& e : r.endpoints) {
      ADD_FAILURE() << "round " << r.round << " named " << e.name << " (loss " << e.loss << ", "
                    << e.observations << " sessions, " << e.probes << " probes)";
    }
    for (const auto& v : r.verdicts) {
      EXPECT_EQ(topo.link(v.link).name, topo.link(*topo.find_link("rtsw0002:eth6")).name);
      ++blamed;
    }
  }
  EXPECT_GT(blamed, 0);
  ASSERT_TRUE(stops(s));
}

TEST_F(SchedulerTest, ProbeLossOnOneEndIsLocalizedToItsLink) {
  const std::string end = "rtsw0002:eth6";  // a ToR uplink, losing what it receives from its spine
  const fabric::LinkId bad = *topo.find_link(end);
  ProbeScheduler s(topo, short_rounds(), clock);
  ASSERT_TRUE(s.start().ok());
  const auto clean = take_rounds(s, 1, 60s);
  ASSERT_FALSE(clean.empty());
  EXPECT_THAT(clean.back().verdicts, IsEmpty());

  emu.apply(sim::FaultKind::probe_loss, end, 0.2, sim::SimEvent::Phase::start);
  const auto rounds = rounds_until(s, [](const RoundResult& r) { return !r.verdicts.empty(); }, 60s);
  ASSERT_FALSE(rounds.empty());
  ASSERT_FALSE(rounds.back().verdicts.empty()) << "no verdict within " << rounds.size() << " rounds";
  EXPECT_LE(rounds.size(), 4u) << "took " << rounds.size() << " rounds";
  // The first verdict may come from a round that began before the fault did, and its window
  // still holds clean rounds before that. The verdict holds in every round after it; the one
  // whose window is all under the fault is the one whose figures are judged.
  const size_t window = static_cast<size_t>(short_rounds().window_rounds);
  const auto full = take_rounds(s, window, 90s);
  ASSERT_GE(full.size(), window);
  for (const auto& x : full) {
    ASSERT_EQ(x.verdicts.size(), 1u) << "round " << x.round << " after the first verdict named "
                                     << x.verdicts.size() << " links";
    EXPECT_EQ(x.verdicts[0].link, bad) << "round " << x.round << " named " << topo.link(x.verdicts[0].link).name;
  }
  const RoundResult& r = full.back();
  const LinkVerdict& v = r.verdicts[0];
  EXPECT_EQ(topo.link(v.link).name, topo.link(bad).name);
  // One direction loses 20%, so the link's own session (a round trip across it, from either
  // end) loses about that: within 5 standard deviations of 0.2 for its window's probes.
  const LinkProbeStats* st = stats_of(r, bad);
  ASSERT_NE(st, nullptr);
  // Every round of the window, less any the prober lost to the measurement (an outage
  // round, left out).
  ASSERT_GT(st->sent, 0u);
  ASSERT_LE(st->sent, window * short_rounds().per_round);
  const double rate = static_cast<double>(st->lost) / static_cast<double>(st->sent);
  EXPECT_NEAR(rate, 0.2, 5 * std::sqrt(0.2 * 0.8 / static_cast<double>(st->sent)));
  // The verdict's estimate also counts the paths crossing the link the other way, which
  // lose nothing: less than 0.2 (a median of 0.12 over 80 runs, the lowest 0.058; which way
  // the paths cross depends on the source ports the prober got), but never less than what
  // the link's own session lost, and never nothing.
  EXPECT_GE(v.loss * static_cast<double>(v.probes), static_cast<double>(st->lost) - 0.5);
  EXPECT_GT(v.loss, 0.01);
  EXPECT_LT(v.loss, 0.4);
  EXPECT_GE(v.confidence, 0.5);
  EXPECT_GT(v.probes, 0u);
  EXPECT_THAT(v.method, StartsWith("link-pinned"));
  EXPECT_LT(r.received, r.sent);

  // It stays named while the fault lasts, and is no longer once the window has only clean
  // rounds in it.
  emu.apply(sim::FaultKind::probe_loss, end, 0.2, sim::SimEvent::Phase::end);
  const auto after = rounds_until(
      s,
      [&](const RoundResult& x) {
        const LinkProbeStats* ls = stats_of(x, bad);
        return x.verdicts.empty() && ls != nullptr && ls->lost == 0 && x.received == x.sent;
      },
      60s);
  ASSERT_FALSE(after.empty());
  EXPECT_THAT(after.back().verdicts, IsEmpty());
  EXPECT_EQ(after.back().received, after.back().sent) << "no round answered every probe after the fault ended";
  for (const auto& x : after) {
    for (const auto& w : x.verdicts) EXPECT_EQ(w.link, bad) << "round " << x.round << " named " << topo.link(w.link).name;
  }
  EXPECT_GT(s.counters().received.load(), 0u);
  EXPECT_LT(s.counters().received.load(), s.counters().sent.load());
  ASSERT_TRUE(stops(s));
}

TEST_F(SchedulerTest, ADownLinkLosesEverything) {
  const fabric::LinkId down = *topo.find_link("rtsw0005:eth7");
  ProbeScheduler s(topo, short_rounds(), clock);
  ASSERT_TRUE(s.start().ok());
  ASSERT_FALSE(take_rounds(s, 1, 60s).empty());

  emu.set_link_up(down, false);
  // Until the window holds only rounds after the link went down.
  const auto rounds = rounds_until(
      s,
      [&](const RoundResult& r) {
        const LinkProbeStats* st = stats_of(r, down);
        return st != nullptr && st->sent == 120 && st->lost == st->sent;
      },
      60s);
  ASSERT_FALSE(rounds.empty());
  const RoundResult& r = rounds.back();
  const LinkProbeStats* st = stats_of(r, down);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->lost, st->sent) << "window not yet all down after " << rounds.size() << " rounds";
  EXPECT_EQ(st->rtt_p50_s, 0);  // nothing came back to time
  EXPECT_EQ(st->rtt_p25_s, 0);
  EXPECT_EQ(st->rtts, 0u);
  ASSERT_FALSE(r.verdicts.empty());
  EXPECT_EQ(topo.link(r.verdicts[0].link).name, topo.link(down).name);
  EXPECT_GT(r.verdicts[0].loss, 0.5);
  EXPECT_GE(r.verdicts[0].confidence, 0.5);
  for (const auto& v : r.verdicts) EXPECT_EQ(v.link, down) << "also named " << topo.link(v.link).name;
  EXPECT_LT(r.received, r.sent);
  // The other links still answer.
  for (const auto& l : r.links) {
    if (l.link != down) {
      EXPECT_EQ(l.lost, 0u) << topo.link(l.link).name;
    }
  }
  ASSERT_TRUE(stops(s));
}

// The same down link, with the poll loop telling the prober what telemetry saw: the
// sessions crossing it leave out the rounds it was down in, so nothing is named (the link
// is the flap and down detectors'); once it is up again and its rounds leave the window,
// its session counts again.
TEST_F(SchedulerTest, RoundsInWhichTelemetrySawALinkDownAreLeftOutOfItsSessions) {
  const fabric::LinkId down = *topo.find_link("rtsw0005:eth7");
  ProbeScheduler s(topo, short_rounds(), clock);
  ASSERT_TRUE(s.start().ok());
  ASSERT_FALSE(take_rounds(s, 1, 60s).empty());

  const Duration from = clock.monotonic();
  emu.set_link_up(down, false);
  // The poll loop's note: the link's carrier changed between two readings. Polls see the
  // link going down, then (as a flapping link does) its carrier changing again, poll after
  // poll, each a span from the last reading.
  Duration last = from;
  auto note = [&](Duration to) {
    const std::vector<LinkDownSpan> spans{{down, last, to}};
    s.note_telemetry(spans, clock.monotonic());
    last = to;
  };
  std::vector<RoundResult> rounds;
  testing::eventually(
      [&] {
        note(clock.monotonic());
        for (auto& r : s.take_results()) rounds.push_back(std::move(r));
        return rounds.size() >= 4;
      },
      60s);
  ASSERT_GE(rounds.size(), 4u);
  uint64_t lost = 0, sent = 0;
  for (const auto& r : rounds) {
    EXPECT_THAT(r.verdicts, IsEmpty()) << "round " << r.round << " named " << topo.link(r.verdicts[0].link).name;
    EXPECT_THAT(r.endpoints, IsEmpty()) << "round " << r.round << " named " << r.endpoints[0].name;
    lost += r.sent - r.received;
    sent += r.sent;
  }
  EXPECT_GT(lost, 0u) << "the link was down: probes across it were lost (of " << sent << ")";
  const LinkProbeStats* st = stats_of(rounds.back(), down);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->lost, 0u);  // its rounds down are left out, the rounds before were clean
  EXPECT_GT(s.counters().rounds_left_to_down_links.load(), 0u);

  // Up again, the last note ends now: rounds after it count, and come back clean.
  emu.set_link_up(down, true);
  const Time up_at = clock.now();
  note(clock.monotonic());
  const auto after = rounds_until(
      s,
      [&](const RoundResult& r) {
        const LinkProbeStats* ls = stats_of(r, down);
        return r.window_from > up_at && ls != nullptr && ls->sent > 0;
      },
      60s);
  ASSERT_FALSE(after.empty());
  const LinkProbeStats* ls = stats_of(after.back(), down);
  ASSERT_NE(ls, nullptr);
  EXPECT_GT(ls->sent, 0u) << "its session counts again once the down rounds left the window";
  for (const auto& r : after) EXPECT_THAT(r.verdicts, IsEmpty()) << "round " << r.round;
  ASSERT_TRUE(stops(s));
}

// Fed by the poll loop, a round is judged only once telemetry was read past its end (at most
// telemetry_wait_s later): while the polls stall, rounds wait; when they read on, they close.
TEST_F(SchedulerTest, ARoundWaitsForTelemetryReadPastItsEnd) {
  SchedulerConfig c = short_rounds();
  c.telemetry_wait_s = 600;
  ProbeScheduler s(topo, c, clock);
  ASSERT_TRUE(s.start().ok());
  ASSERT_FALSE(take_rounds(s, 1, 60s).empty());
  s.note_telemetry({}, clock.monotonic());  // read up to now, then the polls stall
  (void)s.take_results();
  // Rounds of 0.5 s: ten of them would close in these 5 s; none may while nothing is read.
  std::this_thread::sleep_for(5s);
  EXPECT_LE(s.take_results().size(), 1u);  // the round under way at the note may close
  // Reading on: rounds close again.
  std::vector<RoundResult> later;
  testing::eventually(
      [&] {
        s.note_telemetry({}, clock.monotonic());
        for (auto& r : s.take_results()) later.push_back(std::move(r));
        return later.size() >= 2;
      },
      60s);
  EXPECT_GE(later.size(), 2u);
  ASSERT_TRUE(stops(s));
}

// What the prober's system calls carried, for a failure's message.
std::string calls(const SchedulerCounters& k) {
  return "sent " + std::to_string(k.sent.load()) + ", send calls " + std::to_string(k.send_calls.load()) +
         ", received " + std::to_string(k.received.load()) + ", receive calls " +
         std::to_string(k.receive_calls.load()) + ", ticks " + std::to_string(k.ticks.load());
}

// The prober wakes once a tick, whatever the probe rate, and sends what fell due in one
// sendmmsg per socket and reads replies a recvmmsg per socket: the demo fabric's link
// sessions (one socket, 80 sessions x 20 probes per 0.5 s round: 3,200 probes/s) go out
// several to a system call, not one probe per send, per read and per wake-up as when the
// prober woke for every reply. What is measured does not change: every probe answered.
TEST_F(SchedulerTest, ProbesGoOutAndComeBackInBatchesOncePerTick) {
  SchedulerConfig c = short_rounds_patient();
  c.paths = false;
  c.tick_s = 0.005;  // 16 probes a tick on average
  ProbeScheduler s(topo, c, clock);
  ASSERT_TRUE(s.start().ok());
  ASSERT_EQ(s.link_sessions(), 80u);
  const auto rounds = take_rounds(s, 2, 60s);
  ASSERT_TRUE(stops(s));
  ASSERT_GE(rounds.size(), 2u);
  for (const auto& r : rounds) {
    EXPECT_EQ(r.sent, 80u * 20u);
    EXPECT_EQ(r.received, r.sent);
  }
  const auto& k = s.counters();
  const uint64_t rounds_run = k.rounds.load() + 1;  // the one under way when stopped
  SCOPED_TRACE(calls(k));
  // A round is 0.5 s of sending and 1 s of waiting for stragglers: at most 300 ticks of
  // 5 ms (a late tick is not made up for), and a send and a read per tick at most.
  EXPECT_LE(k.ticks.load(), rounds_run * static_cast<uint64_t>((c.round_s + c.timeout_s) / c.tick_s + 5));
  EXPECT_LE(k.send_calls.load(), k.ticks.load());
  EXPECT_LE(k.receive_calls.load(), k.ticks.load());
  EXPECT_GE(k.sent.load(), 4 * k.send_calls.load());
  EXPECT_GE(k.received.load(), 4 * k.receive_calls.load());
  EXPECT_EQ(k.send_failed.load(), 0u);
  EXPECT_EQ(k.late_or_foreign.load(), 0u);
}

// Path sessions leave from a socket per source port (the ECMP sweep), so a tick's probes,
// drawn at random from all sessions, would each go to another socket: on zone32k, about a
// sendmmsg and a recvmmsg a probe. A pass visits the sessions in random runs of one socket's
// sessions instead, so they still go out many to a system call, and every probe is
// answered. Here 129 path sessions share 4 source ports (zone32k: about 130 a port), about
// 26 probes a tick: drawn at random they would take about 4 calls a tick, 6 or 7 probes each.
TEST_F(SchedulerTest, PathProbesAlsoGoOutManyToASystemCall) {
  SchedulerConfig c = short_rounds_patient();
  c.link_pinned = false;
  c.tick_s = 0.005;
  c.plan.sport_count = 4;
  ProbeScheduler s(topo, c, clock);
  ASSERT_TRUE(s.start().ok());
  ASSERT_GT(s.path_sessions(), 100u);
  const auto rounds = take_rounds(s, 2, 60s);
  ASSERT_TRUE(stops(s));
  ASSERT_GE(rounds.size(), 2u);
  for (const auto& r : rounds) EXPECT_EQ(r.received, r.sent);
  const auto& k = s.counters();
  SCOPED_TRACE(calls(k));
  EXPECT_GE(k.sent.load(), 10 * k.send_calls.load());
  EXPECT_GE(k.received.load(), 10 * k.receive_calls.load());
  EXPECT_EQ(k.send_failed.load(), 0u);
}

TEST(SchedulerNoFabric, NoProbeSourcesMeansNoSessions) {
  fabric::ClosShape shape = *fabric::preset("demo");
  shape.address_base = "";  // no link addresses, no probe sources
  const fabric::Topology t = fabric::generate_clos(shape);
  SystemClock clock;
  ProbeScheduler s(t, short_rounds(), clock);
  ASSERT_TRUE(s.start().ok());
  EXPECT_EQ(s.link_sessions(), 0u);
  EXPECT_EQ(s.path_sessions(), 0u);
  EXPECT_THAT(s.take_results(), IsEmpty());
  ASSERT_TRUE(stops(s));
  EXPECT_EQ(s.counters().rounds.load(), 0u);
  EXPECT_EQ(s.counters().sent.load(), 0u);
}

TEST(SchedulerNoFabric, OnlyLinkPinnedOrOnlyPaths) {
  fabric::ClosShape shape = *fabric::preset("demo");
  shape.reflector_port = testing::closed_port();  // nothing answers: this test only plans
  const fabric::Topology t = fabric::generate_clos(shape);
  SystemClock clock;
  SchedulerConfig pinned = short_rounds();
  pinned.paths = false;
  ProbeScheduler a(t, pinned, clock);
  ASSERT_TRUE(a.start().ok());
  EXPECT_EQ(a.link_sessions(), 80u);
  EXPECT_EQ(a.path_sessions(), 0u);
  ASSERT_TRUE(stops(a));
  SchedulerConfig paths = short_rounds();
  paths.link_pinned = false;
  ProbeScheduler b(t, paths, clock);
  ASSERT_TRUE(b.start().ok());
  EXPECT_EQ(b.link_sessions(), 0u);
  EXPECT_GT(b.path_sessions(), 0u);
  ASSERT_TRUE(stops(b));
}

TEST(SchedulerNoFabric, AProbeSourceThatCannotBeOpenedIsNamed) {
  nlohmann::json doc = fabric::topology_to_json(fabric::generate_clos(*fabric::preset("demo")));
  for (const char* kind : {"switches", "hosts"}) {
    for (auto& d : doc[kind]) d["probe"]["source"] = "netns:medic-test-no-such-netns";
  }
  const fabric::Topology t = fabric::parse_topology(doc.dump(), "netns.json");
  SystemClock clock;
  ProbeScheduler s(t, short_rounds(), clock);
  const Status st = s.start();
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.error(), StartsWith("probe socket for netns:medic-test-no-such-netns port 0: "));
  EXPECT_THAT(st.error(), HasSubstr("medic-test-no-such-netns"));
  ASSERT_TRUE(stops(s));
}

TEST(SchedulerConfig, RejectsBadValues) {
  auto error_of = [](SchedulerConfig c) -> std::string {
    try {
      c.validate();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of(SchedulerConfig{}), "");
  SchedulerConfig c;
  c.round_s = 0;
  EXPECT_EQ(error_of(c), "probe round must be positive");
  c = {};
  c.per_round = 0;
  EXPECT_EQ(error_of(c), "probes per round must be at least 1");
  c = {};
  c.max_rate = -1;
  EXPECT_EQ(error_of(c), "probe rate must be positive");
  c = {};
  c.timeout_s = 0;
  EXPECT_EQ(error_of(c), "probe timeout must be positive");
  c = {};
  c.window_rounds = 0;
  EXPECT_EQ(error_of(c), "probe window must be at least one round");
  c = {};
  c.tick_s = 0;
  EXPECT_EQ(error_of(c), "probe tick must be within (0, 0.1] seconds");
  c.tick_s = 0.5;
  EXPECT_EQ(error_of(c), "probe tick must be within (0, 0.1] seconds");
  // The scheduler validates what it is given.
  const fabric::Topology t = fabric::generate_clos(*fabric::preset("demo"));
  SystemClock clock;
  c = {};
  c.per_round = 0;
  EXPECT_THROW(ProbeScheduler(t, c, clock), std::invalid_argument);
}

}  // namespace
}  // namespace medic::probes
