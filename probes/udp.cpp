#include "probes/udp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <sched.h>
#include <unistd.h>

#include <cstring>

#include "common/strings.h"

namespace medic::probes {

Result<Endpoint> Endpoint::parse(const std::string& host_port) {
  const auto hp = parse_host_port(host_port);
  if (!hp) return Error{"\"" + host_port + "\": expected ADDRESS:PORT"};
  Endpoint e;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&e.addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&e.addr);
  if (inet_pton(AF_INET, hp->first.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(hp->second);
    e.len = sizeof(sockaddr_in);
    return e;
  }
  if (inet_pton(AF_INET6, hp->first.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(hp->second);
    e.len = sizeof(sockaddr_in6);
    return e;
  }
  return Error{"\"" + hp->first + "\": not an IPv4 or IPv6 address"};
}

Endpoint Endpoint::from(const sockaddr* sa, socklen_t len) {
  Endpoint e;
  std::memcpy(&e.addr, sa, std::min<size_t>(len, sizeof e.addr));
  e.len = len;
  return e;
}

std::string Endpoint::host() const {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr, buf, sizeof buf);
  } else if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

uint16_t Endpoint::port() const {
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  return 0;
}

std::string Endpoint::str() const {
  return is_v6() ? "[" + host() + "]:" + std::to_string(port()) : host() + ":" + std::to_string(port());
}

bool Endpoint::same_host(const Endpoint& o) const {
  if (addr.ss_family != o.addr.ss_family) return false;
  if (addr.ss_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(&o.addr)->sin_addr.s_addr;
  }
  return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr,
                     &reinterpret_cast<const sockaddr_in6*>(&o.addr)->sin6_addr, 16) == 0;
}

bool Endpoint::operator==(const Endpoint& o) const { return same_host(o) && port() == o.port(); }

ReceiveBatch::ReceiveBatch(size_t capacity, size_t max_size)
    : capacity_(capacity),
      max_size_(max_size),
      storage_(capacity * max_size),
      control_(capacity * 256),
      msgs_(capacity),
      iov_(capacity),
      names_(capacity),
      out_(capacity) {}

UdpSocket::~UdpSocket() {
  if (fd_ >= 0) ::close(fd_);
}

UdpSocket::UdpSocket(UdpSocket&& o) noexcept : fd_(o.fd_), v6_(o.v6_) { o.fd_ = -1; }

UdpSocket& UdpSocket::operator=(UdpSocket&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    v6_ = o.v6_;
    o.fd_ = -1;
  }
  return *this;
}

Result<UdpSocket> UdpSocket::open(const Endpoint& bind, const std::string& netns) {
  int saved = -1, target = -1;
  if (!netns.empty()) {
    // A socket belongs to the namespace it was created in: enter it for the socket() call
    // only (this thread only), then come back.
    saved = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    const std::string path = netns.find('/') == std::string::npos ? "/var/run/netns/" + netns : netns;
    target = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (saved < 0 || target < 0 || setns(target, CLONE_NEWNET) != 0) {
      const std::string why = std::strerror(errno);
      if (saved >= 0) ::close(saved);
      if (target >= 0) ::close(target);
      return Error{"cannot enter network namespace " + netns + ": " + why};
    }
  }
  UdpSocket s;
  s.v6_ = bind.is_v6();
  s.fd_ = ::socket(bind.addr.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int socket_errno = errno;
  if (saved >= 0) {
    setns(saved, CLONE_NEWNET);
    ::close(saved);
    ::close(target);
  }
  if (s.fd_ < 0) return Error{"socket(): " + std::string(std::strerror(socket_errno))};
  const int one = 1;
  setsockopt(s.fd_, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);  // best effort: the clock if refused
  if (s.v6_) {
    setsockopt(s.fd_, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &one, sizeof one);
    setsockopt(s.fd_, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one);
  } else {
    setsockopt(s.fd_, IPPROTO_IP, IP_RECVTTL, &one, sizeof one);
    setsockopt(s.fd_, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
  }
  const int buf = 4 << 20;
  setsockopt(s.fd_, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  setsockopt(s.fd_, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  if (::bind(s.fd_, reinterpret_cast<const sockaddr*>(&bind.addr), bind.len) != 0) {
    return Error{"cannot bind " + bind.str() + (netns.empty() ? "" : " in " + netns) + ": " + std::strerror(errno)};
  }
  return s;
}

Endpoint UdpSocket::local() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  return Endpoint::from(reinterpret_cast<sockaddr*>(&ss), len);
}

Status UdpSocket::connect(const Endpoint& peer) {
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&peer.addr), peer.len) != 0) {
    return Error{"cannot connect to " + peer.str() + ": " + std::strerror(errno)};
  }
  return Ok{};
}

Status UdpSocket::set_dont_fragment() {
  if (v6_) return Ok{};
  const int mode = IP_PMTUDISC_DO;
  if (setsockopt(fd_, IPPROTO_IP, IP_MTU_DISCOVER, &mode, sizeof mode) != 0) {
    return Error{"cannot set Don't Fragment: " + std::string(std::strerror(errno))};
  }
  return Ok{};
}

Status UdpSocket::timestamps_only() {
  const int zero = 0;
  const bool ok = v6_ ? setsockopt(fd_, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &zero, sizeof zero) == 0 &&
                            setsockopt(fd_, IPPROTO_IPV6, IPV6_RECVPKTINFO, &zero, sizeof zero) == 0
                      : setsockopt(fd_, IPPROTO_IP, IP_RECVTTL, &zero, sizeof zero) == 0 &&
                            setsockopt(fd_, IPPROTO_IP, IP_PKTINFO, &zero, sizeof zero) == 0;
  if (!ok) return Error{"cannot turn off the TTL and local address of received datagrams: " + std::string(std::strerror(errno))};
  return Ok{};
}

size_t UdpSocket::receive(ReceiveBatch& b) {
  for (size_t i = 0; i < b.capacity_; ++i) {
    b.iov_[i] = {b.storage_.data() + i * b.max_size_, b.max_size_};
    msghdr& h = b.msgs_[i].msg_hdr;
    h.msg_name = &b.names_[i];
    h.msg_namelen = sizeof(sockaddr_storage);
    h.msg_iov = &b.iov_[i];
    h.msg_iovlen = 1;
    h.msg_control = b.control_.data() + i * 256;
    h.msg_controllen = 256;
    h.msg_flags = 0;
    b.msgs_[i].msg_len = 0;
  }
  const int n = recvmmsg(fd_, b.msgs_.data(), static_cast<unsigned>(b.capacity_), MSG_DONTWAIT, nullptr);
  b.count_ = n > 0 ? static_cast<size_t>(n) : 0;
  Time clock_now{};
  bool have_clock = false;
  for (size_t i = 0; i < b.count_; ++i) {
    Datagram& d = b.out_[i];
    msghdr& h = b.msgs_[i].msg_hdr;
    d.data = {b.storage_.data() + i * b.max_size_, b.msgs_[i].msg_len};
    d.peer = Endpoint::from(reinterpret_cast<sockaddr*>(&b.names_[i]), h.msg_namelen);
    d.local.reset();
    d.ttl = -1;
    d.kernel_timestamp = false;
    if (h.msg_flags & MSG_TRUNC) d.data = d.data.first(0);  // longer than any STAMP packet: dropped as malformed
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec ts;
        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
        d.received = Time(Duration(static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000));
        d.kernel_timestamp = true;
      } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) {
        int ttl;
        std::memcpy(&ttl, CMSG_DATA(c), sizeof ttl);
        d.ttl = ttl;
      } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT) {
        int hl;
        std::memcpy(&hl, CMSG_DATA(c), sizeof hl);
        d.ttl = hl;
      } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
        in_pktinfo pi;
        std::memcpy(&pi, CMSG_DATA(c), sizeof pi);
        sockaddr_in sin{};
        sin.sin_family = AF_INET;
        sin.sin_addr = pi.ipi_addr;
        d.local = Endpoint::from(reinterpret_cast<sockaddr*>(&sin), sizeof sin);
      } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
        in6_pktinfo pi;
        std::memcpy(&pi, CMSG_DATA(c), sizeof pi);
        sockaddr_in6 sin6{};
        sin6.sin6_family = AF_INET6;
        sin6.sin6_addr = pi.ipi6_addr;
        d.local = Endpoint::from(reinterpret_cast<sockaddr*>(&sin6), sizeof sin6);
      }
    }
    if (!d.kernel_timestamp) {
      if (!have_clock) {
        clock_now = SystemClock().now();
        have_clock = true;
      }
      d.received = clock_now;
    }
  }
  return b.count_;
}

size_t UdpSocket::send(std::span<const Outgoing> out) {
  constexpr size_t kChunk = 64;
  size_t sent = 0;
  mmsghdr msgs[kChunk];
  iovec iov[kChunk];
  alignas(cmsghdr) uint8_t control[kChunk][64];
  while (sent < out.size()) {
    const size_t n = std::min(kChunk, out.size() - sent);
    for (size_t i = 0; i < n; ++i) {
      const Outgoing& o = out[sent + i];
      iov[i] = {const_cast<uint8_t*>(o.data.data()), o.data.size()};
      msghdr& h = msgs[i].msg_hdr;
      h = {};
      if (o.peer != nullptr) {
        h.msg_name = const_cast<sockaddr*>(o.peer);
        h.msg_namelen = o.peer_len;
      }
      h.msg_iov = &iov[i];
      h.msg_iovlen = 1;
      if (o.source != nullptr) {
        h.msg_control = control[i];
        if (!v6_) {
          h.msg_controllen = CMSG_SPACE(sizeof(in_pktinfo));
          cmsghdr* c = CMSG_FIRSTHDR(&h);
          c->cmsg_level = IPPROTO_IP;
          c->cmsg_type = IP_PKTINFO;
          c->cmsg_len = CMSG_LEN(sizeof(in_pktinfo));
          in_pktinfo pi{};
          std::memcpy(&pi.ipi_spec_dst, o.source, sizeof pi.ipi_spec_dst);
          std::memcpy(CMSG_DATA(c), &pi, sizeof pi);
        } else {
          h.msg_controllen = CMSG_SPACE(sizeof(in6_pktinfo));
          cmsghdr* c = CMSG_FIRSTHDR(&h);
          c->cmsg_level = IPPROTO_IPV6;
          c->cmsg_type = IPV6_PKTINFO;
          c->cmsg_len = CMSG_LEN(sizeof(in6_pktinfo));
          in6_pktinfo pi{};
          std::memcpy(&pi.ipi6_addr, o.source, sizeof pi.ipi6_addr);
          std::memcpy(CMSG_DATA(c), &pi, sizeof pi);
        }
      }
    }
    const int r = sendmmsg(fd_, msgs, static_cast<unsigned>(n), MSG_DONTWAIT);
    if (r <= 0) break;
    sent += static_cast<size_t>(r);
    if (static_cast<size_t>(r) < n) break;
  }
  return sent;
}

Outgoing Outgoing::to(std::span<const uint8_t> data, const Endpoint* peer, const Endpoint* source) {
  Outgoing o;
  o.data = data;
  if (peer != nullptr) {
    o.peer = reinterpret_cast<const sockaddr*>(&peer->addr);
    o.peer_len = peer->len;
  }
  if (source != nullptr) {
    o.source = source->is_v6() ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(&source->addr)->sin6_addr)
                               : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(&source->addr)->sin_addr);
  }
  return o;
}

bool UdpSocket::send_one(std::span<const uint8_t> data, const Endpoint& peer, const Endpoint* source) {
  const Outgoing o = Outgoing::to(data, &peer, source);
  return send({&o, 1}) == 1;
}

}  // namespace medic::probes
