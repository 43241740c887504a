#include "actions/kubernetes_http.h"

#include <curl/curl.h>

#include <algorithm>
#include <memory>

namespace faultline::actions {
namespace {

struct Sink {
  std::string body;
  size_t max = 0;
  bool too_large = false;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t len = size * n;
  if (sink->body.size() + len > sink->max) {
    sink->too_large = true;
    return 0;  // aborts with CURLE_WRITE_ERROR
  }
  sink->body.append(data, len);
  return len;
}

using EasyPtr = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;
using ListPtr = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;

Status CurlFailure(CURLcode rc, const Sink& sink) {
  const std::string what = std::string("kubernetes API: ") + curl_easy_strerror(rc);
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
      return Status(StatusCode::kTimeout, what);
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
      return Status(StatusCode::kUnavailable, what + " (truncated answer)");
    case CURLE_WRITE_ERROR:
      if (sink.too_large) return Status(StatusCode::kCorrupt, "kubernetes API: answer exceeds the size limit");
      return Status(StatusCode::kUnavailable, what);
    default:
      return Status(StatusCode::kUnavailable, what);
  }
}

void AddHeader(ListPtr& list, const std::string& line) { list.reset(curl_slist_append(list.release(), line.c_str())); }

// Trust: explicit insecure, else the CA PEM data, else the CA file, else the system store.
void ConfigureTls(CURL* h, const KubeConfig& config) {
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, config.insecure ? 0L : 1L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, config.insecure ? 0L : 2L);
  if (!config.ca_pem.empty()) {
    curl_blob blob{const_cast<char*>(config.ca_pem.data()), config.ca_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
  } else if (!config.ca_file.empty()) {
    curl_easy_setopt(h, CURLOPT_CAINFO, config.ca_file.c_str());
  }
}

}  // namespace

Result<KubeHttpResponse> KubeRequest(const KubeConfig& config, const KubeHttpLimits& limits, const std::string& method,
                                     const std::string& path, const std::string& content_type,
                                     const std::string& body) {
  auto token = config.BearerToken();
  if (!token.ok()) return token.status();
  EasyPtr easy(curl_easy_init(), curl_easy_cleanup);
  if (!easy) return Status(StatusCode::kInternal, "curl_easy_init failed");
  CURL* h = easy.get();
  ListPtr headers(nullptr, curl_slist_free_all);
  AddHeader(headers, "Authorization: Bearer " + *token);
  AddHeader(headers, "Accept: application/json");
  AddHeader(headers, "User-Agent: faultline/0.1");
  if (!content_type.empty()) AddHeader(headers, "Content-Type: " + content_type);
  const std::string url = config.server + path;
  Sink sink;
  sink.max = limits.max_body_bytes;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  const int64_t timeout = std::max<int64_t>(1, limits.timeout_ms);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min(limits.connect_timeout_ms, timeout)));
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);  // a redirect would carry the token elsewhere
  ConfigureTls(h, config);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method != "GET") {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  const CURLcode rc = curl_easy_perform(h);
  if (rc != CURLE_OK) return CurlFailure(rc, sink);
  long code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  return KubeHttpResponse{static_cast<int>(code), std::move(sink.body)};
}

}  // namespace faultline::actions
