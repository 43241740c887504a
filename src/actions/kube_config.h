// Where the Kubernetes API server is and how to authenticate to it: the in-cluster
// service account (a pod of the faultline DaemonSet) or a kubeconfig file.
//
// Contract:
//  - Bearer tokens (inline or a token file) and client certificates (file or inline data,
//    certificate and key together), alone or both; `exec` plugins, auth providers and
//    username/password are refused with a clear error naming the user entry, never
//    silently ignored.
//  - TLS verification is on unless the kubeconfig's cluster says
//    `insecure-skip-tls-verify: true`. An `http://` server is refused unless the caller
//    sets `allow_plain_http` (tests and loopback proxies only: the token would travel in
//    clear text).
//  - The token and the client key are never part of an error message or of ToString();
//    token and certificate files are read again for every request (service-account tokens
//    are rotated by the kubelet, certificates by cert-manager and the like), so a
//    KubeConfig that names files keeps working after a rotation.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace faultline::actions {

struct KubeConfig {
  std::string server;            // https://host:port, no trailing slash
  std::string ca_file;           // PEM file to trust (instead of the system store)
  std::string ca_pem;            // PEM text to trust (kubeconfig certificate-authority-data)
  bool insecure = false;         // skip certificate and host verification (explicitly configured)
  std::string token;             // bearer token (inline)
  std::string token_file;        // bearer token read from this file per request
  std::string client_cert_file;  // client certificate (PEM) read per request
  std::string client_key_file;   // its key (PEM) read per request
  std::string client_cert_pem;   // client-certificate-data
  std::string client_key_pem;    // client-key-data (a secret)
  std::string source;            // where this came from ("in-cluster", "kubeconfig PATH context C"); no secret

  bool HasToken() const { return !token.empty() || !token_file.empty(); }
  bool HasClientCert() const { return !client_cert_file.empty() || !client_cert_pem.empty(); }
  // The token to send now: the inline one, else the file's contents (trimmed).
  Result<std::string> BearerToken() const;
  // The client certificate and key (PEM) to present now: inline data, else the files.
  struct CertPair {
    std::string cert;
    std::string key;
  };
  Result<CertPair> ClientCertificate() const;
  // A description safe to print (never the token).
  std::string ToString() const;
};

// Reads environment variables; tests pass their own.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup ProcessEnv();

inline constexpr std::string_view kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

// In-cluster: KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT, the token and ca.crt in
// `sa_dir`. kNotFound when not running in a pod (no host variable or no token file).
Result<KubeConfig> LoadInClusterConfig(const EnvLookup& env = ProcessEnv(),
                                       const std::string& sa_dir = std::string(kServiceAccountDir));

// Parses kubeconfig text (YAML or JSON). `base_dir` resolves relative file paths
// (kubeconfig rules: relative to the file's directory). `context` "" = current-context.
// kInvalidArgument / kCorrupt with the offending key for anything wrong or unsupported.
Result<KubeConfig> ParseKubeconfig(std::string_view text, const std::string& base_dir, const std::string& context = "");

// Reads and parses a kubeconfig file (at most 1 MiB).
Result<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");

// Checks a config before use: a server URL with a scheme, plain http only when allowed,
// a token, token file or client certificate. Messages name what is missing.
Status ValidateKubeConfig(const KubeConfig& config, bool allow_plain_http);

// Standard base64 (with or without padding, whitespace ignored); nullopt on bad input.
std::optional<std::string> DecodeBase64(std::string_view text);

}  // namespace faultline::actions
