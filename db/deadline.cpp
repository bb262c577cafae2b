#include "db/deadline.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "common/thread_name.h"

namespace medic::db {

void DbOptions::validate() const {
  if (!(connect_timeout_s >= 2 && connect_timeout_s <= 3600)) {
    throw std::invalid_argument("database connect timeout must be in [2, 3600] s");
  }
  if (!(call_timeout_s > 0 && call_timeout_s <= 3600)) throw std::invalid_argument("database call timeout must be in (0, 3600] s");
  if (!(retry_min_s > 0 && retry_min_s <= retry_max_s && retry_max_s <= 3600)) {
    throw std::invalid_argument("database retry backoff must satisfy 0 < min <= max <= 3600 s");
  }
}

std::string with_connect_timeout(const std::string& url, double seconds) {
  if (url.find("connect_timeout") != std::string::npos) return url;
  const std::string value = std::to_string(static_cast<int>(std::ceil(std::max(2.0, seconds))));
  if (url.find("://") != std::string::npos) {
    return url + (url.find('?') == std::string::npos ? "?" : "&") + "connect_timeout=" + value;
  }
  return url + (url.empty() ? "" : " ") + "connect_timeout=" + value;
}

namespace {

// One thread for the whole process, started on first use; it sleeps until the earliest
// armed deadline.
class Watchdog {
 public:
  static Watchdog& get() {
    static Watchdog* w = new Watchdog();  // never destroyed: calls may run during exit
    return *w;
  }

  uint64_t arm(int fd, double seconds, std::atomic<bool>* fired) {
    const auto at = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
    std::lock_guard lock(mu_);
    const uint64_t id = ++next_;
    armed_.emplace(id, Entry{fd, at, fired});
    cv_.notify_one();
    return id;
  }

  // Under the lock: once this returns the socket is never touched for this id.
  void disarm(uint64_t id) {
    std::lock_guard lock(mu_);
    armed_.erase(id);
  }

 private:
  struct Entry {
    int fd;
    std::chrono::steady_clock::time_point at;
    std::atomic<bool>* fired;
  };

  Watchdog() {
    std::thread([this] {
      name_this_thread("medic-db-watch");
      run();
    }).detach();
  }

  void run() {
    std::unique_lock lock(mu_);
    while (true) {
      if (armed_.empty()) {
        cv_.wait(lock);
        continue;
      }
      auto first = armed_.begin();
      for (auto it = armed_.begin(); it != armed_.end(); ++it) {
        if (it->second.at < first->second.at) first = it;
      }
      // A copy: the wait lets go of the lock, and the entry may be disarmed (freed) meanwhile.
      const auto due = first->second.at;
      if (std::chrono::steady_clock::now() < due) {
        cv_.wait_until(lock, due);
        continue;
      }
      // The caller is still blocked in libpq (it disarms under this lock): its socket is open.
      first->second.fired->store(true);
      ::shutdown(first->second.fd, SHUT_RDWR);
      armed_.erase(first);
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Entry> armed_;
  uint64_t next_ = 0;
};

}  // namespace

CallDeadline::CallDeadline(int fd, double seconds) {
  // A descriptor of our own for the same socket: if libpq closes its own during the call
  // (on an error), that number may be reused by then, but ours still names this socket.
  if (fd >= 0) fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (fd_ >= 0) id_ = Watchdog::get().arm(fd_, seconds, &fired_);
}

CallDeadline::~CallDeadline() {
  if (id_ != 0) Watchdog::get().disarm(id_);
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace medic::db
