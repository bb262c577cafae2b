// Draining a real link of the namespace testbed (testbed/clos.sh) through NetnsDriver while
// traffic flows between the two hosts, and putting it back.
//
// The traffic is UDP from h1 to h2 (198.18.1.1 -> 198.18.2.1), one packet a millisecond spread
// over 32 source ports, so that r1's ECMP route to h2 (fib_multipath_hash_policy=1, L4 hash)
// carries it over both spines. The sockets are opened inside the hosts' namespaces by this
// process (setns on the test thread, then back), so no other program runs and nothing leaves
// the testbed. Every packet carries a sequence number; h2 counts what arrives.
//
// Loss bound: zero. `ip route replace` swaps the route in one kernel operation, the neighbour
// of the remaining spine is already resolved (it carried half the flows), veth links have no
// queue to drop from, and the receive buffer holds seconds of this traffic. A lost packet
// would mean the drain blackholed traffic, which is exactly what must not happen.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "remediation/netns_driver.h"
#include "tests/support/testing.h"
#include "tests/testbed/testbed_fixture.h"

namespace medic {
namespace {

using namespace std::chrono_literals;

std::string ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {ip_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = remediation::netns::run_command(argv, std::chrono::seconds(20));
  if (!r.ok()) throw std::runtime_error(r.error());
  if (r->exit_code != 0) throw std::runtime_error("ip: exit " + std::to_string(r->exit_code) + ": " + r->err);
  return r->out;
}

class DrainTestbed : public TestbedFixture {
 protected:
  testing::TempDir state_;
};

// A file descriptor closed when it goes.
struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&&) = delete;
  Fd(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Runs `make` with this thread inside a network namespace, then comes back. A socket keeps
// the namespace it was made in.
template <class F>
auto in_netns(const std::string& name, F make) {
  Fd self(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  Fd target(::open(("/var/run/netns/" + name).c_str(), O_RDONLY | O_CLOEXEC));
  if (self.fd < 0 || target.fd < 0) throw std::runtime_error("cannot open namespace " + name);
  if (::setns(target.fd, CLONE_NEWNET) != 0) throw std::runtime_error("setns " + name + ": " + std::strerror(errno));
  struct Back {
    int fd;
    ~Back() {
      if (::setns(fd, CLONE_NEWNET) != 0) std::abort();  // a test thread left in another namespace: stop here
    }
  } back{self.fd};
  return make();
}

Fd udp_socket(const std::string& addr, uint16_t port) {
  Fd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (s.fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  const int buf = 4 << 20;
  ::setsockopt(s.fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, addr.c_str(), &a.sin_addr);
  if (::bind(s.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    throw std::runtime_error("bind " + addr + ": " + std::strerror(errno));
  }
  return s;
}

uint16_t port_of(const Fd& s) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(s.fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

// Numbered packets from many source ports to one receiver; both ends bounded in count and time.
class Traffic {
 public:
  static constexpr uint64_t kMaxPackets = 20000;  // 20 s at one a millisecond: the bound on the whole test

  Traffic(std::vector<Fd> senders, Fd receiver, const std::string& dst)
      : senders_(std::move(senders)), receiver_(std::move(receiver)), seen_(kMaxPackets, 0) {
    dst_.sin_family = AF_INET;
    dst_.sin_port = htons(port_of(receiver_));
    ::inet_pton(AF_INET, dst.c_str(), &dst_.sin_addr);
    rx_ = std::thread([this] { receive(); });
    tx_ = std::thread([this] { send(); });
  }
  ~Traffic() {
    stop_sending();
    stop_rx_ = true;
    rx_.join();
  }
  void stop_sending() {
    stop_tx_ = true;
    if (tx_.joinable()) tx_.join();
  }
  uint64_t sent() const { return sent_; }
  uint64_t received() const { return received_; }
  uint64_t duplicates() const { return duplicates_; }

 private:
  void send() {
    for (uint64_t seq = 0; seq < kMaxPackets && !stop_tx_; ++seq) {
      const Fd& s = senders_[seq % senders_.size()];
      if (::sendto(s.fd, &seq, sizeof seq, 0, reinterpret_cast<const sockaddr*>(&dst_), sizeof dst_) == sizeof seq) {
        ++sent_;
      }
      std::this_thread::sleep_for(1ms);  // pacing
    }
  }
  void receive() {
    pollfd p{receiver_.fd, POLLIN, 0};
    while (!stop_rx_) {
      if (::poll(&p, 1, 50) <= 0) continue;
      uint64_t seq = 0;
      const ssize_t n = ::recv(receiver_.fd, &seq, sizeof seq, MSG_DONTWAIT);
      if (n != sizeof seq || seq >= kMaxPackets) continue;
      if (seen_[seq]++ == 0) {
        ++received_;
      } else {
        ++duplicates_;
      }
    }
  }

  std::vector<Fd> senders_;
  Fd receiver_;
  sockaddr_in dst_{};
  std::vector<uint8_t> seen_;  // only the receive thread touches it
  std::atomic<bool> stop_tx_{false}, stop_rx_{false};
  std::atomic<uint64_t> sent_{0}, received_{0}, duplicates_{0};
  std::thread rx_, tx_;
};

struct Counters {
  uint64_t tx_packets = 0;
};
Counters counters(const std::string& netns, const std::string& dev) {
  const auto doc = nlohmann::json::parse(ip({"-n", netns, "-j", "-s", "link", "show", "dev", dev}));
  return Counters{doc.at(0).at("stats64").at("tx").at("packets").get<uint64_t>()};
}

std::vector<remediation::netns::NextHop> hops_to_h2(const std::string& r1) {
  auto routes = remediation::netns::parse_routes(
      ip({"-n", r1, "-j", "-4", "route", "show", "table", "main", "exact", "198.18.2.0/31"}), 4);
  if (!routes.ok() || routes->size() != 1) throw std::runtime_error("r1 has no single route to 198.18.2.0/31");
  return routes->front().nexthops;
}

std::string describe(const std::vector<remediation::netns::NextHop>& hops) {
  std::string s;
  for (const auto& h : hops) s += (s.empty() ? "" : ", ") + h.gateway + " dev " + h.dev + " weight " + std::to_string(h.weight);
  return s;
}

// Forwarded packets cross the drained link no more; what still may is the link's own control
// traffic (ARP, IPv6 neighbour discovery and MLD the kernel sends on every veth): a handful.
constexpr uint64_t kControlPackets = 20;
constexpr uint64_t kWindow = 500;  // packets received per phase

TEST_F(DrainTestbed, DrainingAToRUplinkMovesTrafficWithoutLossAndUndrainBringsItBack) {
  const std::string r1 = ns("r1"), h1 = ns("h1"), h2 = ns("h2"), c1 = ns("c1");
  ASSERT_EQ(describe(hops_to_h2(r1)), "198.18.3.1 dev eth2 weight 1, 198.18.4.1 dev eth3 weight 1");

  Fd receiver = in_netns(h2, [] { return udp_socket("198.18.2.1", 0); });
  std::vector<Fd> senders = in_netns(h1, [] {
    std::vector<Fd> v;
    for (int i = 0; i < 32; ++i) v.push_back(udp_socket("198.18.1.1", 0));
    return v;
  });
  const Counters eth2_start = counters(r1, "eth2"), eth3_start = counters(r1, "eth3");
  Traffic traffic(std::move(senders), std::move(receiver), "198.18.2.1");

  // Before: both spines carry part of the flows.
  ASSERT_TRUE(testing::eventually([&] { return traffic.received() >= kWindow; }, 30s)) << traffic.received();
  const uint64_t eth2_before = counters(r1, "eth2").tx_packets - eth2_start.tx_packets;
  const uint64_t eth3_before = counters(r1, "eth3").tx_packets - eth3_start.tx_packets;
  EXPECT_GT(eth2_before, kControlPackets) << "no flow hashed onto eth2 before the drain";
  EXPECT_GT(eth3_before, kControlPackets) << "no flow hashed onto eth3 before the drain";

  // Drain r1's uplink to c1 through the driver, as medicd would.
  remediation::NetnsDriver driver("r1", "netns:" + r1, state_.path());
  auto d = driver.drain("eth2");
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_TRUE(d->drained);
  EXPECT_TRUE(d->oper_up);
  EXPECT_EQ(describe(hops_to_h2(r1)), "198.18.4.1 dev eth3 weight 1");
  EXPECT_TRUE(std::filesystem::exists(driver.state_file("eth2")));

  // While drained: the traffic goes on, all of it over eth3; eth2 forwards nothing.
  const Counters eth2_drained = counters(r1, "eth2"), eth3_drained = counters(r1, "eth3");
  const uint64_t at_drain = traffic.received();
  ASSERT_TRUE(testing::eventually([&] { return traffic.received() >= at_drain + kWindow; }, 30s)) << traffic.received();
  const uint64_t eth2_while = counters(r1, "eth2").tx_packets - eth2_drained.tx_packets;
  const uint64_t eth3_while = counters(r1, "eth3").tx_packets - eth3_drained.tx_packets;
  EXPECT_LE(eth2_while, kControlPackets) << "eth2 still forwards after the drain";
  EXPECT_GE(eth3_while + kControlPackets, kWindow);  // the window's packets, but for the few read around its edges
  auto st = driver.get_state("eth2");
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_TRUE(st->drained);
  EXPECT_TRUE(st->oper_up);

  // The drained link still carries what is addressed to it, so it can be probed end to end:
  // r1 (198.18.3.0) to c1 (198.18.3.1) over eth2.
  {
    Fd at_c1 = in_netns(c1, [] { return udp_socket("198.18.3.1", 0); });
    Fd from_r1 = in_netns(r1, [] { return udp_socket("198.18.3.0", 0); });
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port_of(at_c1));
    ::inet_pton(AF_INET, "198.18.3.1", &to.sin_addr);
    const char probe[] = "probe";
    int got = 0;
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ(::sendto(from_r1.fd, probe, sizeof probe, 0, reinterpret_cast<sockaddr*>(&to), sizeof to),
                static_cast<ssize_t>(sizeof probe));
    }
    ASSERT_TRUE(testing::eventually(
        [&] {
          char buf[16];
          while (::recv(at_c1.fd, buf, sizeof buf, MSG_DONTWAIT) > 0) ++got;
          return got == 5;
        },
        10s));
  }

  // Undrain: the next hop is back, and flows hash onto eth2 again.
  auto u = driver.undrain("eth2");
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_FALSE(u->drained);
  EXPECT_TRUE(u->oper_up);
  EXPECT_EQ(describe(hops_to_h2(r1)), "198.18.3.1 dev eth2 weight 1, 198.18.4.1 dev eth3 weight 1");
  EXPECT_FALSE(std::filesystem::exists(driver.state_file("eth2")));
  const Counters eth2_back = counters(r1, "eth2");
  const uint64_t at_undrain = traffic.received();
  ASSERT_TRUE(testing::eventually([&] { return traffic.received() >= at_undrain + kWindow; }, 30s)) << traffic.received();
  const uint64_t eth2_after = counters(r1, "eth2").tx_packets - eth2_back.tx_packets;
  EXPECT_GT(eth2_after, kControlPackets) << "eth2 carries nothing after the undrain";

  // Every packet sent arrived, once.
  traffic.stop_sending();
  const uint64_t sent = traffic.sent();
  EXPECT_LT(sent, Traffic::kMaxPackets) << "the phases did not finish within the traffic's bound";
  EXPECT_TRUE(testing::eventually([&] { return traffic.received() == sent; }, 10s));
  EXPECT_EQ(sent - traffic.received(), 0u) << "lost across the drain and the undrain, of " << sent;
  EXPECT_EQ(traffic.duplicates(), 0u);
  std::printf("r1 eth2/eth3 tx packets: before the drain %lu/%lu, drained %lu/%lu, after the undrain %lu on eth2; "
              "sent %lu, received %lu\n",
              static_cast<unsigned long>(eth2_before), static_cast<unsigned long>(eth3_before),
              static_cast<unsigned long>(eth2_while), static_cast<unsigned long>(eth3_while),
              static_cast<unsigned long>(eth2_after), static_cast<unsigned long>(sent),
              static_cast<unsigned long>(traffic.received()));
}

}  // namespace
}  // namespace medic
