// bench/localize: how well and how fast loss localization names the lossy links of the
// zone32k fabric from one round of probes, on one core.
//
//   build/bench/bench_localize [--trials N] [--probes-per-flow N] [--pinned-probes N] [--seed S] [--verbose]
//
// The probe plan is the default one (every link pinned, 4 path flows per GPU NIC, topped up
// to 3 flows per link). Each trial injects 1-8 lossy links chosen uniformly among all links,
// with loss rates log-uniform in [0.5%, 5%] per direction, over a background loss of 1e-6
// on every link, and draws every probe's fate: a probe is lost if it is lost on the way out
// or on the way back (over the same links reversed). Localization runs twice on the same
// draws: with the link-pinned probes, and from the path probes alone (the harder case).
// Prints true/false positives and misses against the injected links, precision, recall and
// the CPU time of localize() per trial; --verbose lists every false positive and miss.
//
// A third run on the same draws gives localize() the observations' measurement endpoints
// as medicd does (one prober, a reflector per device probed): the links it names must be
// the same and no endpoint may be named. Then measurement faults: a dead reflector (a
// random switch or host) beside 1-3 lossy links, and a prober losing 0.5-5% of everything
// alike: the endpoint must be named, and no link but the injected ones. Then stray
// timeouts of a loaded host and nothing else: every probe lost with the same small chance
// (2.5e-4, what bench/load saw once on zone32k), no lossy link: nothing may be named. Last,
// a wave of 1% of the links lossy at once (bench/load's share): no endpoint may be named,
// and beside it a dead reflector still must be.
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "bench/measure.h"
#include "common/random.h"
#include "fabric/generator.h"
#include "probes/ecmp.h"
#include "probes/localize.h"
#include "probes/plan.h"

using namespace medic;
using fabric::LinkId;

namespace {

using namespace medic::bench;  // thread_cpu_s: precise for runs of a few milliseconds

constexpr double kBackground = 1e-6;
constexpr double kMinLoss = 0.005, kMaxLoss = 0.05;

using Rng = SplitMix64;

// Binomial(n, p) by waiting times between losses: exact, and fast when n * p is small, as
// it is here (a handful of losses per hundred probes at most).
uint64_t binomial(Rng& rng, uint64_t n, double p) {
  if (!(p > 0) || n == 0) return 0;
  if (p >= 1) return n;
  if (p > 0.5) return n - binomial(rng, n, 1 - p);
  const double log_q = std::log1p(-p);
  uint64_t lost = 0;
  double at = 0;
  for (;;) {
    at += std::floor(std::log(1 - rng.uniform()) / log_q) + 1;
    if (at > static_cast<double>(n)) return lost;
    ++lost;
  }
}

struct Score {
  uint64_t tp = 0, fp = 0, fn = 0;
  double seconds = 0, worst = 0;
  uint64_t fn_by_kind[3] = {0, 0, 0};
  double precision() const { return tp + fp ? static_cast<double>(tp) / static_cast<double>(tp + fp) : 1.0; }
  double recall() const { return tp + fn ? static_cast<double>(tp) / static_cast<double>(tp + fn) : 1.0; }
};

}  // namespace

int main(int argc, char** argv) {
  int trials = 200;
  uint64_t per_flow = 100, per_link = 100, seed = 1;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    auto value = [&](const char* name) -> const char* {
      if (std::strcmp(argv[i], name) || i + 1 >= argc) return nullptr;
      return argv[++i];
    };
    if (const char* v = value("--trials")) {
      trials = std::atoi(v);
    } else if (const char* v = value("--probes-per-flow")) {
      per_flow = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--pinned-probes")) {
      per_link = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--seed")) {
      seed = std::strtoull(v, nullptr, 10);
    } else if (!std::strcmp(argv[i], "--verbose")) {
      verbose = true;
    } else {
      std::fprintf(stderr,
                   "usage: bench_localize [--trials N] [--probes-per-flow N] [--pinned-probes N] [--seed S] [--verbose]\n");
      return 2;
    }
  }
  if (trials < 1 || per_flow < 1 || per_link < 1) {
    std::fprintf(stderr, "bench_localize: --trials and the probe counts must be at least 1\n");
    return 2;
  }
  // One core, as the target is stated.
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  sched_setaffinity(0, sizeof one, &one);

  const fabric::Topology topo = fabric::generate_clos(*fabric::preset("zone32k"));
  const size_t n_links = topo.links().size();
  // What kind of link each is, for the misses: 0 host NIC, 1 ToR uplink, 2 spine uplink.
  std::vector<uint8_t> kind(n_links);
  for (LinkId l = 0; l < n_links; ++l) {
    const auto ra = topo.device(topo.port(topo.link(l).a).device).role;
    const auto rb = topo.device(topo.port(topo.link(l).b).device).role;
    kind[l] = (ra == fabric::Role::host || rb == fabric::Role::host)   ? 0
              : (ra == fabric::Role::atsw || rb == fabric::Role::atsw) ? 2
                                                                       : 1;
  }

  const double plan_start = thread_cpu_s();
  probes::EcmpModel ecmp(topo, seed);
  const probes::ProbePlan plan = probes::make_plan(topo, ecmp);
  std::vector<probes::PathObservation> paths(plan.flows.size());
  for (size_t i = 0; i < plan.flows.size(); ++i) {
    paths[i].candidates.push_back(ecmp.path_of(plan.flows[i]));
    paths[i].sent = per_flow;
  }
  std::vector<probes::LinkObservation> pinned(plan.pinned.size());
  for (size_t i = 0; i < plan.pinned.size(); ++i) pinned[i] = {plan.pinned[i], per_link, 0};
  // The measurement endpoints, as medicd's prober has them: one probe source, and the
  // reflector of every device probed.
  std::vector<probes::ProbeEndpoint> endpoints{{probes::ProbeEndpoint::Kind::sender, "local", fabric::kNone}};
  std::vector<uint32_t> reflector_of(topo.devices().size(), probes::kNoEndpoint);
  auto reflector = [&](fabric::PortId p) {
    const fabric::DeviceId d = topo.port(p).device;
    if (reflector_of[d] == probes::kNoEndpoint) {
      reflector_of[d] = static_cast<uint32_t>(endpoints.size());
      endpoints.push_back({probes::ProbeEndpoint::Kind::reflector, topo.device(d).name, d});
    }
    return reflector_of[d];
  };
  for (size_t i = 0; i < plan.flows.size(); ++i) {
    paths[i].sender = 0;
    paths[i].reflector = reflector(plan.flows[i].dst);
  }
  for (auto& o : pinned) {
    o.sender = 0;
    o.reflector = reflector(topo.link(o.link).b);
  }
  const double plan_seconds = thread_cpu_s() - plan_start;
  const uint64_t round = plan.flows.size() * per_flow + plan.pinned.size() * per_link;

  std::printf("bench_localize: zone32k, %zu devices, %zu links, one core\n", topo.devices().size(), n_links);
  std::printf("probe plan (%.2f s CPU to make and trace): %zu link-pinned sessions x %llu probes + %zu path flows x %llu probes\n",
              plan_seconds, plan.pinned.size(), static_cast<unsigned long long>(per_link), plan.flows.size(),
              static_cast<unsigned long long>(per_flow));
  std::printf("probes per round: %llu (%llu without the link-pinned ones)\n", static_cast<unsigned long long>(round),
              static_cast<unsigned long long>(plan.flows.size() * per_flow));
  std::printf("trials: %d; each 1-8 lossy links, loss log-uniform in [0.5%%, 5%%] per direction, background %.0e per link\n",
              trials, kBackground);
  std::fflush(stdout);

  Rng rng(seed * 0x2545f4914f6cdd1dULL + 17);
  std::vector<double> loss(n_links, kBackground);
  // Every observation's fate under `loss`, the reflector `dead` answering nothing: a probe
  // is lost on the way out or on the way back.
  auto draw = [&](Rng& r, uint32_t dead) {
    for (auto& o : paths) {
      double deliver = 1;
      for (LinkId l : o.candidates.front()) deliver *= 1 - loss[l];
      o.lost = o.reflector == dead ? per_flow : binomial(r, per_flow, 1 - deliver * deliver);
    }
    for (auto& o : pinned) {
      o.lost = o.reflector == dead ? per_link : binomial(r, per_link, 1 - (1 - loss[o.link]) * (1 - loss[o.link]));
    }
  };
  Score with_pinned, path_only, with_endpoints;
  uint64_t endpoint_false_positives = 0;
  uint64_t injected_total = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const size_t m = 1 + rng.below(8);
    std::set<LinkId> injected;
    while (injected.size() < m) injected.insert(static_cast<LinkId>(rng.below(n_links)));
    for (LinkId l : injected) loss[l] = std::exp(std::log(kMinLoss) + rng.uniform() * std::log(kMaxLoss / kMinLoss));
    injected_total += m;

    draw(rng, probes::kNoEndpoint);

    auto run = [&](Score& s, std::span<const probes::LinkObservation> links, bool measured = false) {
      const double t0 = thread_cpu_s();
      std::vector<probes::LinkVerdict> verdicts;
      if (measured) {
        auto loc = probes::localize(topo, links, paths, {}, endpoints);
        endpoint_false_positives += loc.endpoints.size();
        if (verbose) {
          for (const auto& e : loc.endpoints) std::printf("  trial %d: false endpoint %s (loss %.4f)\n", trial, e.name.c_str(), e.loss);
        }
        verdicts = std::move(loc.links);
      } else {
        verdicts = probes::localize(topo, links, paths);
      }
      const double dt = thread_cpu_s() - t0;
      s.seconds += dt;
      s.worst = std::max(s.worst, dt);
      std::set<LinkId> named;
      for (const auto& v : verdicts) named.insert(v.link);
      for (LinkId l : named) (injected.count(l) ? s.tp : s.fp)++;
      for (LinkId l : injected) {
        if (!named.count(l)) {
          ++s.fn;
          ++s.fn_by_kind[kind[l]];
        }
      }
      if (verbose) {
        const char* what = links.empty() ? "path only" : "pinned+path";
        for (const auto& v : verdicts) {
          if (injected.count(v.link)) continue;
          std::printf("  trial %d %s: false positive %s (loss %.4f, confidence %.2f, %llu probes, %llu lossy paths, %s)\n",
                      trial, what, topo.link(v.link).name.c_str(), v.loss, v.confidence,
                      static_cast<unsigned long long>(v.probes), static_cast<unsigned long long>(v.lossy_paths),
                      v.method.c_str());
        }
        for (LinkId l : injected) {
          if (named.count(l)) continue;
          uint64_t lost = 0, sent = 0, flows = 0, lossy_flows = 0;
          for (const auto& o : paths) {
            const auto& p = o.candidates.front();
            if (std::find(p.begin(), p.end(), l) == p.end()) continue;
            lost += o.lost;
            sent += o.sent;
            ++flows;
            lossy_flows += o.lost > 0;
          }
          std::printf("  trial %d %s: missed %s (loss %.4f a way; its %llu flows lost %llu of %llu, %llu flows lossy)\n",
                      trial, what, topo.link(l).name.c_str(), loss[l], static_cast<unsigned long long>(flows),
                      static_cast<unsigned long long>(lost), static_cast<unsigned long long>(sent),
                      static_cast<unsigned long long>(lossy_flows));
        }
      }
    };
    run(with_pinned, pinned);
    run(path_only, {});
    run(with_endpoints, pinned, true);
    for (LinkId l : injected) loss[l] = kBackground;
  }

  // Measurement faults, on fresh draws: a dead reflector beside real lossy links, and a
  // prober losing alike everywhere.
  const int fault_trials = std::max(1, trials / 4);
  uint64_t dead_named = 0, dead_links_blamed = 0, dead_real_found = 0, dead_real = 0, dead_other_endpoints = 0;
  uint64_t prober_named = 0, prober_links_blamed = 0, prober_other_endpoints = 0;
  constexpr double kStray = 2.5e-4;
  Rng stray_rng(seed * 0x9e3779b97f4a7c15ULL + 29);
  uint64_t stray_links_blamed = 0, stray_endpoints_named = 0, stray_lost = 0;
  double fault_seconds = 0;
  Rng wave_rng(seed * 0x9e3779b97f4a7c15ULL + 31);
  std::vector<LinkId> fabric_links;
  for (LinkId l = 0; l < n_links; ++l) {
    if (kind[l] != 0) fabric_links.push_back(l);
  }
  const size_t wave_size = n_links / 100;
  uint64_t wave_endpoints = 0, wave_found = 0, wave_blamed = 0, wave_lossy = 0, wave_dead_named = 0, wave_dead_other = 0;
  double wave_seconds = 0;
  // --verbose: the healthy links a measurement fault got blamed on.
  auto print_blamed = [&](const char* what, const std::vector<probes::LinkVerdict>& links) {
    for (const auto& v : links) {
      std::printf("  %s: link blamed %s (loss %.4f, confidence %.2f, %llu probes, %s)\n", what,
                  topo.link(v.link).name.c_str(), v.loss, v.confidence, static_cast<unsigned long long>(v.probes),
                  v.method.c_str());
    }
  };
  for (int trial = 0; trial < fault_trials; ++trial) {
    // A dead reflector: a random device that answers probes.
    uint32_t dead = probes::kNoEndpoint;
    while (dead == probes::kNoEndpoint) dead = reflector_of[rng.below(topo.devices().size())];
    const size_t m = 1 + rng.below(3);
    std::set<LinkId> injected;
    while (injected.size() < m) injected.insert(static_cast<LinkId>(rng.below(n_links)));
    for (LinkId l : injected) loss[l] = std::exp(std::log(kMinLoss) + rng.uniform() * std::log(kMaxLoss / kMinLoss));
    draw(rng, dead);
    double t0 = thread_cpu_s();
    auto loc = probes::localize(topo, pinned, paths, {}, endpoints);
    fault_seconds += thread_cpu_s() - t0;
    for (const auto& e : loc.endpoints) (e.endpoint == dead ? dead_named : dead_other_endpoints)++;
    for (const auto& v : loc.links) {
      if (injected.count(v.link)) {
        ++dead_real_found;
      } else {
        ++dead_links_blamed;
        if (verbose) std::printf("  dead reflector %s: link blamed %s\n", endpoints[dead].name.c_str(), topo.link(v.link).name.c_str());
      }
    }
    dead_real += m;
    for (LinkId l : injected) loss[l] = kBackground;

    // The prober: everything loses alike.
    const double p = std::exp(std::log(0.005) + rng.uniform() * std::log(0.05 / 0.005));
    for (auto& o : paths) o.lost = binomial(rng, per_flow, 1 - (1 - p) * (1 - kBackground));
    for (auto& o : pinned) o.lost = binomial(rng, per_link, 1 - (1 - p) * (1 - kBackground));
    t0 = thread_cpu_s();
    loc = probes::localize(topo, pinned, paths, {}, endpoints);
    fault_seconds += thread_cpu_s() - t0;
    for (const auto& e : loc.endpoints) (e.endpoint == 0 ? prober_named : prober_other_endpoints)++;
    prober_links_blamed += loc.links.size();
    if (verbose) {
      char what[48];
      std::snprintf(what, sizeof what, "prober losing %.4f", p);
      print_blamed(what, loc.links);
    }

    // Stray timeouts everywhere, nothing lossy (drawn apart, so the draws above stay as
    // they were).
    for (auto& o : paths) stray_lost += o.lost = binomial(stray_rng, per_flow, kStray);
    for (auto& o : pinned) stray_lost += o.lost = binomial(stray_rng, per_link, kStray);
    t0 = thread_cpu_s();
    loc = probes::localize(topo, pinned, paths, {}, endpoints);
    fault_seconds += thread_cpu_s() - t0;
    stray_endpoints_named += loc.endpoints.size();
    stray_links_blamed += loc.links.size();
    if (verbose) print_blamed("stray loss", loc.links);

    // A wave: 1% of the links, all switch-to-switch, lossy at once (bench/load's share), and
    // nothing else; then the same draws' links beside a dead reflector (drawn apart too).
    std::set<LinkId> wave;
    while (wave.size() < wave_size) wave.insert(fabric_links[wave_rng.below(fabric_links.size())]);
    for (LinkId l : wave) loss[l] = std::exp(std::log(kMinLoss) + wave_rng.uniform() * std::log(kMaxLoss / kMinLoss));
    draw(wave_rng, probes::kNoEndpoint);
    t0 = thread_cpu_s();
    loc = probes::localize(topo, pinned, paths, {}, endpoints);
    wave_seconds += thread_cpu_s() - t0;
    wave_endpoints += loc.endpoints.size();
    if (verbose) {
      for (const auto& e : loc.endpoints) std::printf("  wave: endpoint named %s (loss %.4f)\n", e.name.c_str(), e.loss);
    }
    for (const auto& v : loc.links) (wave.count(v.link) ? wave_found : wave_blamed)++;
    wave_lossy += wave.size();
    uint32_t wave_dead = probes::kNoEndpoint;
    while (wave_dead == probes::kNoEndpoint) wave_dead = reflector_of[wave_rng.below(topo.devices().size())];
    draw(wave_rng, wave_dead);
    t0 = thread_cpu_s();
    loc = probes::localize(topo, pinned, paths, {}, endpoints);
    wave_seconds += thread_cpu_s() - t0;
    for (const auto& e : loc.endpoints) (e.endpoint == wave_dead ? wave_dead_named : wave_dead_other)++;
    for (LinkId l : wave) loss[l] = kBackground;
  }

  std::printf("lossy links injected: %llu\n\n", static_cast<unsigned long long>(injected_total));
  std::printf("%-26s %6s %5s %5s %10s %8s %14s %14s   %s\n", "evidence", "TP", "FP", "FN", "precision", "recall",
              "ms/trial mean", "ms/trial max", "target");
  auto line = [&](const char* name, const Score& s) {
    std::printf("%-26s %6llu %5llu %5llu %10.4f %8.4f %14.1f %14.1f   precision >= 0.98, recall >= 0.98: %s\n", name,
                static_cast<unsigned long long>(s.tp), static_cast<unsigned long long>(s.fp),
                static_cast<unsigned long long>(s.fn), s.precision(), s.recall(), 1e3 * s.seconds / trials,
                1e3 * s.worst, s.precision() >= 0.98 && s.recall() >= 0.98 ? "met" : "NOT met");
  };
  line("link-pinned + path probes", with_pinned);
  line("path probes only", path_only);
  line("both, with endpoints", with_endpoints);
  std::printf("endpoints named on those draws (none is at fault): %llu\n", static_cast<unsigned long long>(endpoint_false_positives));
  std::printf("\nmeasurement faults, %d trials each (%.1f ms per localization):\n", fault_trials,
              1e3 * fault_seconds / (3.0 * fault_trials));
  std::printf("  dead reflector + 1-3 lossy links: reflector named %llu of %d; other endpoints named %llu; "
              "lossy links found %llu of %llu; healthy links blamed %llu\n",
              static_cast<unsigned long long>(dead_named), fault_trials, static_cast<unsigned long long>(dead_other_endpoints),
              static_cast<unsigned long long>(dead_real_found), static_cast<unsigned long long>(dead_real),
              static_cast<unsigned long long>(dead_links_blamed));
  std::printf("  prober losing 0.5-5%% alike: prober named %llu of %d; other endpoints named %llu; links blamed %llu\n",
              static_cast<unsigned long long>(prober_named), fault_trials,
              static_cast<unsigned long long>(prober_other_endpoints), static_cast<unsigned long long>(prober_links_blamed));
  std::printf("  stray timeouts only (%.1e of probes, %llu lost in all): links blamed %llu; endpoints named %llu\n", kStray,
              static_cast<unsigned long long>(stray_lost), static_cast<unsigned long long>(stray_links_blamed),
              static_cast<unsigned long long>(stray_endpoints_named));
  std::printf("  a wave of %zu lossy switch-to-switch links (1%% of the links), nothing else (%.1f ms per localization): "
              "endpoints named %llu; lossy links found %llu of %llu; healthy links blamed %llu\n",
              wave_size, 1e3 * wave_seconds / (2.0 * fault_trials), static_cast<unsigned long long>(wave_endpoints),
              static_cast<unsigned long long>(wave_found), static_cast<unsigned long long>(wave_lossy),
              static_cast<unsigned long long>(wave_blamed));
  std::printf("  the same wave beside a dead reflector: reflector named %llu of %d; other endpoints named %llu\n",
              static_cast<unsigned long long>(wave_dead_named), fault_trials, static_cast<unsigned long long>(wave_dead_other));
  std::printf("\nmisses by link kind (host NIC / ToR uplink / spine uplink): pinned+path %llu/%llu/%llu, path only %llu/%llu/%llu\n",
              static_cast<unsigned long long>(with_pinned.fn_by_kind[0]),
              static_cast<unsigned long long>(with_pinned.fn_by_kind[1]),
              static_cast<unsigned long long>(with_pinned.fn_by_kind[2]),
              static_cast<unsigned long long>(path_only.fn_by_kind[0]),
              static_cast<unsigned long long>(path_only.fn_by_kind[1]),
              static_cast<unsigned long long>(path_only.fn_by_kind[2]));
  return 0;
}
