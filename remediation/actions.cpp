#include "remediation/actions.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "common/thread_name.h"

namespace medic::remediation {

std::string_view to_string(ActionKind k) { return k == ActionKind::drain ? "drain" : "undrain"; }

std::string_view to_string(SwitchJob::Op op) {
  switch (op) {
    case SwitchJob::Op::drain: return "drain";
    case SwitchJob::Op::undrain: return "undrain";
    case SwitchJob::Op::read_back: return "read_back";
  }
  return "?";
}

bool apply_to_link(const fabric::Topology& topology, DriverSet& drivers, fabric::LinkId link, bool drain,
                   ActionOutcome& out) {
  const fabric::Link& l = topology.link(link);
  std::vector<fabric::PortId> done;
  // Put back the ends that may have changed, so the link is not left half drained: those
  // changed, and `maybe` (an end whose call failed after it may have been carried out). An
  // end changed by us is known to be back when the switch answers that it is as it was.
  // `maybe` never is: its lost call may still be waiting at the switch and be carried out
  // after the put-back, so it stays unknown (counted as changed) whatever the answer.
  auto rollback = [&](std::optional<fabric::PortId> maybe = std::nullopt) {
    std::vector<fabric::PortId> ends = done;
    if (maybe) ends.push_back(*maybe);
    for (const fabric::PortId q : ends) {
      const fabric::Port& qp = topology.port(q);
      auto back = drain ? drivers.for_device(qp.device)->undrain(qp.name)
                        : drivers.for_device(qp.device)->drain(qp.name);
      const bool known = back.ok() && back->drained != drain;
      if (!known || (maybe && q == *maybe)) out.unknown.push_back(q);
      out.steps.push_back(std::string("rollback ") + topology.endpoint_name(q) + " -> " +
                          (known ? "ok" : back.ok() ? std::string(back->drained ? "drained" : "undrained")
                                                    : "error: " + back.error()));
    }
  };
  int driven = 0;
  for (const fabric::PortId p : {l.a, l.b}) {
    const fabric::Port& port = topology.port(p);
    Driver* d = drivers.for_device(port.device);
    if (d == nullptr) continue;
    ++driven;
    const std::string ep = topology.endpoint_name(p);
    auto r = drain ? d->drain(port.name) : d->undrain(port.name);
    if (!r.ok()) {
      out.error = r.error();
      out.steps.push_back(std::string(drain ? "drain " : "undrain ") + ep + " -> error: " + r.error());
      rollback(r.kind() == ErrorKind::indeterminate ? std::optional(p) : std::nullopt);
      return false;
    }
    out.steps.push_back(std::string(drain ? "drain " : "undrain ") + ep + " -> " +
                        (r->drained ? "drained" : "undrained"));
    done.push_back(p);
  }
  if (driven == 0) {
    out.error = "no drain driver for either end of " + l.name;
    return false;
  }
  // Read back: the switch must now say what we asked for.
  for (const fabric::PortId p : done) {
    const fabric::Port& port = topology.port(p);
    auto st = drivers.for_device(port.device)->get_state(port.name);
    const std::string ep = topology.endpoint_name(p);
    if (!st.ok()) {
      out.error = "verify " + ep + ": " + st.error();
      rollback();
      return false;
    }
    if (st->drained != drain) {
      out.error = "verify " + ep + ": switch reports " + (st->drained ? "drained" : "undrained") +
                  " after " + (drain ? "drain" : "undrain");
      rollback();
      return false;
    }
    out.steps.push_back("verify " + ep + " -> " + (st->drained ? "drained" : "undrained"));
  }
  return true;
}

LinkReadBack read_back(const fabric::Topology& topology, DriverSet& drivers, fabric::LinkId link) {
  LinkReadBack rb;
  const fabric::Link& l = topology.link(link);
  for (const fabric::PortId p : {l.a, l.b}) {
    const fabric::Port& port = topology.port(p);
    Driver* d = drivers.for_device(port.device);
    if (d == nullptr) continue;
    ++rb.driven;
    auto st = d->get_state(port.name);
    if (!st.ok()) {
      rb.error = topology.endpoint_name(p) + ": " + st.error();
      return rb;
    }
    if (st->drained) {
      ++rb.drained;
      rb.drained_ports.push_back(p);
    }
  }
  return rb;
}

SwitchResult run_switch_job(const fabric::Topology& topology, DriverSet& drivers, const SwitchJob& job) {
  SwitchResult r;
  r.job = job;
  const auto start = std::chrono::steady_clock::now();
  if (job.op == SwitchJob::Op::read_back) {
    r.read = read_back(topology, drivers, job.link);
  } else {
    r.outcome.succeeded = apply_to_link(topology, drivers, job.link, job.op == SwitchJob::Op::drain, r.outcome);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

bool InlineSwitchRunner::submit(const SwitchJob& job) {
  done_.push_back(run_switch_job(topology_, drivers_, job));
  return true;
}

std::vector<SwitchResult> InlineSwitchRunner::take_finished() { return std::exchange(done_, {}); }

ThreadedSwitchRunner::ThreadedSwitchRunner(const fabric::Topology& topology, DriverSet& drivers, int workers,
                                           size_t queue_limit)
    : topology_(topology), drivers_(drivers), queue_limit_(std::max<size_t>(1, queue_limit)) {
  for (int i = 0; i < std::max(1, workers); ++i) threads_.emplace_back([this] {
    name_this_thread("medic-switch");
    work();
  });
}

ThreadedSwitchRunner::~ThreadedSwitchRunner() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

std::vector<fabric::DeviceId> ThreadedSwitchRunner::devices_of(const SwitchJob& job) const {
  const fabric::Link& l = topology_.link(job.link);
  const fabric::DeviceId a = topology_.port(l.a).device, b = topology_.port(l.b).device;
  return a == b ? std::vector<fabric::DeviceId>{a} : std::vector<fabric::DeviceId>{a, b};
}

bool ThreadedSwitchRunner::submit(const SwitchJob& job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() + running_ >= queue_limit_) return false;
    queue_.push_back(job);
  }
  cv_.notify_all();
  return true;
}

std::vector<SwitchResult> ThreadedSwitchRunner::take_finished() {
  std::lock_guard lock(mu_);
  return std::exchange(done_, {});
}

size_t ThreadedSwitchRunner::pending() const {
  std::lock_guard lock(mu_);
  return queue_.size() + running_;
}

void ThreadedSwitchRunner::work() {
  std::unique_lock lock(mu_);
  while (true) {
    // The oldest queued job none of whose switches is busy.
    auto pick = queue_.end();
    cv_.wait(lock, [&] {
      if (stopping_) return true;
      pick = std::find_if(queue_.begin(), queue_.end(), [&](const SwitchJob& j) {
        for (const fabric::DeviceId d : devices_of(j)) {
          if (busy_.count(d) != 0) return false;
        }
        return true;
      });
      return pick != queue_.end();
    });
    if (stopping_) return;
    const SwitchJob job = *pick;
    queue_.erase(pick);
    const auto devices = devices_of(job);
    for (const fabric::DeviceId d : devices) busy_.insert(d);
    ++running_;
    lock.unlock();
    SwitchResult r = run_switch_job(topology_, drivers_, job);
    lock.lock();
    for (const fabric::DeviceId d : devices) busy_.erase(d);
    --running_;
    done_.push_back(std::move(r));
    cv_.notify_all();  // a job waiting for these switches may go now
  }
}

}  // namespace medic::remediation
