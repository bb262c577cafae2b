// What a drain or undrain does at the switches, and where those calls run. The workflow
// (remediation/workflow.h) decides and records; the calls to the switches go through a
// SwitchRunner so that a slow or dead switch never holds the poll loop: medicd runs them
// on worker threads (ThreadedSwitchRunner), tests and one-shot tools on the caller's
// thread (InlineSwitchRunner). Results come back as plain data.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/time.h"
#include "remediation/driver.h"

namespace medic::remediation {

enum class ActionKind : uint8_t { drain, undrain };
std::string_view to_string(ActionKind k);

struct ActionIntent {
  int64_t incident_id = 0;
  fabric::LinkId link = fabric::kNone;
  ActionKind kind = ActionKind::drain;
  Time at{};
};

struct ActionOutcome {
  bool succeeded = false;
  std::string error;
  std::vector<std::string> steps;  // "drain rtsw0001:eth17 -> drained", ...
  // After a failure: the ends that may be left changed: one whose call's answer was lost (it
  // may yet be carried out, even after a put-back), or one changed whose put-back the switch
  // did not confirm. A drain's are counted as drained; empty when every end is known to be
  // as it was.
  std::vector<fabric::PortId> unknown;
};

// Drains (or undrains) every switch end of the link and reads each end back; on any failure
// puts back the ends it may have changed (those changed, and one whose call failed in a way
// the switch may have carried out: ErrorKind::indeterminate) and returns false with
// out.error set; a put-back the switch does not confirm leaves its end in out.unknown.
// Idempotent.
bool apply_to_link(const fabric::Topology& topology, DriverSet& drivers, fabric::LinkId link, bool drain,
                   ActionOutcome& out);

// What the switches say of the link's ends: how many ends have a driver, how many of them
// report drained, and the first error (then the counts are partial).
struct LinkReadBack {
  int driven = 0;
  int drained = 0;
  std::string error;
  std::vector<fabric::PortId> drained_ports;
};
LinkReadBack read_back(const fabric::Topology& topology, DriverSet& drivers, fabric::LinkId link);

// One call to the switches about one link.
struct SwitchJob {
  enum class Op : uint8_t { drain, undrain, read_back };
  fabric::LinkId link = fabric::kNone;
  Op op = Op::drain;
  uint64_t ticket = 0;  // the caller's, to match the result (a late answer to an old job is told apart)
};
std::string_view to_string(SwitchJob::Op op);

struct SwitchResult {
  SwitchJob job;
  ActionOutcome outcome;  // drain, undrain
  LinkReadBack read;      // read_back
  double seconds = 0;     // how long the switches took
};

class SwitchRunner {
 public:
  virtual ~SwitchRunner() = default;
  // Queues a job; false when the queue is full (the caller tries again later). At most one
  // job per link may be queued or running: the caller keeps one action per link.
  virtual bool submit(const SwitchJob& job) = 0;
  // The jobs finished since the last call, in the order they finished.
  virtual std::vector<SwitchResult> take_finished() = 0;
};

// Runs a job at once on the caller's thread, inside submit.
class InlineSwitchRunner final : public SwitchRunner {
 public:
  InlineSwitchRunner(const fabric::Topology& topology, DriverSet& drivers) : topology_(topology), drivers_(drivers) {}
  bool submit(const SwitchJob& job) override;
  std::vector<SwitchResult> take_finished() override;

 private:
  const fabric::Topology& topology_;
  DriverSet& drivers_;
  std::vector<SwitchResult> done_;
};

// Runs jobs on worker threads: jobs of different switches at once, those touching the same
// switch one after another (a switch's drain API and the netns driver's route rewrites are
// not made for concurrent changes). The queue is bounded; stopping waits for the calls under
// way (each bounded by its driver's timeouts) and drops the queued ones, whose intents the
// next start reconciles.
class ThreadedSwitchRunner final : public SwitchRunner {
 public:
  ThreadedSwitchRunner(const fabric::Topology& topology, DriverSet& drivers, int workers = 4,
                       size_t queue_limit = 1024);
  ~ThreadedSwitchRunner() override;
  ThreadedSwitchRunner(const ThreadedSwitchRunner&) = delete;
  ThreadedSwitchRunner& operator=(const ThreadedSwitchRunner&) = delete;

  bool submit(const SwitchJob& job) override;
  std::vector<SwitchResult> take_finished() override;
  // Jobs queued or running now.
  size_t pending() const;

 private:
  void work();
  // The switches a job touches.
  std::vector<fabric::DeviceId> devices_of(const SwitchJob& job) const;

  const fabric::Topology& topology_;
  DriverSet& drivers_;
  const size_t queue_limit_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<SwitchJob> queue_;
  std::set<fabric::DeviceId> busy_;  // switches with a job running
  size_t running_ = 0;
  std::vector<SwitchResult> done_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// Runs one job on the caller's thread (what both runners do with a job).
SwitchResult run_switch_job(const fabric::Topology& topology, DriverSet& drivers, const SwitchJob& job);

}  // namespace medic::remediation
