#include "pipeline/map_pool.h"

#include <exception>
#include <utility>

#include "common/thread_name.h"

namespace medic::pipeline {

MapPool::MapPool(const fabric::Topology& topology, const telemetry::CounterMap& map, size_t workers)
    : topology_(topology), map_(map), own_(topology, map) {
  threads_.reserve(workers);
  for (size_t i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
}

MapPool::~MapPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

Mapped MapPool::map_with(telemetry::ScrapeMapper& mapper, fabric::DeviceId device, Time time,
                         std::optional<Duration> mono, telemetry::PayloadFormat format, std::string_view body) {
  Mapped m;
  m.device = device;
  m.time = time;
  // At most one sample a port: never grown while mapping.
  if (device < topology_.devices().size()) m.samples.reserve(topology_.ports_of(device).size());
  try {
    const Status st = mapper.map(device, format, body, time, m.samples, &m.stats);
    if (!st.ok()) {
      m.ok = false;
      m.error = st.error();
    }
  } catch (const std::exception& e) {  // out of memory: this answer is lost, not the daemon
    m.samples.clear();
    m.ok = false;
    m.error = std::string("could not be mapped: ") + e.what();
  }
  for (auto& s : m.samples) s.mono = mono;
  return m;
}

Mapped MapPool::map(fabric::DeviceId device, Time time, std::optional<Duration> mono,
                    telemetry::PayloadFormat format, std::string_view body) {
  return map_with(own_, device, time, mono, format, body);
}

void MapPool::submit(MapJob job) {
  if (threads_.empty()) {
    Mapped m = map(job.device, job.time, job.mono, job.format, job.body);
    std::lock_guard lock(mu_);
    done_.push_back(std::move(m));
    return;
  }
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
}

std::vector<Mapped> MapPool::take() {
  std::unique_lock lock(mu_);
  // What is still queued, the caller maps alongside the workers rather than wait for them:
  // the poll has nothing else to do until every answer is mapped.
  while (!queue_.empty()) map_front(lock, own_);
  idle_.wait(lock, [&] { return queue_.empty() && busy_ == 0; });
  return std::exchange(done_, {});
}

void MapPool::map_front(std::unique_lock<std::mutex>& lock, telemetry::ScrapeMapper& mapper) {
  MapJob job = std::move(queue_.front());
  queue_.pop_front();
  ++busy_;
  lock.unlock();
  Mapped m = map_with(mapper, job.device, job.time, job.mono, job.format, job.body);
  job.body = std::string();  // the bytes go as soon as they are mapped
  lock.lock();
  done_.push_back(std::move(m));
  --busy_;
  if (queue_.empty() && busy_ == 0) idle_.notify_all();
}

void MapPool::work() {
  name_this_thread("medic-map");  // the bench scripts count these with the poll thread
  telemetry::ScrapeMapper mapper(topology_, map_);
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    map_front(lock, mapper);
  }
}

}  // namespace medic::pipeline
