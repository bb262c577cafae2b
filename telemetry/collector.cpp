#include "telemetry/collector.h"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <chrono>

#include "common/http_client.h"

namespace medic::telemetry {

namespace {

struct Transfer {
  CURL* easy = nullptr;
  size_t index = 0;
  std::string body;
  size_t limit = 0;
  bool too_big = false;
  std::chrono::steady_clock::time_point started;
  char errbuf[CURL_ERROR_SIZE] = {0};
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  if (t->body.size() + size * n > t->limit) {
    t->too_big = true;
    return 0;
  }
  t->body.append(data, size * n);
  return size * n;
}

}  // namespace

// The multi handle is driven through its socket interface with epoll, so the cost of a
// wake-up does not grow with the number of connections in flight (poll() over hundreds of
// sockets per wake-up was a fifth of a zone-wide poll's CPU).
struct Collector::Impl {
  CollectorOptions options;
  CURLM* multi = nullptr;
  int epfd = -1;
  long timeout_ms = -1;  // from curl's timer callback; -1: none
  std::chrono::steady_clock::time_point timer_due{};
  std::vector<Transfer> pool;  // easy handles reused across scrapes (keep-alive)
  // Size of each device's last answer, so the next one lands in a buffer of the right size
  // instead of growing through a dozen reallocations.
  std::vector<size_t> last_size;

  static int on_socket(CURL*, curl_socket_t s, int what, void* userp, void*) {
    auto* self = static_cast<Impl*>(userp);
    epoll_event ev{};
    ev.data.fd = s;
    if (what == CURL_POLL_REMOVE) {
      epoll_ctl(self->epfd, EPOLL_CTL_DEL, s, nullptr);
      return 0;
    }
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
    if (epoll_ctl(self->epfd, EPOLL_CTL_MOD, s, &ev) != 0) epoll_ctl(self->epfd, EPOLL_CTL_ADD, s, &ev);
    return 0;
  }

  static int on_timer(CURLM*, long timeout_ms, void* userp) {
    auto* self = static_cast<Impl*>(userp);
    self->timeout_ms = timeout_ms;
    self->timer_due = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(0L, timeout_ms));
    return 0;
  }
};

Collector::Collector(CollectorOptions options) : impl_(new Impl) {
  curl_global_setup();
  impl_->options = options;
  if (impl_->options.max_in_flight == 0) impl_->options.max_in_flight = 1;
  impl_->epfd = epoll_create1(EPOLL_CLOEXEC);
  impl_->multi = curl_multi_init();
  curl_multi_setopt(impl_->multi, CURLMOPT_MAXCONNECTS, static_cast<long>(impl_->options.max_in_flight));
  curl_multi_setopt(impl_->multi, CURLMOPT_SOCKETFUNCTION, &Impl::on_socket);
  curl_multi_setopt(impl_->multi, CURLMOPT_SOCKETDATA, impl_);
  curl_multi_setopt(impl_->multi, CURLMOPT_TIMERFUNCTION, &Impl::on_timer);
  curl_multi_setopt(impl_->multi, CURLMOPT_TIMERDATA, impl_);
  impl_->pool.resize(impl_->options.max_in_flight);
  for (auto& t : impl_->pool) t.easy = curl_easy_init();
}

Collector::~Collector() {
  for (auto& t : impl_->pool) curl_easy_cleanup(t.easy);
  curl_multi_cleanup(impl_->multi);
  if (impl_->epfd >= 0) ::close(impl_->epfd);
  delete impl_;
}

std::vector<ScrapeResult> Collector::scrape(std::span<const ScrapeTarget> targets, const Clock& clock,
                                            const std::function<void(ScrapeResult&)>& on_result) {
  std::vector<ScrapeResult> results(targets.size());
  std::vector<Transfer*> free_list;
  for (auto& t : impl_->pool) free_list.push_back(&t);
  size_t next = 0, in_flight = 0;
  int running = 0;
  const auto& opt = impl_->options;

  auto start_one = [&](Transfer* t, size_t index) {
    CURL* e = t->easy;
    curl_easy_reset(e);
    t->index = index;
    t->body.clear();
    const fabric::DeviceId dev = targets[index].device;
    if (dev != fabric::kNone && dev < impl_->last_size.size()) t->body.reserve(impl_->last_size[dev] + 4096);
    t->too_big = false;
    t->limit = opt.max_body_bytes;
    t->errbuf[0] = 0;
    t->started = std::chrono::steady_clock::now();
    curl_easy_setopt(e, CURLOPT_URL, targets[index].url.c_str());
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(opt.timeout_s * 1000));
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(opt.connect_timeout_s * 1000));
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    // Large reads: a zone-wide poll moves hundreds of megabytes.
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 512L * 1024);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    results[index].device = targets[index].device;
    curl_multi_add_handle(impl_->multi, e);
    ++in_flight;
  };

  auto collect_done = [&] {
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(impl_->multi, &queued)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
      ScrapeResult& r = results[t->index];
      r.time = clock.now();
      r.mono = clock.monotonic();
      r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t->started).count();
      const CURLcode rc = msg->data.result;
      curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &r.http_status);
      char* ct = nullptr;
      curl_easy_getinfo(t->easy, CURLINFO_CONTENT_TYPE, &ct);
      if (ct != nullptr) r.content_type = ct;
      if (rc == CURLE_OK && r.http_status == 200) {
        r.ok = true;
        if (r.device != fabric::kNone) {
          if (r.device >= impl_->last_size.size()) impl_->last_size.resize(r.device + 1, 0);
          impl_->last_size[r.device] = t->body.size();
        }
        r.body = std::move(t->body);
      } else if (rc == CURLE_OK) {
        r.error = "HTTP " + std::to_string(r.http_status);
      } else if (t->too_big) {
        r.error = "answer larger than " + std::to_string(opt.max_body_bytes) + " bytes";
      } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        r.error = "timeout after " + std::to_string(static_cast<long>(opt.timeout_s * 1000)) + " ms";
      } else {
        r.error = t->errbuf[0] ? t->errbuf : curl_easy_strerror(rc);
      }
      curl_multi_remove_handle(impl_->multi, t->easy);
      --in_flight;
      free_list.push_back(t);
      if (on_result) on_result(r);
    }
  };

  epoll_event events[64];
  while (true) {
    while (next < targets.size() && !free_list.empty()) {
      Transfer* t = free_list.back();
      free_list.pop_back();
      start_one(t, next++);
    }
    if (in_flight == 0) break;
    // Adding handles makes curl ask for an immediate timeout; honour curl's own timer
    // otherwise, and never sleep past 100 ms.
    const int wait = impl_->timeout_ms < 0 ? 100 : static_cast<int>(std::min(impl_->timeout_ms, 100L));
    const int n = epoll_wait(impl_->epfd, events, 64, wait);
    for (int i = 0; i < n; ++i) {
      int flags = 0;
      if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) flags |= CURL_CSELECT_IN;
      if (events[i].events & EPOLLOUT) flags |= CURL_CSELECT_OUT;
      if (events[i].events & EPOLLERR) flags |= CURL_CSELECT_ERR;
      curl_multi_socket_action(impl_->multi, events[i].data.fd, flags, &running);
    }
    // curl's timer (connection and transfer timeouts, new handles) when it is due, even
    // while other sockets keep the loop busy.
    if (n <= 0 || (impl_->timeout_ms >= 0 && std::chrono::steady_clock::now() >= impl_->timer_due)) {
      impl_->timeout_ms = -1;
      curl_multi_socket_action(impl_->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
    collect_done();
  }
  return results;
}

}  // namespace medic::telemetry
