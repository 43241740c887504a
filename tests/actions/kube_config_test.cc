// The kubeconfig / in-cluster reader: what it accepts, and clear errors for everything it
// does not (never echoing the token).
#include "actions/kube_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace faultline::actions {
namespace {

namespace fs = std::filesystem;

constexpr char kToken[] = "sekret-token-4f9a1c";

fs::path TempDir(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / ("kube_config_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void Write(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string Kubeconfig(const std::string& cluster_extra, const std::string& user_body,
                       const std::string& current = "ctx-a") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: " + current +
         "\n"
         "clusters:\n"
         "- name: prod\n"
         "  cluster:\n"
         "    server: https://api.example.test:6443/\n" +
         cluster_extra +
         "- name: lab\n"
         "  cluster:\n"
         "    server: https://10.1.2.3:443\n"
         "contexts:\n"
         "- name: ctx-a\n"
         "  context: {cluster: prod, user: bot}\n"
         "- name: ctx-b\n"
         "  context: {cluster: lab, user: bot}\n"
         "users:\n"
         "- name: bot\n"
         "  user:\n" +
         user_body;
}

TEST(KubeConfigTest, ReadsCurrentContextWithInlineTokenAndCaData) {
  const std::string pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  // base64 of `pem`, computed by the test's own encoder below to avoid a hard-coded blob.
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  for (size_t i = 0; i < pem.size(); i += 3) {
    uint32_t v = static_cast<unsigned char>(pem[i]) << 16;
    if (i + 1 < pem.size()) v |= static_cast<unsigned char>(pem[i + 1]) << 8;
    if (i + 2 < pem.size()) v |= static_cast<unsigned char>(pem[i + 2]);
    b64 += kAlphabet[(v >> 18) & 63];
    b64 += kAlphabet[(v >> 12) & 63];
    b64 += i + 1 < pem.size() ? kAlphabet[(v >> 6) & 63] : '=';
    b64 += i + 2 < pem.size() ? kAlphabet[v & 63] : '=';
  }
  auto config = ParseKubeconfig(
      Kubeconfig("    certificate-authority-data: " + b64 + "\n", std::string("    token: ") + kToken + "\n"),
      "/etc/kube");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->server, "https://api.example.test:6443");  // trailing slash dropped
  EXPECT_EQ(config->ca_pem, pem);
  EXPECT_EQ(config->token, kToken);
  EXPECT_FALSE(config->insecure);
  EXPECT_EQ(config->ToString().find(kToken), std::string::npos);
  auto token = config->BearerToken();
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(*token, kToken);
}

TEST(KubeConfigTest, NamedContextAndRelativePathsResolveAgainstTheFile) {
  const fs::path dir = TempDir("relative");
  Write(dir / "tok", std::string(kToken) + "\n");
  Write(dir / "kubeconfig", Kubeconfig("    certificate-authority: certs/ca.pem\n    insecure-skip-tls-verify: false\n",
                                       "    tokenFile: tok\n"));
  auto config = LoadKubeconfig((dir / "kubeconfig").string(), "ctx-b");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->server, "https://10.1.2.3:443");
  EXPECT_EQ(config->token_file, (dir / "tok").string());
  EXPECT_NE(config->source.find("ctx-b"), std::string::npos);
  auto token = config->BearerToken();
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(*token, kToken);  // trailing newline trimmed

  auto prod = LoadKubeconfig((dir / "kubeconfig").string());
  ASSERT_TRUE(prod.ok());
  EXPECT_EQ(prod->ca_file, (dir / "certs/ca.pem").string());
  EXPECT_FALSE(prod->insecure);
}

TEST(KubeConfigTest, InsecureSkipVerifyIsHonouredOnlyWhenSaid) {
  auto config = ParseKubeconfig(Kubeconfig("    insecure-skip-tls-verify: true\n", "    token: t\n"), "");
  ASSERT_TRUE(config.ok());
  EXPECT_TRUE(config->insecure);
  EXPECT_NE(config->ToString().find("TLS verification OFF"), std::string::npos);
  auto bad = ParseKubeconfig(Kubeconfig("    insecure-skip-tls-verify: maybe\n", "    token: t\n"), "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("insecure-skip-tls-verify"), std::string::npos);
}

TEST(KubeConfigTest, UnsupportedAuthIsRefusedByName) {
  for (const std::string key : {"exec", "auth-provider", "password", "username"}) {
    auto config = ParseKubeconfig(Kubeconfig("", std::string("    token: ") + kToken + "\n    " + key + ": {}\n"), "");
    ASSERT_FALSE(config.ok()) << key;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(config.status().message().find(key), std::string::npos) << config.status().message();
    EXPECT_NE(config.status().message().find("user 'bot'"), std::string::npos);
    EXPECT_EQ(config.status().message().find(kToken), std::string::npos);
  }
}

TEST(KubeConfigTest, BadConfigsGiveErrorsNamingTheProblem) {
  struct Case {
    std::string text;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"", "not a map"},
      {"[1, 2", "not valid YAML"},
      {"just a string", "not a map"},
      {Kubeconfig("", "    token: t\n", ""), "no current-context"},
      {Kubeconfig("", "    token: t\n", "ctx-missing"), "no entry named 'ctx-missing'"},
      {Kubeconfig("", "    {}\n"), "neither token, tokenFile nor a client certificate"},
      {Kubeconfig("    certificate-authority-data: '@@@'\n", "    token: t\n"), "not valid base64"},
      {Kubeconfig("", "    token: [a, b]\n"), "token must be a string"},
      {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: x, user: y}\n", "no clusters list"},
      {"current-context: c\ncontexts:\n- name: c\n  context: {user: y}\nclusters: []\nusers: []\n", "names no cluster"},
      {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: x, user: y}\nclusters:\n- name: x\n"
       "  cluster: {}\nusers:\n- name: y\n  user: {token: t}\n",
       "has no server"},
      {"current-context: c\ncontexts: [7]\n", "entries must be maps"},
      {std::string(100, '[') + std::string(100, ']'), "nested deeper"},
      {std::string((1u << 20) + 1, '#'), "larger than 1 MiB"},
  };
  for (const Case& c : cases) {
    auto config = ParseKubeconfig(c.text, "");
    ASSERT_FALSE(config.ok()) << c.expect;
    EXPECT_NE(config.status().message().find(c.expect), std::string::npos)
        << "want '" << c.expect << "', got: " << config.status().message();
  }
}

TEST(KubeConfigTest, TruncatedConfigsAreErrorsNotCrashes) {
  const std::string full = Kubeconfig("", std::string("    token: ") + kToken + "\n");
  for (size_t cut = 0; cut < full.size(); cut += 7) {
    auto config = ParseKubeconfig(full.substr(0, cut), "");
    if (!config.ok()) {
      EXPECT_EQ(config.status().message().find(kToken), std::string::npos);
    }
  }
}

TEST(KubeConfigTest, MissingFilesAreClearErrors) {
  auto missing = LoadKubeconfig("/nonexistent/kubeconfig");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/kubeconfig"), std::string::npos);

  KubeConfig c;
  c.server = "https://x";
  c.token_file = "/nonexistent/token";
  EXPECT_EQ(c.BearerToken().status().code(), StatusCode::kNotFound);
  const fs::path dir = TempDir("tokens");
  Write(dir / "empty", "\n");
  c.token_file = (dir / "empty").string();
  EXPECT_EQ(c.BearerToken().status().code(), StatusCode::kInvalidArgument);
  Write(dir / "two", std::string(kToken) + "\nsecond\n");
  c.token_file = (dir / "two").string();
  auto two = c.BearerToken();
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().message().find(kToken), std::string::npos);
}

TEST(KubeConfigTest, InClusterUsesServiceEnvAndServiceAccountFiles) {
  const fs::path sa = TempDir("sa");
  Write(sa / "token", kToken);
  Write(sa / "ca.crt", "pem");
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                            {"KUBERNETES_SERVICE_PORT", "6443"}};
  auto lookup = [&env](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  auto config = LoadInClusterConfig(lookup, sa.string());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->server, "https://10.96.0.1:6443");
  EXPECT_EQ(config->ca_file, (sa / "ca.crt").string());
  EXPECT_TRUE(config->token.empty());  // read per request: the kubelet rotates it
  EXPECT_EQ(*config->BearerToken(), kToken);
  EXPECT_TRUE(ValidateKubeConfig(*config, false).ok());

  env["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  env.erase("KUBERNETES_SERVICE_PORT");
  config = LoadInClusterConfig(lookup, sa.string());
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->server, "https://[fd00::1]:443");

  fs::remove(sa / "ca.crt");
  EXPECT_EQ(LoadInClusterConfig(lookup, sa.string()).status().code(), StatusCode::kNotFound);
  env.clear();
  auto outside = LoadInClusterConfig(lookup, sa.string());
  EXPECT_EQ(outside.status().code(), StatusCode::kNotFound);
  EXPECT_NE(outside.status().message().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
}

TEST(KubeConfigTest, ValidationRefusesPlainHttpUnlessAllowed) {
  KubeConfig c;
  c.server = "http://127.0.0.1:8001";
  c.token = kToken;
  Status s = ValidateKubeConfig(c, false);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("clear text"), std::string::npos);
  EXPECT_EQ(s.message().find(kToken), std::string::npos);
  EXPECT_TRUE(ValidateKubeConfig(c, true).ok());
  c.server = "ftp://x";
  EXPECT_FALSE(ValidateKubeConfig(c, true).ok());
  c.server = "https://x";
  c.token.clear();
  EXPECT_NE(ValidateKubeConfig(c, false).message().find("no bearer token"), std::string::npos);
}

// Standard base64, written here so the client-certificate tests build their own data.
std::string Base64(const std::string& in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    if (i + 2 < in.size()) v |= static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

TEST(KubeConfigTest, ClientCertificatesFromDataOrFilesWithOrWithoutAToken) {
  const std::string cert = "-----BEGIN CERTIFICATE-----\nMIIBclient\n-----END CERTIFICATE-----\n";
  const std::string key = "-----BEGIN PRIVATE KEY-----\nMIIEsecretkeybytes\n-----END PRIVATE KEY-----\n";
  auto inline_data = ParseKubeconfig(
      Kubeconfig("", "    client-certificate-data: " + Base64(cert) + "\n    client-key-data: " + Base64(key) + "\n"),
      "");
  ASSERT_TRUE(inline_data.ok()) << inline_data.status().ToString();
  EXPECT_FALSE(inline_data->HasToken());
  EXPECT_TRUE(inline_data->HasClientCert());
  auto pair = inline_data->ClientCertificate();
  ASSERT_TRUE(pair.ok());
  EXPECT_EQ(pair->cert, cert);
  EXPECT_EQ(pair->key, key);
  EXPECT_TRUE(ValidateKubeConfig(*inline_data, false).ok());
  EXPECT_NE(inline_data->ToString().find("client certificate"), std::string::npos);
  EXPECT_EQ(inline_data->ToString().find("secretkeybytes"), std::string::npos);

  // Files, relative to the kubeconfig, read at use (a rotation is picked up), with a token too.
  const fs::path dir = TempDir("client_cert");
  Write(dir / "client.crt", cert);
  Write(dir / "client.key", key);
  Write(dir / "kubeconfig", Kubeconfig("", std::string("    token: ") + kToken +
                                               "\n    client-certificate: client.crt\n    client-key: client.key\n"));
  auto files = LoadKubeconfig((dir / "kubeconfig").string());
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_EQ(files->client_cert_file, (dir / "client.crt").string());
  EXPECT_TRUE(files->HasToken());
  Write(dir / "client.crt", cert + "rotated");
  EXPECT_EQ(files->ClientCertificate()->cert, cert + "rotated");
  fs::remove(dir / "client.key");
  auto gone = files->ClientCertificate();
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.status().message().find("client key"), std::string::npos);
}

TEST(KubeConfigTest, HalfOrDoubledClientCertificatesAreRefusedWithoutEchoingTheKey) {
  const std::string key_b64 = Base64("-----BEGIN PRIVATE KEY-----\nTOPSECRET\n-----END PRIVATE KEY-----\n");
  const std::pair<std::string, std::string> cases[] = {
      {"    client-certificate: c.crt\n", "certificate without its key"},
      {"    client-key-data: " + key_b64 + "\n", "key without its certificate"},
      {"    client-certificate: c.crt\n    client-certificate-data: " + Base64("x") + "\n    client-key: k\n",
       "sets both client-certificate and client-certificate-data"},
      {"    client-certificate: c.crt\n    client-key-data: '%%" + key_b64 + "'\n",
       "client-key-data is not valid base64"},
      {"    client-certificate: [a]\n    client-key: k\n", "client-certificate must be a string"},
  };
  for (const auto& [user, want] : cases) {
    auto config = ParseKubeconfig(Kubeconfig("", user), "");
    ASSERT_FALSE(config.ok()) << user;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(config.status().message().find(want), std::string::npos) << config.status().message();
    EXPECT_EQ(config.status().message().find(key_b64), std::string::npos);
    EXPECT_EQ(config.status().message().find("TOPSECRET"), std::string::npos);
  }
}

TEST(KubeConfigTest, Base64DecodesAndRejectsGarbage) {
  EXPECT_EQ(DecodeBase64("aGVsbG8="), "hello");
  EXPECT_EQ(DecodeBase64("aGVs\nbG8"), "hello");
  EXPECT_EQ(DecodeBase64(""), "");
  EXPECT_FALSE(DecodeBase64("aGVsbG8=x").has_value());
  EXPECT_FALSE(DecodeBase64("a").has_value());
  EXPECT_FALSE(DecodeBase64("a$bc").has_value());
}

}  // namespace
}  // namespace faultline::actions
