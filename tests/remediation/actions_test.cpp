// The switch side of an action: apply_to_link and read_back, and the runners that call
// them on the caller's thread or off it.
#include "remediation/actions.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fabric/generator.h"
#include "tests/support/testing.h"

namespace medic::remediation {
namespace {

using namespace std::chrono_literals;

// Every driver call, in order.
using CallLog = std::vector<std::string>;

class FakeDriver final : public Driver {
 public:
  FakeDriver(std::string device, CallLog& log, std::mutex& mu) : device_(std::move(device)), log_(log), mu_(mu) {}
  std::string kind() const override { return "fake"; }

  Result<InterfaceState> drain(const std::string& interface) override {
    if (hold) hold();
    std::lock_guard lock(mu_);
    log_.push_back("drain " + device_ + ":" + interface);
    if (!drain_error.empty()) return Error{drain_error};
    drained[interface] = true;
    if (answers_lost || drain_answer_lost) return Error::indeterminate(device_ + ": timeout (after 3 attempts)");
    return InterfaceState{interface, true, true};
  }
  Result<InterfaceState> undrain(const std::string& interface) override {
    std::lock_guard lock(mu_);
    log_.push_back("undrain " + device_ + ":" + interface);
    if (!undrain_error.empty()) return Error{undrain_error};
    drained[interface] = false;
    if (answers_lost) return Error::indeterminate(device_ + ": timeout (after 3 attempts)");
    return InterfaceState{interface, false, true};
  }
  Result<InterfaceState> get_state(const std::string& interface) override {
    std::lock_guard lock(mu_);
    log_.push_back("get_state " + device_ + ":" + interface);
    if (lie_not_drained) return InterfaceState{interface, false, true};
    return InterfaceState{interface, drained[interface], true};
  }

  std::map<std::string, bool> drained;
  std::string drain_error;    // a refusal: nothing done
  std::string undrain_error;  // a refusal: nothing done
  bool answers_lost = false;  // every call carried out, its answer lost (indeterminate)
  bool drain_answer_lost = false;  // drains carried out, their answers lost
  bool lie_not_drained = false;
  std::function<void()> hold;  // called before a drain, outside the lock (a slow switch)

 private:
  std::string device_;
  CallLog& log_;
  std::mutex& mu_;
};

class ActionsTest : public ::testing::Test {
 protected:
  ActionsTest() {
    for (fabric::DeviceId d = 0; d < topo.devices().size(); ++d) {
      if (!topo.device(d).is_switch()) continue;
      auto drv = std::make_unique<FakeDriver>(topo.device(d).name, log, mu);
      fakes[topo.device(d).name] = drv.get();
      drivers.replace(d, std::move(drv));
    }
    tor = fakes["rtsw0001"];
    spine = fakes["ctsw001"];
  }
  CallLog calls() {
    std::lock_guard lock(mu);
    return log;
  }

  fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  DriverSet drivers{topo, JsonRpcOptions{}};
  std::mutex mu;
  CallLog log;
  std::map<std::string, FakeDriver*> fakes;
  FakeDriver* tor = nullptr;
  FakeDriver* spine = nullptr;
  fabric::LinkId uplink = *topo.find_link("rtsw0001:eth5");
};

TEST_F(ActionsTest, ADrainChangesBothEndsThenReadsThemBack) {
  ActionOutcome out;
  EXPECT_TRUE(apply_to_link(topo, drivers, uplink, true, out));
  EXPECT_EQ(out.error, "");
  EXPECT_EQ(calls(), (CallLog{"drain rtsw0001:eth5", "drain ctsw001:eth1", "get_state rtsw0001:eth5",
                              "get_state ctsw001:eth1"}));
  EXPECT_EQ(out.steps, (std::vector<std::string>{"drain rtsw0001:eth5 -> drained", "drain ctsw001:eth1 -> drained",
                                                 "verify rtsw0001:eth5 -> drained", "verify ctsw001:eth1 -> drained"}));
  EXPECT_TRUE(tor->drained["eth5"]);
  EXPECT_TRUE(spine->drained["eth1"]);
  // Idempotent: draining again changes nothing and succeeds.
  ActionOutcome again;
  EXPECT_TRUE(apply_to_link(topo, drivers, uplink, true, again));
  EXPECT_EQ(to_string(ActionKind::drain), "drain");
  EXPECT_EQ(to_string(ActionKind::undrain), "undrain");
}

TEST_F(ActionsTest, AnErrorOnTheSecondEndPutsTheFirstBack) {
  spine->drain_error = "ctsw001: connection refused";
  ActionOutcome out;
  EXPECT_FALSE(apply_to_link(topo, drivers, uplink, true, out));
  EXPECT_EQ(out.error, "ctsw001: connection refused");
  EXPECT_EQ(calls(), (CallLog{"drain rtsw0001:eth5", "drain ctsw001:eth1", "undrain rtsw0001:eth5"}));
  EXPECT_FALSE(tor->drained["eth5"]);
  EXPECT_EQ(out.steps, (std::vector<std::string>{"drain rtsw0001:eth5 -> drained",
                                                 "drain ctsw001:eth1 -> error: ctsw001: connection refused",
                                                 "rollback rtsw0001:eth5 -> ok"}));
}

// A drain the switch carried out though its answer was lost (a timeout): the end is put
// back as well. Even with the put-back confirmed the end stays unknown: the lost call may
// still be waiting at the switch, to be carried out after it.
TEST_F(ActionsTest, ALostAnswerPutsBackTheEndWhoseCallFailedToo) {
  spine->drain_answer_lost = true;
  ActionOutcome out;
  EXPECT_FALSE(apply_to_link(topo, drivers, uplink, true, out));
  EXPECT_EQ(out.error, "ctsw001: timeout (after 3 attempts)");
  EXPECT_EQ(calls(), (CallLog{"drain rtsw0001:eth5", "drain ctsw001:eth1", "undrain rtsw0001:eth5", "undrain ctsw001:eth1"}));
  EXPECT_FALSE(tor->drained["eth5"]);
  EXPECT_FALSE(spine->drained["eth1"]) << "the late drain was left in place";
  ASSERT_EQ(out.unknown.size(), 1u);
  EXPECT_EQ(topo.endpoint_name(out.unknown[0]), "ctsw001:eth1");
  EXPECT_EQ(out.steps.back(), "rollback ctsw001:eth1 -> ok");
}

// A switch whose every answer is lost: the end it may have drained cannot be known to be
// back, so it is reported unknown (the workflow counts the link as drained).
TEST_F(ActionsTest, APutBackWhoseAnswerIsLostLeavesTheEndUnknown) {
  tor->answers_lost = true;
  ActionOutcome out;
  EXPECT_FALSE(apply_to_link(topo, drivers, uplink, true, out));
  EXPECT_EQ(calls(), (CallLog{"drain rtsw0001:eth5", "undrain rtsw0001:eth5"}));
  ASSERT_EQ(out.unknown.size(), 1u);
  EXPECT_EQ(topo.endpoint_name(out.unknown[0]), "rtsw0001:eth5");
  EXPECT_EQ(out.steps.back(), "rollback rtsw0001:eth5 -> error: rtsw0001: timeout (after 3 attempts)");
  EXPECT_FALSE(spine->drained["eth1"]);
}

// A put-back refused outright leaves a changed end drained: unknown, not silently "ok".
TEST_F(ActionsTest, ARefusedPutBackOfAChangedEndLeavesItUnknown) {
  spine->drain_error = "ctsw001: connection refused";
  tor->undrain_error = "rtsw0001: HTTP 409: locked";
  ActionOutcome out;
  EXPECT_FALSE(apply_to_link(topo, drivers, uplink, true, out));
  EXPECT_EQ(calls(), (CallLog{"drain rtsw0001:eth5", "drain ctsw001:eth1", "undrain rtsw0001:eth5"}));
  EXPECT_TRUE(tor->drained["eth5"]);
  ASSERT_EQ(out.unknown.size(), 1u);
  EXPECT_EQ(topo.endpoint_name(out.unknown[0]), "rtsw0001:eth5");
}

// A refusal (not indeterminate) is not put back: the switch said it did nothing.
TEST_F(ActionsTest, ARefusalOfTheFailingEndIsNotPutBack) {
  tor->drain_error = "rtsw0001: switch refused: locked";
  ActionOutcome out;
  EXPECT_FALSE(apply_to_link(topo, drivers, uplink, true, out));
  EXPECT_EQ(calls(), CallLog{"drain rtsw0001:eth5"});
  EXPECT_TRUE(out.unknown.empty());
}

TEST_F(ActionsTest, AnErrorOnTheFirstEndTouchesNothingElse) {
  tor->drain_error = "rtsw0001: HTTP 401";
  ActionOutcome out;
  EXPECT_FALSE(apply_to_link(topo, drivers, uplink, true, out));
  EXPECT_EQ(calls(), CallLog{"drain rtsw0001:eth5"});
  EXPECT_FALSE(spine->drained["eth1"]);
}

TEST_F(ActionsTest, ASwitchThatSaysUndrainedAfterADrainIsAFailureAndBothEndsGoBack) {
  spine->lie_not_drained = true;
  ActionOutcome out;
  EXPECT_FALSE(apply_to_link(topo, drivers, uplink, true, out));
  EXPECT_EQ(out.error, "verify ctsw001:eth1: switch reports undrained after drain");
  EXPECT_EQ(calls(), (CallLog{"drain rtsw0001:eth5", "drain ctsw001:eth1", "get_state rtsw0001:eth5",
                              "get_state ctsw001:eth1", "undrain rtsw0001:eth5", "undrain ctsw001:eth1"}));
  EXPECT_FALSE(tor->drained["eth5"]);
  EXPECT_FALSE(spine->drained["eth1"]);
}

TEST_F(ActionsTest, AHostLinkDrainsOnlyTheSwitchEnd) {
  const fabric::LinkId host_link = *topo.find_link("rtsw0001:eth2");
  ActionOutcome out;
  EXPECT_TRUE(apply_to_link(topo, drivers, host_link, true, out));
  EXPECT_EQ(calls(), (CallLog{"drain rtsw0001:eth2", "get_state rtsw0001:eth2"}));
}

TEST_F(ActionsTest, NoDriverForEitherEndIsAFailure) {
  drivers.replace(*topo.find_device("rtsw0001"), nullptr);
  drivers.replace(*topo.find_device("ctsw001"), nullptr);
  ActionOutcome out;
  EXPECT_FALSE(apply_to_link(topo, drivers, uplink, true, out));
  EXPECT_EQ(out.error, "no drain driver for either end of rtsw0001:eth5--ctsw001:eth1");
  const LinkReadBack rb = read_back(topo, drivers, uplink);
  EXPECT_EQ(rb.driven, 0);
}

TEST_F(ActionsTest, ReadBackCountsTheEndsThatSayDrained) {
  tor->drained["eth5"] = true;
  const LinkReadBack rb = read_back(topo, drivers, uplink);
  EXPECT_EQ(rb.driven, 2);
  EXPECT_EQ(rb.drained, 1);
  EXPECT_EQ(rb.error, "");
  ASSERT_EQ(rb.drained_ports.size(), 1u);
  EXPECT_EQ(topo.endpoint_name(rb.drained_ports[0]), "rtsw0001:eth5");
}

TEST_F(ActionsTest, TheInlineRunnerAnswersOnTheCallersThreadWithTheTicket) {
  InlineSwitchRunner runner(topo, drivers);
  ASSERT_TRUE(runner.submit({uplink, SwitchJob::Op::drain, 7}));
  ASSERT_TRUE(runner.submit({uplink, SwitchJob::Op::read_back, 8}));
  const auto done = runner.take_finished();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].job.ticket, 7u);
  EXPECT_TRUE(done[0].outcome.succeeded);
  EXPECT_EQ(done[1].job.ticket, 8u);
  EXPECT_EQ(done[1].read.drained, 2);
  EXPECT_TRUE(runner.take_finished().empty());
}

// A switch that answers slowly holds only its own jobs: another switch's drain goes
// through meanwhile, and the caller is never held.
TEST_F(ActionsTest, ASlowSwitchHoldsOnlyItsOwnJobs) {
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool open = false;
  std::atomic<int> held{0};
  fakes["rtsw0001"]->hold = [&] {
    ++held;
    std::unique_lock lock(gate_mu);
    gate_cv.wait(lock, [&] { return open; });
  };
  ThreadedSwitchRunner runner(topo, drivers, 4);
  const fabric::LinkId slow = uplink;                              // rtsw0001 -- ctsw001
  const fabric::LinkId same_switch = *topo.find_link("rtsw0001:eth6");  // rtsw0001 again
  const fabric::LinkId other = *topo.find_link("rtsw0002:eth5");   // rtsw0002 -- ctsw001
  ASSERT_TRUE(runner.submit({slow, SwitchJob::Op::drain, 1}));
  ASSERT_TRUE(testing::eventually([&] { return held.load() == 1; }, 5s));
  ASSERT_TRUE(runner.submit({same_switch, SwitchJob::Op::drain, 2}));
  // rtsw0002's link shares ctsw001 with the slow one: it waits too. rtsw0003's does not.
  const fabric::LinkId free_link = *topo.find_link("rtsw0003:eth7");
  ASSERT_TRUE(runner.submit({other, SwitchJob::Op::drain, 3}));
  ASSERT_TRUE(runner.submit({free_link, SwitchJob::Op::drain, 4}));
  std::vector<SwitchResult> done;
  ASSERT_TRUE(testing::eventually(
      [&] {
        for (auto& r : runner.take_finished()) done.push_back(std::move(r));
        return !done.empty();
      },
      5s));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].job.ticket, 4u);
  EXPECT_TRUE(done[0].outcome.succeeded);
  EXPECT_EQ(runner.pending(), 3u);
  EXPECT_EQ(held.load(), 1);  // the second rtsw0001 job has not started
  {
    std::lock_guard lock(gate_mu);
    open = true;
  }
  gate_cv.notify_all();
  ASSERT_TRUE(testing::eventually(
      [&] {
        for (auto& r : runner.take_finished()) done.push_back(std::move(r));
        return done.size() == 4;
      },
      5s));
  for (const auto& r : done) EXPECT_TRUE(r.outcome.succeeded) << r.job.ticket << ": " << r.outcome.error;
  EXPECT_EQ(runner.pending(), 0u);
}

TEST_F(ActionsTest, TheQueueIsBounded) {
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool open = false;
  fakes["rtsw0001"]->hold = [&] {
    std::unique_lock lock(gate_mu);
    gate_cv.wait(lock, [&] { return open; });
  };
  {
    ThreadedSwitchRunner runner(topo, drivers, 1, 2);
    EXPECT_TRUE(runner.submit({uplink, SwitchJob::Op::drain, 1}));
    EXPECT_TRUE(runner.submit({*topo.find_link("rtsw0001:eth6"), SwitchJob::Op::drain, 2}));
    EXPECT_FALSE(runner.submit({*topo.find_link("rtsw0001:eth7"), SwitchJob::Op::drain, 3}));
    {
      std::lock_guard lock(gate_mu);
      open = true;
    }
    gate_cv.notify_all();
  }  // stopping waits for the call under way and drops what is queued
}

}  // namespace
}  // namespace medic::remediation
