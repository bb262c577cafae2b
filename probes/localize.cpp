#include "probes/localize.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <queue>

#include "probes/stats.h"

namespace medic::probes {

using fabric::LinkId;

namespace {

// The Wilson interval over real-valued counts: multi-candidate observations lend a link a
// share of their probes, so its evidence is fractional. Same formula as wilson().
Interval wilson_real(double lost, double sent, double z) {
  if (!(sent > 0)) return {0, 1};
  const double p = std::clamp(lost / sent, 0.0, 1.0);
  const double z2 = z * z;
  const double denom = 1 + z2 / sent;
  const double centre = (p + z2 / (2 * sent)) / denom;
  const double half = z * std::sqrt(p * (1 - p) / sent + z2 / (4 * sent * sent)) / denom;
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

enum class Kind { ignored, lossy, clean, neither };

// Whether a link's `lost` of `sent` probes is clearly more than twice the background (the
// share of probes everything else loses): a link losing exactly twice the background must
// have at most a 3e-7 chance of losing as many (one link of 100,000 a round, 3% of
// rounds), by the exact Poisson tail of the whole lost probes. Every link of the fabric is
// tested each round. A normal bound (Wilson at z = 5, as it was) passed 3 lost of 60
// against a background of 2.5e-4: at twice the background that is a 4.4e-6 chance, 15
// times what it claims, and it passed 3 lost of up to about 600 probes (5e-4).
bool beats_background(double lost, double sent, double background) {
  constexpr double kAlpha = 3e-7;
  if (!(background > 0)) return true;
  return poisson_at_least(std::floor(lost + 1e-9), sent * 2 * background) <= kAlpha;
}

// An observation is lossy when it surely lost something at a rate worth a look, clean when
// it surely lost less than min_loss; with fewer than min_probes probes it proves nothing.
Kind classify(uint64_t sent, uint64_t lost, const LocalizeConfig& c) {
  if (sent == 0 || sent < c.min_probes) return Kind::ignored;
  lost = std::min(lost, sent);
  const Interval w = wilson(lost, sent, c.z);
  const double rate = static_cast<double>(lost) / static_cast<double>(sent);
  if (w.lower > 0 && rate >= c.min_loss / 2) return Kind::lossy;
  if (w.upper < c.min_loss) return Kind::clean;
  return Kind::neither;
}

// What is known about one link before the greedy search starts.
struct LinkEvidence {
  // Single-candidate paths and link-pinned probes through the link. Every path's loss is at
  // least its links' loss, so their pooled loss bounds this link's from above.
  uint64_t bound_sent = 0, bound_lost = 0;
  double sent = 0;       // probes whose fate bears on the link (multi-candidate: its share)
  double observations = 0, lossy = 0;  // observations through it, and the lossy ones (weighted)
  uint32_t lossy_paths = 0;            // lossy path observations with the link on a candidate
  bool pinned_clean = false;
  bool exonerated = false;
  // What its probes lose to a named measurement endpoint anyway (sent x that endpoint's
  // loss, summed like `sent`): a link must lose clearly more than that to be named.
  double base_mass = 0;
  double all_lost = 0;   // lost of every observation counted in `sent`, weighted alike
  double baseline() const { return sent > 0 ? base_mass / sent : 0.0; }
};

// A lossy observation in the search: its links live in entries[begin, end).
struct LossyObservation {
  double sent = 0, lost = 0;
  uint32_t begin = 0, end = 0;
  double weight_sum = 0;  // sum of its non-exonerated links' weights
  double keep = 1;        // product of (1 - loss) over links already found on it
  bool pinned = false;
  bool explained = false;
};

struct Entry {
  LinkId link;
  double weight;  // share of the observation's candidate paths that contain the link
};

struct Candidate {
  double score, rate;
  LinkId link;
  bool operator<(const Candidate& o) const {
    if (score != o.score) return score < o.score;
    if (rate != o.rate) return rate < o.rate;
    return link > o.link;  // lower ids first among equals, so results are stable
  }
};

}  // namespace

// The search, in three steps.
//  1. Evidence. Every observation with at least min_probes probes adds its probes to the
//     links it may have crossed (a multi-candidate one: to the links on all its candidates,
//     and, when lossy, a share to each link of the union, weighted by the share of
//     candidates containing it). Single-candidate paths and link-pinned probes also pool
//     their losses per link; a link is exonerated when a link-pinned observation of it is
//     clean or when the Wilson upper bound of that pool is below min_loss. (Pooling the
//     clean paths alone, as a first cut might, is biased: a link losing 1% a round trip
//     still shows a third of its 100-probe paths clean, and enough of them would clear it.
//     Every path loses at least what each of its links loses, so the pool of clean and
//     lossy paths together bounds the link honestly.) Multi-candidate observations never
//     exonerate.
//  2. Greedy. A link's score is the loss it would explain: the sum over unexplained lossy
//     observations through it of lost * weight / (sum of the observation's non-exonerated
//     weights). The best link (ties: the higher loss rate) is examined:
//       - its free evidence (the unexplained lossy observations' lost probes over all the
//         probes bearing on it except those of observations already explained) must have
//         a Wilson lower bound of at least min_loss and at least 3 lost probes (Wilson's
//         bound is optimistic for one or two events, and one or two stray losses on a
//         thinly covered link are what background loss looks like over a whole fabric);
//       - it must be distinguishable: d = 1 - max over rivals of min(1, rival's free
//         loss rate / its own) must be at least 0.5, where a rival is another suspect link
//         lying on every lossy observation this one would explain (e.g. every link of the
//         one lossy path there is). Otherwise the data cannot tell them apart, and
//         neither is named.
//     It must also lose clearly more than twice the background (beats_background: a link
//     losing exactly twice the background has at most a 3e-7 chance of losing as many
//     probes; every link is tested each round, and the strict test keeps chance from
//     naming one of tens of thousands). The background is what the window's observations
//     that do not bear on it lose (stray timeouts of a loaded host fall everywhere alike),
//     or what the named measurement endpoints its probes went through lose, whichever is
//     more.
//     A link that passes gets the loss estimate k / n over everything bearing on it,
//        k = sum over lossy observations through it of
//            sent * weight * max(0, 1 - (1 - obs_loss) / prod_{found links f on it} (1 - loss_f)),
//     i.e. the loss its paths show beyond what links found before it explain, and its
//     unexplained observations become explained. A link that fails is dropped (not
//     exonerated) and the search goes on. Scores only fall as observations get explained,
//     so a lazy max-heap yields the best each time.
//  3. Confidence, from four parts in [0, 1]:
//       c = lower / (lower + min_loss)  lower: the Wilson lower bound above (>= 0.5 here)
//       d                                distinguishability, above (>= 0.5 here)
//       a = explained / lossy            share of the lossy evidence through the link that
//                                        it explains rather than links found before it
//       b = min(1, lossy share / expected share): the share of the link's observations
//           that are lossy against what its estimated loss predicts,
//           1 - (1 - loss)^(probes per observation)
//     confidence = c * d * (a + b) / 2.
// Losses are as the probes see them: for two-way probes, a link's round trip.
namespace {

// The search for lossy links. `link_base`, `path_base` (empty: none): the loss a named
// measurement endpoint already explains on each observation; 1 leaves it out (a dead
// reflector says nothing of the links under it).
std::vector<LinkVerdict> localize_links(const fabric::Topology& topology, std::span<const LinkObservation> links,
                                        std::span<const PathObservation> paths, const LocalizeConfig& config,
                                        const std::vector<double>& link_base, const std::vector<double>& path_base) {
  const size_t n_links = topology.links().size();
  std::vector<LinkEvidence> ev(n_links);
  std::vector<LossyObservation> lossy;
  std::vector<Entry> entries;

  for (size_t oi = 0; oi < links.size(); ++oi) {
    const LinkObservation& o = links[oi];
    const double base = link_base.empty() ? 0.0 : link_base[oi];
    if (o.link >= n_links || base >= 1) continue;
    const Kind kind = classify(o.sent, o.lost, config);
    if (kind == Kind::ignored) continue;
    const uint64_t lost = std::min(o.lost, o.sent);
    LinkEvidence& e = ev[o.link];
    e.bound_sent += o.sent;
    e.bound_lost += lost;
    e.sent += static_cast<double>(o.sent);
    e.all_lost += static_cast<double>(lost);
    e.base_mass += static_cast<double>(o.sent) * base;
    e.observations += 1;
    if (kind == Kind::clean) e.pinned_clean = true;
    if (kind == Kind::lossy) {
      e.lossy += 1;
      LossyObservation lo;
      lo.sent = static_cast<double>(o.sent);
      lo.lost = static_cast<double>(lost);
      lo.pinned = true;
      lo.begin = static_cast<uint32_t>(entries.size());
      entries.push_back({o.link, 1.0});
      lo.end = static_cast<uint32_t>(entries.size());
      lossy.push_back(lo);
    }
  }

  std::vector<LinkId> scratch;
  for (size_t pi = 0; pi < paths.size(); ++pi) {
    const PathObservation& o = paths[pi];
    const double base = path_base.empty() ? 0.0 : path_base[pi];
    if (o.candidates.empty() || base >= 1) continue;
    const Kind kind = classify(o.sent, o.lost, config);
    if (kind == Kind::ignored) continue;
    const uint64_t lost = std::min(o.lost, o.sent);
    const double sent = static_cast<double>(o.sent);
    LossyObservation lo;
    lo.sent = sent;
    lo.lost = static_cast<double>(lost);
    lo.begin = static_cast<uint32_t>(entries.size());
    if (o.candidates.size() == 1) {
      for (LinkId l : o.candidates.front()) {
        if (l >= n_links) continue;
        LinkEvidence& e = ev[l];
        e.bound_sent += o.sent;
        e.bound_lost += lost;
        e.sent += sent;
        e.all_lost += static_cast<double>(lost);
        e.base_mass += sent * base;
        e.observations += 1;
        if (kind == Kind::lossy) {
          e.lossy += 1;
          ++e.lossy_paths;
          entries.push_back({l, 1.0});
        }
      }
    } else {
      // The union of the candidates' links, each weighted by the share of candidates on it.
      scratch.clear();
      for (const Path& p : o.candidates) {
        for (LinkId l : p) {
          if (l < n_links) scratch.push_back(l);
        }
      }
      std::sort(scratch.begin(), scratch.end());
      const double n_candidates = static_cast<double>(o.candidates.size());
      for (size_t i = 0; i < scratch.size();) {
        size_t j = i;
        while (j < scratch.size() && scratch[j] == scratch[i]) ++j;
        const double w = std::min(1.0, static_cast<double>(j - i) / n_candidates);
        LinkEvidence& e = ev[scratch[i]];
        if (kind == Kind::lossy) {
          e.sent += sent * w;
          e.all_lost += static_cast<double>(lost) * w;
          e.base_mass += sent * w * base;
          e.observations += w;
          e.lossy += w;
          ++e.lossy_paths;
          entries.push_back({scratch[i], w});
        } else if (w == 1) {
          // On every candidate: surely crossed, so its probes count (but, multi-candidate,
          // they still do not exonerate). A flow that lost nothing and may have gone
          // around the link says nothing about it: its probes all took one path.
          e.sent += sent;
          e.base_mass += sent * base;
          e.observations += 1;  // clean: nothing lost
        }
        i = j;
      }
    }
    if (kind == Kind::lossy) {
      lo.end = static_cast<uint32_t>(entries.size());
      if (lo.end > lo.begin) lossy.push_back(lo);
    }
  }
  if (lossy.empty()) return {};

  // What every probe loses anyway (stray timeouts of a loaded prober or reflector host fall
  // everywhere alike): a link must lose clearly more than the observations that do not
  // cross it (`rest_rate` below).
  double all_sent = 0, all_lost = 0;
  for (size_t oi = 0; oi < links.size(); ++oi) {
    if (links[oi].link >= n_links || (!link_base.empty() && link_base[oi] >= 1)) continue;
    if (classify(links[oi].sent, links[oi].lost, config) == Kind::ignored) continue;
    all_sent += static_cast<double>(links[oi].sent);
    all_lost += static_cast<double>(std::min(links[oi].lost, links[oi].sent));
  }
  for (size_t pi = 0; pi < paths.size(); ++pi) {
    if (paths[pi].candidates.empty() || (!path_base.empty() && path_base[pi] >= 1)) continue;
    if (classify(paths[pi].sent, paths[pi].lost, config) == Kind::ignored) continue;
    all_sent += static_cast<double>(paths[pi].sent);
    all_lost += static_cast<double>(std::min(paths[pi].lost, paths[pi].sent));
  }
  // Observations a found link explains leave the background as they go: one real fault's
  // loss is not every other link's background.
  auto rest_rate = [&](const LinkEvidence& e) {
    const double sent = all_sent - e.sent, lost = all_lost - e.all_lost;
    return sent > 0 ? std::max(0.0, lost) / sent : 0.0;
  };

  // 1. Exoneration.
  for (LinkEvidence& e : ev) {
    e.exonerated = e.pinned_clean ||
                   (e.bound_sent > 0 && wilson(e.bound_lost, e.bound_sent, config.z).upper < config.min_loss);
  }

  // Lossy observations by link (CSR), over the links still in question.
  std::vector<uint32_t> offsets(n_links + 1, 0);
  for (LossyObservation& o : lossy) {
    for (uint32_t i = o.begin; i < o.end; ++i) {
      if (ev[entries[i].link].exonerated) continue;
      o.weight_sum += entries[i].weight;
      ++offsets[entries[i].link + 1];
    }
  }
  for (size_t l = 0; l < n_links; ++l) offsets[l + 1] += offsets[l];
  std::vector<std::pair<uint32_t, double>> through(offsets[n_links]);  // (observation, weight)
  {
    std::vector<uint32_t> fill(offsets.begin(), offsets.end() - 1);
    for (uint32_t oi = 0; oi < lossy.size(); ++oi) {
      const LossyObservation& o = lossy[oi];
      for (uint32_t i = o.begin; i < o.end; ++i) {
        if (ev[entries[i].link].exonerated) continue;
        through[fill[entries[i].link]++] = {oi, entries[i].weight};
      }
    }
  }

  // A link's standing now. Its free evidence leaves out the observations already
  // explained: their leftover loss goes into the estimate (lost) but not into the test of
  // whether the link loses at all, because the leftover of one path is mostly the noise of
  // the estimate that explained it.
  struct Eval {
    double score = 0;
    double lost = 0;             // k above
    double free_lost = 0;        // lost on unexplained observations
    double free_sent = 0;        // probes bearing on the link, less the explained observations'
    double free_rate() const { return free_sent > 0 ? free_lost / free_sent : 0; }
  };
  auto evaluate = [&](LinkId l) {
    Eval r;
    r.free_sent = ev[l].sent;
    for (uint32_t i = offsets[l]; i < offsets[l + 1]; ++i) {
      const auto [oi, w] = through[i];
      const LossyObservation& o = lossy[oi];
      if (!o.explained) {
        r.score += o.lost * w / o.weight_sum;
        r.lost += o.lost * w;
        r.free_lost += o.lost * w;
      } else {
        r.free_sent -= o.sent * w;
        const double left = 1 - (1 - o.lost / o.sent) / o.keep;
        if (left > 0) r.lost += left * o.sent * w;
      }
    }
    return r;
  };

  // 2. Greedy search.
  std::priority_queue<Candidate> heap;
  for (LinkId l = 0; l < n_links; ++l) {
    if (offsets[l] == offsets[l + 1]) continue;
    const Eval r = evaluate(l);
    if (r.score > 0) heap.push({r.score, r.free_rate(), l});
  }

  // How well the best other suspect could explain this link's loss instead, in [0, 1]: a
  // rival lies on every lossy observation this link would explain (with as much weight),
  // so it explains all of that loss too, and is as credible as its free loss rate is
  // against this link's (a rival whose other paths are clean is a poor one).
  std::vector<double> mass(n_links, 0.0);
  std::vector<LinkId> touched;
  auto rival = [&](LinkId l, double own_rate) {
    double own = 0;
    touched.clear();
    for (uint32_t i = offsets[l]; i < offsets[l + 1]; ++i) {
      const auto [oi, w] = through[i];
      const LossyObservation& o = lossy[oi];
      if (o.explained) continue;
      own += o.lost * w;
      for (uint32_t j = o.begin; j < o.end; ++j) {
        const Entry& x = entries[j];
        if (x.link == l || ev[x.link].exonerated) continue;
        if (mass[x.link] == 0) touched.push_back(x.link);
        mass[x.link] += o.lost * std::min(w, x.weight);
      }
    }
    double best = 0;
    for (LinkId other : touched) {
      const bool everywhere = mass[other] >= own * (1 - 1e-9);
      mass[other] = 0;
      if (!everywhere || !(own_rate > 0)) continue;
      best = std::max(best, std::min(1.0, evaluate(other).free_rate() / own_rate));
    }
    return best;
  };
  constexpr double kMinDistinct = 0.5;
  constexpr double kMinLost = 3;  // lost probes of free evidence a verdict needs

  struct Found {
    LinkId link;
    double loss, lower, distinct;
    double explained_w = 0;
    uint32_t explained_paths = 0;
    bool pinned = false;
  };
  std::vector<Found> found;
  constexpr double kNegligible = 1e-9;  // score, in lost probes
  while (!heap.empty()) {
    const Candidate top = heap.top();
    heap.pop();
    if (top.score <= kNegligible) break;
    const Eval r = evaluate(top.link);
    const Candidate now{r.score, r.free_rate(), top.link};
    if (now < top) {  // stale: its observations were explained since it was pushed
      if (now.score > kNegligible) heap.push(now);
      continue;
    }
    const LinkEvidence& e = ev[top.link];
    const double loss = std::min(1.0, r.lost / e.sent);
    const double lower = wilson_real(r.free_lost, r.free_sent, config.z).lower;
    // Not shown to lose enough (and clearly more than a named prober or reflector already
    // loses on its probes): dropped (not exonerated; its observations may still be
    // explained by a link found later).
    const double baseline = std::max(e.baseline(), rest_rate(e));
    if (lower < config.min_loss || r.free_lost < kMinLost) continue;
    // Beating the background is judged far more strictly: every link of the fabric is
    // tested against it each round, and stray loss everywhere would otherwise make a few
    // of tens of thousands of healthy links look worse than the rest by chance.
    if (!beats_background(r.free_lost, r.free_sent, baseline)) continue;
    const double distinct = 1 - rival(top.link, r.free_rate());
    if (distinct < kMinDistinct) continue;  // another link explains the same loss as well

    Found f{top.link, loss, lower, distinct};
    for (uint32_t i = offsets[top.link]; i < offsets[top.link + 1]; ++i) {
      const auto [oi, w] = through[i];
      LossyObservation& o = lossy[oi];
      o.keep *= 1 - loss;
      if (o.explained) continue;
      o.explained = true;
      all_sent -= o.sent;
      all_lost -= o.lost;
      f.explained_w += w;
      if (o.pinned) {
        f.pinned = true;
      } else {
        ++f.explained_paths;
      }
    }
    found.push_back(f);
  }

  // 3. Verdicts.
  std::vector<LinkVerdict> out;
  out.reserve(found.size());
  for (const Found& f : found) {
    const LinkEvidence& e = ev[f.link];
    // What the probes show beyond what a named endpoint already explains.
    const double baseline = e.baseline();
    const double excess = std::max(0.0, f.lower - baseline);
    const double c = excess / (excess + config.min_loss);
    const double a = e.lossy > 0 ? std::min(1.0, f.explained_w / e.lossy) : 0.0;
    const double per_observation = e.observations > 0 ? e.sent / e.observations : 0.0;
    const double expected = 1 - std::pow(1 - f.loss, per_observation);
    const double share = e.observations > 0 ? e.lossy / e.observations : 0.0;
    const double b = expected > 0 ? std::min(1.0, share / expected) : 0.0;
    LinkVerdict v;
    v.link = f.link;
    v.loss = baseline > 0 ? std::max(0.0, 1 - (1 - f.loss) / (1 - baseline)) : f.loss;
    v.confidence = std::clamp(c * f.distinct * (a + b) / 2, 0.0, 1.0);
    v.probes = static_cast<uint64_t>(std::llround(e.sent));
    v.lossy_paths = e.lossy_paths;
    v.explained_paths = f.explained_paths;
    v.method = f.pinned ? (f.explained_paths > 0 ? "link-pinned+path" : "link-pinned") : "path tomography";
    out.push_back(std::move(v));
  }
  std::sort(out.begin(), out.end(), [](const LinkVerdict& x, const LinkVerdict& y) {
    if (x.confidence != y.confidence) return x.confidence > y.confidence;
    if (x.loss != y.loss) return x.loss > y.loss;
    return x.link < y.link;
  });
  return out;
}

}  // namespace

std::vector<LinkVerdict> localize(const fabric::Topology& topology, std::span<const LinkObservation> links,
                                  std::span<const PathObservation> paths, const LocalizeConfig& config) {
  return localize_links(topology, links, paths, config, {}, {});
}

// Endpoints, before links. An endpoint E (a prober, or a reflector) is named when
//  - its observations (not already explained by another endpoint) lose at least 3 probes
//    with a Wilson lower bound of at least min_loss, as a link's evidence must, and of at
//    least twice what all the other observations lose (the background: a loaded host's
//    stray timeouts fall everywhere, not on one endpoint), and a loss rate of at least
//    min_endpoint_loss;
//  - they lose alike: with p the pooled loss rate, the dispersion
//        X = sum over its N observations of (lost - sent p)^2 / (sent p (1 - p))
//    is within what chance gives a uniform loss, X <= (N - 1) + 3 sqrt(2 (N - 1)) + 3
//    (chi-square with N - 1 degrees of freedom). Loss concentrated on some of its
//    observations (a lossy link under some of them) fails this;
//  - no link explains it more simply: a link that may lie under at least 90% of E's lost
//    probes and whose observations outside E lose too (at least 3 probes, Wilson lower
//    bound >= min_loss) explains E's loss and more, and is the simpler cause. Here a link
//    lies under an observation with the share of its candidate paths that cross it (1 for
//    a known path or a pinned probe), for E's loss and for the evidence outside E alike.
//    A link with no lossy observation outside E cannot be told from E: the measurement is
//    doubted first, and E is named;
//  - nor do several links: on each of E's lossy observations, the link under it that surely
//    loses most outside E (the Wilson lower bound of its rate there less the background,
//    times its share of the observation's candidates) accounts for that much of the
//    observation's probes. What is left must still pass the first test. Loss scattered
//    over many of E's sessions, each crossing a different lossy link (a host under a ToR
//    with flapping uplinks, 1% of a fabric failing), is the links'.
// Endpoints are tried in order of lost probes, again after each one named (its
// observations leave the evidence, which may make another endpoint's loss uniform).
Localization localize(const fabric::Topology& topology, std::span<const LinkObservation> links,
                      std::span<const PathObservation> paths, const LocalizeConfig& config,
                      std::span<const ProbeEndpoint> endpoints) {
  Localization result;
  const size_t n_links = topology.links().size();
  // Per observation, the loss a named endpoint explains (1: leave it out).
  std::vector<double> link_base, path_base;
  if (endpoints.empty()) {
    result.links = localize_links(topology, links, paths, config, link_base, path_base);
    return result;
  }

  // Most rounds no endpoint comes near a verdict: each one's pooled loss, first, decides
  // whether the search below is needed at all (naming one endpoint only ever takes
  // evidence away from the others).
  {
    std::vector<uint64_t> es(endpoints.size(), 0), ek(endpoints.size(), 0);
    auto count = [&](uint32_t e, uint64_t sent, uint64_t lost) {
      if (e >= endpoints.size() || classify(sent, lost, config) == Kind::ignored) return;
      es[e] += sent;
      ek[e] += std::min(lost, sent);
    };
    for (const auto& l : links) {
      count(l.sender, l.sent, l.lost);
      if (l.reflector != l.sender) count(l.reflector, l.sent, l.lost);
    }
    for (const auto& p : paths) {
      count(p.sender, p.sent, p.lost);
      if (p.reflector != p.sender) count(p.reflector, p.sent, p.lost);
    }
    bool any = false;
    for (size_t e = 0; e < endpoints.size() && !any; ++e) {
      any = static_cast<double>(ek[e]) >= 3 && wilson(ek[e], es[e], config.z).lower >= config.min_loss &&
            static_cast<double>(ek[e]) >= config.min_endpoint_loss * static_cast<double>(es[e]);
    }
    if (!any) {
      result.links = localize_links(topology, links, paths, config, link_base, path_base);
      return result;
    }
  }

  // Every observation that counts, with the links it may have crossed and how surely.
  struct Obs {
    uint64_t sent = 0, lost = 0;
    uint32_t begin = 0, end = 0;  // into `under`
    uint32_t sender = kNoEndpoint, reflector = kNoEndpoint;
    bool pinned = false;
    size_t index = 0;  // into links or paths
  };
  std::vector<Obs> obs;
  std::vector<Entry> under;  // (link, share of the observation's candidates crossing it)
  std::vector<double> pool_sent(n_links, 0.0), pool_lost(n_links, 0.0);
  std::vector<LinkId> scratch;
  auto add = [&](uint64_t sent, uint64_t lost, uint32_t sender, uint32_t reflector, bool pinned, size_t index) -> Obs* {
    if (classify(sent, lost, config) == Kind::ignored) return nullptr;
    Obs o;
    o.sent = sent;
    o.lost = std::min(lost, sent);
    o.sender = sender < endpoints.size() ? sender : kNoEndpoint;
    o.reflector = reflector < endpoints.size() ? reflector : kNoEndpoint;
    o.pinned = pinned;
    o.index = index;
    o.begin = static_cast<uint32_t>(under.size());
    obs.push_back(o);
    return &obs.back();
  };
  for (size_t i = 0; i < links.size(); ++i) {
    const LinkObservation& l = links[i];
    if (l.link >= n_links) continue;
    if (Obs* o = add(l.sent, l.lost, l.sender, l.reflector, true, i)) {
      under.push_back({l.link, 1.0});
      o->end = static_cast<uint32_t>(under.size());
    }
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    const PathObservation& p = paths[i];
    if (p.candidates.empty()) continue;
    Obs* o = add(p.sent, p.lost, p.sender, p.reflector, false, i);
    if (o == nullptr) continue;
    scratch.clear();
    for (const Path& c : p.candidates) {
      for (const LinkId l : c) {
        if (l < n_links) scratch.push_back(l);
      }
    }
    std::sort(scratch.begin(), scratch.end());
    const double n_candidates = static_cast<double>(p.candidates.size());
    for (size_t a = 0; a < scratch.size();) {
      size_t b = a;
      while (b < scratch.size() && scratch[b] == scratch[a]) ++b;
      under.push_back({scratch[a], std::min(1.0, static_cast<double>(b - a) / n_candidates)});
      a = b;
    }
    o->end = static_cast<uint32_t>(under.size());
  }
  uint64_t total_sent = 0, total_lost = 0;  // every observation not explained yet
  for (const Obs& o : obs) {
    total_sent += o.sent;
    total_lost += o.lost;
    for (uint32_t i = o.begin; i < o.end; ++i) {
      pool_sent[under[i].link] += static_cast<double>(o.sent) * under[i].weight;
      pool_lost[under[i].link] += static_cast<double>(o.lost) * under[i].weight;
    }
  }

  // Observations by endpoint (CSR).
  const size_t n_endpoints = endpoints.size();
  std::vector<uint32_t> offsets(n_endpoints + 1, 0);
  for (const Obs& o : obs) {
    if (o.sender != kNoEndpoint) ++offsets[o.sender + 1];
    if (o.reflector != kNoEndpoint && o.reflector != o.sender) ++offsets[o.reflector + 1];
  }
  for (size_t e = 0; e < n_endpoints; ++e) offsets[e + 1] += offsets[e];
  std::vector<uint32_t> by_endpoint(offsets[n_endpoints]);
  {
    std::vector<uint32_t> fill(offsets.begin(), offsets.end() - 1);
    for (uint32_t i = 0; i < obs.size(); ++i) {
      if (obs[i].sender != kNoEndpoint) by_endpoint[fill[obs[i].sender]++] = i;
      if (obs[i].reflector != kNoEndpoint && obs[i].reflector != obs[i].sender) by_endpoint[fill[obs[i].reflector]++] = i;
    }
  }

  std::vector<uint8_t> explained(obs.size(), 0), named(n_endpoints, 0), seen(n_links, 0);
  std::vector<double> mass(n_links, 0.0), in_sent(n_links, 0.0), in_lost(n_links, 0.0), out_rate(n_links, 0.0);
  std::vector<LinkId> touched;
  constexpr double kMinLost = 3;
  constexpr double kExplainsShare = 0.9;

  // The verdict on endpoint e over its unexplained observations, or nullopt.
  auto judge = [&](uint32_t e) -> std::optional<EndpointVerdict> {
    uint64_t S = 0, K = 0;
    uint32_t N = 0, lossy = 0;
    for (uint32_t i = offsets[e]; i < offsets[e + 1]; ++i) {
      const Obs& o = obs[by_endpoint[i]];
      if (explained[by_endpoint[i]]) continue;
      S += o.sent;
      K += o.lost;
      ++N;
      if (o.lost > 0) ++lossy;
    }
    if (N == 0 || static_cast<double>(K) < kMinLost) return std::nullopt;
    const double lower = wilson(K, S, config.z).lower;
    // Above what everything else loses too (a loaded host's stray timeouts are everywhere).
    const uint64_t rest_sent = total_sent - std::min(total_sent, S), rest_lost = total_lost - std::min(total_lost, K);
    const double background = rest_sent > 0 ? static_cast<double>(rest_lost) / static_cast<double>(rest_sent) : 0.0;
    // At the configured z, not beats_background's strictness: endpoints are thousands, not
    // tens of thousands, a reflector is reported only after several rounds in a row, and
    // naming one never drains a link (it takes its observations out of the links' evidence).
    if (lower < std::max(config.min_loss, 2 * background)) return std::nullopt;
    const double p = static_cast<double>(K) / static_cast<double>(S);
    if (p < config.min_endpoint_loss) return std::nullopt;
    if (N >= 2 && p < 1) {
      double x = 0;
      for (uint32_t i = offsets[e]; i < offsets[e + 1]; ++i) {
        if (explained[by_endpoint[i]]) continue;
        const Obs& o = obs[by_endpoint[i]];
        const double n = static_cast<double>(o.sent);
        const double d = static_cast<double>(o.lost) - n * p;
        x += d * d / (n * p * (1 - p));
      }
      const double dof = N - 1;
      if (x > dof + 3 * std::sqrt(2 * dof) + 3) return std::nullopt;  // concentrated, not uniform
    }
    // A link under (nearly) all of its loss that also loses elsewhere explains more.
    touched.clear();
    for (uint32_t i = offsets[e]; i < offsets[e + 1]; ++i) {
      if (explained[by_endpoint[i]]) continue;
      const Obs& o = obs[by_endpoint[i]];
      for (uint32_t j = o.begin; j < o.end; ++j) {
        const Entry& x = under[j];
        if (!seen[x.link]) {
          seen[x.link] = 1;
          touched.push_back(x.link);
        }
        mass[x.link] += static_cast<double>(o.lost) * x.weight;
        in_sent[x.link] += static_cast<double>(o.sent) * x.weight;
        in_lost[x.link] += static_cast<double>(o.lost) * x.weight;
      }
    }
    bool link_explains = false;
    for (const LinkId l : touched) {
      const double out_sent = std::max(0.0, pool_sent[l] - in_sent[l]);
      const double out_lost = std::clamp(pool_lost[l] - in_lost[l], 0.0, out_sent);
      if (!link_explains && mass[l] >= kExplainsShare * static_cast<double>(K) &&
          out_sent >= static_cast<double>(config.min_probes) && out_lost >= kMinLost &&
          wilson_real(out_lost, out_sent, config.z).lower >= config.min_loss) {
        link_explains = true;
      }
      // What it surely loses elsewhere beyond what every probe loses (the Wilson lower bound,
      // less the background E's own test already allows for): a stray loss excuses nothing.
      out_rate[l] = out_sent >= static_cast<double>(config.min_probes)
                        ? std::max(0.0, wilson_real(out_lost, out_sent, config.z).lower - background)
                        : 0.0;
    }
    // Links that lose elsewhere explain E's loss on the observations crossing them, up to
    // what they surely lose elsewhere (the most lossy one under each: a probe dies once).
    double excused = 0;
    if (!link_explains) {
      for (uint32_t i = offsets[e]; i < offsets[e + 1]; ++i) {
        if (explained[by_endpoint[i]]) continue;
        const Obs& o = obs[by_endpoint[i]];
        if (o.lost == 0) continue;
        double rate = 0;
        for (uint32_t j = o.begin; j < o.end; ++j) rate = std::max(rate, under[j].weight * out_rate[under[j].link]);
        excused += std::min(static_cast<double>(o.lost), static_cast<double>(o.sent) * rate);
      }
    }
    for (const LinkId l : touched) {
      mass[l] = in_sent[l] = in_lost[l] = out_rate[l] = 0;
      seen[l] = 0;
    }
    if (link_explains) return std::nullopt;
    // What is left must still be E's own, by the same bounds as above.
    const double own = std::max(0.0, static_cast<double>(K) - excused);
    if (own < kMinLost || own < config.min_endpoint_loss * static_cast<double>(S) ||
        wilson_real(own, static_cast<double>(S), config.z).lower < std::max(config.min_loss, 2 * background)) {
      return std::nullopt;
    }
    EndpointVerdict v;
    v.endpoint = e;
    v.kind = endpoints[e].kind;
    v.name = endpoints[e].name;
    v.device = endpoints[e].device;
    v.loss = p;
    v.confidence = std::clamp(lower / (lower + config.min_loss), 0.0, 1.0);
    v.probes = S;
    v.lost = K;
    v.explained_by_links = excused;
    v.observations = N;
    v.lossy_observations = lossy;
    return v;
  };

  // Endpoints with lost probes, most first; again after every one named.
  std::vector<std::pair<uint64_t, uint32_t>> order;
  for (bool again = true; again;) {
    again = false;
    order.clear();
    for (uint32_t e = 0; e < n_endpoints; ++e) {
      if (named[e]) continue;
      uint64_t k = 0;
      for (uint32_t i = offsets[e]; i < offsets[e + 1]; ++i) {
        if (!explained[by_endpoint[i]]) k += obs[by_endpoint[i]].lost;
      }
      if (static_cast<double>(k) >= kMinLost) order.push_back({k, e});
    }
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (const auto& [k, e] : order) {
      auto v = judge(e);
      if (!v) continue;
      named[e] = 1;
      for (uint32_t i = offsets[e]; i < offsets[e + 1]; ++i) {
        const uint32_t oi = by_endpoint[i];
        if (explained[oi]) continue;
        explained[oi] = 1;
        const Obs& o = obs[oi];
        total_sent -= std::min(total_sent, o.sent);
        total_lost -= std::min(total_lost, o.lost);
        for (uint32_t j = o.begin; j < o.end; ++j) {
          pool_sent[under[j].link] -= static_cast<double>(o.sent) * under[j].weight;
          pool_lost[under[j].link] -= static_cast<double>(o.lost) * under[j].weight;
        }
        // A dead or nearly dead endpoint says nothing of the links under it: its
        // observations leave. One that loses some of what it sends or answers leaves a
        // baseline that the links under it must beat; for an endpoint under most of the
        // fabric's observations (the one prober) that is what every link's background
        // already is (localize_links compares each link with the rest of the fabric).
        if (v->loss < config.endpoint_drop_loss && 2 * v->observations >= obs.size()) continue;
        std::vector<double>& base = o.pinned ? link_base : path_base;
        if (base.empty()) base.assign(o.pinned ? links.size() : paths.size(), 0.0);
        double& b = base[o.index];
        b = v->loss >= config.endpoint_drop_loss ? 1.0 : 1 - (1 - b) * (1 - v->loss);
      }
      result.endpoints.push_back(std::move(*v));
      again = true;
      break;  // the others' evidence changed: judge them again
    }
  }
  std::sort(result.endpoints.begin(), result.endpoints.end(), [](const EndpointVerdict& a, const EndpointVerdict& b) {
    return a.loss != b.loss ? a.loss > b.loss : a.endpoint < b.endpoint;
  });
  result.links = localize_links(topology, links, paths, config, link_base, path_base);
  return result;
}

}  // namespace medic::probes
