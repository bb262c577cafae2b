#include "common/http_client.h"

#include <curl/curl.h>

#include <mutex>

namespace medic {

void curl_global_setup() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

namespace {
size_t append_body(char* data, size_t size, size_t n, void* user) {
  auto* out = static_cast<std::string*>(user);
  // Refuse absurd answers instead of growing without bound.
  if (out->size() + size * n > (64u << 20)) return 0;
  out->append(data, size * n);
  return size * n;
}

bool is_permanent(CURLcode rc) {
  switch (rc) {
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return true;
    default:
      return false;
  }
}
}  // namespace

HttpClient::HttpClient() {
  curl_global_setup();
  curl_ = curl_easy_init();
}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

Result<HttpReply> HttpClient::get(const std::string& url, const HttpCallOptions& options) {
  return perform(url, nullptr, "", options);
}

Result<HttpReply> HttpClient::post(const std::string& url, const std::string& body,
                                   const std::string& content_type,
                                   const HttpCallOptions& options) {
  return perform(url, &body, content_type, options);
}

Result<HttpReply> HttpClient::perform(const std::string& url, const std::string* body,
                                      const std::string& content_type,
                                      const HttpCallOptions& options) {
  CURL* c = static_cast<CURL*>(curl_);
  last_failure_permanent_ = false;
  last_request_sent_ = false;
  if (c == nullptr) return Error{"curl_easy_init failed"};
  curl_easy_reset(c);
  HttpReply reply;
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options.connect_timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  if (!options.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options.ca_file.c_str());
  // Said explicitly rather than left to libcurl's defaults: the chain must lead to a trusted
  // CA and the certificate must name the host (or IP address) of the URL.
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, options.verify_tls ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, options.verify_tls ? 2L : 0L);
  curl_easy_setopt(c, CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
  struct curl_slist* hdrs = nullptr;
  for (const auto& [k, v] : options.headers) hdrs = curl_slist_append(hdrs, (k + ": " + v).c_str());
  if (body != nullptr) {
    hdrs = curl_slist_append(hdrs, ("Content-Type: " + content_type).c_str());
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body->size()));
  }
  if (hdrs != nullptr) curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  const CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(hdrs);
  if (rc != CURLE_OK) {
    last_failure_permanent_ = is_permanent(rc);
    long sent = 0;  // bytes of the request written so far (headers; the body with them)
    curl_easy_getinfo(c, CURLINFO_REQUEST_SIZE, &sent);
    last_request_sent_ = sent > 0;
    std::string msg = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    return Error{url + ": " + msg};
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.status);
  last_request_sent_ = true;
  return reply;
}

}  // namespace medic
