#include "actions/webhook.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "core/json.h"
#include "core/time.h"
#include "sources/redfish/credentials.h"

namespace faultline::actions {

std::string HmacSha256Hex(std::string_view key, std::string_view message) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), digest, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

std::string WebhookBody(const Decision& d) {
  Json j = {{"version", 1},
            {"node", d.node},
            {"target_node", d.target_node},
            {"action_class", ToString(d.action_class)},
            {"decision_key", d.key},
            {"diagnosis_id", d.diagnosis_id},
            {"rule", d.rule},
            {"evidence", d.evidence},
            {"time", FormatIso8601(d.time_ns)},
            {"diagnosis", Json(d.diagnosis)}};
  return j.dump();
}

Result<std::string> LoadWebhookSecret(const std::string& file, const std::string& env) {
  if (!file.empty()) return redfish::ReadPasswordFile(file);
  if (!env.empty()) {
    const char* v = std::getenv(env.c_str());
    if (v == nullptr || *v == '\0') return Status(StatusCode::kNotFound, "webhook secret: $" + env + " is not set");
    return std::string(v);
  }
  return std::string();
}

Status CheckWebhookUrl(const std::string& url, bool allow_http) {
  if (url.rfind("https://", 0) == 0 && url.size() > 8) return Status::Ok();
  if (url.rfind("http://", 0) == 0 && url.size() > 7) {
    if (allow_http) return Status::Ok();
    return Status(StatusCode::kInvalidArgument, "webhook url is plain http:// (set allow_http to accept it)");
  }
  return Status(StatusCode::kInvalidArgument, "webhook url must start with https://");
}

WebhookActuator::WebhookActuator(redfish::HttpClient& http, WebhookOptions options, Sleep sleep)
    : http_(http), options_(std::move(options)), sleep_(std::move(sleep)) {
  if (!sleep_) sleep_ = [](int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
}

bool WebhookActuator::Handles(ActionClass c) const {
  return c == ActionClass::kWebhook || c == ActionClass::kNotifyUser;
}

Result<Observed> WebhookActuator::Observe(const Decision&) { return Observed::kUnknown; }

Status WebhookActuator::PostOnce(const std::string& body, const std::string& delivery) {
  redfish::HttpRequest req;
  req.method = "POST";
  req.url = options_.url;
  req.body = body;
  req.timeout_ms = options_.timeout_ms;
  req.headers = {{"Content-Type", "application/json"}, {"User-Agent", "faultline"}, {"X-Faultline-Delivery", delivery}};
  if (!options_.secret.empty()) {
    req.headers.emplace_back("X-Faultline-Signature", "sha256=" + HmacSha256Hex(options_.secret, body));
  }
  auto resp = http_.Send(req);
  if (!resp.ok()) return Status(resp.status().code(), "webhook: " + resp.status().message());
  if (resp->status < 200 || resp->status > 299) {
    return Status(StatusCode::kUnavailable, "webhook answered HTTP " + std::to_string(resp->status));
  }
  return Status::Ok();
}

Status WebhookActuator::Apply(const Decision& d) {
  if (!Handles(d.action_class)) {
    return Status(StatusCode::kUnsupported, "webhook cannot " + std::string(ToString(d.action_class)));
  }
  if (Status s = CheckWebhookUrl(options_.url, options_.allow_http); !s.ok()) return s;
  const std::string body = WebhookBody(d);
  Status last;
  int64_t backoff = options_.backoff_ms;
  for (int attempt = 0; attempt < std::max(1, options_.attempts); ++attempt) {
    if (attempt > 0) {
      sleep_(backoff);
      backoff *= 2;
    }
    last = PostOnce(body, d.key);
    if (last.ok()) return last;
  }
  return last;
}

}  // namespace faultline::actions
