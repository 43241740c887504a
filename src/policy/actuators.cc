#include "policy/actuators.h"

#include <utility>

#include "actions/bundle_actuator.h"
#include "actions/kube_platform.h"
#include "actions/kubernetes.h"
#include "actions/node_commands.h"
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

Status KeyError(const std::string& key, const Status& s) {
  return Status(StatusCode::kInvalidArgument, "config: policy." + key + ": " + s.message());
}

void AddSlurm(ActuatorSet& set, ipmi::CommandRunner& runner) {
  auto slurm = std::make_unique<actions::SlurmActuator>(runner);
  set.SetFleet(slurm.get());
  set.SetReverter(slurm.get());
  set.Add(std::move(slurm));
}

Result<actions::KubeConfig> LoadKube(const PolicyConfig& config, const ActuatorDeps& deps) {
  if (!config.kubeconfig.empty()) {
    auto loaded = actions::LoadKubeconfig(config.kubeconfig, config.kubernetes_context);
    if (!loaded.ok()) return KeyError("kubeconfig", loaded.status());
    return loaded;
  }
  const actions::EnvLookup env = deps.env ? deps.env : actions::ProcessEnv();
  auto loaded = deps.service_account_dir.empty() ? actions::LoadInClusterConfig(env)
                                                 : actions::LoadInClusterConfig(env, deps.service_account_dir);
  if (!loaded.ok()) {
    return KeyError("kubeconfig", Status(loaded.status().code(),
                                         "not set, and the in-cluster service account is "
                                         "not usable: " +
                                             loaded.status().message()));
  }
  return loaded;
}

Status AddKubernetes(const PolicyConfig& config, const ActuatorDeps& deps, ActuatorSet& set) {
  auto kube_config = LoadKube(config, deps);
  if (!kube_config.ok()) return kube_config.status();
  actions::KubeOptions options;
  options.allow_plain_http = deps.kube_allow_plain_http;
  auto kube = actions::KubernetesActuator::Create(std::move(kube_config).value(), options);
  if (!kube.ok()) return KeyError("kubeconfig", kube.status());
  if (!config.kubernetes_node.empty() && !actions::IsValidKubeName(config.kubernetes_node)) {
    return KeyError("kubernetes_node", Status(StatusCode::kInvalidArgument,
                                              "'" + config.kubernetes_node + "' is not a Kubernetes node name"));
  }
  auto* client = set.Keep(std::move(kube).value());
  auto platform =
      std::make_unique<actions::KubernetesPlatform>(*client, actions::KubePlatformOptions{config.kubernetes_node});
  set.SetFleet(platform.get());
  set.SetReverter(platform.get());
  set.Add(std::move(platform));
  return Status::Ok();
}

Status AddNodeCommands(const PolicyConfig& config, const ActuatorDeps& deps, ipmi::CommandRunner& runner,
                       ActuatorSet& set) {
  auto reset = ipmi::SplitCommandLine(config.gpu_reset_command);
  if (!reset.ok() || reset->empty())
    return KeyError("gpu_reset_command", Status(StatusCode::kInvalidArgument, "must name a command"));
  auto reboot = ipmi::SplitCommandLine(config.reboot_command);
  if (!reboot.ok() || reboot->empty())
    return KeyError("reboot_command", Status(StatusCode::kInvalidArgument, "must name a command"));
  if (config.Enabled(actions::ActionClass::kRebootNode)) {
    if (Status s = actions::CheckPersistentDir(config.state_dir); !s.ok()) return KeyError("state_dir", s);
  }
  actions::GpuResetOptions reset_options;
  reset_options.command = std::move(*reset);
  set.Add(std::make_unique<actions::GpuResetActuator>(runner, std::move(reset_options)));
  actions::RebootOptions reboot_options;
  reboot_options.command = std::move(*reboot);
  reboot_options.state_dir = config.state_dir;
  if (!deps.boot_id_path.empty()) reboot_options.boot_id_path = deps.boot_id_path;
  set.Add(std::make_unique<actions::RebootActuator>(runner, std::move(reboot_options)));
  return Status::Ok();
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

Result<std::unique_ptr<ActuatorSet>> BuildActuators(const PolicyConfig& config, const ActuatorDeps& deps) {
  if (Status s = ValidatePolicyConfig(config); !s.ok()) return s;
  auto set = std::make_unique<ActuatorSet>();
  ipmi::CommandRunner* runner = deps.runner;
  if (runner == nullptr) runner = set->Keep(std::make_unique<ipmi::ProcessRunner>());
  if (config.platform == "slurm") {
    AddSlurm(*set, *runner);
  } else if (config.platform == "kubernetes") {
    if (Status s = AddKubernetes(config, deps, *set); !s.ok()) return s;
  }
  if (Status s = AddNodeCommands(config, deps, *runner, *set); !s.ok()) return s;
  if (deps.store != nullptr) {
    actions::BundleActuatorOptions bundle_options;
    bundle_options.dir = config.bundle_dir;
    set->Add(std::make_unique<actions::BundleActuator>(*deps.store, std::move(bundle_options)));
  }
  if (!config.webhook_url.empty()) {
    if (Status s = AddWebhook(config, *set); !s.ok()) return s;
  }
  return set;
}

}  // namespace faultline::policy
