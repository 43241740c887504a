#include "actions/kube_config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/json.h"

namespace faultline::actions {
namespace {

constexpr size_t kMaxConfigBytes = 1u << 20;
constexpr size_t kMaxTokenBytes = 64u << 10;
constexpr int kMaxNesting = 64;

Status Bad(const std::string& what) { return Status(StatusCode::kInvalidArgument, "kubeconfig: " + what); }

std::string Trim(std::string s) {
  const char* ws = " \t\r\n";
  s.erase(s.find_last_not_of(ws) + 1);
  s.erase(0, s.find_first_not_of(ws));
  return s;
}

// Reads a small file whole; kNotFound / kPermissionDenied / kInvalidArgument (too big).
Result<std::string> ReadSmallFile(const std::string& path, size_t limit, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return Status(StatusCode::kNotFound, what + " not found: " + path);
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return Status(StatusCode::kIoError, what + " unreadable: " + path);
  if (size > limit) return Status(StatusCode::kInvalidArgument, what + " is too large: " + path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kPermissionDenied, what + " cannot be opened: " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Resolve(const std::string& path, const std::string& base_dir) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return path;
  return (std::filesystem::path(base_dir) / path).string();
}

// A string field of a map, "" when absent; kInvalidArgument when present but not a scalar.
Result<std::string> Str(const YAML::Node& map, const char* key, const std::string& where) {
  const YAML::Node v = map[key];
  if (!v || v.IsNull()) return std::string();
  if (!v.IsScalar()) return Bad(where + "." + key + " must be a string");
  return v.Scalar();
}

Result<bool> Bool(const YAML::Node& map, const char* key, const std::string& where) {
  const YAML::Node v = map[key];
  if (!v || v.IsNull()) return false;
  bool out = false;
  if (!v.IsScalar() || !YAML::convert<bool>::decode(v, out)) return Bad(where + "." + key + " must be true or false");
  return out;
}

// The entry named `name` in the list `list_key` (clusters, contexts, users): its `inner` map.
Result<YAML::Node> Named(const YAML::Node& root, const char* list_key, const char* inner, const std::string& name) {
  const YAML::Node list = root[list_key];
  if (!list || !list.IsSequence()) return Bad(std::string("no ") + list_key + " list");
  for (const YAML::Node& entry : list) {
    if (!entry.IsMap()) return Bad(std::string(list_key) + " entries must be maps");
    const YAML::Node n = entry["name"];
    if (n && n.IsScalar() && n.Scalar() == name) {
      const YAML::Node body = entry[inner];
      if (!body || !body.IsMap()) return Bad(std::string(list_key) + " entry '" + name + "' has no " + inner + " map");
      return body;
    }
  }
  return Bad(std::string(list_key) + " has no entry named '" + name + "'");
}

Status ReadCluster(const YAML::Node& cluster, const std::string& name, const std::string& base_dir, KubeConfig& out) {
  const std::string where = "cluster '" + name + "'";
  auto server = Str(cluster, "server", where);
  auto ca_file = Str(cluster, "certificate-authority", where);
  auto ca_data = Str(cluster, "certificate-authority-data", where);
  auto insecure = Bool(cluster, "insecure-skip-tls-verify", where);
  for (const Status& s : {server.status(), ca_file.status(), ca_data.status(), insecure.status()}) {
    if (!s.ok()) return s;
  }
  out.server = *server;
  while (!out.server.empty() && out.server.back() == '/') out.server.pop_back();
  out.ca_file = Resolve(*ca_file, base_dir);
  out.insecure = *insecure;
  if (!ca_data->empty()) {
    auto pem = DecodeBase64(*ca_data);
    if (!pem) return Bad(where + ".certificate-authority-data is not valid base64");
    out.ca_pem = std::move(*pem);
  }
  return Status::Ok();
}

// A PEM credential given as a file (relative to the kubeconfig) or as base64 data, not both.
Status ReadPemEntry(const YAML::Node& user, const std::string& where, const char* file_key, const char* data_key,
                    const std::string& base_dir, std::string& file_out, std::string& pem_out) {
  auto file = Str(user, file_key, where);
  auto data = Str(user, data_key, where);
  if (!file.ok()) return file.status();
  if (!data.ok()) return data.status();
  if (!file->empty() && !data->empty()) return Bad(where + " sets both " + file_key + " and " + data_key);
  file_out = Resolve(*file, base_dir);
  if (!data->empty()) {
    auto pem = DecodeBase64(*data);
    // The key's data is a secret: name the field, never echo it.
    if (!pem || pem->empty()) return Bad(where + "." + data_key + " is not valid base64");
    pem_out = std::move(*pem);
  }
  return Status::Ok();
}

// Bearer tokens and client certificates; everything else is named and refused.
Status ReadUser(const YAML::Node& user, const std::string& name, const std::string& base_dir, KubeConfig& out) {
  const std::string where = "user '" + name + "'";
  for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
    if (user[unsupported]) {
      return Bad(where + " uses '" + unsupported +
                 "', which faultline does not support: give it a bearer token (token or tokenFile) or a client "
                 "certificate");
    }
  }
  auto token = Str(user, "token", where);
  auto token_file = Str(user, "tokenFile", where);
  if (!token.ok()) return token.status();
  if (!token_file.ok()) return token_file.status();
  out.token = Trim(*token);
  out.token_file = Resolve(*token_file, base_dir);
  if (Status s = ReadPemEntry(user, where, "client-certificate", "client-certificate-data", base_dir,
                              out.client_cert_file, out.client_cert_pem);
      !s.ok()) {
    return s;
  }
  if (Status s =
          ReadPemEntry(user, where, "client-key", "client-key-data", base_dir, out.client_key_file, out.client_key_pem);
      !s.ok()) {
    return s;
  }
  const bool cert = !out.client_cert_file.empty() || !out.client_cert_pem.empty();
  const bool key = !out.client_key_file.empty() || !out.client_key_pem.empty();
  if (cert != key)
    return Bad(where + " has a client " + (cert ? "certificate without its key" : "key without its certificate"));
  if (out.token.empty() && out.token_file.empty() && !cert) {
    return Bad(where + " has neither token, tokenFile nor a client certificate");
  }
  return Status::Ok();
}

Result<KubeConfig> ParseYamlConfig(const YAML::Node& root, const std::string& base_dir, const std::string& context) {
  if (!root.IsMap()) return Bad("not a map (is this a kubeconfig?)");
  std::string ctx_name = context;
  if (ctx_name.empty()) {
    auto current = Str(root, "current-context", "kubeconfig");
    if (!current.ok()) return current.status();
    ctx_name = *current;
  }
  if (ctx_name.empty()) return Bad("no current-context and no context given (--kube-context)");
  auto ctx = Named(root, "contexts", "context", ctx_name);
  if (!ctx.ok()) return ctx.status();
  auto cluster_name = Str(*ctx, "cluster", "context '" + ctx_name + "'");
  auto user_name = Str(*ctx, "user", "context '" + ctx_name + "'");
  if (!cluster_name.ok()) return cluster_name.status();
  if (!user_name.ok()) return user_name.status();
  if (cluster_name->empty()) return Bad("context '" + ctx_name + "' names no cluster");
  if (user_name->empty()) return Bad("context '" + ctx_name + "' names no user");
  auto cluster = Named(root, "clusters", "cluster", *cluster_name);
  if (!cluster.ok()) return cluster.status();
  auto user = Named(root, "users", "user", *user_name);
  if (!user.ok()) return user.status();
  KubeConfig out;
  if (Status s = ReadCluster(*cluster, *cluster_name, base_dir, out); !s.ok()) return s;
  if (Status s = ReadUser(*user, *user_name, base_dir, out); !s.ok()) return s;
  if (out.server.empty()) return Bad("cluster '" + *cluster_name + "' has no server");
  out.source = "context " + ctx_name;
  return out;
}

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::optional<std::string> DecodeBase64(std::string_view text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  bool padding = false;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      padding = true;
      continue;
    }
    const int v = Base64Value(c);
    if (v < 0 || padding) return std::nullopt;  // bad character, or data after padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (bits >= 6) return std::nullopt;  // a lone trailing character carries no whole byte
  return out;
}

Result<std::string> KubeConfig::BearerToken() const {
  if (!token.empty()) return token;
  if (token_file.empty()) return Status(StatusCode::kInvalidArgument, "kubernetes: no bearer token configured");
  auto text = ReadSmallFile(token_file, kMaxTokenBytes, "token file");
  if (!text.ok()) return text.status();
  std::string t = Trim(*text);
  if (t.empty()) return Status(StatusCode::kInvalidArgument, "kubernetes: token file is empty: " + token_file);
  if (t.find_first_of("\r\n") != std::string::npos) {
    return Status(StatusCode::kInvalidArgument, "kubernetes: token file holds more than one line: " + token_file);
  }
  return t;
}

Result<KubeConfig::CertPair> KubeConfig::ClientCertificate() const {
  CertPair pair{client_cert_pem, client_key_pem};
  if (pair.cert.empty() && !client_cert_file.empty()) {
    auto text = ReadSmallFile(client_cert_file, kMaxConfigBytes, "client certificate");
    if (!text.ok()) return Status(StatusCode::kInvalidArgument, "kubernetes: " + text.status().message());
    pair.cert = std::move(*text);
  }
  if (pair.key.empty() && !client_key_file.empty()) {
    auto text = ReadSmallFile(client_key_file, kMaxConfigBytes, "client key");
    if (!text.ok()) return Status(StatusCode::kInvalidArgument, "kubernetes: " + text.status().message());
    pair.key = std::move(*text);
  }
  return pair;
}

std::string KubeConfig::ToString() const {
  std::string s = "server " + server + " (" + source + ")";
  if (insecure) s += ", TLS verification OFF";
  if (!ca_file.empty()) s += ", CA " + ca_file;
  if (!ca_pem.empty()) s += ", CA from kubeconfig data";
  if (HasToken()) s += token_file.empty() ? ", inline token" : ", token file " + token_file;
  if (!client_cert_file.empty()) s += ", client certificate " + client_cert_file;
  if (!client_cert_pem.empty()) s += ", client certificate from kubeconfig data";
  return s;
}

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe): read-only at startup
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

Result<KubeConfig> LoadInClusterConfig(const EnvLookup& env, const std::string& sa_dir) {
  const auto host = env("KUBERNETES_SERVICE_HOST");
  const auto port = env("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty()) {
    return Status(StatusCode::kNotFound, "kubernetes: not in a cluster (KUBERNETES_SERVICE_HOST is not set)");
  }
  KubeConfig out;
  // An IPv6 service address needs brackets in a URL.
  const std::string h = host->find(':') != std::string::npos ? "[" + *host + "]" : *host;
  out.server = "https://" + h + ":" + (port && !port->empty() ? *port : "443");
  out.token_file = sa_dir + "/token";
  out.ca_file = sa_dir + "/ca.crt";
  out.source = "in-cluster service account";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(out.token_file, ec)) {
    return Status(StatusCode::kNotFound, "kubernetes: no service account token at " + out.token_file);
  }
  if (!std::filesystem::is_regular_file(out.ca_file, ec)) {
    return Status(StatusCode::kNotFound, "kubernetes: no service account CA at " + out.ca_file);
  }
  return out;
}

Result<KubeConfig> ParseKubeconfig(std::string_view text, const std::string& base_dir, const std::string& context) {
  if (text.size() > kMaxConfigBytes) return Bad("larger than 1 MiB");
  if (JsonNestingDepth(text) > kMaxNesting) return Bad("nested deeper than the limit");
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    return ParseYamlConfig(root, base_dir, context);
  } catch (const std::exception& e) {
    // yaml-cpp's messages quote positions, not values, so no token leaks through here.
    return Status(StatusCode::kCorrupt, std::string("kubeconfig: not valid YAML: ") + e.what());
  }
}

Result<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto text = ReadSmallFile(path, kMaxConfigBytes, "kubeconfig");
  if (!text.ok()) return text.status();
  auto config = ParseKubeconfig(*text, std::filesystem::path(path).parent_path().string(), context);
  if (!config.ok()) return Status(config.status().code(), config.status().message() + " (" + path + ")");
  config->source = "kubeconfig " + path + " " + config->source;
  return config;
}

Status ValidateKubeConfig(const KubeConfig& config, bool allow_plain_http) {
  if (config.server.rfind("https://", 0) == 0) {
    // fine
  } else if (config.server.rfind("http://", 0) == 0) {
    if (!allow_plain_http) {
      return Status(StatusCode::kInvalidArgument,
                    "kubernetes: server " + config.server +
                        " is plain http; the bearer token would travel in clear text (use https)");
    }
  } else {
    return Status(StatusCode::kInvalidArgument,
                  "kubernetes: server must be an https:// URL, got '" + config.server + "'");
  }
  if (!config.HasToken() && !config.HasClientCert()) {
    return Status(StatusCode::kInvalidArgument,
                  "kubernetes: no bearer token (token or tokenFile) and no client certificate configured");
  }
  return Status::Ok();
}

}  // namespace faultline::actions
