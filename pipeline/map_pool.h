// Devices' answers parsed and mapped to canonical samples on worker threads, each with its
// own ScrapeMapper, while medicd's poll thread goes on receiving the rest. With no workers,
// everything is mapped on the caller's thread (medic replay, tests).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fabric/topology.h"
#include "telemetry/mapping.h"

namespace medic::pipeline {

// One answer to map; the job owns its bytes.
struct MapJob {
  fabric::DeviceId device = fabric::kNone;
  Time time{};
  std::optional<Duration> mono;
  telemetry::PayloadFormat format = telemetry::PayloadFormat::prometheus;
  std::string body;
};

// One answer's samples, or why it was refused.
struct Mapped {
  fabric::DeviceId device = fabric::kNone;
  Time time{};
  std::vector<telemetry::PortSample> samples;
  telemetry::MapStats stats;
  bool ok = true;
  std::string error;
};

class MapPool {
 public:
  // `workers` threads (0: none, map() only). The topology and the map outlive the pool.
  MapPool(const fabric::Topology& topology, const telemetry::CounterMap& map, size_t workers);
  ~MapPool();  // finishes the jobs in hand, then stops the workers
  MapPool(const MapPool&) = delete;
  MapPool& operator=(const MapPool&) = delete;

  size_t workers() const { return threads_.size(); }
  // Maps on the caller's thread (only ever one caller at a time).
  Mapped map(fabric::DeviceId device, Time time, std::optional<Duration> mono, telemetry::PayloadFormat format,
             std::string_view body);
  // Queued for a worker; with no workers, mapped here and now.
  void submit(MapJob job);
  // Everything submitted so far, mapped, in the order it finished. What is still queued the
  // caller maps itself, beside the workers; then it waits for what they are mapping.
  std::vector<Mapped> take();

 private:
  Mapped map_with(telemetry::ScrapeMapper& mapper, fabric::DeviceId device, Time time,
                  std::optional<Duration> mono, telemetry::PayloadFormat format, std::string_view body);
  // Maps the first queued job with `mapper` (the lock held on entry and on return).
  void map_front(std::unique_lock<std::mutex>& lock, telemetry::ScrapeMapper& mapper);
  void work();

  const fabric::Topology& topology_;
  const telemetry::CounterMap& map_;
  telemetry::ScrapeMapper own_;  // the caller's thread's
  std::mutex mu_;
  std::condition_variable wake_;  // a job queued, or stopping
  std::condition_variable idle_;  // a job finished
  std::deque<MapJob> queue_;
  std::vector<Mapped> done_;
  size_t busy_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace medic::pipeline
