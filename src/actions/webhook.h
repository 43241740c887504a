// Webhook actuator: POSTs a decision and its diagnosis as JSON to a configured URL, signed
// with HMAC-SHA256 (docs/remediation.md "Webhook"). Used for the `webhook` class (tell the
// on-call channel) and `notify_user` (a user-program fault: tell the job's owner).
//
// Request: POST <url>, Content-Type: application/json, body = WebhookBody(decision),
//   X-Faultline-Signature: sha256=<hex HMAC-SHA256(secret, body)>
//   X-Faultline-Delivery: <decision key>   (the same on every retry: receivers deduplicate on it)
// A 2xx answer is success; anything else, or no answer, is an error (the policy stores it as
// failed and retries with back-off). Within one Apply it tries `attempts` times with doubling
// back-off. TLS verification is always on (ca_file may name the CA to trust); plain http:// is
// refused unless allow_http. The secret is never logged nor put into an error message.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "actions/actuator.h"
#include "sources/redfish/http_client.h"

namespace faultline::actions {

struct WebhookOptions {
  std::string url;
  std::string secret;   // HMAC key (from a file or the environment); empty = unsigned
  std::string ca_file;  // PEM bundle to trust instead of the system store
  bool allow_http = false;
  int64_t timeout_ms = 10'000;
  int attempts = 3;
  int64_t backoff_ms = 500;  // doubled after each failed attempt
};

// Lower-case hex HMAC-SHA256.
std::string HmacSha256Hex(std::string_view key, std::string_view message);
// The JSON document posted: {"version":1,"node","target_node","action_class","decision_key",
// "diagnosis_id","rule","evidence":[...],"time","diagnosis":{...}}.
std::string WebhookBody(const Decision& decision);
// The secret: the first line of `file` (refused unless only its owner may read it) or the
// value of the environment variable `env`. Both empty -> "" (unsigned).
Result<std::string> LoadWebhookSecret(const std::string& file, const std::string& env);
// kInvalidArgument when the URL is not https:// (or http:// with allow_http).
Status CheckWebhookUrl(const std::string& url, bool allow_http);

class WebhookActuator final : public Actuator {
 public:
  using Sleep = std::function<void(int64_t ms)>;
  // `sleep` is injectable so tests do not wait out the back-off.
  WebhookActuator(redfish::HttpClient& http, WebhookOptions options, Sleep sleep = {});

  bool Handles(ActionClass c) const override;
  Status Apply(const Decision& decision) override;
  // A webhook cannot be asked whether it got a POST: always kUnknown (the policy re-sends
  // with the same X-Faultline-Delivery).
  Result<Observed> Observe(const Decision& decision) override;

 private:
  Status PostOnce(const std::string& body, const std::string& delivery);
  redfish::HttpClient& http_;
  WebhookOptions options_;
  Sleep sleep_;
};

}  // namespace faultline::actions
