// Pulls counters over HTTP from many switches at once with libcurl's multi interface.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/time.h"
#include "fabric/topology.h"

namespace medic::telemetry {

struct ScrapeTarget {
  fabric::DeviceId device = fabric::kNone;
  std::string url;
};

struct ScrapeResult {
  fabric::DeviceId device = fabric::kNone;
  Time time{};      // when the answer arrived
  Duration mono{};  // the same on the monotonic clock (Clock::monotonic)
  bool ok = false;
  long http_status = 0;
  std::string content_type;
  std::string body;
  std::string error;  // "timeout after 2000 ms", "HTTP 503", "connection refused", ...
  double seconds = 0;
};

struct CollectorOptions {
  double timeout_s = 2.0;
  double connect_timeout_s = 1.0;
  size_t max_in_flight = 256;
  size_t max_body_bytes = 16u << 20;
  // Connections kept open between scrapes: one to every address (scheme://host:port), as
  // Prometheus keeps one a target, and those in flight at once to an address serving
  // several switches; max_kept at most (0: half the process's open-file limit). One is
  // reused while the switch keeps it open and unless it idled past curl's 118 s.
  size_t max_kept = 0;
  // Addresses a libcurl multi handle holds: each removal of a finished request from one
  // walks its whole connection cache (libcurl 7.88), so the addresses are spread over one
  // handle per this many (up to 256 handles).
  size_t kept_per_shard = 256;
};

class Collector {
 public:
  explicit Collector(CollectorOptions options = {});
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Scrapes every target once, at most max_in_flight at a time, each bounded by the
  // timeout, over the connections kept from the last scrape where the switch kept them
  // open (up to one per target, within max_kept). One result per target, in the targets'
  // order. `on_result`, when given, is handed each result the moment it is complete, so
  // the caller can work on it while the others are still on their way; it may take the
  // body (medicd hands it to its mapping workers), and the returned result is then left
  // without it.
  std::vector<ScrapeResult> scrape(std::span<const ScrapeTarget> targets, const Clock& clock,
                                   const std::function<void(ScrapeResult&)>& on_result = {});

  // libcurl multi handles made so far: one per kept_per_shard addresses scraped.
  size_t multi_handles() const;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace medic::telemetry
