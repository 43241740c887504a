// A small libcurl client for the mock BMC tests: the same library and TLS stack the Redfish
// client uses, so certificate checks, truncation and streaming behave as in production.
#pragma once

#include <curl/curl.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace faultline::sim::testing {

struct HttpResult {
  CURLcode curl = CURLE_OK;
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-cased names
};

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::string body;
  std::vector<std::string> headers;  // "Name: value"
  std::string ca_path;
  std::string user;  // Basic auth when set
  std::string password;
  long timeout_ms = 20000;
  // Called per received chunk; returning false aborts the transfer (CURLE_WRITE_ERROR).
  std::function<bool(const std::string& chunk)> on_data;
  bool keep_body = true;
};

// One request on a fresh connection.
HttpResult Fetch(const HttpRequest& request);

// Requests over one libcurl handle, so keep-alive connections (and TLS sessions) are reused
// as a real client's sweep would. Not thread-safe.
class HttpSession {
 public:
  HttpSession() : curl_(curl_easy_init()) {}
  ~HttpSession() { curl_easy_cleanup(curl_); }
  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;
  HttpResult Fetch(const HttpRequest& request);

 private:
  CURL* curl_;
};

}  // namespace faultline::sim::testing
