#include "policy/actuators.h"

#include <utility>

#include "actions/slurm.h"
#include "actions/webhook.h"
#include "sources/ipmi/command_runner.h"
#include "sources/redfish/curl_http_client.h"

namespace faultline::policy {

ActuatorSet::ActuatorSet() = default;

ActuatorSet::~ActuatorSet() {
  // Actuators borrow the runners and clients in keep_: drop them first.
  actuators_.clear();
  owned_.clear();
  keep_.clear();
}

void ActuatorSet::Add(std::unique_ptr<actions::Actuator> actuator) {
  actuators_.push_back(actuator.get());
  owned_.push_back(std::move(actuator));
}

namespace {

void AddSlurm(ActuatorSet& set) {
  auto* runner = set.Keep(std::make_unique<ipmi::ProcessRunner>());
  auto slurm = std::make_unique<actions::SlurmActuator>(*runner);
  set.SetFleet(slurm.get());
  set.Add(std::move(slurm));
}

Status AddWebhook(const PolicyConfig& config, ActuatorSet& set) {
  if (Status s = actions::CheckWebhookUrl(config.webhook_url, config.webhook_allow_http); !s.ok()) {
    return Status(StatusCode::kInvalidArgument, "policy.webhook_url: " + s.message());
  }
  auto secret = actions::LoadWebhookSecret(config.webhook_secret_file, config.webhook_secret_env);
  if (!secret.ok()) return Status(StatusCode::kInvalidArgument, "policy.webhook_secret: " + secret.status().message());
  redfish::CurlOptions curl;
  curl.ca_file = config.webhook_ca_file;
  curl.max_body_bytes = 1u << 20;  // a receiver's answer is read only for its status
  auto* http = set.Keep(std::make_unique<redfish::CurlHttpClient>(curl));
  actions::WebhookOptions options;
  options.url = config.webhook_url;
  options.secret = std::move(*secret);
  options.ca_file = config.webhook_ca_file;
  options.allow_http = config.webhook_allow_http;
  set.Add(std::make_unique<actions::WebhookActuator>(*http, std::move(options)));
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<ActuatorSet>> BuildActuators(const PolicyConfig& config) {
  auto set = std::make_unique<ActuatorSet>();
  AddSlurm(*set);
  if (!config.webhook_url.empty()) {
    if (Status s = AddWebhook(config, *set); !s.ok()) return s;
  }
  return set;
}

}  // namespace faultline::policy
