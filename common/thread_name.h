// Names the calling thread, so that top -H, perf and /proc/PID/task/*/comm say which part
// of a process spends its CPU (bench/scrape_vs_prometheus reads medicd's by these names).
// Linux keeps 15 characters of a thread's name; longer names are cut.
#pragma once

#include <pthread.h>

#include <string>

namespace medic {

inline void name_this_thread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace medic
