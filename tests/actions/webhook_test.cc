#include "actions/webhook.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "core/json.h"
#include "sim/mock_bmc/mock_bmc.h"
#include "sources/redfish/curl_http_client.h"

namespace faultline::actions {
namespace {

// A receiver on 127.0.0.1 (plain or TLS) that records what it got and answers `status` for
// the first `failures` requests, then 204.
class Receiver {
 public:
  explicit Receiver(const std::string& cert_dir = "") {
    if (!cert_dir.empty()) {
      auto paths = sim::GenerateSelfSignedCert(cert_dir);
      if (paths.ok()) {
        cert_ = paths->cert_path;
        server_ = std::make_unique<httplib::SSLServer>(paths->cert_path.c_str(), paths->key_path.c_str());
      }
      scheme_ = "https";
    } else {
      server_ = std::make_unique<httplib::Server>();
    }
    server_->Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      bodies_.push_back(req.body);
      signatures_.push_back(req.get_header_value("X-Faultline-Signature"));
      deliveries_.push_back(req.get_header_value("X-Faultline-Delivery"));
      content_types_.push_back(req.get_header_value("Content-Type"));
      if (failures_ > 0) {
        --failures_;
        res.status = fail_status_;
        return;
      }
      res.status = 204;
    });
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ~Receiver() {
    server_->stop();
    thread_.join();
  }
  std::string Url() const { return scheme_ + "://127.0.0.1:" + std::to_string(port_) + "/hook"; }
  void FailFirst(int n, int status) {
    std::lock_guard<std::mutex> lock(mu_);
    failures_ = n;
    fail_status_ = status;
  }
  size_t Count() {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_.size();
  }
  std::vector<std::string> bodies_, signatures_, deliveries_, content_types_;
  std::string cert_;

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::string scheme_ = "http";
  int port_ = 0;
  std::mutex mu_;
  int failures_ = 0;
  int fail_status_ = 500;
};

Decision HookDecision() {
  Decision d;
  d.key = "gpu-7|webhook|hbm_uncorrectable|gpu/3|1000";
  d.node = "gpu-7";
  d.target_node = "gpu-7";
  d.action_class = ActionClass::kWebhook;
  d.diagnosis_id = 42;
  d.diagnosis.fault_class = FaultClass::kHbmUncorrectable;
  d.diagnosis.component = GpuComponent("3");
  d.diagnosis.action = Action::kRma;
  d.diagnosis.summary = "uncorrectable ECC on GPU 3";
  d.evidence = {"finding:12", "finding:15"};
  d.rule = "notify_on_call";
  d.time_ns = 1'764'400'000LL * 1'000'000'000LL;
  return d;
}

// Computed here with OpenSSL's one-shot API, independently of the actuator's helper.
std::string ExpectedSignature(const std::string& key, const std::string& body) {
  unsigned char mac[32];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(body.data()),
       body.size(), mac, &len);
  std::string hex;
  char buf[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", mac[i]);
    hex += buf;
  }
  return "sha256=" + hex;
}

TEST(ActionsWebhook, HmacMatchesRfc4231Vector) {
  // RFC 4231 test case 2.
  EXPECT_EQ(HmacSha256Hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(ActionsWebhook, PostsSignedDiagnosisJson) {
  Receiver rx;
  redfish::CurlHttpClient http({});
  WebhookOptions o;
  o.url = rx.Url();
  o.allow_http = true;
  o.secret = "s3cr3t-key";
  WebhookActuator hook(http, o, [](int64_t) {});
  ASSERT_TRUE(hook.Apply(HookDecision()).ok());
  ASSERT_EQ(rx.Count(), 1u);
  EXPECT_EQ(rx.content_types_[0], "application/json");
  EXPECT_EQ(rx.signatures_[0], ExpectedSignature("s3cr3t-key", rx.bodies_[0]));
  EXPECT_EQ(rx.deliveries_[0], HookDecision().key);
  Json j = Json::parse(rx.bodies_[0]);
  EXPECT_EQ(j.at("diagnosis_id"), 42);
  EXPECT_EQ(j.at("action_class"), "webhook");
  EXPECT_EQ(j.at("diagnosis").at("fault_class"), "hbm_uncorrectable");
  EXPECT_EQ(j.at("evidence").size(), 2u);
  // The secret never travels in the body.
  EXPECT_EQ(rx.bodies_[0].find("s3cr3t-key"), std::string::npos);
}

TEST(ActionsWebhook, RetriesWithBackoffThenSucceeds) {
  Receiver rx;
  rx.FailFirst(2, 503);
  redfish::CurlHttpClient http({});
  WebhookOptions o;
  o.url = rx.Url();
  o.allow_http = true;
  o.attempts = 3;
  o.backoff_ms = 100;
  std::vector<int64_t> slept;
  WebhookActuator hook(http, o, [&](int64_t ms) { slept.push_back(ms); });
  ASSERT_TRUE(hook.Apply(HookDecision()).ok());
  EXPECT_EQ(rx.Count(), 3u);
  EXPECT_EQ(slept, (std::vector<int64_t>{100, 200}));
  // Same delivery id on every try, so the receiver can drop repeats.
  EXPECT_EQ(rx.deliveries_[0], rx.deliveries_[2]);
}

TEST(ActionsWebhook, PersistentErrorIsReportedNotSuccess) {
  Receiver rx;
  rx.FailFirst(100, 500);
  redfish::CurlHttpClient http({});
  WebhookOptions o;
  o.url = rx.Url();
  o.allow_http = true;
  o.secret = "do-not-print-me";
  WebhookActuator hook(http, o, [](int64_t) {});
  Status s = hook.Apply(HookDecision());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("500"), std::string::npos);
  EXPECT_EQ(s.message().find("do-not-print-me"), std::string::npos);
  EXPECT_EQ(rx.Count(), 3u);
}

TEST(ActionsWebhook, UnreachableIsAnError) {
  int port = 0;
  {
    Receiver gone;  // a port that was just in use and is now closed
    port = std::stoi(gone.Url().substr(gone.Url().rfind(':') + 1));
  }
  redfish::CurlHttpClient http({});
  WebhookOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(port) + "/hook";
  o.allow_http = true;
  o.attempts = 2;
  WebhookActuator hook(http, o, [](int64_t) {});
  EXPECT_FALSE(hook.Apply(HookDecision()).ok());
}

TEST(ActionsWebhook, PlainHttpRefusedUnlessAllowed) {
  EXPECT_FALSE(CheckWebhookUrl("http://127.0.0.1:1/x", false).ok());
  EXPECT_TRUE(CheckWebhookUrl("http://127.0.0.1:1/x", true).ok());
  EXPECT_TRUE(CheckWebhookUrl("https://hooks.example/x", false).ok());
  for (const char* bad : {"", "ftp://x", "https://", "file:///etc/passwd", "127.0.0.1:8080"}) {
    EXPECT_FALSE(CheckWebhookUrl(bad, true).ok()) << bad;
  }
  redfish::CurlHttpClient http({});
  WebhookOptions o;
  o.url = "http://127.0.0.1:9/hook";
  WebhookActuator hook(http, o, [](int64_t) {});
  EXPECT_EQ(hook.Apply(HookDecision()).code(), StatusCode::kInvalidArgument);
}

TEST(ActionsWebhook, TlsIsVerified) {
  const std::string dir = ::testing::TempDir() + "/faultline-webhook-tls";
  std::filesystem::create_directories(dir);
  Receiver rx(dir);
  ASSERT_FALSE(rx.cert_.empty());
  WebhookOptions o;
  o.url = rx.Url();
  o.attempts = 1;
  {
    redfish::CurlHttpClient http({});  // system trust store: the test certificate is not in it
    WebhookActuator hook(http, o, [](int64_t) {});
    EXPECT_FALSE(hook.Apply(HookDecision()).ok());
    EXPECT_EQ(rx.Count(), 0u);
  }
  redfish::CurlOptions trusted;
  trusted.ca_file = rx.cert_;
  redfish::CurlHttpClient http(trusted);
  WebhookActuator hook(http, o, [](int64_t) {});
  Status s = hook.Apply(HookDecision());
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(rx.Count(), 1u);
}

TEST(ActionsWebhook, SecretFromFileOrEnvironment) {
  const std::string path = ::testing::TempDir() + "/faultline-webhook-secret";
  {
    std::ofstream f(path);
    f << "file-secret\n";
  }
  chmod(path.c_str(), 0600);
  auto s = LoadWebhookSecret(path, "");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, "file-secret");
  chmod(path.c_str(), 0644);
  EXPECT_EQ(LoadWebhookSecret(path, "").status().code(), StatusCode::kPermissionDenied);
  setenv("FAULTLINE_TEST_WEBHOOK_SECRET", "env-secret", 1);
  auto e = LoadWebhookSecret("", "FAULTLINE_TEST_WEBHOOK_SECRET");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, "env-secret");
  unsetenv("FAULTLINE_TEST_WEBHOOK_SECRET");
  auto missing = LoadWebhookSecret("", "FAULTLINE_TEST_WEBHOOK_SECRET");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message().find("env-secret"), std::string::npos);
  auto none = LoadWebhookSecret("", "");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace faultline::actions
