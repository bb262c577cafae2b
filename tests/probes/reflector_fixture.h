// A real Reflector on 127.0.0.1 (port 0) answering on its own io_context thread, for the
// loopback and `medic probe` tests. Stopped and joined when the object goes.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <memory>
#include <thread>

#include "common/asio.h"
#include "common/time.h"
#include "probes/reflector.h"
#include "probes/udp.h"

namespace medic::probes {

// An endpoint the test writes down ("127.0.0.1:0"); a typo fails the test.
inline Endpoint ep(const std::string& s) {
  auto e = Endpoint::parse(s);
  EXPECT_TRUE(e.ok()) << s;
  return e.ok() ? *e : Endpoint{};
}

// A reflector that answers every probe, however fast they come.
inline ReflectorOptions unlimited() {
  ReflectorOptions o;
  o.rate_limit_pps = 0;
  return o;
}

class LoopbackReflector {
 public:
  explicit LoopbackReflector(ReflectorOptions options = {}, ReflectorCore::Policy policy = {}) {
    auto bind = Endpoint::parse("127.0.0.1:0");
    auto sock = UdpSocket::open(*bind);
    if (!sock.ok()) throw std::runtime_error(sock.error());
    reflector_ = std::make_unique<Reflector>(io_, std::move(*sock), std::move(options), clock_);
    if (policy) reflector_->core().set_policy(std::move(policy));
    reflector_->start();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~LoopbackReflector() {
    // stop() on the io thread: the pending wait ends, nothing is left to do, run() returns.
    asio::post(io_, [this] { reflector_->stop(); });
    thread_.join();
  }
  LoopbackReflector(const LoopbackReflector&) = delete;
  LoopbackReflector& operator=(const LoopbackReflector&) = delete;

  Endpoint endpoint() const { return reflector_->local(); }
  std::string address() const { return endpoint().str(); }
  const ReflectorCounters& counters() const { return reflector_->counters(); }
  // The reflector counts a probe after its answer has left, so a sender that has every
  // answer may look before the last count: wait (up to 5 s) for `want`, return what it is.
  uint64_t reflected_eventually(uint64_t want) const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (counters().reflected != want && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return counters().reflected;
  }

 private:
  asio::io_context io_;
  SystemClock clock_;
  std::unique_ptr<Reflector> reflector_;
  std::thread thread_;
};

}  // namespace medic::probes
