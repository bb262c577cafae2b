// Calls to a database that stops answering: a real PostgreSQL behind a TCP proxy that
// stops forwarding (the kernel still accepts and acknowledges, as with a SIGSTOPped
// server: no server-side timeout or keepalive ever fires). Every call ends at its deadline
// with an error value saying so; the calls after it fail at once until the retry backoff
// passes; the connection comes back by itself. The leader lock and the leadership monitor
// behave the same: a hung database makes the lock look lost, never a caller wait.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "common/time.h"
#include "tests/db/all_stores.h"
#include "db/deadline.h"
#include "db/internal.h"
#include "db/leader.h"
#include "service/leadership.h"
#include "tests/support/tcp_proxy.h"
#include "tests/support/testing.h"

namespace medic::db {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

struct Proxied {
  medic::testing::TestDatabase tdb;
  medic::testing::TcpProxy proxy;
  std::string url;
  DbOptions options;

  Proxied()
      : proxy(medic::testing::TcpProxy::url_host_port(tdb.url()).first,
              medic::testing::TcpProxy::url_host_port(tdb.url()).second),
        url(medic::testing::TcpProxy::rewrite_url(tdb.url(), proxy.port())) {
    options.call_timeout_s = 1;
    options.connect_timeout_s = 2;
    options.retry_min_s = 0.5;
    options.retry_max_s = 2;
  }
};

TEST(DbDeadline, AHungServerEndsTheCallAtItsDeadline) {
  Proxied p;
  AllStores db(p.url, p.options);
  db.migrate();
  ASSERT_TRUE(db.schema_version().ok());
  p.proxy.pause();
  const auto hung = db.schema_version();
  ASSERT_FALSE(hung.ok());
  EXPECT_EQ(hung.error(), "schema_version: connection lost: no answer within 1 s");
  EXPECT_FALSE(db.available());
  EXPECT_EQ(db.last_failure(), "no answer within 1 s");
  // Until the backoff passes, calls fail at once, saying why.
  const auto soon = db.incidents({});
  ASSERT_FALSE(soon.ok());
  EXPECT_THAT(soon.error(), HasSubstr("incidents: database unavailable (no answer within 1 s); next try in"));
  // The server answers again: the same object reconnects by itself.
  p.proxy.resume();
  ASSERT_TRUE(medic::testing::eventually([&] { return db.available(); }, 10s));
  const auto back = db.schema_version();
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_TRUE(db.last_failure().empty());
}

TEST(DbDeadline, AConnectionCutMidwayIsRetriedOnceOnAFreshOne) {
  Proxied p;
  AllStores db(p.url, p.options);
  db.migrate();
  p.proxy.cut();
  const auto v = db.schema_version();
  ASSERT_TRUE(v.ok()) << v.error();
  EXPECT_TRUE(db.available());
}

TEST(DbDeadline, ConnectingToAHungServerEndsAtTheConnectTimeout) {
  Proxied p;
  p.proxy.pause();
  try {
    AllStores db(p.url, p.options);
    ADD_FAILURE() << "connected to a server that does not answer";
  } catch (const DbError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot connect to PostgreSQL at"));
    EXPECT_THAT(e.what(), HasSubstr("timeout expired"));
  }
}

TEST(DbDeadline, OptionsAreValidated) {
  DbOptions o;
  EXPECT_NO_THROW(o.validate());
  o.connect_timeout_s = 1;
  EXPECT_THROW(o.validate(), std::invalid_argument);
  o = {};
  o.call_timeout_s = 0;
  EXPECT_THROW(o.validate(), std::invalid_argument);
  o = {};
  o.retry_min_s = 20;
  EXPECT_THROW(o.validate(), std::invalid_argument);
  EXPECT_EQ(with_connect_timeout("postgresql://u@h/db", 5), "postgresql://u@h/db?connect_timeout=5");
  EXPECT_EQ(with_connect_timeout("postgresql://u@h/db?sslmode=disable", 2.5),
            "postgresql://u@h/db?sslmode=disable&connect_timeout=3");
  EXPECT_EQ(with_connect_timeout("host=/tmp dbname=x", 5), "host=/tmp dbname=x connect_timeout=5");
  EXPECT_EQ(with_connect_timeout("postgresql://h/db?connect_timeout=9", 5), "postgresql://h/db?connect_timeout=9");
}

// A transaction a lost client left open ends on the server by itself, so the rows it locked
// do not hold every later write until TCP keepalive notices, hours later.
TEST(DbDeadline, EverySessionHasTheServerEndATransactionLeftIdle) {
  testing::TestDatabase tdb;
  Connection c(tdb.url());
  auto show = [&] {
    return c.run("show", [](Pq& pq) -> Result<std::string> {
      pqxx::nontransaction n(pq.c);
      return n.exec("SHOW idle_in_transaction_session_timeout")[0][0].as<std::string>();
    });
  };
  const auto first = show();
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_EQ(*first, "1min");
  // And on the connection made again after the first was lost.
  tdb.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND "
           "pid <> pg_backend_pid()");
  const auto again = show();
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(*again, "1min");
}

TEST(DbDeadline, AHungServerMakesTheLeaderLockLookLostAndItIsTakenAgain) {
  Proxied p;
  { Connection(p.url, p.options).migrate(); }
  LeaderLock lock(p.url, p.options);
  auto got = lock.try_acquire();
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_TRUE(*got);
  EXPECT_TRUE(lock.held());
  p.proxy.pause();
  EXPECT_FALSE(lock.held());  // within the call deadline, not forever
  p.proxy.resume();
  // The old session's lock goes when the server sees its connection closed.
  ASSERT_TRUE(medic::testing::eventually(
      [&] {
        auto again = lock.try_acquire();
        return again.ok() && *again;
      },
      20s));
  EXPECT_TRUE(lock.held());
}

TEST(DbDeadline, TheLeadershipMonitorSaysDegradedAndLeadsAgainWithANewEpoch) {
  Proxied p;
  { Connection(p.url, p.options).migrate(); }
  SystemClock clock;
  service::Leadership l(p.url, "t", p.options, clock);
  auto first = l.check_now();
  ASSERT_EQ(first.role, service::Role::leader);
  EXPECT_EQ(first.epoch, 1);
  EXPECT_TRUE(first.db_up);
  p.proxy.pause();
  l.start(std::chrono::milliseconds(200));
  ASSERT_TRUE(medic::testing::eventually([&] { return l.state().role == service::Role::degraded; }, 10s));
  EXPECT_FALSE(l.state().db_up);
  EXPECT_FALSE(l.state().db_error.empty());
  p.proxy.resume();
  ASSERT_TRUE(medic::testing::eventually([&] { return l.state().role == service::Role::leader; }, 30s))
      << service::to_string(l.state().role) << ": " << l.state().db_error;
  EXPECT_EQ(l.state().epoch, 2);
  EXPECT_TRUE(l.state().db_up);
  l.stop();
}

// A leader cut off from its database cannot tell whether another daemon took over; once it
// reaches the database again and finds another leader, it stands by (fenced by epoch).
TEST(DbDeadline, ALeaderThatLostItsDatabaseStandsByWhenAnotherTookOver) {
  Proxied p;
  { Connection(p.url, p.options).migrate(); }
  SystemClock clock;
  service::Leadership a(p.url, "a", p.options, clock);
  ASSERT_EQ(a.check_now().role, service::Role::leader);
  a.start(std::chrono::milliseconds(200));
  p.proxy.pause();
  ASSERT_TRUE(medic::testing::eventually([&] { return a.state().role == service::Role::degraded; }, 10s));
  // Its connections drop (the server frees its lock); another daemon takes the lead.
  p.proxy.cut();
  service::Leadership b(p.tdb.url(), "b", p.options, clock);
  ASSERT_TRUE(medic::testing::eventually([&] { return b.check_now().role == service::Role::leader; }, 20s));
  EXPECT_EQ(b.check_now().epoch, 2);
  p.proxy.resume();
  ASSERT_TRUE(medic::testing::eventually([&] { return a.state().role == service::Role::standby; }, 30s))
      << service::to_string(a.state().role) << ": " << a.state().db_error;
  EXPECT_EQ(a.state().leader, "b (epoch 2)");
  // It never held the lock again meanwhile: b still leads with its epoch.
  EXPECT_EQ(b.check_now().role, service::Role::leader);
  EXPECT_EQ(b.check_now().epoch, 2);
  a.stop();
}

TEST(DbDeadline, AnotherLeaderMakesTheMonitorStandBy) {
  Proxied p;
  { Connection(p.url, p.options).migrate(); }
  SystemClock clock;
  service::Leadership a(p.tdb.url(), "a", p.options, clock);
  ASSERT_EQ(a.check_now().role, service::Role::leader);
  service::Leadership b(p.tdb.url(), "b", p.options, clock);
  const auto sb = b.check_now();
  EXPECT_EQ(sb.role, service::Role::standby);
  EXPECT_EQ(sb.leader, "a (epoch 1)");
  EXPECT_TRUE(sb.db_up);
}

}  // namespace
}  // namespace medic::db
