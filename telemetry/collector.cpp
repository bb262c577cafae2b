#include "telemetry/collector.h"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "common/hash.h"
#include "common/http_client.h"

namespace medic::telemetry {

namespace {

struct Transfer {
  CURL* easy = nullptr;
  size_t index = 0;
  size_t shard = 0;
  bool attached = false;  // added to its shard's multi handle and not yet removed
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

// The multi handles are driven through their socket interface with epoll, so the cost of
// a wake-up does not grow with the number of connections in flight (poll() over hundreds
// of sockets per wake-up was a fifth of a zone-wide poll's CPU).
//
// The connections kept between scrapes are spread over several multi handles (shards), an
// address always in the same one: libcurl 7.88 walks a multi handle's whole connection
// cache each time a transfer is removed from it (looking for the connection it used last,
// to close it if it was connect-only), so
// one cache holding a connection to each of 6,264 switches made a zone32k poll walk about
// 20 million entries, more CPU than parsing the answers (docs/benchmarks.md, "Switches at
// addresses of their own").
struct Collector::Impl {
  struct Shard {
    Impl* owner = nullptr;
    uint32_t index = 0;
    CURLM* multi = nullptr;
    long timeout_ms = -1;  // from curl's timer callback; -1: none
    std::chrono::steady_clock::time_point timer_due{};
    size_t active = 0;     // transfers added and not yet done
    size_t addresses = 0;  // addresses given to it
    bool touched = false;  // curl acted on it since its messages were last read
  };

  CollectorOptions options;
  std::vector<std::unique_ptr<Shard>> shards;  // curl holds pointers to them; added as needed
  // Every address scraped so far (scheme://host:port as its URLs write it) and its shard.
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> shard_of_address;
  int epfd = -1;
  std::vector<Transfer> pool;  // easy handles reused across scrapes
  // Size of each device's last answer, so the next one lands in a buffer of the right size
  // instead of growing through a dozen reallocations.
  std::vector<size_t> last_size;

  Shard& add_shard() {
    auto sh = std::make_unique<Shard>();
    sh->owner = this;
    sh->index = static_cast<uint32_t>(shards.size());
    sh->multi = curl_multi_init();
    curl_multi_setopt(sh->multi, CURLMOPT_SOCKETFUNCTION, &Impl::on_socket);
    curl_multi_setopt(sh->multi, CURLMOPT_SOCKETDATA, sh.get());
    curl_multi_setopt(sh->multi, CURLMOPT_TIMERFUNCTION, &Impl::on_timer);
    curl_multi_setopt(sh->multi, CURLMOPT_TIMERDATA, sh.get());
    shards.push_back(std::move(sh));
    return *shards.back();
  }

  // epoll's word for a socket: its shard above, the descriptor below.
  static int on_socket(CURL*, curl_socket_t s, int what, void* userp, void*) {
    auto* shard = static_cast<Shard*>(userp);
    const int epfd = shard->owner->epfd;
    epoll_event ev{};
    ev.data.u64 = (uint64_t{shard->index} << 32) | static_cast<uint32_t>(s);
    if (what == CURL_POLL_REMOVE) {
      epoll_ctl(epfd, EPOLL_CTL_DEL, s, nullptr);
      return 0;
    }
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, s, &ev) != 0) epoll_ctl(epfd, EPOLL_CTL_ADD, s, &ev);
    return 0;
  }

  static int on_timer(CURLM*, long timeout_ms, void* userp) {
    auto* shard = static_cast<Shard*>(userp);
    shard->timeout_ms = timeout_ms;
    shard->timer_due = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(0L, timeout_ms));
    return 0;
  }
};

Collector::Collector(CollectorOptions options) : impl_(new Impl) {
  curl_global_setup();
  impl_->options = options;
  if (impl_->options.max_in_flight == 0) impl_->options.max_in_flight = 1;
  if (impl_->options.kept_per_shard == 0) impl_->options.kept_per_shard = 1;
  if (impl_->options.max_kept == 0) {
    rlimit files{};
    impl_->options.max_kept = getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY
                                  ? static_cast<size_t>(files.rlim_cur / 2)
                                  : 4096;
  }
  impl_->epfd = epoll_create1(EPOLL_CLOEXEC);
  impl_->add_shard();
  impl_->pool.resize(impl_->options.max_in_flight);
  const CollectorOptions& opt = impl_->options;
  // What every request of this collector shares is set once, on each handle: a handle's
  // options persist from one transfer to the next, so each request sets only its URL
  // (curl_easy_reset and a dozen options again a request were a few percent of a
  // zone-wide poll's thread).
  for (auto& t : impl_->pool) {
    CURL* e = t.easy = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_PRIVATE, &t);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t.errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(opt.timeout_s * 1000));
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(opt.connect_timeout_s * 1000));
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    // Large reads: a zone-wide poll moves hundreds of megabytes.
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 512L * 1024);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  }
}

Collector::~Collector() {
  for (auto& t : impl_->pool) curl_easy_cleanup(t.easy);
  for (auto& sh : impl_->shards) curl_multi_cleanup(sh->multi);
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
  auto& shards = impl_->shards;
  // Each target's shard, by its address (scheme://host:port as its URL writes it): the same
  // every scrape, so its kept connection is found again, and switches served from one
  // address share that address's connections. A new address goes to the shard holding the
  // fewest, shards being added up to one per kept_per_shard addresses (within max_kept).
  std::vector<uint32_t> shard_of(targets.size());
  {
    auto address_of = [](std::string_view url) {
      const size_t scheme = url.find("://");
      return url.substr(0, url.find('/', scheme == std::string_view::npos ? 0 : scheme + 3));
    };
    std::unordered_map<std::string_view, uint32_t> seen;  // this scrape's addresses
    size_t fresh = 0;
    for (const auto& t : targets) {
      const std::string_view address = address_of(t.url);
      if (seen.emplace(address, 0).second) fresh += !impl_->shard_of_address.contains(address);
    }
    seen.clear();
    const size_t addresses = impl_->shard_of_address.size() + fresh;
    const size_t wanted = std::clamp<size_t>(
        (std::min(addresses, opt.max_kept) + opt.kept_per_shard - 1) / opt.kept_per_shard, 1, 256);
    while (shards.size() < wanted) impl_->add_shard();
    std::vector<size_t> targets_in(shards.size(), 0), addresses_in(shards.size(), 0);
    for (size_t i = 0; i < targets.size(); ++i) {
      const std::string_view address = address_of(targets[i].url);
      auto it = seen.find(address);
      if (it == seen.end()) {
        auto known = impl_->shard_of_address.find(address);
        if (known == impl_->shard_of_address.end()) {
          const auto least = std::min_element(shards.begin(), shards.end(),
                                              [](const auto& a, const auto& b) { return a->addresses < b->addresses; });
          ++(*least)->addresses;
          known = impl_->shard_of_address.emplace(std::string(address), (*least)->index).first;
        }
        it = seen.emplace(address, known->second).first;
        ++addresses_in[it->second];
      }
      shard_of[i] = it->second;
      ++targets_in[it->second];
    }
    // A connection kept for each of a shard's addresses, as Prometheus keeps one a target
    // (with switches at addresses of their own, a cache the size of max_in_flight would
    // connect, and shake hands over TLS, anew to nearly every switch every poll), and the
    // ones in flight at once to an address serving several; max_kept over all shards.
    const size_t room = std::max<size_t>(1, opt.max_kept / shards.size());
    for (size_t i = 0; i < shards.size(); ++i) {
      const size_t want = addresses_in[i] + std::min(targets_in[i] - addresses_in[i], opt.max_in_flight);
      curl_multi_setopt(shards[i]->multi, CURLMOPT_MAXCONNECTS, static_cast<long>(std::clamp<size_t>(want, 1, room)));
    }
  }

  auto start_one = [&](Transfer* t, size_t index) {
    CURL* e = t->easy;
    t->index = index;
    t->shard = shard_of[index];
    t->body.clear();
    const fabric::DeviceId dev = targets[index].device;
    if (dev != fabric::kNone && dev < impl_->last_size.size()) t->body.reserve(impl_->last_size[dev] + 4096);
    t->too_big = false;
    t->limit = opt.max_body_bytes;
    t->errbuf[0] = 0;
    t->started = std::chrono::steady_clock::now();
    curl_easy_setopt(e, CURLOPT_URL, targets[index].url.c_str());
    results[index].device = targets[index].device;
    Impl::Shard& sh = *shards[t->shard];
    if (const CURLMcode rc = curl_multi_add_handle(sh.multi, e); rc != CURLM_OK) {
      ScrapeResult& r = results[index];
      r.time = clock.now();
      r.mono = clock.monotonic();
      r.error = std::string("cannot start the request: ") + curl_multi_strerror(rc);
      free_list.push_back(t);
      if (on_result) on_result(r);
      return;
    }
    t->attached = true;
    ++sh.active;
    sh.touched = true;
    ++in_flight;
  };
  // Should on_result throw, no request is left attached to a multi handle (the next scrape
  // could not add its easy handle again).
  struct Detach {
    Impl& impl;
    ~Detach() {
      for (auto& t : impl.pool) {
        if (!t.attached) continue;
        curl_multi_remove_handle(impl.shards[t.shard]->multi, t.easy);
        t.attached = false;
        --impl.shards[t.shard]->active;
      }
    }
  } detach{*impl_};

  auto collect_done = [&](Impl::Shard& sh) {
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(sh.multi, &queued)) {
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
      curl_multi_remove_handle(sh.multi, t->easy);
      t->attached = false;
      --sh.active;
      --in_flight;
      free_list.push_back(t);
      if (on_result) on_result(r);
    }
    sh.touched = false;
  };

  epoll_event events[64];
  while (true) {
    while (next < targets.size() && !free_list.empty()) {
      Transfer* t = free_list.back();
      free_list.pop_back();
      start_one(t, next++);
    }
    if (in_flight == 0) break;
    // Adding handles makes curl ask for an immediate timeout; honour each shard's timer
    // otherwise (rounded up: waking before it is due would only spin), and never sleep
    // past 100 ms.
    auto now = std::chrono::steady_clock::now();
    constexpr long kIdleMs = 100;
    long wait = kIdleMs;
    for (const auto& sh : shards) {
      if (sh->timeout_ms < 0) continue;
      const auto left_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(sh->timer_due - now).count();
      wait = std::min<long>(wait, std::max<long>(0, (left_ns + 999'999) / 1'000'000));
    }
    const int n = epoll_wait(impl_->epfd, events, 64, static_cast<int>(wait));
    for (int i = 0; i < n; ++i) {
      int flags = 0;
      if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) flags |= CURL_CSELECT_IN;
      if (events[i].events & EPOLLOUT) flags |= CURL_CSELECT_OUT;
      if (events[i].events & EPOLLERR) flags |= CURL_CSELECT_ERR;
      Impl::Shard& sh = *shards[events[i].data.u64 >> 32];
      curl_multi_socket_action(sh.multi, static_cast<curl_socket_t>(events[i].data.u64 & 0xffffffffu), flags, &running);
      sh.touched = true;
    }
    // Each shard's timer (connection and transfer timeouts, new handles) when it is due,
    // even while other sockets keep the loop busy; every busy shard's after a whole idle
    // wait with nothing to do.
    now = std::chrono::steady_clock::now();
    const bool idle = n == 0 && wait == kIdleMs;
    for (auto& sh : shards) {
      if ((idle && sh->active > 0) || (sh->timeout_ms >= 0 && now >= sh->timer_due)) {
        sh->timeout_ms = -1;
        curl_multi_socket_action(sh->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        sh->touched = true;
      }
    }
    for (auto& sh : shards) {
      if (sh->touched) collect_done(*sh);
    }
  }
  return results;
}

size_t Collector::multi_handles() const { return impl_->shards.size(); }

}  // namespace medic::telemetry
