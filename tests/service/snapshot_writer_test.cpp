// medicd's snapshot writer against the real PostgreSQL: snapshots are stored in the order
// they were handed over, off the caller's thread; a full queue (the database held up)
// drops and counts what does not fit and never blocks the caller; a database that is gone
// or hung costs every snapshot, counted, after one try to connect (its backoff), and stop()
// still returns; what is queued at stop() is stored.
#include "service/snapshot_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <pqxx/pqxx>
#include <thread>
#include <vector>

#include "db/migrations.h"
#include "tests/support/testing.h"

namespace medic::service {
namespace {

snapshot::Snapshot snap(const std::string& reason) {
  snapshot::Snapshot s;
  s.scope = std::string(snapshot::kScopeIncident);
  s.reason = reason;
  s.link = "rtsw0001:eth5--ctsw0001:eth1";
  s.taken_at = SystemClock().now();
  snapshot::PortReading p;
  p.device = "rtsw0001";
  p.port = "eth5";
  p.oper = 1;
  s.ports.push_back(p);
  return s;
}

double metric(const metrics::Registry& r, const std::string& name) {
  const auto v = testing::metric_value(r.render(), name);
  EXPECT_TRUE(v.has_value()) << name;
  return v.value_or(-1);
}

struct WriterDb {
  testing::TestDatabase tdb;
  WriterDb() {
    db::Connection c(tdb.url());
    c.migrate();
  }
  std::vector<std::string> reasons() const { return tdb.column("SELECT reason FROM snapshots ORDER BY id"); }
};

TEST(SnapshotWriter, StoresInTheOrderHandedOverAndWhatIsQueuedAtStop) {
  WriterDb db;
  metrics::Registry registry;
  SnapshotWriter w(registry, {db.tdb.url(), {}});
  w.start();
  std::vector<std::string> want;
  for (int i = 0; i < 40; ++i) {
    want.push_back("before drain " + std::to_string(i));
    ASSERT_TRUE(w.submit(snap(want.back())));
  }
  w.stop();  // stores everything queued first
  EXPECT_EQ(db.reasons(), want);
  EXPECT_EQ(db.tdb.scalar("SELECT count(*) FROM snapshots WHERE scope = 'incident' AND port_count = 1"), "40");
  EXPECT_EQ(metric(registry, "medic_snapshots_total"), 40);
  EXPECT_EQ(metric(registry, "medic_snapshots_unstored_total"), 0);
  EXPECT_EQ(metric(registry, "medic_snapshots_queued"), 0);
  EXPECT_EQ(w.queued(), 0u);
}

TEST(SnapshotWriter, AFullQueueDropsAndCountsWhatDoesNotFitAndNeverHoldsTheCaller) {
  WriterDb db;
  // The table locked by another transaction: the writer's INSERT waits on it.
  pqxx::connection holder(db.tdb.url());
  pqxx::work lock(holder);
  lock.exec("LOCK TABLE snapshots IN ACCESS EXCLUSIVE MODE");

  metrics::Registry registry;
  db::DbOptions patient;
  patient.call_timeout_s = 120;  // the INSERT waits on the lock as long as the test holds it
  SnapshotWriter w(registry, {db.tdb.url(), patient, 2});
  w.start();
  ASSERT_TRUE(w.submit(snap("first")));
  // Until the first is being stored (its INSERT waiting on the lock), bounded.
  auto waiting = [&] {
    return db.tdb.scalar("SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                         "WHERE c.relname = 'snapshots' AND NOT l.granted") != "0";
  };
  for (int i = 0; i < 500 && !waiting(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(waiting()) << "the writer never reached the locked table";
  EXPECT_TRUE(w.submit(snap("second")));
  EXPECT_TRUE(w.submit(snap("third")));
  EXPECT_EQ(w.queued(), 3u);  // one being stored, two waiting
  EXPECT_EQ(metric(registry, "medic_snapshots_queued"), 3);
  EXPECT_FALSE(w.submit(snap("fourth"))) << "past max_queued waiting, a snapshot is dropped";
  EXPECT_EQ(metric(registry, "medic_snapshots_unstored_total"), 1);
  EXPECT_EQ(metric(registry, "medic_snapshots_total"), 0);

  lock.abort();  // the database answers again
  w.stop();
  EXPECT_EQ(db.reasons(), (std::vector<std::string>{"first", "second", "third"}));
  EXPECT_EQ(metric(registry, "medic_snapshots_total"), 3);
  EXPECT_EQ(metric(registry, "medic_snapshots_unstored_total"), 1);
  EXPECT_EQ(metric(registry, "medic_snapshots_queued"), 0);
}

TEST(SnapshotWriter, ADatabaseThatIsGoneCostsEverySnapshotCountedAndStopStillReturns) {
  // Nothing listens on the port: connecting is refused.
  db::DbOptions o;
  o.connect_timeout_s = 2;
  metrics::Registry registry;
  SnapshotWriter w(registry, {"postgresql://medic@127.0.0.1:" + std::to_string(testing::closed_port()) + "/medic", o});
  w.start();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(w.submit(snap("s" + std::to_string(i))));
  w.stop();
  EXPECT_EQ(metric(registry, "medic_snapshots_total"), 0);
  EXPECT_EQ(metric(registry, "medic_snapshots_unstored_total"), 5);
  EXPECT_EQ(metric(registry, "medic_snapshots_queued"), 0);
}

// A PostgreSQL that takes connections and never answers (a hung server): counts them.
class SilentServer {
 public:
  SilentServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ADD_FAILURE() << "no listening socket";
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 50) == 1) {
          if (const int c = ::accept(fd_, nullptr, nullptr); c >= 0) {
            held_.push_back(c);
            ++accepted_;
          }
        }
      }
    });
  }
  ~SilentServer() {
    stop_ = true;
    thread_.join();
    for (const int c : held_) ::close(c);
    ::close(fd_);
  }
  uint16_t port() const { return port_; }
  int accepted() const { return accepted_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::vector<int> held_;  // the accept thread's
  std::thread thread_;
};

TEST(SnapshotWriter, AHungDatabaseHoldsTheWriterOneConnectNotOneASnapshot) {
  SilentServer hung;
  db::DbOptions o;
  o.connect_timeout_s = 2;
  o.retry_min_s = 60;  // no second try within the test
  metrics::Registry registry;
  SnapshotWriter w(registry, {"postgresql://medic@127.0.0.1:" + std::to_string(hung.port()) + "/medic", o});
  w.start();
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(w.submit(snap("s" + std::to_string(i))));
  w.stop();  // one connect timeout, then the rest at once
  EXPECT_EQ(hung.accepted(), 1) << "each snapshot tried to connect again";
  EXPECT_EQ(metric(registry, "medic_snapshots_unstored_total"), 20);
  EXPECT_EQ(metric(registry, "medic_snapshots_total"), 0);
}

TEST(SnapshotWriter, NotRunningItTakesNothingAndCountsIt) {
  WriterDb db;
  metrics::Registry registry;
  SnapshotWriter w(registry, {db.tdb.url(), {}});
  EXPECT_FALSE(w.submit(snap("before start")));
  w.start();
  EXPECT_TRUE(w.submit(snap("running")));
  w.stop();
  EXPECT_FALSE(w.submit(snap("after stop")));
  EXPECT_EQ(db.reasons(), (std::vector<std::string>{"running"}));
  EXPECT_EQ(metric(registry, "medic_snapshots_unstored_total"), 2);
  EXPECT_EQ(metric(registry, "medic_snapshots_total"), 1);
}

}  // namespace
}  // namespace medic::service
