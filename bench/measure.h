// What the C++ benches measure themselves with: wall time, CPU time (the process's or one
// thread's) and resident memory, read from the kernel.
#pragma once

#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <string>

namespace medic::bench {

using Steady = std::chrono::steady_clock;

inline double since(Steady::time_point t0) { return std::chrono::duration<double>(Steady::now() - t0).count(); }
inline double ms_since(Steady::time_point t0) { return 1000.0 * since(t0); }

inline double seconds_of(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}
// CPU seconds, user and system, to the nanosecond: the whole process's, or the calling
// thread's alone (blind to whatever else the process and the machine run).
inline double process_cpu_s() { return seconds_of(CLOCK_PROCESS_CPUTIME_ID); }
inline double thread_cpu_s() { return seconds_of(CLOCK_THREAD_CPUTIME_ID); }

// The process's peak resident memory since it started, in MiB.
inline double peak_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}
// A "Vm...:" line of /proc/self/status, in MiB (0 if it is missing).
inline double status_mib(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(std::strlen(key))) / 1024.0;
  }
  return 0;
}
inline double rss_mib() { return status_mib("VmRSS:"); }
// The peak since reset_peak() (Linux: writing 5 to clear_refs resets VmHWM).
inline double hwm_mib() { return status_mib("VmHWM:"); }
inline void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace medic::bench
