// A thread that runs one function now and then every `every_s` seconds until stopped (the
// wait is cut short by stop()). For work that must never run on the poll loop: the SLO
// figures, the notifier.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "common/thread_name.h"

namespace medic {

class Periodic {
 public:
  Periodic() = default;
  ~Periodic() { stop(); }
  Periodic(const Periodic&) = delete;
  Periodic& operator=(const Periodic&) = delete;

  // `name`: the thread's name (common/thread_name.h).
  void start(double every_s, std::function<void()> work, std::string name = "medic-periodic") {
    stop();
    stopping_ = false;
    thread_ = std::thread([this, every_s, work = std::move(work), name = std::move(name)] {
      name_this_thread(name);
      std::unique_lock lock(mu_);
      while (!stopping_) {
        lock.unlock();
        work();
        lock.lock();
        cv_.wait_for(lock, std::chrono::duration<double>(every_s), [this] { return stopping_; });
      }
    });
  }
  // Waits for the work under way to finish.
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
};

}  // namespace medic
