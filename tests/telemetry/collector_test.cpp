// The collector against a real HTTP server on loopback: one result per target in the
// targets' order, and each result handed to the caller the moment it is complete (medicd
// maps answers while the rest are still on their way), with its body where it stays.
#include "telemetry/collector.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/asio.h"
#include "common/http_server.h"

namespace medic::telemetry {
namespace {

using namespace std::chrono_literals;

class Server {
 public:
  // "/slow" is answered 300 ms late, on a timer (the server's thread answers the others
  // meanwhile); "/broken" with a 503; "/peer" with the asking end's address and port (its
  // connection); "/never" not at all. A text answer ends with a newline.
  Server()
      : server_(io_, "127.0.0.1", 0, AsyncHttpHandler([this](HttpRequest r, HttpRespond respond) {
          if (r.path == "/broken") return respond(HttpResponse::text(503, "down for maintenance"));
          if (r.path == "/peer") return respond(HttpResponse::text(200, r.peer));
          if (r.path == "/never") return held_.push_back(std::move(respond));  // kept, never called
          HttpResponse answer = HttpResponse::text(200, "answer of " + r.path);
          if (r.path != "/slow") return respond(std::move(answer));
          auto timer = std::make_shared<asio::steady_timer>(io_, 300ms);
          timer->async_wait([timer, respond, answer](const boost::system::error_code&) { respond(answer); });
        })) {
    server_.start();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Server() {
    server_.stop();
    io_.stop();
    thread_.join();
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(server_.port()) + path; }

 private:
  asio::io_context io_;
  std::vector<HttpRespond> held_;  // the server's thread only
  HttpServer server_;
  std::thread thread_;
};

TEST(Collector, EachResultIsHandedOverTheMomentItIsCompleteAndReturnedInTheTargetsOrder) {
  Server server;
  const std::vector<ScrapeTarget> targets = {{0, server.url("/slow")},
                                             {1, server.url("/a")},
                                             {2, server.url("/broken")},
                                             {3, server.url("/b")}};
  Collector collector;
  SystemClock clock;
  std::vector<fabric::DeviceId> order;
  std::map<fabric::DeviceId, const ScrapeResult*> seen;
  std::map<fabric::DeviceId, std::string> bodies;
  const auto results = collector.scrape(targets, clock, [&](ScrapeResult& r) {
    order.push_back(r.device);
    seen[r.device] = &r;
    bodies[r.device] = r.body;
  });
  ASSERT_EQ(results.size(), 4u);
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i].device, targets[i].device);
    // Handed over once, as the very result returned (its body did not move since).
    ASSERT_EQ(seen.count(results[i].device), 1u) << i;
    EXPECT_EQ(seen[results[i].device], &results[i]) << i;
    EXPECT_EQ(bodies[results[i].device], results[i].body) << i;
  }
  EXPECT_EQ(order.size(), 4u);
  EXPECT_TRUE(results[0].ok);
  EXPECT_EQ(results[0].body, "answer of /slow\n");
  EXPECT_EQ(results[1].body, "answer of /a\n");
  EXPECT_FALSE(results[2].ok);
  EXPECT_EQ(results[2].error, "HTTP 503");
  EXPECT_EQ(results[3].body, "answer of /b\n");
  // The slow answer came last: the others were handed over while it was on its way.
  EXPECT_EQ(order.back(), 0u);
}

// medicd hands each body to its map workers from the callback: the result keeps the rest.
TEST(Collector, ACallbackMayTakeTheBodyAndTheResultKeepsTheRest) {
  Server server;
  const std::vector<ScrapeTarget> targets = {{0, server.url("/a")}, {1, server.url("/broken")}, {2, server.url("/b")}};
  Collector collector;
  SystemClock clock;
  std::map<fabric::DeviceId, std::string> taken;
  const auto results = collector.scrape(targets, clock, [&](ScrapeResult& r) {
    if (r.ok) taken[r.device] = std::move(r.body);
  });
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(taken[0], "answer of /a\n");
  EXPECT_EQ(taken[2], "answer of /b\n");
  EXPECT_EQ(taken.count(1), 0u);
  for (const auto& r : results) EXPECT_TRUE(r.body.empty()) << r.device;
  EXPECT_TRUE(results[0].ok);
  EXPECT_EQ(results[0].http_status, 200);
  EXPECT_FALSE(results[0].content_type.empty());
  EXPECT_FALSE(results[1].ok);
  EXPECT_EQ(results[1].error, "HTTP 503");
  EXPECT_TRUE(results[2].ok);
}

TEST(Collector, WithoutACallbackTheResultsAreTheSame) {
  Server server;
  const std::vector<ScrapeTarget> targets = {{0, server.url("/a")}, {1, server.url("/broken")}};
  Collector collector;
  SystemClock clock;
  const auto results = collector.scrape(targets, clock);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].body, "answer of /a\n");
  EXPECT_EQ(results[1].error, "HTTP 503");
}

// Switches each served at an address of its own (here, a port): device i asks for path(i).
struct Switches {
  Switches(size_t n, const std::function<std::string(size_t)>& path) {
    for (size_t i = 0; i < n; ++i) {
      servers.push_back(std::make_unique<Server>());
      targets.push_back({static_cast<fabric::DeviceId>(i), servers.back()->url(path(i))});
    }
  }
  std::vector<std::unique_ptr<Server>> servers;
  std::vector<ScrapeTarget> targets;
};

// Switches at addresses of their own (here, ports): each keeps its connection from one
// scrape to the next, though only 4 are asked at a time, as Prometheus keeps one a target;
// the same with the addresses spread over 6 libcurl multi handles (kept_per_shard 4). With
// room for 4 (max_kept), most are connected anew every scrape.
TEST(Collector, KeepsAConnectionToEverySwitchBetweenScrapes) {
  constexpr size_t kSwitches = 24;
  const Switches switches(kSwitches, [](size_t) { return "/peer"; });
  const std::vector<ScrapeTarget>& targets = switches.targets;
  SystemClock clock;
  auto reconnected = [&](size_t max_kept, size_t kept_per_shard, size_t handles) {
    CollectorOptions opt;
    opt.max_in_flight = 4;
    opt.max_kept = max_kept;
    opt.kept_per_shard = kept_per_shard;
    Collector collector(opt);
    EXPECT_EQ(collector.multi_handles(), 1u);
    std::vector<ScrapeResult> first = collector.scrape(targets, clock);
    size_t fresh = 0;
    for (int scrape = 0; scrape < 2; ++scrape) {
      const std::vector<ScrapeResult> again = collector.scrape(targets, clock);
      for (size_t i = 0; i < kSwitches; ++i) {
        EXPECT_TRUE(again[i].ok && first[i].ok) << i << ": " << again[i].error << first[i].error;
        EXPECT_EQ(again[i].body.rfind("127.0.0.1:", 0), 0u) << again[i].body;
        fresh += again[i].body != first[i].body;
      }
      first = again;
    }
    EXPECT_EQ(collector.multi_handles(), handles);
    return fresh;
  };
  EXPECT_EQ(reconnected(0, 256, 1), 0u) << "every switch's connection kept (the default: half the open-file limit)";
  EXPECT_EQ(reconnected(kSwitches, 256, 1), 0u);
  EXPECT_EQ(reconnected(kSwitches, 4, 6), 0u) << "over 6 multi handles";
  EXPECT_GE(reconnected(4, 4, 1), kSwitches) << "with room for 4, most are connected anew each scrape";
}

// A switch that never answers times out on its own multi handle's timer while the others,
// spread over the rest, answer and keep their connections.
TEST(Collector, ASilentSwitchTimesOutWhileTheOthersAnswerOverTheirKeptConnections) {
  constexpr size_t kSwitches = 12;
  const Switches switches(kSwitches, [](size_t i) { return i == 5 ? "/never" : "/peer"; });
  const std::vector<ScrapeTarget>& targets = switches.targets;
  CollectorOptions opt;
  opt.timeout_s = 0.5;
  opt.max_in_flight = 3;
  opt.kept_per_shard = 2;
  Collector collector(opt);
  SystemClock clock;
  const auto first = collector.scrape(targets, clock);
  const auto again = collector.scrape(targets, clock);
  for (const auto* results : {&first, &again}) {
    for (size_t i = 0; i < kSwitches; ++i) {
      if (i == 5) {
        EXPECT_FALSE((*results)[i].ok);
        EXPECT_EQ((*results)[i].error, "timeout after 500 ms");
      } else {
        EXPECT_TRUE((*results)[i].ok) << i << ": " << (*results)[i].error;
      }
    }
  }
  for (size_t i = 0; i < kSwitches; ++i) {
    if (i != 5) {
      EXPECT_EQ(again[i].body, first[i].body) << i << ": its connection was kept";
    }
  }
}

// Ten switches behind one address (a gateway, or fabsim) beside six at their own: one
// multi handle per 2 addresses (7 addresses, 4 handles), and the shared address served
// over the same 3 connections (as many as are in flight) in both scrapes.
TEST(Collector, SwitchesSharingAnAddressShareItsConnections) {
  Server gateway;
  const Switches own(6, [](size_t) { return "/peer"; });
  std::vector<ScrapeTarget> targets = own.targets;
  for (fabric::DeviceId d = 6; d < 16; ++d) targets.push_back({d, gateway.url("/peer")});
  CollectorOptions opt;
  opt.max_in_flight = 3;
  opt.kept_per_shard = 2;
  Collector collector(opt);
  SystemClock clock;
  std::set<std::string> gateway_peers;
  for (int scrape = 0; scrape < 2; ++scrape) {
    const auto results = collector.scrape(targets, clock);
    for (size_t i = 0; i < targets.size(); ++i) {
      ASSERT_TRUE(results[i].ok) << i << ": " << results[i].error;
      if (i >= 6) gateway_peers.insert(results[i].body);
    }
  }
  EXPECT_EQ(collector.multi_handles(), 4u);
  EXPECT_GE(gateway_peers.size(), 1u);
  EXPECT_LE(gateway_peers.size(), 3u) << "the shared address's connections were kept";
}

// A caller's callback that throws leaves no request attached: the next scrape asks all.
TEST(Collector, AThrowingCallbackLeavesTheCollectorWhole) {
  const Switches switches(8, [](size_t) { return "/peer"; });
  CollectorOptions opt;
  opt.max_in_flight = 4;
  opt.kept_per_shard = 2;
  Collector collector(opt);
  SystemClock clock;
  EXPECT_THROW(collector.scrape(switches.targets, clock, [](ScrapeResult&) { throw std::runtime_error("caller"); }),
               std::runtime_error);
  const auto results = collector.scrape(switches.targets, clock);
  ASSERT_EQ(results.size(), 8u);
  for (size_t i = 0; i < results.size(); ++i) EXPECT_TRUE(results[i].ok) << i << ": " << results[i].error;
}

}  // namespace
}  // namespace medic::telemetry
