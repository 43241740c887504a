#include "sources/dcgm_exporter/http_fetcher.h"

#include <curl/curl.h>

#include <memory>

#include "parse/text.h"

namespace faultline {
namespace {

struct Body {
  std::string data;
  size_t max_bytes = 0;
  bool overflow = false;
};

size_t WriteBody(char* ptr, size_t size, size_t nmemb, void* user) {
  auto* body = static_cast<Body*>(user);
  const size_t n = size * nmemb;
  if (body->data.size() + n > body->max_bytes) {
    body->overflow = true;
    return 0;  // makes curl abort the transfer with CURLE_WRITE_ERROR
  }
  body->data.append(ptr, n);
  return n;
}

Status FromCurl(CURLcode rc, const std::string& url, const char* detail) {
  std::string msg = "GET " + url + ": " + curl_easy_strerror(rc);
  if (detail != nullptr && detail[0] != '\0') msg += std::string(" (") + detail + ")";
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
      return Status(StatusCode::kTimeout, msg);
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
      return Status(StatusCode::kInvalidArgument, msg);
    default:
      return Status(StatusCode::kUnavailable, msg);
  }
}

}  // namespace

Result<std::string> CurlHttpFetcher::Get(const std::string& url, const HttpGetOptions& options) {
  if (!StartsWith(url, "http://") && !StartsWith(url, "https://")) {
    return Status(StatusCode::kInvalidArgument, "not an http(s) URL: " + url);
  }
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) return Status(StatusCode::kInternal, "curl_easy_init failed");
  CURL* h = curl.get();
  Body body;
  body.max_bytes = options.max_bytes;
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout_ms));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options.connect_timeout_ms));
  curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(options.max_bytes));
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, options.verify_tls ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, options.verify_tls ? 2L : 0L);
  if (!options.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, options.ca_file.c_str());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &WriteBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "faultline-dcgm-exporter/0.1");
  CURLcode rc = curl_easy_perform(h);
  if (body.overflow || rc == CURLE_FILESIZE_EXCEEDED) {
    return Status(StatusCode::kCorrupt,
                  "GET " + url + ": body larger than " + std::to_string(options.max_bytes) + " bytes");
  }
  if (rc != CURLE_OK) return FromCurl(rc, url, error);
  long code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  if (code != 200) return Status(StatusCode::kUnavailable, "GET " + url + ": HTTP " + std::to_string(code));
  return std::move(body.data);
}

}  // namespace faultline
