#include "remediation/executor.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fabric/generator.h"

namespace medic::remediation {
namespace {

// Everything the executor does, in order, from the journal and from every driver.
using CallLog = std::vector<std::string>;

class FakeJournal final : public ActionJournal {
 public:
  explicit FakeJournal(CallLog& log) : log_(log) {}

  Result<int64_t> write_intent(const ActionIntent& intent) override {
    log_.push_back("intent");
    intents.push_back(intent);
    if (on_intent) on_intent();
    if (!intent_error.empty()) return Error{intent_error};
    return next_id++;
  }
  Status write_result(int64_t action_id, const ActionIntent& intent, const ActionOutcome& outcome) override {
    log_.push_back("result");
    results.push_back({action_id, intent, outcome});
    if (!result_error.empty()) return Error{result_error};
    return Ok{};
  }
  Status write_refusal(const ActionIntent& intent, const std::string& reason) override {
    log_.push_back("refusal");
    refusals.push_back({intent, reason});
    return Ok{};
  }

  struct ResultRow {
    int64_t action_id;
    ActionIntent intent;
    ActionOutcome outcome;
  };
  struct RefusalRow {
    ActionIntent intent;
    std::string reason;
  };
  std::vector<ActionIntent> intents;
  std::vector<ResultRow> results;
  std::vector<RefusalRow> refusals;
  std::string intent_error, result_error;
  std::function<void()> on_intent;
  int64_t next_id = 41;

 private:
  CallLog& log_;
};

class FakeDriver final : public Driver {
 public:
  FakeDriver(std::string device, CallLog& log) : device_(std::move(device)), log_(log) {}
  std::string kind() const override { return "fake"; }

  Result<InterfaceState> drain(const std::string& interface) override {
    log_.push_back("drain " + device_ + ":" + interface);
    if (!drain_error.empty()) return Error{drain_error};
    drained[interface] = true;
    return InterfaceState{interface, true, true};
  }
  Result<InterfaceState> undrain(const std::string& interface) override {
    log_.push_back("undrain " + device_ + ":" + interface);
    drained[interface] = false;
    return InterfaceState{interface, false, true};
  }
  Result<InterfaceState> get_state(const std::string& interface) override {
    log_.push_back("get_state " + device_ + ":" + interface);
    if (lie_not_drained) return InterfaceState{interface, false, true};
    return InterfaceState{interface, drained[interface], true};
  }

  std::map<std::string, bool> drained;
  std::string drain_error;
  bool lie_not_drained = false;

 private:
  std::string device_;
  CallLog& log_;
};

class ExecutorTest : public ::testing::Test {
 protected:
  ExecutorTest() {
    auto a = std::make_unique<FakeDriver>("rtsw0001", log);
    auto b = std::make_unique<FakeDriver>("ctsw001", log);
    tor = a.get();
    spine = b.get();
    drivers.replace(*topo.find_device("rtsw0001"), std::move(a));
    drivers.replace(*topo.find_device("ctsw001"), std::move(b));
  }

  fabric::Topology topo = fabric::generate_clos(*fabric::preset("demo"));
  CapacityModel capacity{topo};
  DriverSet drivers{topo, JsonRpcOptions{}};
  CallLog log;
  FakeJournal journal{log};
  SimulatedClock clock{from_unix_seconds(1'700'000'000)};
  Executor exec{topo, capacity, drivers, journal, clock};
  FakeDriver* tor = nullptr;
  FakeDriver* spine = nullptr;
  fabric::LinkId uplink = *topo.find_link("rtsw0001:eth5");
  fabric::GroupId group = *topo.find_group("rtsw0001 uplinks");
};

TEST_F(ExecutorTest, DemoUplinkEndsAreTheFakedSwitches) {
  EXPECT_EQ(topo.link(uplink).name, "rtsw0001:eth5--ctsw001:eth1");
  EXPECT_EQ(drivers.for_device(*topo.find_device("rtsw0001"))->kind(), "fake");
  EXPECT_EQ(drivers.for_device(*topo.find_device("ctsw001"))->kind(), "fake");
}

TEST_F(ExecutorTest, SuccessWritesIntentFirstThenDrainsVerifiesAndRecords) {
  const DrainResult r = exec.drain_link(7, uplink);
  EXPECT_EQ(r.status, DrainStatus::drained);
  EXPECT_EQ(r.reason, "");
  EXPECT_EQ(r.action_id, 41);
  EXPECT_TRUE(r.check.allowed);
  EXPECT_EQ(r.at, clock.now());
  EXPECT_EQ(log, (CallLog{"intent", "drain rtsw0001:eth5", "drain ctsw001:eth1", "get_state rtsw0001:eth5",
                          "get_state ctsw001:eth1", "result"}));

  ASSERT_EQ(journal.intents.size(), 1u);
  EXPECT_EQ(journal.intents[0].incident_id, 7);
  EXPECT_EQ(journal.intents[0].link, uplink);
  EXPECT_EQ(journal.intents[0].kind, ActionKind::drain);
  EXPECT_EQ(journal.intents[0].at, clock.now());
  ASSERT_EQ(journal.results.size(), 1u);
  const auto& res = journal.results[0];
  EXPECT_EQ(res.action_id, 41);
  EXPECT_TRUE(res.outcome.succeeded);
  EXPECT_TRUE(res.outcome.link_drained);
  EXPECT_EQ(res.outcome.error, "");
  EXPECT_EQ(res.outcome.steps,
            (std::vector<std::string>{"drain rtsw0001:eth5 -> drained", "drain ctsw001:eth1 -> drained",
                                      "verify rtsw0001:eth5 -> drained", "verify ctsw001:eth1 -> drained"}));
  EXPECT_TRUE(journal.refusals.empty());

  EXPECT_TRUE(capacity.drained(uplink));
  EXPECT_FALSE(capacity.in_service(uplink));
  EXPECT_DOUBLE_EQ(capacity.fraction_in_service(group), 0.75);
  EXPECT_TRUE(tor->drained["eth5"]);
  EXPECT_TRUE(spine->drained["eth1"]);
  EXPECT_EQ(to_string(ActionKind::drain), "drain");
  EXPECT_EQ(to_string(ActionKind::undrain), "undrain");
}

TEST_F(ExecutorTest, CapacityIsReservedWhileTheIntentIsWritten) {
  const fabric::LinkId other = *topo.find_link("rtsw0001:eth6");
  bool reserved_during_intent = false;
  bool concurrent_check_allowed = true;
  journal.on_intent = [&] {
    reserved_during_intent = !capacity.in_service(uplink) && !capacity.drained(uplink);
    concurrent_check_allowed = capacity.check_drain(other).allowed;
  };
  EXPECT_EQ(exec.drain_link(1, uplink).status, DrainStatus::drained);
  EXPECT_TRUE(reserved_during_intent);
  EXPECT_FALSE(concurrent_check_allowed);
}

TEST_F(ExecutorTest, RefusalIsRecordedAndNoDriverIsCalled) {
  capacity.set_drained(*topo.find_link("rtsw0001:eth6"), true);
  clock.advance(from_seconds(3));
  const DrainResult r = exec.drain_link(9, uplink);
  EXPECT_EQ(r.status, DrainStatus::refused);
  EXPECT_EQ(r.reason, "rtsw0001 uplinks would fall to 50.0% < floor 75.0%");
  EXPECT_FALSE(r.check.allowed);
  EXPECT_EQ(r.action_id, 0);
  EXPECT_EQ(r.at, clock.now());
  EXPECT_EQ(log, CallLog{"refusal"});
  ASSERT_EQ(journal.refusals.size(), 1u);
  EXPECT_EQ(journal.refusals[0].reason, "rtsw0001 uplinks would fall to 50.0% < floor 75.0%");
  EXPECT_EQ(journal.refusals[0].intent.incident_id, 9);
  EXPECT_EQ(journal.refusals[0].intent.link, uplink);
  EXPECT_TRUE(journal.intents.empty());
  EXPECT_TRUE(journal.results.empty());
  EXPECT_TRUE(capacity.in_service(uplink));
  EXPECT_DOUBLE_EQ(capacity.fraction_in_service(group), 0.75);
}

TEST_F(ExecutorTest, DriverErrorOnSecondEndRollsBackTheFirst) {
  spine->drain_error = "ctsw001: connection refused";
  const DrainResult r = exec.drain_link(3, uplink);
  EXPECT_EQ(r.status, DrainStatus::failed);
  EXPECT_EQ(r.reason, "ctsw001: connection refused");
  EXPECT_EQ(log, (CallLog{"intent", "drain rtsw0001:eth5", "drain ctsw001:eth1", "undrain rtsw0001:eth5", "result"}));
  EXPECT_FALSE(tor->drained["eth5"]);
  ASSERT_EQ(journal.results.size(), 1u);
  const auto& out = journal.results[0].outcome;
  EXPECT_FALSE(out.succeeded);
  EXPECT_FALSE(out.link_drained);
  EXPECT_EQ(out.error, "ctsw001: connection refused");
  EXPECT_EQ(out.steps, (std::vector<std::string>{"drain rtsw0001:eth5 -> drained",
                                                 "drain ctsw001:eth1 -> error: ctsw001: connection refused",
                                                 "rollback rtsw0001:eth5 -> ok"}));
  // Nothing held, nothing drained in the model.
  EXPECT_FALSE(capacity.drained(uplink));
  EXPECT_TRUE(capacity.in_service(uplink));
  EXPECT_DOUBLE_EQ(capacity.fraction_in_service(group), 1.0);
}

TEST_F(ExecutorTest, DriverErrorOnFirstEndTouchesNothingElse) {
  tor->drain_error = "rtsw0001: HTTP 401";
  const DrainResult r = exec.drain_link(3, uplink);
  EXPECT_EQ(r.status, DrainStatus::failed);
  EXPECT_EQ(log, (CallLog{"intent", "drain rtsw0001:eth5", "result"}));
  EXPECT_TRUE(capacity.in_service(uplink));
}

TEST_F(ExecutorTest, VerifyMismatchIsFailedAndPutsBothEndsBack) {
  spine->lie_not_drained = true;
  const DrainResult r = exec.drain_link(4, uplink);
  EXPECT_EQ(r.status, DrainStatus::failed);
  EXPECT_EQ(r.reason, "verify ctsw001:eth1: switch reports undrained after drain");
  // The model will say "in service": the switches must not be left half drained.
  EXPECT_EQ(log, (CallLog{"intent", "drain rtsw0001:eth5", "drain ctsw001:eth1", "get_state rtsw0001:eth5",
                          "get_state ctsw001:eth1", "undrain rtsw0001:eth5", "undrain ctsw001:eth1", "result"}));
  EXPECT_FALSE(tor->drained["eth5"]);
  EXPECT_FALSE(spine->drained["eth1"]);
  ASSERT_EQ(journal.results.size(), 1u);
  EXPECT_FALSE(journal.results[0].outcome.succeeded);
  EXPECT_FALSE(journal.results[0].outcome.link_drained);
  EXPECT_EQ(journal.results[0].outcome.error, "verify ctsw001:eth1: switch reports undrained after drain");
  EXPECT_EQ(journal.results[0].outcome.steps,
            (std::vector<std::string>{"drain rtsw0001:eth5 -> drained", "drain ctsw001:eth1 -> drained",
                                      "verify rtsw0001:eth5 -> drained", "rollback rtsw0001:eth5 -> ok",
                                      "rollback ctsw001:eth1 -> ok"}));
  EXPECT_FALSE(capacity.drained(uplink));
  EXPECT_DOUBLE_EQ(capacity.fraction_in_service(group), 1.0);
}

TEST_F(ExecutorTest, IntentWriteFailureLeavesSwitchUntouchedAndReleasesReservation) {
  journal.intent_error = "database is down";
  const DrainResult r = exec.drain_link(5, uplink);
  EXPECT_EQ(r.status, DrainStatus::failed);
  EXPECT_EQ(r.reason, "intent not recorded, switch not touched: database is down");
  EXPECT_EQ(log, CallLog{"intent"});
  EXPECT_TRUE(journal.results.empty());
  EXPECT_TRUE(tor->drained.empty());
  EXPECT_TRUE(spine->drained.empty());
  EXPECT_TRUE(capacity.in_service(uplink));
  EXPECT_FALSE(capacity.drained(uplink));
  EXPECT_DOUBLE_EQ(capacity.fraction_in_service(group), 1.0);
  // The reservation is gone: the same drain may be tried again and succeeds.
  journal.intent_error.clear();
  EXPECT_EQ(exec.drain_link(5, uplink).status, DrainStatus::drained);
}

TEST_F(ExecutorTest, ResultWriteFailureStillReportsTheDrain) {
  journal.result_error = "connection lost";
  const DrainResult r = exec.drain_link(6, uplink);
  EXPECT_EQ(r.status, DrainStatus::drained);
  EXPECT_TRUE(capacity.drained(uplink));
  EXPECT_EQ(journal.results.size(), 1u);
}

TEST_F(ExecutorTest, AlreadyDrainedLinkDoesNothing) {
  ASSERT_EQ(exec.drain_link(1, uplink).status, DrainStatus::drained);
  log.clear();
  const DrainResult r = exec.drain_link(2, uplink);
  EXPECT_EQ(r.status, DrainStatus::drained);
  EXPECT_EQ(r.reason, "already drained: nothing to do");
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(journal.intents.size(), 1u);
  EXPECT_EQ(journal.results.size(), 1u);
  EXPECT_DOUBLE_EQ(capacity.fraction_in_service(group), 0.75);
}

TEST_F(ExecutorTest, SecondDrainInGroupIsRefusedAfterFirstSucceeded) {
  ASSERT_EQ(exec.drain_link(1, uplink).status, DrainStatus::drained);
  const DrainResult r = exec.drain_link(2, *topo.find_link("rtsw0001:eth7"));
  EXPECT_EQ(r.status, DrainStatus::refused);
  EXPECT_EQ(r.reason, "rtsw0001 uplinks would fall to 50.0% < floor 75.0%");
}

TEST_F(ExecutorTest, HostLinkDrainsOnlyTheSwitchEnd) {
  const fabric::LinkId host_link = *topo.find_link("rtsw0001:eth2");
  const DrainResult r = exec.drain_link(8, host_link);
  EXPECT_EQ(r.status, DrainStatus::drained);
  EXPECT_EQ(log, (CallLog{"intent", "drain rtsw0001:eth2", "get_state rtsw0001:eth2", "result"}));
  EXPECT_TRUE(capacity.drained(host_link));
}

TEST_F(ExecutorTest, NoDriverForEitherEndIsFailed) {
  drivers.replace(*topo.find_device("rtsw0001"), nullptr);
  drivers.replace(*topo.find_device("ctsw001"), nullptr);
  const DrainResult r = exec.drain_link(8, uplink);
  EXPECT_EQ(r.status, DrainStatus::failed);
  EXPECT_EQ(r.reason, "no drain driver for either end of rtsw0001:eth5--ctsw001:eth1");
  EXPECT_FALSE(capacity.drained(uplink));
  EXPECT_TRUE(capacity.in_service(uplink));
}

}  // namespace
}  // namespace medic::remediation
