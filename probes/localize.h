// Which links lose packets, from what the probes saw. Two kinds of evidence:
//  - link-pinned probes: one end of a link to the far end's address; their loss belongs to
//    that link alone;
//  - path probes: host to host across the fabric; their loss belongs to some link on the
//    flow's path (known, or one of several candidate paths).
// In the spirit of published probe-based localization (voting and tomography, e.g. 007 and
// NetBouncer): links on paths that lost nothing over enough probes are exonerated; every
// lossy path votes for its remaining links; the link that explains most of the loss is
// chosen, its paths are explained away, and so on until the loss is explained. Each link
// found gets a loss estimate and a confidence.
//
// A link is named only when its own evidence shows, at the configured z, a loss of at
// least min_loss (link-pinned and path evidence pooled, so one stray lost probe among a
// hundred link-pinned ones does not condemn a link that thousands of path probes crossed
// cleanly), and when no other link could explain the same lost probes as well (one lossy
// path and nothing else names nobody). Losses are as the probes see them: a round trip
// for two-way probes. localize.cpp documents the search and the confidence formula.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fabric/topology.h"
#include "probes/ecmp.h"

namespace medic::probes {

struct LinkObservation {
  fabric::LinkId link = fabric::kNone;
  uint64_t sent = 0;
  uint64_t lost = 0;
};

struct PathObservation {
  std::vector<Path> candidates;  // usually one (the flow's known path)
  uint64_t sent = 0;
  uint64_t lost = 0;
};

struct LocalizeConfig {
  double min_loss = 1e-3;   // loss rates below this are not worth localizing
  double z = 2.58;          // Wilson interval width (99%)
  uint64_t min_probes = 20; // fewer probes on an observation: it proves nothing either way
};

struct LinkVerdict {
  fabric::LinkId link = fabric::kNone;
  double loss = 0;        // estimated loss rate of the link
  double confidence = 0;  // in [0, 1]: how sure the evidence makes this link the culprit
  uint64_t probes = 0;    // probes whose fate bears on this link
  uint64_t lossy_paths = 0, explained_paths = 0;
  std::string method;     // "link-pinned", "path tomography", or both
};

// Links judged lossy, most confident first.
std::vector<LinkVerdict> localize(const fabric::Topology& topology, std::span<const LinkObservation> links,
                                  std::span<const PathObservation> paths, const LocalizeConfig& config = {});

}  // namespace medic::probes
