// Where the Kubernetes API server is and how to authenticate to it: the in-cluster
// service account (a pod of the faultline DaemonSet) or a kubeconfig file.
//
// Contract:
//  - Only bearer-token authentication is supported (an inline token or a token file);
//    client certificates, `exec` plugins and auth providers are refused with a clear
//    error naming the user entry, never silently ignored.
//  - TLS verification is on unless the kubeconfig's cluster says
//    `insecure-skip-tls-verify: true`. An `http://` server is refused unless the caller
//    sets `allow_plain_http` (tests and loopback proxies only: the token would travel in
//    clear text).
//  - The token is never part of an error message or of ToString(); the token file is read
//    again for every request (service-account tokens are rotated by the kubelet), so a
//    KubeConfig that names a file keeps working after a rotation.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace faultline::actions {

struct KubeConfig {
  std::string server;      // https://host:port, no trailing slash
  std::string ca_file;     // PEM file to trust (instead of the system store)
  std::string ca_pem;      // PEM text to trust (kubeconfig certificate-authority-data)
  bool insecure = false;   // skip certificate and host verification (explicitly configured)
  std::string token;       // bearer token (inline)
  std::string token_file;  // bearer token read from this file per request
  std::string source;      // where this came from ("in-cluster", "kubeconfig PATH context C"); no secret

  // The token to send now: the inline one, else the file's contents (trimmed).
  Result<std::string> BearerToken() const;
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
// a token or token file. Messages name what is missing.
Status ValidateKubeConfig(const KubeConfig& config, bool allow_plain_http);

// Standard base64 (with or without padding, whitespace ignored); nullopt on bad input.
std::optional<std::string> DecodeBase64(std::string_view text);

}  // namespace faultline::actions
