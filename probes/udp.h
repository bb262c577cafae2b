// UDP sockets for probing: batched receive and send (recvmmsg/sendmmsg), the kernel's
// receive timestamp (SO_TIMESTAMPNS, falling back to the clock when the kernel gives none),
// the received TTL or hop limit, the address a datagram was sent to (so a reflector bound
// to many addresses answers from the right one), and sockets opened inside a network
// namespace.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/time.h"

namespace medic::probes {

struct Endpoint {
  sockaddr_storage addr{};
  socklen_t len = 0;

  // "198.18.0.1:862", "[::1]:862", "127.0.0.1:0"
  static Result<Endpoint> parse(const std::string& host_port);
  static Endpoint from(const sockaddr* sa, socklen_t len);
  std::string str() const;
  std::string host() const;
  uint16_t port() const;
  bool is_v6() const { return addr.ss_family == AF_INET6; }
  bool same_host(const Endpoint& o) const;
  bool operator==(const Endpoint& o) const;
};

struct Datagram {
  std::span<uint8_t> data;
  Endpoint peer;                   // who sent it
  std::optional<Endpoint> local;   // which of our addresses it was sent to (port 0)
  int ttl = -1;                    // IP TTL / IPv6 hop limit as received, -1 if unknown
  Time received{};
  bool kernel_timestamp = false;
};

// Buffers for one recvmmsg call; reused between calls.
class ReceiveBatch {
 public:
  explicit ReceiveBatch(size_t capacity = 64, size_t max_size = 9216);
  std::span<Datagram> datagrams() { return {out_.data(), count_}; }
  size_t capacity() const { return capacity_; }

 private:
  friend class UdpSocket;
  size_t capacity_, max_size_, count_ = 0;
  std::vector<uint8_t> storage_, control_;
  std::vector<struct mmsghdr> msgs_;
  std::vector<struct iovec> iov_;
  std::vector<sockaddr_storage> names_;
  std::vector<Datagram> out_;
};

// One datagram to send. Addresses are pointers into the caller's memory, which stays put
// until send() returns; a prober keeps them compactly (a sockaddr and a bare address), a
// reflector as Endpoints (to()).
struct Outgoing {
  std::span<const uint8_t> data;
  const sockaddr* peer = nullptr;  // nullptr on a connected socket
  socklen_t peer_len = 0;
  const void* source = nullptr;    // send from this address (IP_PKTINFO): an in_addr or in6_addr, by the socket's family
  static Outgoing to(std::span<const uint8_t> data, const Endpoint* peer, const Endpoint* source = nullptr);
};

class UdpSocket {
 public:
  UdpSocket() = default;
  ~UdpSocket();
  UdpSocket(UdpSocket&& o) noexcept;
  UdpSocket& operator=(UdpSocket&& o) noexcept;
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  // Binds a non-blocking socket; inside network namespace `netns` (a name under
  // /var/run/netns, needs root) when given. Errors name the address and the reason.
  static Result<UdpSocket> open(const Endpoint& bind, const std::string& netns = "");

  int fd() const { return fd_; }
  Endpoint local() const;
  bool ok() const { return fd_ >= 0; }

  // Fixes the peer: datagrams then go without an address (the kernel skips the route lookup
  // per packet) and only the peer's datagrams are received.
  Status connect(const Endpoint& peer);

  // IPv4: sets Don't Fragment on every datagram (IP_PMTUDISC_DO), for packets that must
  // never be fragmented. An unconnected socket's datagrams then need no IP identification
  // (RFC 6864): the kernel skips choosing one per packet. A datagram over the path MTU
  // fails to send instead. Nothing to do for IPv6.
  Status set_dont_fragment();

  // Asks the kernel for the receive timestamp only, not the TTL or the address a datagram
  // came to (Datagram::ttl and ::local stay unknown): less for it to build per datagram.
  Status timestamps_only();

  // Receives what is waiting, up to the batch's capacity, without blocking.
  size_t receive(ReceiveBatch& batch);
  // Sends a batch; returns how many went (the rest would block or failed).
  size_t send(std::span<const Outgoing> out);
  bool send_one(std::span<const uint8_t> data, const Endpoint& peer, const Endpoint* source = nullptr);

 private:
  int fd_ = -1;
  bool v6_ = false;
};

}  // namespace medic::probes
