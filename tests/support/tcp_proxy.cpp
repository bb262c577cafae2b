#include "tests/support/tcp_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string_view>

namespace medic::testing {

namespace {

int connect_to(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || res == nullptr) return -1;
  const int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    ::close(fd);
    ::freeaddrinfo(res);
    return -1;
  }
  ::freeaddrinfo(res);
  return fd;
}

}  // namespace

TcpProxy::TcpProxy(const std::string& target_host, uint16_t target_port)
    : target_host_(target_host), target_port_(target_port) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener_ < 0) throw std::runtime_error("proxy: socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener_, 64) != 0) {
    throw std::runtime_error(std::string("proxy: bind/listen: ") + std::strerror(errno));
  }
  socklen_t len = sizeof addr;
  ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("proxy: pipe");
  thread_ = std::thread([this] { run(); });
}

TcpProxy::~TcpProxy() {
  stopping_ = true;
  const char c = 0;
  (void)::write(wake_[1], &c, 1);
  thread_.join();
  ::close(listener_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void TcpProxy::pause() { paused_ = true; }

void TcpProxy::resume() {
  paused_ = false;
  const char c = 0;
  (void)::write(wake_[1], &c, 1);
}

void TcpProxy::cut() {
  cut_ = true;
  const char c = 0;
  (void)::write(wake_[1], &c, 1);
}

void TcpProxy::cut_at(const std::string& needle, bool forward) {
  std::lock_guard<std::mutex> lock(cut_at_mutex_);
  cut_at_ = needle;
  cut_at_forward_ = forward;
}

std::string TcpProxy::rewrite_url(const std::string& url, uint16_t port) {
  const size_t at = url.find('@');
  const size_t start = at != std::string::npos ? at + 1 : url.find("://") + 3;
  const size_t slash = url.find('/', start);
  return url.substr(0, start) + "127.0.0.1:" + std::to_string(port) + (slash == std::string::npos ? "" : url.substr(slash));
}

std::pair<std::string, uint16_t> TcpProxy::url_host_port(const std::string& url) {
  const size_t at = url.find('@');
  const size_t start = at != std::string::npos ? at + 1 : url.find("://") + 3;
  const size_t slash = url.find('/', start);
  const std::string hp = url.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
  const size_t colon = hp.rfind(':');
  if (colon == std::string::npos) return {hp, 5432};
  return {hp.substr(0, colon), static_cast<uint16_t>(std::stoi(hp.substr(colon + 1)))};
}

void TcpProxy::run() {
  struct Pair {
    int client, server;
  };
  std::vector<Pair> pairs;
  char buf[65536];
  auto close_pair = [](Pair& p) {
    ::close(p.client);
    ::close(p.server);
    p.client = p.server = -1;
  };
  while (!stopping_) {
    if (cut_.exchange(false)) {
      for (auto& p : pairs) close_pair(p);
      pairs.clear();
    }
    std::vector<pollfd> fds;
    fds.push_back({wake_[0], POLLIN, 0});
    fds.push_back({listener_, POLLIN, 0});
    const bool moving = !paused_;
    for (const auto& p : pairs) {
      fds.push_back({p.client, static_cast<short>(moving ? POLLIN : 0), 0});
      fds.push_back({p.server, static_cast<short>(moving ? POLLIN : 0), 0});
    }
    if (::poll(fds.data(), fds.size(), 200) < 0) continue;
    if (fds[0].revents & POLLIN) {
      char drain[64];
      while (::read(wake_[0], drain, sizeof drain) > 0) {
      }
    }
    if (fds[1].revents & POLLIN) {
      const int c = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) {
        const int srv = connect_to(target_host_, target_port_);
        if (srv < 0) {
          ::close(c);
        } else {
          pairs.push_back({c, srv});
        }
      }
    }
    if (!moving) continue;
    for (size_t i = 0; i < pairs.size() && 2 + 2 * i + 1 < fds.size(); ++i) {
      Pair& p = pairs[i];
      for (int side = 0; side < 2; ++side) {
        const pollfd& f = fds[2 + 2 * i + static_cast<size_t>(side)];
        if (p.client < 0 || !(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const int from = side == 0 ? p.client : p.server, to = side == 0 ? p.server : p.client;
        const ssize_t n = ::recv(from, buf, sizeof buf, 0);
        if (n <= 0) {
          close_pair(p);
          continue;
        }
        bool cut_after = false;
        if (side == 0) {
          std::lock_guard<std::mutex> lock(cut_at_mutex_);
          if (!cut_at_.empty() && std::string_view(buf, static_cast<size_t>(n)).find(cut_at_) != std::string_view::npos) {
            cut_at_.clear();
            ++cut_at_count_;
            if (!cut_at_forward_) {
              close_pair(p);
              continue;
            }
            cut_after = true;
          }
        }
        ssize_t off = 0;
        while (off < n) {
          const ssize_t w = ::send(to, buf + off, static_cast<size_t>(n - off), MSG_NOSIGNAL);
          if (w <= 0) break;
          off += w;
        }
        if (off < n || cut_after) close_pair(p);
      }
    }
    std::vector<Pair> open;
    for (const auto& p : pairs) {
      if (p.client >= 0) open.push_back(p);
    }
    pairs.swap(open);
  }
  for (auto& p : pairs) close_pair(p);
}

}  // namespace medic::testing
