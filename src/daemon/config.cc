#include "daemon/config.h"

#include <toml++/toml.h>

#include <fstream>
#include <set>
#include <sstream>

#include "assistant/llm_client.h"
#include "core/time.h"
#include "sources/workload/http_server.h"

namespace faultline::daemon {
namespace {

Status Bad(const std::string& where, const std::string& why) {
  return Status(StatusCode::kInvalidArgument, "config: " + where + ": " + why);
}

// Reads the keys of one section into typed fields and remembers the first error, so
// each section is one short list of Read calls. Keys never read are unknown keys.
class SectionReader {
 public:
  SectionReader(const toml::table* table, std::string section) : table_(table), section_(std::move(section)) {}

  void Read(const char* key, std::string& out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return;
    if (auto v = n->value<std::string>(); v && n->is_string()) {
      out = *v;
    } else {
      Fail(key, "expected a string");
    }
  }
  void Read(const char* key, bool& out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return;
    if (n->is_boolean()) {
      out = *n->value<bool>();
    } else {
      Fail(key, "expected true or false");
    }
  }
  // A duration: integer seconds, or a string with a unit ("500ms", "10s"). Must be > 0
  // unless `allow_zero`.
  void ReadDuration(const char* key, int64_t& out_ns, bool allow_zero = false) {
    const toml::node* n = Find(key);
    if (n == nullptr) return;
    std::optional<int64_t> ns;
    if (n->is_integer()) {
      const int64_t s = *n->value<int64_t>();
      if ((s > 0 || (allow_zero && s == 0)) && s < int64_t{1} << 32) ns = s * 1'000'000'000;
    } else if (n->is_string()) {
      ns = ParseDuration(*n->value<std::string>());
    } else {
      Fail(key, "expected a duration (seconds, or a string like \"10s\")");
      return;
    }
    if (!ns || *ns < 0 || (*ns == 0 && !allow_zero)) {
      Fail(key, "expected a positive duration (seconds, or a string like \"10s\")");
      return;
    }
    out_ns = *ns;
  }
  void ReadLogLevel(const char* key, LogLevel& out) {
    std::string s;
    const bool present = Find(key) != nullptr;
    Read(key, s);
    if (!present || !status_.ok()) return;
    for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
      if (s == LogLevelName(l)) {
        out = l;
        return;
      }
    }
    Fail(key, "expected debug, info, warn or error");
  }

  // A whole number >= 0 (a count or limit).
  void ReadCount(const char* key, int64_t& out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return;
    if (!n->is_integer() || *n->value<int64_t>() < 0) return Fail(key, "expected a whole number >= 0");
    out = *n->value<int64_t>();
  }
  // A number (integer or float) in [lo, hi].
  void ReadNumber(const char* key, double lo, double hi, double& out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return;
    const auto v = n->value<double>();
    if (!(n->is_integer() || n->is_floating_point()) || !v || !(*v >= lo && *v <= hi)) {
      return Fail(key, "expected a number from " + std::to_string(lo) + " to " + std::to_string(hi));
    }
    out = *v;
  }
  // An array of action class names (actions/actuator.h).
  void ReadActionClasses(const char* key, std::set<actions::ActionClass>& out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return;
    if (!n->is_array()) return Fail(key, "expected an array of action classes");
    std::set<actions::ActionClass> classes;
    for (const toml::node& item : *n->as_array()) {
      const auto name = item.value<std::string>();
      const auto c = item.is_string() ? actions::ParseActionClass(*name) : std::nullopt;
      if (!c) {
        std::string known;
        for (actions::ActionClass k : actions::AllActionClasses()) known += " " + std::string(actions::ToString(k));
        return Fail(key, "unknown action class '" + name.value_or("?") + "' (known:" + known + ")");
      }
      classes.insert(*c);
    }
    out = std::move(classes);
  }

  // The first error, or an unknown key.
  Status Finish() {
    if (!status_.ok() || table_ == nullptr) return status_;
    for (const auto& [k, v] : *table_) {
      const std::string key(k.str());
      if (!read_.count(key)) return Bad(section_ + "." + key, "unknown key");
    }
    return Status::Ok();
  }

 private:
  const toml::node* Find(const char* key) {
    read_.insert(key);
    return table_ == nullptr ? nullptr : table_->get(key);
  }
  void Fail(const char* key, const std::string& why) {
    if (status_.ok()) status_ = Bad(section_ + "." + key, why);
  }

  const toml::table* table_;
  std::string section_;
  std::set<std::string> read_;
  Status status_;
};

Status ReadAgent(SectionReader& r, AgentSection& s) {
  r.Read("node", s.node);
  r.Read("store_path", s.store_path);
  r.ReadLogLevel("log_level", s.log_level);
  r.ReadDuration("evaluate_interval", s.evaluate_interval_ns);
  r.ReadDuration("shutdown_timeout", s.shutdown_timeout_ns);
  r.ReadDuration("max_backoff", s.max_backoff_ns);
  r.ReadDuration("retention_interval", s.retention_interval_ns);
  r.ReadDuration("store_unchanged_heartbeat", s.store_unchanged_heartbeat_ns);
  r.Read("store_every_sample", s.store_every_sample);
  r.Read("store_deadband", s.store_deadband);
  r.ReadDuration("detector_horizon", s.detector_horizon_ns);
  return r.Finish();
}
Status ReadKmsg(SectionReader& r, KmsgSection& s) {
  r.Read("enabled", s.enabled);
  r.Read("path", s.path);
  r.ReadDuration("interval", s.interval_ns);
  return r.Finish();
}
Status ReadNvml(SectionReader& r, NvmlSection& s) {
  r.Read("enabled", s.enabled);
  r.ReadDuration("interval", s.interval_ns);
  r.Read("library_path", s.library_path);
  r.ReadCount("slow_every", s.slow_every);
  return r.Finish();
}
Status ReadDcgm(SectionReader& r, DcgmExporterSection& s) {
  r.Read("url", s.url);
  r.ReadDuration("interval", s.interval_ns);
  return r.Finish();
}
Status ReadRedfish(SectionReader& r, RedfishSection& s) {
  r.Read("url", s.url);
  r.Read("user", s.user);
  r.Read("password_file", s.password_file);
  r.Read("ca_file", s.ca_file);
  r.Read("insecure", s.insecure);
  r.Read("allow_http", s.allow_http);
  r.ReadDuration("interval", s.interval_ns);
  r.ReadDuration("sweep_deadline", s.sweep_deadline_ns);
  r.Read("events", s.events);
  r.Read("wait_for_events", s.wait_for_events);
  return r.Finish();
}
Status ReadSysfs(SectionReader& r, SysfsSection& s) {
  r.Read("enabled", s.enabled);
  r.Read("root", s.root);
  r.ReadDuration("interval", s.interval_ns);
  r.Read("topology_file", s.topology_file);
  return r.Finish();
}
Status ReadAmd(SectionReader& r, AmdSection& s) {
  r.Read("enabled", s.enabled);
  r.Read("library_path", s.library_path);
  r.Read("use_library", s.use_library);
  r.Read("root", s.root);
  r.ReadDuration("interval", s.interval_ns);
  return r.Finish();
}
Status ReadEthernet(SectionReader& r, EthernetSection& s) {
  r.Read("enabled", s.enabled);
  r.Read("root", s.root);
  r.ReadDuration("interval", s.interval_ns);
  r.ReadDuration("rdma_interval", s.rdma_interval_ns);
  r.ReadCount("rdma_max_ports", s.rdma_max_ports);
  r.Read("ethtool", s.ethtool);
  return r.Finish();
}
Status ReadWorkload(SectionReader& r, WorkloadSection& s) {
  r.Read("listen", s.listen);
  r.Read("token_file", s.token_file);
  r.Read("token_env", s.token_env);
  r.Read("file", s.file);
  r.ReadDuration("interval", s.interval_ns);
  return r.Finish();
}
Status ReadServer(SectionReader& r, ServerSection& s) {
  r.Read("listen", s.listen);
  r.Read("token_file", s.token_file);
  r.Read("token_env", s.token_env);
  r.Read("cert_file", s.cert_file);
  r.Read("key_file", s.key_file);
  return r.Finish();
}
Status ReadAssistant(SectionReader& r, AssistantSection& s) {
  r.Read("incident_notes", s.incident_notes);
  r.Read("kb_dir", s.kb_dir);
  r.Read("index_dir", s.index_dir);
  r.Read("llm_url", s.llm_url);
  r.Read("llm_model", s.llm_model);
  r.Read("llm_key_file", s.llm_key_file);
  r.Read("llm_ca_file", s.llm_ca_file);
  r.Read("llm_allow_http", s.llm_allow_http);
  r.ReadDuration("llm_timeout", s.llm_timeout_ns);
  r.ReadDuration("llm_max_seconds", s.llm_max_seconds_ns);
  r.ReadCount("llm_max_steps", s.llm_max_steps);
  r.ReadCount("llm_max_tokens", s.llm_max_tokens);
  r.ReadCount("llm_max_per_hour", s.llm_max_per_hour);
  r.ReadCount("llm_queue", s.llm_queue);
  r.ReadDuration("slow_recheck", s.slow_recheck_ns);
  return r.Finish();
}
Status ReadIsolate(SectionReader& r, IsolateSection& s) {
  r.ReadDuration("window", s.window_ns);
  return r.Finish();
}

Status ReadFleet(SectionReader& r, FleetSection& s) {
  r.Read("enabled", s.enabled);
  r.Read("urls", s.urls);
  r.Read("site", s.site);
  r.Read("rack", s.rack);
  r.Read("credentials_file", s.credentials_file);
  r.Read("ca_file", s.ca_file);
  r.ReadDuration("interval", s.interval_ns);
  r.ReadDuration("max_backoff", s.max_backoff_ns);
  return r.Finish();
}

Status ReadPolicy(SectionReader& r, policy::PolicyConfig& s) {
  r.ReadActionClasses("enable", s.enable);
  r.ReadDuration("cooldown", s.cooldown_ns);
  r.ReadDuration("fleet_hold", s.fleet_hold_ns, /*allow_zero=*/true);
  r.ReadDuration("settle", s.settle_ns, /*allow_zero=*/true);
  r.ReadCount("breaker_max_nodes", s.breaker_max_nodes);
  r.ReadNumber("breaker_max_percent", 0.0, 100.0, s.breaker_max_percent);
  r.ReadDuration("breaker_window", s.breaker_window_ns);
  r.ReadDuration("breaker_settle", s.breaker_settle_ns, /*allow_zero=*/true);
  r.ReadDuration("retry_initial", s.retry_initial_ns);
  r.ReadDuration("retry_max", s.retry_max_ns);
  r.Read("platform", s.platform);
  r.Read("slurm_node", s.slurm_node);
  r.Read("kubeconfig", s.kubeconfig);
  r.Read("kubernetes_context", s.kubernetes_context);
  r.Read("kubernetes_node", s.kubernetes_node);
  r.Read("bundle_dir", s.bundle_dir);
  r.Read("state_dir", s.state_dir);
  r.Read("gpu_reset_command", s.gpu_reset_command);
  r.Read("reboot_command", s.reboot_command);
  r.Read("webhook_url", s.webhook_url);
  r.Read("webhook_secret_file", s.webhook_secret_file);
  r.Read("webhook_secret_env", s.webhook_secret_env);
  r.Read("webhook_ca_file", s.webhook_ca_file);
  r.Read("webhook_allow_http", s.webhook_allow_http);
  return r.Finish();
}

// Loopback only unless the operator names another address on purpose: reject obvious
// garbage here so the agent does not fail later on a thread.
// A section's `listen` ("" = off): HOST:PORT, and off loopback only with a token.
Status CheckListen(const std::string& section, const std::string& listen, const std::string& token_file,
                   const std::string& token_env) {
  if (listen.empty()) return Status::Ok();
  auto address = ParseListenAddress(listen);
  if (!address.ok() || listen.rfind(':') == std::string::npos) return Bad(section + ".listen", "expected HOST:PORT");
  const bool token = !token_file.empty() || !token_env.empty();
  if (auto policy = CheckListenPolicy(*address, token); !policy.ok()) {
    return Bad(section + ".listen", "not loopback: set " + section + ".token_file or " + section + ".token_env");
  }
  return Status::Ok();
}

// A model is optional; when one is named, its address and bounds must be usable (the key
// file is read when the agent starts: its errors name the file, never its content).
Status CheckAssistant(const AssistantSection& a) {
  if (a.llm_url.empty()) {
    if (!a.llm_model.empty() || !a.llm_key_file.empty()) {
      return Bad("assistant.llm_url", "llm_model and llm_key_file need llm_url");
    }
    return Status::Ok();
  }
  if (a.llm_url.rfind("http://", 0) != 0 && a.llm_url.rfind("https://", 0) != 0) {
    return Bad("assistant.llm_url", "expected an http:// or https:// URL");
  }
  if (Status s = assistant::CheckLlmUrl(a.llm_url, a.llm_allow_http); !s.ok()) {
    return Bad("assistant.llm_url", s.message());
  }
  if (a.llm_model.empty()) return Bad("assistant.llm_model", "must name the model when llm_url is set");
  if (a.llm_max_steps < 1 || a.llm_max_tokens < 1 || a.llm_queue < 1) {
    return Bad("assistant.llm_max_steps", "llm_max_steps, llm_max_tokens and llm_queue must be at least 1");
  }
  return Status::Ok();
}

Status CheckValues(const AgentConfig& c) {
  if (c.agent.store_path.empty()) return Bad("agent.store_path", "must not be empty");
  if (c.kmsg.enabled && c.kmsg.path.empty()) return Bad("kmsg.path", "must not be empty when enabled");
  if (c.sysfs.enabled && c.sysfs.root.empty()) return Bad("sysfs.root", "must not be empty when enabled");
  if (c.ethernet.enabled && c.ethernet.rdma_max_ports < 1) return Bad("ethernet.rdma_max_ports", "must be at least 1");
  if (c.nvml.slow_every < 1 || c.nvml.slow_every > 1000) {
    return Bad("nvml.slow_every", "must be between 1 (every poll) and 1000");
  }
  if (Status s = policy::ValidatePolicyConfig(c.policy); !s.ok()) return s;
  if (Status s = CheckListen("workload", c.workload.listen, c.workload.token_file, c.workload.token_env); !s.ok()) {
    return s;
  }
  if (Status s = CheckListen("server", c.server.listen, c.server.token_file, c.server.token_env); !s.ok()) return s;
  if (c.fleet.enabled && c.fleet.urls.find_first_not_of(" ,") == std::string::npos) {
    return Bad("fleet.urls", "must name at least one NATS server when enabled");
  }
  if (c.fleet.site.empty() || c.fleet.rack.empty()) return Bad("fleet.site", "site and rack must not be empty");
  if (Status s = CheckAssistant(c.assistant); !s.ok()) return s;
  if (c.server.cert_file.empty() != c.server.key_file.empty()) {
    return Bad("server.cert_file", "cert_file and key_file go together (both set = HTTPS)");
  }
  return Status::Ok();
}

}  // namespace

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

Result<AgentConfig> ParseAgentConfig(std::string_view toml_text) {
  toml::table root;
  try {
    root = toml::parse(toml_text);
  } catch (const toml::parse_error& e) {
    std::ostringstream where;
    where << "line " << e.source().begin.line << ", column " << e.source().begin.column;
    return Bad(where.str(), std::string(e.description()));
  }
  AgentConfig c;
  using Section = Status (*)(SectionReader&, AgentConfig&);
  struct Entry {
    const char* name;
    Section read;
  };
  static constexpr Entry kSections[] = {
      {"agent", [](SectionReader& r, AgentConfig& c) { return ReadAgent(r, c.agent); }},
      {"kmsg", [](SectionReader& r, AgentConfig& c) { return ReadKmsg(r, c.kmsg); }},
      {"nvml", [](SectionReader& r, AgentConfig& c) { return ReadNvml(r, c.nvml); }},
      {"dcgm_exporter", [](SectionReader& r, AgentConfig& c) { return ReadDcgm(r, c.dcgm_exporter); }},
      {"redfish", [](SectionReader& r, AgentConfig& c) { return ReadRedfish(r, c.redfish); }},
      {"sysfs", [](SectionReader& r, AgentConfig& c) { return ReadSysfs(r, c.sysfs); }},
      {"ethernet", [](SectionReader& r, AgentConfig& c) { return ReadEthernet(r, c.ethernet); }},
      {"amd", [](SectionReader& r, AgentConfig& c) { return ReadAmd(r, c.amd); }},
      {"workload", [](SectionReader& r, AgentConfig& c) { return ReadWorkload(r, c.workload); }},
      {"server", [](SectionReader& r, AgentConfig& c) { return ReadServer(r, c.server); }},
      {"assistant", [](SectionReader& r, AgentConfig& c) { return ReadAssistant(r, c.assistant); }},
      {"isolate", [](SectionReader& r, AgentConfig& c) { return ReadIsolate(r, c.isolate); }},
      {"fleet", [](SectionReader& r, AgentConfig& c) { return ReadFleet(r, c.fleet); }},
      {"policy", [](SectionReader& r, AgentConfig& c) { return ReadPolicy(r, c.policy); }},
  };
  std::set<std::string> known;
  for (const Entry& e : kSections) {
    known.insert(e.name);
    const toml::node* n = root.get(e.name);
    if (n != nullptr && !n->is_table()) return Bad(e.name, "expected a [section]");
    SectionReader reader(n == nullptr ? nullptr : n->as_table(), e.name);
    if (Status s = e.read(reader, c); !s.ok()) return s;
  }
  for (const auto& [k, v] : root) {
    if (!known.count(std::string(k.str()))) return Bad(std::string(k.str()), "unknown section");
  }
  if (Status s = CheckValues(c); !s.ok()) return s;
  return c;
}

Result<AgentConfig> LoadAgentConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, "config: cannot read " + path);
  constexpr std::streamsize kMaxBytes = 1 << 20;  // a config is a few KB; more is a mistake
  std::string text(static_cast<size_t>(kMaxBytes) + 1, '\0');
  in.read(text.data(), kMaxBytes + 1);
  text.resize(static_cast<size_t>(in.gcount()));
  if (static_cast<std::streamsize>(text.size()) > kMaxBytes) {
    return Bad(path, "larger than 1 MiB");
  }
  return ParseAgentConfig(text);
}

std::string DefaultAgentConfigToml() {
  return R"(# faultline agent configuration (docs/agent.md). Every value below is the default.
# Durations: integer seconds or a string with a unit ("500ms", "10s", "2m").

[agent]
node = ""                                  # "" = this host's name
store_path = "/var/lib/faultline/faultline.db"
log_level = "info"                         # debug | info | warn | error
evaluate_interval = "5s"                   # detectors -> isolator cadence
shutdown_timeout = "10s"                   # bound on a graceful stop (SIGTERM/SIGINT)
max_backoff = "300s"                       # retry cap for an unavailable source
retention_interval = "1h"                  # how often old/oversized store data is dropped
store_unchanged_heartbeat = "5m"           # how often an unchanged sensor/counter's "last seen" is written
store_every_sample = false                 # true = store every reading, changed or not
store_deadband = true                      # GPU power/clocks, fan speeds within 5% of the stored value = unchanged
detector_horizon = "24h"                   # an event no kernel line touched this long is forgotten (its finding stays stored)

[kmsg]
enabled = true
path = "/dev/kmsg"                         # character device (live) or a log file (tailed)
interval = "1s"

[nvml]
enabled = true
interval = "10s"
library_path = ""                          # "" = $FAULTLINE_NVML_LIB, else libnvidia-ml.so.1
slow_every = 3                             # NVLink, per-location ECC, retired pages, remapped rows: every 3rd poll

[dcgm_exporter]
url = ""                                   # "" = off, e.g. "http://127.0.0.1:9400/metrics"
interval = "10s"

[redfish]
url = ""                                   # "" = off, e.g. "https://10.0.0.5"
user = ""                                  # "" = $FAULTLINE_BMC_USER / $FAULTLINE_BMC_PASSWORD
password_file = ""                         # first line = password, mode 0600
ca_file = ""                               # PEM bundle to trust instead of the system store
insecure = false                           # skip TLS verification (lab BMCs only)
allow_http = false                         # allow a plain http:// url (credentials cross in clear)
interval = "60s"
sweep_deadline = "120s"
events = true                              # follow the BMC's SSE event stream when it offers one
wait_for_events = true                     # hand a pushed event over at once (false: at the next sweep)

[sysfs]
enabled = true
root = "/"
interval = "10s"
topology_file = ""

[ethernet]                                 # RoCE / Ethernet fabric (docs/ethernet.md)
enabled = true
root = ""                                  # "" = the [sysfs] root
interval = "10s"                           # interfaces: operstate, speed, counters, ethtool statistics
rdma_interval = "30s"                      # a RoCE port's hw_counters at most this often (firmware reads)
rdma_max_ports = 4                         # ... and at most this many ports per poll
ethtool = true                             # driver statistics via the SIOCETHTOOL ioctl

[amd]                                      # AMD Instinct GPUs (docs/amd.md)
enabled = false
library_path = ""                          # "" = $FAULTLINE_AMDSMI_LIB, else libamd_smi.so
use_library = true                         # false: the amdgpu sysfs files only
root = ""                                  # "" = the [sysfs] root
interval = "10s"

[workload]
listen = ""                                # "" = off, e.g. "127.0.0.1:9464" (POST /v1/workload)
token_file = ""                            # bearer token file; required for a non-loopback listen
token_env = ""                             # or the environment variable holding the token
file = ""                                  # "" = off; report lines appended by jobs
interval = "5s"                            # how often they are drained (never critical)

[server]                                   # HTTP API, /metrics, dashboard (docs/api.md)
listen = ""                                # "" = off, e.g. "127.0.0.1:9465"
token_file = ""                            # bearer token file; required for a non-loopback listen
token_env = ""                             # or the environment variable holding the token
cert_file = ""                             # cert_file + key_file = HTTPS
key_file = ""

[assistant]                                # incident notes with each new diagnosis (docs/assistant.md)
incident_notes = true
kb_dir = ""                                # "" = notes without runbook sections, e.g. "/usr/share/faultline/kb"
index_dir = ""                             # "" = <store_path>.kb-index
llm_url = ""                               # "" = no model; e.g. "http://127.0.0.1:8080/v1" (llama-server)
llm_model = ""                             # the model name the server knows (required with llm_url)
llm_key_file = ""                          # API key file, mode 0600 ("" = none: a local server)
llm_ca_file = ""                           # PEM CA bundle for an https:// llm_url
llm_allow_http = false                     # allow plain http:// to a host that is not loopback (key in clear)
llm_timeout = "120s"                       # one model request
llm_max_seconds = "300s"                   # one investigation (all its requests)
llm_max_steps = 8                          # model replies per investigation
llm_max_tokens = 32000                     # tokens per investigation
llm_max_per_hour = 6                       # investigations started per hour; more are skipped (counted)
llm_queue = 4                              # waiting investigations; the oldest is dropped past it
slow_recheck = "1h"                        # a slow node no rule explains: investigated at most this often

[isolate]
window = "30m"

[fleet]                                    # publish to NATS JetStream for `faultline fleet` (docs/agent.md)
enabled = false
urls = ""                                  # e.g. "nats://10.0.0.2:4222,nats://10.0.0.3:4222"
site = "default"                           # subjects: faultline.<site>.<rack>.<node>.<kind>
rack = "default"
credentials_file = ""                      # mode 0600: a NATS .creds file, "user:password" or a token
ca_file = ""                               # PEM CA bundle: TLS, server certificate verified
interval = "1s"                            # how often new store rows are looked for
max_backoff = "60s"                        # retry cap while NATS is unreachable (the store buffers)

[policy]                                   # remediation (docs/remediation.md)
enable = []                                # classes carried out; the rest are stored dry runs:
                                           # cordon drain reset_gpu reboot_node rma_bundle facility_ticket webhook notify_user
cooldown = "1h"                            # per node and class, after an action done
fleet_hold = "60s"                         # [fleet] on: paperwork for a fault other nodes may share
settle = "20s"                             # a drain/reset/RMA/owner notice waits until its diagnosis is this stable
                                           # waits this long for the fleet's verdict ("0s" = never)
breaker_max_nodes = 3                      # fleet-wide: at most min(3, max(1, 2% of the fleet)) nodes
breaker_max_percent = 2.0                  # taken out by faultline per breaker_window
breaker_window = "1h"
breaker_settle = "2s"                      # after a drain: wait past its second, re-read, undo if over the limit
retry_initial = "30s"                      # a failed action is retried, doubling up to retry_max
retry_max = "15m"
platform = "slurm"                         # cordon/drain and the breaker's fleet view: slurm, kubernetes, none
slurm_node = ""                            # "" = agent.node
kubeconfig = ""                            # platform = "kubernetes": "" = in-cluster service account
kubernetes_context = ""                    # "" = the kubeconfig's current-context
kubernetes_node = ""                       # "" = slurm_node, else agent.node
bundle_dir = "/var/lib/faultline/bundles"  # rma_bundle, facility_ticket: one .tar.gz per decision
state_dir = "/var/lib/faultline/actions"   # reboot markers (crash safety); not on tmpfs
gpu_reset_command = "nvidia-smi --gpu-reset -i {gpu}"  # {gpu}: PCI bus id, else UUID, else index
reboot_command = "systemctl reboot"
webhook_url = ""                           # https://... (webhook, notify_user)
webhook_secret_file = ""                   # HMAC-SHA256 key, first line, mode 0600
webhook_secret_env = ""                    # or the environment variable holding it
webhook_ca_file = ""
webhook_allow_http = false
)";
}

}  // namespace faultline::daemon
