// Blocking HTTP requests over libcurl, for the few calls that are made one at a time
// (drain drivers, the CLI talking to medicd). Mass scraping uses telemetry's curl-multi
// collector instead.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace medic {

struct HttpReply {
  long status = 0;
  std::string body;
};

struct HttpCallOptions {
  double timeout_s = 5.0;
  double connect_timeout_s = 2.0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string ca_file;       // TLS: CA bundle to verify the server with ("" = system default)
  bool verify_tls = true;    // check the server's certificate chain and that it names the URL's host
};

// Call once at process start, before threads (curl_global_init is not thread-safe).
void curl_global_setup();

class HttpClient {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  Result<HttpReply> get(const std::string& url, const HttpCallOptions& options = {});
  Result<HttpReply> post(const std::string& url, const std::string& body,
                         const std::string& content_type, const HttpCallOptions& options = {});

  // Whether the last call failed in a way that retrying cannot fix: the server's
  // certificate did not verify, the CA file is unusable, the URL is malformed or not
  // http(s). A refused connection, a timeout or a reset is not permanent.
  bool last_failure_permanent() const { return last_failure_permanent_; }
  // Whether the last call's request left this client (some of it was written to the
  // server) before it failed: a server may have acted on a request whose answer was lost
  // (a timeout or a cut connection after sending). False for a connection refused or a
  // certificate that did not verify.
  bool last_request_sent() const { return last_request_sent_; }

 private:
  Result<HttpReply> perform(const std::string& url, const std::string* body,
                            const std::string& content_type, const HttpCallOptions& options);
  void* curl_;  // CURL*, reused so connections are kept alive
  bool last_failure_permanent_ = false;
  bool last_request_sent_ = false;
};

}  // namespace medic
