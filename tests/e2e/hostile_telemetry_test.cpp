// Telemetry endpoints that misbehave, end to end on fabsim with the real medicd and
// PostgreSQL. A few switches' counter URLs in the topology medicd is given point at a server
// of the test's own on 127.0.0.1, which answers what fabsim answers for them until the test
// arms it, and then answers as a broken or hostile exporter would:
//  - slowly: headers, then one byte a second, never finishing the body;
//  - endlessly: a well-formed Prometheus body streamed without end, far past medicd's 16 MiB
//    answer limit (telemetry::CollectorOptions::max_body_bytes);
//  - garbage: random bytes;
//  - truncated: the switch's real payload cut in the middle of a counter's value, the
//    connection closed without a Content-Length (so HTTP itself cannot tell), every other
//    answer whole;
//  - backwards: the switch's real payload with its counters lower at every scrape, and
//    nothing saying the switch restarted.
// For each: the other switches' polls do not stall, medicd's memory stays bounded, a finding
// or a metric names the switch, and nothing is taken for a fault of the fabric (no link
// incident, no action).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "common/http_client.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/support/testing.h"

namespace medic {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using namespace std::chrono_literals;

// A telemetry endpoint on 127.0.0.1 that answers /t/NAME/metrics as NAME's mode says once
// armed, and as fabsim answers for NAME before. One thread per connection; every
// connection is closed after its answer.
class HostileTelemetry {
 public:
  enum class Mode { healthy, slow, endless, garbage, truncated, backwards };

  explicit HostileTelemetry(std::string fabsim_base) : fabsim_(std::move(fabsim_base)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener_ < 0) throw std::runtime_error("socket: " + std::string(std::strerror(errno)));
    const int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener_, 64) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      throw std::runtime_error("bind/listen: " + std::string(std::strerror(errno)));
    }
    port_ = ntohs(a.sin_port);
    timeval tv{0, 100 * 1000};  // accept wakes up to see stop()
    ::setsockopt(listener_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~HostileTelemetry() {
    stopping_ = true;
    acceptor_.join();
    ::close(listener_);
    for (auto& c : conns_) c.thread.join();
  }
  HostileTelemetry(const HostileTelemetry&) = delete;
  HostileTelemetry& operator=(const HostileTelemetry&) = delete;

  void set(const std::string& device, Mode mode) {
    std::lock_guard lock(mu_);
    modes_[device] = mode;
  }
  std::string url(const std::string& device) const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/t/" + device + "/metrics";
  }
  // From now on every device answers as its mode says.
  void arm() { armed_ = true; }
  // Requests for `device` answered since arm().
  int answered(const std::string& device) {
    std::lock_guard lock(mu_);
    return armed_answers_[device];
  }
  // The most bytes one endless answer got out before medicd hung up.
  size_t endless_bytes_max() const { return endless_max_; }

 private:
  struct Conn {
    std::thread thread;
    std::atomic<bool> done{false};
  };

  void accept_loop() {
    while (!stopping_) {
      const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      // Finished connections' threads are joined as we go.
      conns_.remove_if([](Conn& c) {
        if (!c.done) return false;
        c.thread.join();
        return true;
      });
      if (fd < 0) continue;
      timeval tv{0, 200 * 1000};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      Conn& c = conns_.emplace_back();
      c.thread = std::thread([this, fd, &c] {
        serve(fd);
        ::close(fd);
        c.done = true;
      });
    }
  }

  // Sends all of `data`; false once the peer is gone or the server stops.
  bool send_all(int fd, std::string_view data) {
    while (!data.empty()) {
      if (stopping_) return false;
      const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  static std::string head(const std::string& fields) {
    return "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n" + fields + "\r\n";
  }

  void serve(int fd) {
    std::string req;
    char buf[4096];
    for (int waits = 0; req.find("\r\n\r\n") == std::string::npos && req.size() < 16384 && waits < 20 && !stopping_;) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n == 0) return;
      if (n < 0) {
        ++waits;
        continue;
      }
      req.append(buf, static_cast<size_t>(n));
    }
    static const std::regex line("^GET /t/([A-Za-z0-9_.-]+)/metrics ");
    std::smatch m;
    if (!std::regex_search(req, m, line)) {
      send_all(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      return;
    }
    const std::string device = m[1];
    Mode mode = Mode::healthy;
    int nth = 0;
    {
      std::lock_guard lock(mu_);
      if (armed_) {
        mode = modes_.count(device) != 0 ? modes_[device] : Mode::healthy;
        nth = ++armed_answers_[device];
      }
    }
    switch (mode) {
      case Mode::healthy: {
        const std::string body = fabsim_payload(device);
        if (!body.empty()) {
          send_all(fd, head("Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n") + body);
        } else {
          send_all(fd, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
        return;
      }
      case Mode::slow: {
        // A body that would take more than a week to arrive.
        if (!send_all(fd, head("Content-Length: 1000000\r\nConnection: close\r\n"))) return;
        while (!stopping_) {
          if (!send_all(fd, "#")) return;
          for (int i = 0; i < 20 && !stopping_; ++i) std::this_thread::sleep_for(50ms);
        }
        return;
      }
      case Mode::endless: {
        if (!send_all(fd, head("Transfer-Encoding: chunked\r\n"))) return;
        if (!send_all(fd, "1d\r\n# TYPE hostile_total counter\n\r\n")) return;  // 0x1d: 29 bytes
        // One chunk of well-formed samples, made once and sent again and again: the stream
        // must outrun medicd's timeout to reach its answer limit.
        static const std::string chunk = [] {
          std::string lines;
          for (uint64_t i = 0; lines.size() < 256 * 1024; ++i) {
            lines += "hostile_total{series=\"" + std::to_string(i) + "\"} " + std::to_string(i) + "\n";
          }
          std::ostringstream size;
          size << std::hex << lines.size();
          return size.str() + "\r\n" + lines + "\r\n";
        }();
        size_t sent = 0;
        while (!stopping_) {
          if (!send_all(fd, chunk)) break;
          sent += chunk.size();
          size_t seen = endless_max_;
          while (sent > seen && !endless_max_.compare_exchange_weak(seen, sent)) {
          }
        }
        return;
      }
      case Mode::garbage: {
        std::mt19937 rng(static_cast<unsigned>(nth));
        std::string body(4096, '\0');
        for (auto& c : body) c = static_cast<char>(rng() & 0xff);
        send_all(fd, head("Content-Length: 4096\r\nConnection: close\r\n") + body);
        return;
      }
      case Mode::truncated: {
        std::string body = fabsim_payload(device);
        if (nth % 2 == 1) {
          // Cut right after the first digit of a counter with several (drops if the switch
          // has any, else packets): what reads as that counter is a smaller number, and the
          // next whole answer a rise, a burst of drops no port had.
          static const std::regex drops("\nnode_network_receive_drop_total\\{[^}]*\\} [1-9][0-9]");
          static const std::regex packets("\nnode_network_receive_packets_total\\{[^}]*\\} [1-9][0-9]");
          if (std::regex_search(body, m, drops) || std::regex_search(body, m, packets)) {
            body.resize(static_cast<size_t>(m.position(0) + m.length(0) - 1));
          }
          send_all(fd, head("Connection: close\r\n") + body);  // no length: the close ends it
        } else {
          send_all(fd, head("Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n") + body);
        }
        return;
      }
      case Mode::backwards: {
        std::string body;
        {
          std::lock_guard lock(mu_);
          if (captured_[device].empty()) captured_[device] = fabsim_payload(device);
          body = captured_[device];
        }
        body = backwards(body, nth);
        send_all(fd, head("Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n") + body);
        return;
      }
    }
  }

  // Every sample of a counter family lower by 3% for each answer since arm(): going back,
  // never restarting from zero, no sign of a reboot.
  static std::string backwards(const std::string& payload, int nth) {
    std::istringstream in(payload);
    std::ostringstream out;
    std::set<std::string> counters;
    static const std::regex type("^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) counter$");
    static const std::regex sample("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{.*\\})? ([0-9.e+]+)$");
    std::smatch m;
    for (std::string line; std::getline(in, line);) {
      if (std::regex_match(line, m, type)) counters.insert(m[1]);
      if (std::regex_match(line, m, sample) && counters.count(m[1]) != 0) {
        const double v = std::floor(std::stod(m[3]) * std::pow(0.97, nth));
        char value[64];
        std::snprintf(value, sizeof value, "%.0f", v);
        line = std::string(m[1]) + std::string(m[2]) + " " + value;
      }
      out << line << '\n';
    }
    return out.str();
  }

  std::string fabsim_payload(const std::string& device) {
    HttpClient http;
    HttpCallOptions o;
    o.timeout_s = 2;
    auto r = http.get(fabsim_ + "/s/" + device + "/metrics", o);
    return r.ok() && r->status == 200 ? r->body : std::string();
  }

  std::string fabsim_;
  int listener_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> armed_{false};
  std::atomic<size_t> endless_max_{0};
  std::mutex mu_;
  std::map<std::string, Mode> modes_;
  std::map<std::string, int> armed_answers_;
  std::map<std::string, std::string> captured_;
  std::thread acceptor_;
  std::list<Conn> conns_;
};

// medicd's resident memory in kB (VmRSS), 0 when it cannot be read.
long rss_kb(pid_t pid) {
  const std::string status = testing::read_file("/proc/" + std::to_string(pid) + "/status");
  std::smatch m;
  static const std::regex re("VmRSS:\\s+([0-9]+) kB");
  return std::regex_search(status, m, re) ? std::stol(m[1]) : 0;
}

// The largest VmRSS of a process, sampled every 100 ms while the object lives.
class RssWatch {
 public:
  explicit RssWatch(pid_t pid) : thread_([this, pid] {
      while (!stop_) {
        const long kb = rss_kb(pid);
        long seen = max_kb_;
        while (kb > seen && !max_kb_.compare_exchange_weak(seen, kb)) {
        }
        std::this_thread::sleep_for(100ms);
      }
    }) {}
  ~RssWatch() {
    stop_ = true;
    thread_.join();
  }
  long max_kb() const { return max_kb_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<long> max_kb_{0};
  std::thread thread_;
};

// One sample of a histogram's bucket (le) from an exposition; nullopt when absent.
std::optional<double> bucket(const std::string& exposition, const std::string& name, const std::string& le) {
  std::smatch m;
  const std::regex re("(^|\n)" + name + "_bucket\\{le=\"" + le + "\"\\} ([0-9.e+]+)\n");
  if (!std::regex_search(exposition, m, re)) return std::nullopt;
  return std::stod(m[2]);
}

constexpr double kPollInterval = 1.0;
// Below the poll interval, so that a scrape given up on still leaves the cycle inside it.
constexpr double kScrapeTimeout = 0.6;
constexpr int kStaleAfter = 4;  // seconds of silence before a telemetry_stale finding

class E2EHostileTelemetry : public ::testing::Test {
 protected:
  void SetUp() override {
    curl_global_setup();
    ASSERT_NO_FATAL_FAILURE(write_demo_topology(dir));
    // The shipped thresholds, but a silent device is named after 4 s instead of 30 s.
    json detectors = json::parse(testing::read_file(testing::source_dir() + "/data/detectors.json"));
    detectors["stale"]["after_s"] = kStaleAfter;
    testing::write_file(dir.file("detectors.json"), detectors.dump(1));
    ASSERT_NO_FATAL_FAILURE(fabsim.start(dir, json{{"faults", json::array()}}.dump()));
    hostile = std::make_unique<HostileTelemetry>(fabsim.sim);
  }

  // fabsim's topology with `devices`' telemetry served by the hostile server in their modes.
  std::string topology(const std::map<std::string, HostileTelemetry::Mode>& devices) {
    json t = fabsim.exported_topology();
    for (auto& s : t["switches"]) {
      const std::string name = s["name"];
      if (devices.count(name) == 0) continue;
      s["telemetry"] = hostile->url(name);
      hostile->set(name, devices.at(name));
    }
    testing::write_file(dir.file("hostile.json"), t.dump(1));
    return dir.file("hostile.json");
  }
  std::unique_ptr<testing::Process> start_medicd(const std::string& topology_path) {
    auto p = std::make_unique<testing::Process>(
        MEDIC_MEDICD_BIN,
        std::vector<std::string>{"--topology", topology_path, "--db", tdb.url(), "--detectors", dir.file("detectors.json"),
                                 "--poll-interval", std::to_string(kPollInterval), "--scrape-timeout",
                                 std::to_string(kScrapeTimeout), "--backoff-max", "2", "--no-probe", "--http",
                                 "127.0.0.1:0", "--run-for", "200"});
    return p;
  }
  // A few healthy polls of every device: baselines made; `rss_kb_out` is medicd's RSS then.
  void warm_up(testing::Process& medicd, const std::string& api, long& rss_kb_out) {
    ASSERT_TRUE(testing::eventually(
        [&] {
          const auto ok = metric(http, api, "medic_scrapes_ok_total");
          return ok && *ok >= 28 * 4;
        },
        30s))
        << medicd.output();
    rss_kb_out = 0;
    for (int i = 0; i < 10; ++i) {
      rss_kb_out = std::max(rss_kb_out, rss_kb(medicd.pid()));
      std::this_thread::sleep_for(100ms);
    }
  }
  std::string incidents() {
    return testing::join_lines(tdb.column(
        "SELECT i.id || ' ' || i.class || ' ' || i.state || ' ' || coalesce(i.link, i.device, '') || ': ' || i.summary "
        "FROM incidents i ORDER BY i.id"));
  }
  std::string metrics(const std::string& api) {
    auto r = http.get(api + "/metrics");
    return r.ok() && r->status == 200 ? r->body : std::string();
  }
  // What no fault of the fabric may leave: an incident on a link, an action, a drain begun.
  void expect_no_false_fault(const std::string& api) {
    EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents WHERE link IS NOT NULL"), "0") << incidents();
    EXPECT_EQ(tdb.scalar("SELECT count(*) FROM actions"), "0") << incidents();
    EXPECT_EQ(metric(http, api, "medic_drains_started_total"), 0);
    EXPECT_EQ(tdb.scalar("SELECT count(*) FROM findings WHERE link IS NOT NULL AND severity <> 'info'"), "0")
        << testing::join_lines(tdb.column("SELECT kind || ' ' || link || ': ' || summary FROM findings WHERE link IS NOT NULL"));
  }

  // Polls go on for everyone else: within a bounded wait, `cycles` more cycles each with
  // at least `answering` answers, and none of them (since `from`) as long as a poll interval.
  void expect_polls_keep_pace(const std::string& api, int cycles, int answering) {
    const std::string before = metrics(api);
    const auto c0 = testing::metric_value(before, "medic_cycles_total");
    const auto ok0 = testing::metric_value(before, "medic_scrapes_ok_total");
    ASSERT_TRUE(c0 && ok0) << before;
    std::string after;
    // 1 s polls: `cycles` of them take `cycles` seconds; twice that is a stall.
    EXPECT_TRUE(testing::eventually(
        [&] {
          after = metrics(api);
          const auto c = testing::metric_value(after, "medic_cycles_total");
          return c && *c - *c0 >= cycles;
        },
        std::chrono::seconds(2 * cycles)))
        << "the poll loop stalled:\n" << after;
    const double c1 = *testing::metric_value(after, "medic_cycles_total");
    const double ok1 = *testing::metric_value(after, "medic_scrapes_ok_total");
    // A cycle counts itself before its answers are counted: one cycle may be under way.
    EXPECT_GE(ok1 - *ok0, answering * (c1 - *c0 - 1)) << "the other switches' scrapes did not keep up";
  }
  // Every poll cycle since medicd started took less than the poll interval (histogram
  // bucket le="1" holds them all) and so did the last.
  void expect_cycles_under_interval(const std::string& api) {
    const std::string m = metrics(api);
    const auto count = testing::metric_value(m, "medic_poll_cycle_seconds_count");
    const auto fast = bucket(m, "medic_poll_cycle_seconds", "1");
    const auto last = testing::metric_value(m, "medic_last_cycle_seconds");
    ASSERT_TRUE(count && fast && last) << m;
    EXPECT_EQ(*fast, *count) << "a poll cycle took the poll interval or more";
    EXPECT_LT(*last, kPollInterval);
  }

  testing::TempDir dir;
  testing::TestDatabase tdb;
  HttpClient http;
  DemoFabsim fabsim;
  std::unique_ptr<HostileTelemetry> hostile;
};

using Mode = HostileTelemetry::Mode;

TEST_F(E2EHostileTelemetry, SlowEndlessGarbageAndTruncatedAnswersStallNothingAndNameTheirSwitch) {
  const std::map<std::string, Mode> devices = {{"rtsw0003", Mode::slow},
                                               {"rtsw0006", Mode::endless},
                                               {"ctsw005", Mode::garbage},
                                               {"ctsw002", Mode::truncated}};
  auto medicd = start_medicd(topology(devices));
  const std::string api = api_of(*medicd);
  ASSERT_FALSE(api.empty()) << medicd->output();
  ASSERT_TRUE(testing::eventually([&] { return leads(http, api, 1); }, 60s)) << medicd->output();
  // A few healthy polls of every device (the hostile server answering as fabsim does): the
  // counters have baselines, and medicd's memory before the fault is known.
  long before_kb = 0;
  ASSERT_NO_FATAL_FAILURE(warm_up(*medicd, api, before_kb));
  ASSERT_GT(before_kb, 0);
  RssWatch rss(medicd->pid());
  hostile->arm();

  // Each is named: the three that never give a usable answer by a telemetry_stale incident
  // on their device; the truncated one, whose every other answer is whole, by its rejected
  // answers.
  ASSERT_TRUE(testing::eventually(
      [&] { return try_scalar(tdb, "SELECT count(*) FROM incidents WHERE class = 'telemetry_stale'") == "3"; }, 30s))
      << incidents() << "\n"
      << medicd->output();
  EXPECT_EQ(tdb.column("SELECT device FROM incidents WHERE class = 'telemetry_stale' ORDER BY device"),
            (std::vector<std::string>{"ctsw005", "rtsw0003", "rtsw0006"}));
  EXPECT_THAT(tdb.scalar("SELECT summary FROM incidents WHERE device = 'rtsw0003'"), HasSubstr("timeout after 600 ms"));
  EXPECT_THAT(tdb.scalar("SELECT summary FROM incidents WHERE device = 'rtsw0006'"),
              HasSubstr("answer larger than 16777216 bytes"));
  EXPECT_THAT(tdb.scalar("SELECT summary FROM incidents WHERE device = 'ctsw005'"), HasSubstr("malformed answer"));

  // Meanwhile, and from now on, the 24 other devices are polled every second.
  ASSERT_NO_FATAL_FAILURE(expect_polls_keep_pace(api, 10, 24));
  // Each hostile mode was really played, several times: the endless answer got well past
  // the limit before medicd hung up.
  for (const auto& [device, mode] : devices) EXPECT_GE(hostile->answered(device), 3) << device;
  EXPECT_GT(hostile->endless_bytes_max(), size_t{16} << 20);
  EXPECT_GE(*metric(http, api, "medic_payloads_rejected_total"), 4);
  ASSERT_NO_FATAL_FAILURE(expect_cycles_under_interval(api));
  const std::string log = medicd->output();
  EXPECT_THAT(log, HasSubstr("scrape rtsw0003 failed: timeout after 600 ms"));
  EXPECT_THAT(log, HasSubstr("scrape rtsw0006 failed: answer larger than 16777216 bytes"));
  EXPECT_THAT(log, HasSubstr("scrape ctsw005: malformed answer"));
  EXPECT_THAT(log, HasSubstr("scrape ctsw002: malformed answer"));
  // Memory: one endless answer costs at most the 16 MiB limit in its buffer (up to twice
  // that in capacity while it grows), and a buffer may be kept for the next scrape; 80 MiB
  // over what medicd held before covers that with room, and is far below what the streams
  // sent (hundreds of MiB).
  EXPECT_LT(rss.max_kb(), before_kb + 80 * 1024) << "RSS before the fault: " << before_kb << " kB";
  std::cout << "medicd RSS: " << before_kb << " kB before the fault, at most " << rss.max_kb() << " kB during it\n";

  expect_no_false_fault(api);
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents WHERE class NOT IN ('telemetry_stale')"), "0") << incidents();
  EXPECT_TRUE(medicd->running());
}

TEST_F(E2EHostileTelemetry, CountersGoingBackwardsWithoutARestartAreNamedAndDrainNothing) {
  auto medicd = start_medicd(topology({{"rtsw0007", Mode::backwards}}));
  const std::string api = api_of(*medicd);
  ASSERT_FALSE(api.empty()) << medicd->output();
  ASSERT_TRUE(testing::eventually([&] { return leads(http, api, 1); }, 60s)) << medicd->output();
  long before_kb = 0;
  ASSERT_NO_FATAL_FAILURE(warm_up(*medicd, api, before_kb));
  RssWatch rss(medicd->pid());
  hostile->arm();

  // The switch is named: its telemetry, not its links, is at fault.
  ASSERT_TRUE(testing::eventually(
      [&] {
        return try_scalar(tdb, "SELECT count(*) FROM incidents WHERE class = 'telemetry_invalid' AND device = 'rtsw0007'") ==
               "1";
      },
      30s))
      << incidents() << "\n"
      << medicd->output();
  ASSERT_NO_FATAL_FAILURE(expect_polls_keep_pace(api, 8, 27));
  EXPECT_GE(hostile->answered("rtsw0007"), 8);
  ASSERT_NO_FATAL_FAILURE(expect_cycles_under_interval(api));
  EXPECT_LT(rss.max_kb(), before_kb + 32 * 1024) << "RSS before the fault: " << before_kb << " kB";
  expect_no_false_fault(api);
  EXPECT_EQ(tdb.scalar("SELECT count(*) FROM incidents WHERE class <> 'telemetry_invalid'"), "0") << incidents();
}

}  // namespace
}  // namespace medic
