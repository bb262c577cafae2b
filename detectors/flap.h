// Flapping links, by link-event damping (the scheme switch operating systems use for
// interface dampening): each flap adds a penalty, the penalty decays exponentially with a
// half-life, and a port is suppressed once it reaches the suppress threshold. A single flap
// is noted (an info finding, no incident); a port that keeps flapping crosses the threshold
// and is reported critical; and it counts as suppressed, so it is not put back in
// service, until the penalty has decayed below the reuse threshold. A port that stays down
// longer than the hold time is reported as link_down instead.
//
// Link events (SNMP linkDown/linkUp notifications) add their flaps at once, so a flap is
// seen between polls; but a notification is not the source of truth, the polled counters
// are: a poll that sees the port flap confirms the notifications of its own interval (an SNMP
// agent's ifLastChange says that it flapped, not how often), a flap from a notification
// that the polls have not confirmed within trap_confirm is taken back, and a port whose penalty reaches suppress only with unconfirmed flaps is
// reported as a warning (an incident opens, nothing is drained) until the poll confirms.
#pragma once

#include <deque>
#include <unordered_map>
#include <vector>

#include "detectors/config.h"
#include "detectors/finding.h"
#include "telemetry/counters.h"

namespace medic::detectors {

class FlapDetector {
 public:
  FlapDetector(const fabric::Topology& topology, FlapConfig config);

  void observe(const telemetry::PortDelta& d, std::vector<Finding>& out);
  // A link event: the port went down (or up) at `at`, as a notification says.
  void link_event(fabric::PortId port, bool up, Time at, std::vector<Finding>& out);

  // Flaps link events reported that the polls confirmed, and that they took back.
  uint64_t event_flaps_confirmed() const { return confirmed_total_; }
  uint64_t event_flaps_withdrawn() const { return withdrawn_total_; }

  // The port's penalty decayed to `now`.
  double penalty(fabric::PortId port, Time now) const;
  // Whether the link (either end) is still suppressed at `now`: it went over the suppress
  // threshold and has not yet decayed below reuse. Undrain waits for this to be false.
  bool suppressed(fabric::LinkId link, Time now) const;
  const FlapConfig& config() const { return config_; }

 private:
  struct PortState {
    double penalty = 0;
    Time updated{};
    Time episode_start{};
    Time down_since{};
    int flaps_in_episode = 0;
    int8_t last_oper = -1;
    bool suppressed = false;
    bool down_reported = false;
    bool carrier_down = false;  // as far as the transitions seen so far tell
    int8_t live = -1;           // the state link events last said (-1: none since the poll)
    Time polled{};              // the port's latest poll (the interval a poll confirms starts there)
    bool event_warned = false;  // the warning for unconfirmed flaps was given this episode
  };
  double decayed(const PortState& s, Time now) const;
  Finding make(fabric::PortId port, Time at, const PortState& s, Severity sev, FindingKind kind) const;
  // The part of the port's penalty at `now` that unconfirmed link-event flaps make up.
  double unconfirmed(fabric::PortId port, Time now) const;
  // A poll that counted `flaps` (> 0) over (from, to] confirms the port's link-event flaps
  // of that interval; gives back how many.
  double confirm(fabric::PortId port, double flaps, Time from, Time to);
  // Takes back the port's link-event flaps older than trap_confirm at `now`.
  void withdraw_stale(fabric::PortId port, PortState& s, Time now);

  const fabric::Topology& topology_;
  FlapConfig config_;
  std::vector<PortState> ports_;
  // Per port, its unconfirmed link-event flaps: when, and the penalty each added (less
  // than penalty_per_flap near max_penalty).
  struct Pending {
    Time at{};
    double added = 0;
  };
  std::unordered_map<fabric::PortId, std::deque<Pending>> pending_;
  uint64_t confirmed_total_ = 0, withdrawn_total_ = 0;
};

}  // namespace medic::detectors
