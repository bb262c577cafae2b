// Deadlines on PostgreSQL calls, enforced by the client. A server whose processes are
// stopped (SIGSTOP, a hung host) still has a kernel that accepts and acknowledges: neither
// statement_timeout nor TCP keepalives ever fire, and libpq would wait forever. A watchdog
// thread shuts the connection's socket down when a call outlives its deadline, so the
// call fails at once with a broken connection, which the caller reports as the deadline.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace medic::db {

// Options every connection of medicd and medic takes.
struct DbOptions {
  double connect_timeout_s = 5;   // libpq's connect_timeout (at least 2 s)
  double call_timeout_s = 10;     // one call (a transaction) from start to answer
  // After a connection failure, calls fail at once for this long (doubling up to
  // retry_max_s) instead of each waiting for a server that is not there.
  double retry_min_s = 0.5;
  double retry_max_s = 10;
  void validate() const;  // throws std::invalid_argument naming the setting
};

// The URL with connect_timeout added (unless it has one).
std::string with_connect_timeout(const std::string& url, double seconds);

// Arms the watchdog for socket `fd` while the guard lives.
class CallDeadline {
 public:
  CallDeadline(int fd, double seconds);
  ~CallDeadline();
  CallDeadline(const CallDeadline&) = delete;
  CallDeadline& operator=(const CallDeadline&) = delete;
  // The deadline passed and the socket was shut down.
  bool fired() const { return fired_.load(); }

 private:
  uint64_t id_ = 0;
  int fd_ = -1;  // our own descriptor of the socket
  std::atomic<bool> fired_{false};
};

}  // namespace medic::db
