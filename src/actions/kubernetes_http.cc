#include "actions/kubernetes_http.h"

#include <utility>

#include "sources/redfish/curl_http_client.h"

namespace faultline::actions {
namespace {

// The transport for one request: the cluster's trust (insecure, CA data or file), the
// client certificate when the kubeconfig has one, https only for an https server (the URL
// is server + path, so a path can never switch the scheme), no redirects (CurlHttpClient
// never follows one: it would carry the token elsewhere).
Result<redfish::CurlOptions> TransportFor(const KubeConfig& config, const KubeHttpLimits& limits) {
  redfish::CurlOptions o;
  o.ca_file = config.ca_file;
  o.ca_pem = config.ca_pem;
  o.insecure = config.insecure;
  o.connect_timeout_ms = limits.connect_timeout_ms;
  o.max_body_bytes = limits.max_body_bytes;
  o.https_only = config.server.rfind("https://", 0) == 0;
  if (config.HasClientCert()) {
    auto pair = config.ClientCertificate();
    if (!pair.ok()) return pair.status();
    o.client_cert_pem = std::move(pair->cert);
    o.client_key_pem = std::move(pair->key);
  }
  return o;
}

}  // namespace

Result<KubeHttpResponse> KubeRequest(const KubeConfig& config, const KubeHttpLimits& limits, const std::string& method,
                                     const std::string& path, const std::string& content_type,
                                     const std::string& body) {
  auto transport = TransportFor(config, limits);
  if (!transport.ok()) return transport.status();
  redfish::HttpRequest request;
  request.method = method;
  request.url = config.server + path;
  request.timeout_ms = limits.timeout_ms;
  if (config.HasToken()) {
    auto token = config.BearerToken();
    if (!token.ok()) return token.status();
    request.headers.emplace_back("Authorization", "Bearer " + *token);
  }
  request.headers.emplace_back("Accept", "application/json");
  request.headers.emplace_back("User-Agent", "faultline/0.1");
  if (!content_type.empty()) request.headers.emplace_back("Content-Type", content_type);
  if (method != "GET") request.body = body;
  redfish::CurlHttpClient client(std::move(transport).value());
  auto response = client.Send(request);
  // CurlHttpClient's errors are libcurl's own words: never a header, so never the token.
  if (!response.ok()) return Status(response.status().code(), "kubernetes API: " + response.status().message());
  return KubeHttpResponse{response->status, std::move(response->body)};
}

}  // namespace faultline::actions
