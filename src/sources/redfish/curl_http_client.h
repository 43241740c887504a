// libcurl implementation of HttpClient. Each request runs on an easy handle of its own
// at a time, taken from a small pool of idle handles (reset before each use, so no option
// of one request leaks into the next): a handle keeps its connections and TLS sessions,
// so requests to the same server reuse a kept-alive connection instead of a TCP and TLS
// handshake each (libcurl matches host, port and TLS settings before reusing one).
// Thread-safe. TLS verification is on unless `insecure`.
// Redirects are never followed (a Location would carry credentials elsewhere). Shared by
// the Redfish source, the webhook and the Kubernetes API client (actions/kubernetes_http.cc);
// nothing here logs, and no header, body or key appears in an error message.
#pragma once

#include <memory>
#include <string>

#include "sources/redfish/http_client.h"

namespace faultline::redfish {

struct CurlOptions {
  std::string ca_file;    // PEM bundle to trust instead of the system store (--ca)
  bool insecure = false;  // skip certificate and host verification (--insecure)
  int64_t connect_timeout_ms = 5'000;
  size_t max_body_bytes = 32u << 20;  // BMC resources are KBs; a larger body is hostile
  // In memory, for clients whose trust and identity come as data (a kubeconfig's
  // certificate-authority-data, client-certificate-data, client-key-data):
  std::string ca_pem;           // PEM CA bundle to trust; takes precedence over ca_file
  std::string client_cert_pem;  // client certificate for mutual TLS (PEM)
  std::string client_key_pem;   // its private key (PEM, unencrypted)
  bool https_only = false;      // the protocol list is "https": an http:// URL fails to send
};

class CurlHttpClient final : public HttpClient {
 public:
  explicit CurlHttpClient(CurlOptions options);
  ~CurlHttpClient() override;
  Result<HttpResponse> Send(const HttpRequest& request) override;
  Result<int> Stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_data) override;

 private:
  class HandlePool;  // idle easy handles (curl_http_client.cc)
  CurlOptions options_;
  std::unique_ptr<HandlePool> pool_;
};

}  // namespace faultline::redfish
