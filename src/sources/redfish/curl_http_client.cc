#include "sources/redfish/curl_http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>
#include <vector>

namespace faultline::redfish {
namespace {

struct Transfer {
  HttpResponse response;
  size_t max_body = 0;
  bool too_large = false;
  const std::function<bool(std::string_view)>* on_data = nullptr;
  bool stopped_by_caller = false;
  const std::atomic<bool>* cancel = nullptr;
  bool answered = false;  // the status line came: a later receive error cut the response
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  if (t->on_data) {
    if (!(*t->on_data)(std::string_view(data, len))) {
      t->stopped_by_caller = true;
      return 0;
    }
    return len;
  }
  if (t->response.body.size() + len > t->max_body) {
    t->too_large = true;
    return 0;  // aborts the transfer with CURLE_WRITE_ERROR
  }
  t->response.body.append(data, len);
  return len;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  t->answered = true;
  std::string_view line(data, size * n);
  size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
      value.remove_suffix(1);
    }
    t->response.headers[name] = std::string(value);
  }
  return size * n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->cancel && t->cancel->load() ? 1 : 0;
}

using EasyPtr = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;
using ListPtr = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;

Status CurlError(CURLcode rc, const Transfer& t) {
  std::string what = curl_easy_strerror(rc);
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
      return Status(StatusCode::kTimeout, what);
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
      // Before any answer it is the connection that failed (a peer that reset it, a TLS
      // alert such as a refused client certificate), not a truncated body.
      if (!t.answered) return Status(StatusCode::kUnavailable, what);
      return Status(StatusCode::kCorrupt, "truncated body: " + what);
    case CURLE_WRITE_ERROR:
      if (t.too_large) return Status(StatusCode::kCorrupt, "body exceeds the size limit");
      return Status(StatusCode::kUnavailable, what);
    case CURLE_ABORTED_BY_CALLBACK:
      return Status(StatusCode::kUnavailable, "cancelled");
    default:
      return Status(StatusCode::kUnavailable, what);
  }
}

// libcurl copies a blob (CURL_BLOB_COPY) before setopt returns.
void SetBlob(CURL* h, CURLoption option, const std::string& data) {
  curl_blob blob{const_cast<char*>(data.data()), data.size(), CURL_BLOB_COPY};
  curl_easy_setopt(h, option, &blob);
}

// Trust (verification, CA data or file) and the client's own certificate, if any.
void ConfigureTls(CURL* h, const CurlOptions& options) {
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, options.insecure ? 0L : 1L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, options.insecure ? 0L : 2L);
  if (!options.ca_pem.empty()) {
    SetBlob(h, CURLOPT_CAINFO_BLOB, options.ca_pem);
  } else if (!options.ca_file.empty()) {
    curl_easy_setopt(h, CURLOPT_CAINFO, options.ca_file.c_str());
  }
  if (!options.client_cert_pem.empty()) {
    SetBlob(h, CURLOPT_SSLCERT_BLOB, options.client_cert_pem);
    curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
  }
  if (!options.client_key_pem.empty()) {
    SetBlob(h, CURLOPT_SSLKEY_BLOB, options.client_key_pem);
    curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
  }
}

// Everything Send and Stream share: URL, headers, TLS policy, timeouts, callbacks.
void Configure(CURL* h, const HttpRequest& request, const CurlOptions& options, curl_slist* headers, Transfer& t) {
  curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  const int64_t timeout_ms = std::max<int64_t>(1, request.timeout_ms);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min(options.connect_timeout_ms, timeout_ms)));
  ConfigureTls(h, options);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, options.https_only ? "https" : "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
}

ListPtr HeaderList(const HttpRequest& request) {
  ListPtr headers(nullptr, curl_slist_free_all);
  for (const auto& [name, value] : request.headers) {
    std::string line = name + ": " + value;
    headers.reset(curl_slist_append(headers.release(), line.c_str()));
  }
  return headers;
}

}  // namespace

// Idle easy handles with the connections and TLS sessions they keep. A handle serves one
// request at a time; it comes back reset (no pointer into a finished request's headers,
// body or buffers stays set, and the next request sets every option again), and only
// after a transfer that completed: a failed one closes its handle, so a BMC that broke a
// connection gets fresh ones. At most kMaxIdle wait (the client's own parallelism).
class CurlHttpClient::HandlePool {
 public:
  static constexpr size_t kMaxIdle = 4;
  HandlePool() = default;
  HandlePool(const HandlePool&) = delete;
  HandlePool& operator=(const HandlePool&) = delete;
  ~HandlePool() {
    for (CURL* h : idle_) curl_easy_cleanup(h);
  }
  EasyPtr Take() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        CURL* h = idle_.back();
        idle_.pop_back();
        return EasyPtr(h, curl_easy_cleanup);
      }
    }
    return EasyPtr(curl_easy_init(), curl_easy_cleanup);
  }
  void Give(EasyPtr easy) {
    curl_easy_reset(easy.get());  // keeps live connections and the TLS session cache
    std::lock_guard<std::mutex> lock(mu_);
    if (idle_.size() < kMaxIdle) idle_.push_back(easy.release());
  }

 private:
  std::mutex mu_;
  std::vector<CURL*> idle_;
};

CurlHttpClient::CurlHttpClient(CurlOptions options)
    : options_(std::move(options)), pool_(std::make_unique<HandlePool>()) {}

CurlHttpClient::~CurlHttpClient() = default;

Result<HttpResponse> CurlHttpClient::Send(const HttpRequest& request) {
  Transfer t;
  t.max_body = options_.max_body_bytes;
  t.cancel = request.cancel;
  EasyPtr easy = pool_->Take();
  if (!easy) return Status(StatusCode::kInternal, "curl_easy_init failed");
  CURL* h = easy.get();
  ListPtr headers = HeaderList(request);
  Configure(h, request, options_, headers.get(), t);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (!request.body.empty() || request.method == "POST") {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(request.body.size()));
  }
  CURLcode rc = curl_easy_perform(h);
  if (rc != CURLE_OK) return CurlError(rc, t);
  long code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  pool_->Give(std::move(easy));
  t.response.status = static_cast<int>(code);
  return std::move(t.response);
}

Result<int> CurlHttpClient::Stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_data) {
  Transfer t;
  t.on_data = &on_data;
  t.cancel = request.cancel;
  EasyPtr easy(curl_easy_init(), curl_easy_cleanup);
  if (!easy) return Status(StatusCode::kInternal, "curl_easy_init failed");
  CURL* h = easy.get();
  ListPtr headers = HeaderList(request);
  Configure(h, request, options_, headers.get(), t);
  CURLcode rc = curl_easy_perform(h);
  long code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  if (rc == CURLE_WRITE_ERROR && t.stopped_by_caller) return static_cast<int>(code);
  if (rc != CURLE_OK) return CurlError(rc, t);
  return static_cast<int>(code);
}

}  // namespace faultline::redfish
