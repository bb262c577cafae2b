#include "telemetry/collector.h"

#include <curl/curl.h>

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

struct Collector::Impl {
  CollectorOptions options;
  CURLM* multi = nullptr;
  std::vector<Transfer> pool;  // easy handles reused across scrapes (keep-alive)
};

Collector::Collector(CollectorOptions options) : impl_(new Impl) {
  curl_global_setup();
  impl_->options = options;
  if (impl_->options.max_in_flight == 0) impl_->options.max_in_flight = 1;
  impl_->multi = curl_multi_init();
  curl_multi_setopt(impl_->multi, CURLMOPT_MAXCONNECTS, static_cast<long>(impl_->options.max_in_flight));
  impl_->pool.resize(impl_->options.max_in_flight);
  for (auto& t : impl_->pool) t.easy = curl_easy_init();
}

Collector::~Collector() {
  for (auto& t : impl_->pool) curl_easy_cleanup(t.easy);
  curl_multi_cleanup(impl_->multi);
  delete impl_;
}

std::vector<ScrapeResult> Collector::scrape(std::span<const ScrapeTarget> targets, const Clock& clock) {
  std::vector<ScrapeResult> results(targets.size());
  std::vector<Transfer*> free_list;
  for (auto& t : impl_->pool) free_list.push_back(&t);
  size_t next = 0;
  int running = 0;
  const auto& opt = impl_->options;

  auto start_one = [&](Transfer* t, size_t index) {
    CURL* e = t->easy;
    curl_easy_reset(e);
    t->index = index;
    t->body.clear();
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
    results[index].device = targets[index].device;
    curl_multi_add_handle(impl_->multi, e);
  };

  while (next < targets.size() && !free_list.empty()) {
    Transfer* t = free_list.back();
    free_list.pop_back();
    start_one(t, next++);
  }
  do {
    curl_multi_perform(impl_->multi, &running);
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(impl_->multi, &queued)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
      ScrapeResult& r = results[t->index];
      r.time = clock.now();
      r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t->started).count();
      const CURLcode rc = msg->data.result;
      curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &r.http_status);
      char* ct = nullptr;
      curl_easy_getinfo(t->easy, CURLINFO_CONTENT_TYPE, &ct);
      if (ct != nullptr) r.content_type = ct;
      if (rc == CURLE_OK && r.http_status == 200) {
        r.ok = true;
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
      if (next < targets.size()) {
        start_one(t, next++);
        ++running;
      } else {
        free_list.push_back(t);
      }
    }
    if (running > 0) curl_multi_poll(impl_->multi, nullptr, 0, 100, nullptr);
  } while (running > 0 || next < targets.size());
  return results;
}

}  // namespace medic::telemetry
