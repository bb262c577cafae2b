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
//
// The measurement is doubted before the fabric: given the endpoints every observation went
// through (the prober that sent it, the reflector that answered it), an endpoint whose
// observations all lose alike, and whose loss no single link explains together with loss
// outside that endpoint, is named instead of any link (a dead reflector, a paused prober).
// A dead endpoint's observations are then left out of the search for lossy links; one that
// loses only some leaves its loss as a baseline the links under it must clearly beat.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fabric/topology.h"
#include "probes/ecmp.h"

namespace medic::probes {

inline constexpr uint32_t kNoEndpoint = UINT32_MAX;

// Where probes leave from (a probe source: "local", "netns:h1") or are answered (the
// reflector of a device). Observations name theirs by index into the endpoint list.
struct ProbeEndpoint {
  enum class Kind : uint8_t { sender, reflector };
  Kind kind = Kind::sender;
  std::string name;                         // the probe source, or the reflector's device
  fabric::DeviceId device = fabric::kNone;  // reflectors: their device
};

struct LinkObservation {
  fabric::LinkId link = fabric::kNone;
  uint64_t sent = 0;
  uint64_t lost = 0;
  uint32_t sender = kNoEndpoint, reflector = kNoEndpoint;
};

struct PathObservation {
  std::vector<Path> candidates;  // usually one (the flow's known path)
  uint64_t sent = 0;
  uint64_t lost = 0;
  uint32_t sender = kNoEndpoint, reflector = kNoEndpoint;
};

struct LocalizeConfig {
  double min_loss = 1e-3;   // loss rates below this are not worth localizing
  double z = 2.58;          // Wilson interval width (99%)
  uint64_t min_probes = 20; // fewer probes on an observation: it proves nothing either way
  // A measurement endpoint is named only when it loses at least this share of its probes.
  double min_endpoint_loss = 0.001;
  // A named endpoint losing at least this share says nothing of the links under it: its
  // observations are left out. One losing less leaves its loss as a baseline that a link
  // under it must clearly beat (twice it) to be named.
  double endpoint_drop_loss = 0.5;
};

struct LinkVerdict {
  fabric::LinkId link = fabric::kNone;
  double loss = 0;        // estimated loss rate of the link
  double confidence = 0;  // in [0, 1]: how sure the evidence makes this link the culprit
  uint64_t probes = 0;    // probes whose fate bears on this link
  uint64_t lossy_paths = 0, explained_paths = 0;
  std::string method;     // "link-pinned", "path tomography", or both
};

// A measurement endpoint judged to lose the probes it sends or answers.
struct EndpointVerdict {
  uint32_t endpoint = kNoEndpoint;  // index into the endpoints given to localize()
  ProbeEndpoint::Kind kind = ProbeEndpoint::Kind::sender;
  std::string name;
  fabric::DeviceId device = fabric::kNone;
  double loss = 0;         // its observations' pooled loss rate
  double confidence = 0;   // in [0, 1], from the Wilson lower bound as for links
  uint64_t probes = 0, lost = 0;
  uint32_t observations = 0, lossy_observations = 0;
  double explained_by_links = 0;  // of `lost`: what links losing elsewhere account for
};

struct Localization {
  std::vector<EndpointVerdict> endpoints;  // measurement faults, most loss first
  std::vector<LinkVerdict> links;          // links judged lossy, most confident first
};

// Links judged lossy, most confident first (no endpoints: every loss is the fabric's).
std::vector<LinkVerdict> localize(const fabric::Topology& topology, std::span<const LinkObservation> links,
                                  std::span<const PathObservation> paths, const LocalizeConfig& config = {});
// With the observations' endpoints: measurement endpoints first, then links.
Localization localize(const fabric::Topology& topology, std::span<const LinkObservation> links,
                      std::span<const PathObservation> paths, const LocalizeConfig& config,
                      std::span<const ProbeEndpoint> endpoints);

}  // namespace medic::probes
