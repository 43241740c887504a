// The agent's configuration file (TOML, documented option by option in docs/agent.md).
// One typed struct per section; every field has its default here. Unknown sections or
// keys are an error naming them (a typo must not silently fall back to a default), and
// so is a value of the wrong type. Durations are integers in seconds or strings with a
// unit ("500ms", "10s", "2m").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "policy/config.h"

namespace faultline::daemon {

enum class LogLevel { kDebug, kInfo, kWarn, kError };
std::string_view LogLevelName(LogLevel level);

struct AgentSection {
  std::string node;  // "" = this host's name
  std::string store_path = "/var/lib/faultline/faultline.db";
  LogLevel log_level = LogLevel::kInfo;
  int64_t evaluate_interval_ns = 5'000'000'000;      // detectors -> isolator cadence
  int64_t shutdown_timeout_ns = 10'000'000'000;      // bound on a graceful stop
  int64_t max_backoff_ns = 300'000'000'000;          // retry cap for an unavailable source
  int64_t retention_interval_ns = 3600'000'000'000;  // how often the store's retention runs
  // Change-only storage of periodic readings (daemon/change_filter.h): an unchanged
  // reading is stored again only once this old; store_every_sample turns it off.
  int64_t store_unchanged_heartbeat_ns = 300'000'000'000;
  bool store_every_sample = false;
  // GPU power/clocks and fan speeds within 5% of their stored value count as unchanged.
  bool store_deadband = true;
  // A detector forgets an event (an XID group, an AER device's errors) no line touched
  // for this long; its stored finding stays. Never shorter than [isolate] window.
  int64_t detector_horizon_ns = 86'400'000'000'000;
};

struct KmsgSection {
  bool enabled = true;
  std::string path = "/dev/kmsg";  // a character device (live) or a log file (tailed)
  int64_t interval_ns = 1'000'000'000;
};

struct NvmlSection {
  bool enabled = true;
  int64_t interval_ns = 10'000'000'000;
  std::string library_path;  // "" = $FAULTLINE_NVML_LIB, else libnvidia-ml.so.1
  // NVLink, per-location ECC, retired pages and remapped rows at every slow_every-th poll
  // (nvml::NvmlOptions::slow_every); 1 = every poll.
  int64_t slow_every = 3;
};

struct DcgmExporterSection {
  std::string url;  // "" = source off
  int64_t interval_ns = 10'000'000'000;
};

struct RedfishSection {
  std::string url;            // "" = source off, e.g. "https://10.0.0.5"
  std::string user;           // "" = $FAULTLINE_BMC_USER / $FAULTLINE_BMC_PASSWORD
  std::string password_file;  // first line = password; must be mode 0600
  std::string ca_file;        // PEM bundle to trust instead of the system store
  bool insecure = false;      // skip TLS verification (lab BMCs only)
  bool allow_http = false;    // allow a plain http:// url (credentials in clear; refused otherwise)
  int64_t interval_ns = 60'000'000'000;
  int64_t sweep_deadline_ns = 120'000'000'000;
  bool events = true;  // follow the EventService SSE stream when advertised
  // Hand a pushed event over at once (the source waits on the stream between sweeps)
  // instead of at the next sweep: a PSU lost or a leak is evaluated within milliseconds.
  bool wait_for_events = true;
};

struct SysfsSection {
  bool enabled = true;
  std::string root = "/";  // filesystem root (a fake tree in tests)
  int64_t interval_ns = 10'000'000'000;
  std::string topology_file;  // optional topology (parse/topology.h)
};

// The RoCE / Ethernet source (sources/ethernet, docs/ethernet.md).
struct EthernetSection {
  bool enabled = true;
  std::string root;  // "" = the [sysfs] root; "/" reads ethtool statistics through the ioctl
  int64_t interval_ns = 10'000'000'000;       // interfaces: state, speed, counters, ethtool
  int64_t rdma_interval_ns = 30'000'000'000;  // a RoCE port's hw_counters at most this often
  int64_t rdma_max_ports = 4;                 // ... and at most this many ports per poll
  bool ethtool = true;                        // read the driver statistics (PFC, PHY errors)
};

// AMD Instinct GPUs (sources/amdsmi, docs/amd.md): AMD SMI when the library loads, else the
// amdgpu sysfs files. Off by default: NVIDIA nodes have no use for it.
struct AmdSection {
  bool enabled = false;
  std::string library_path;  // "" = $FAULTLINE_AMDSMI_LIB, else libamd_smi.so
  bool use_library = true;   // false: the sysfs files only
  std::string root;          // "" = the [sysfs] root
  int64_t interval_ns = 10'000'000'000;
};

struct WorkloadSection {
  std::string listen;                   // "" = off; "127.0.0.1:9464" (or ":9464") = HTTP POST endpoint
  std::string token_file;               // bearer token (first line); required when listen is not loopback
  std::string token_env;                // or: the environment variable holding it
  std::string file;                     // "" = off; report lines appended by jobs
  // How often the file / queue is drained. Step reports are judged over minutes and are
  // never critical, and the evaluation runs every 5 s anyway: draining each second cost
  // one fsynced commit a second, the largest part of an idle agent's CPU.
  int64_t interval_ns = 5'000'000'000;
};

// The HTTP API, /metrics and the dashboard served by the agent itself (docs/api.md).
struct ServerSection {
  std::string listen;      // "" = off; "127.0.0.1:9465" (dcgm-exporter holds 9400 on GPU nodes)
  std::string token_file;  // bearer token (first line); required when listen is not loopback
  std::string token_env;   // or: the environment variable holding it
  std::string cert_file;   // both set: HTTPS
  std::string key_file;
};

// The assistant's automated mode: an incident note stored with each new diagnosis
// (daemon/incident_notes.h, docs/assistant.md "In the agent").
struct AssistantSection {
  bool incident_notes = true;
  std::string kb_dir;     // "" = notes without runbook sections; e.g. /usr/share/faultline/kb
  std::string index_dir;  // "" = <store_path>.kb-index
  // A model for the automated mode (daemon/incident_investigator.h): with llm_url set, each
  // new diagnosis and a slow node no rule explains are also investigated by the model with
  // `faultline ask`'s tools and bounds, on a worker thread; the deterministic note stays.
  std::string llm_url;       // "" = no model; e.g. "http://127.0.0.1:8080/v1" (llama.cpp's server)
  std::string llm_model;     // required with llm_url
  std::string llm_key_file;  // API key (first line), mode 0600; "" = no Authorization header
  std::string llm_ca_file;   // PEM bundle to trust instead of the system store
  bool llm_allow_http = false;                   // plain http:// to a host not loopback (key in clear)
  int64_t llm_timeout_ns = 120'000'000'000;      // one model request
  int64_t llm_max_seconds_ns = 300'000'000'000;  // one investigation's wall time
  int64_t llm_max_steps = 8;                     // model replies per investigation
  int64_t llm_max_tokens = 32'000;               // tokens per investigation (all replies)
  int64_t llm_max_per_hour = 6;                  // investigations started per hour; more are skipped
  int64_t llm_queue = 4;                         // waiting investigations; the oldest is dropped past it
  int64_t slow_recheck_ns = 3600'000'000'000;    // a slow, unexplained node: investigated at most this often
};

// The fleet publisher (daemon/fleet_publisher.h, docs/agent.md "[fleet]"): the agent's
// stored observations, findings, diagnoses and actions to NATS JetStream, for
// `faultline fleet`. Off by default; when NATS is unreachable the store buffers and the
// publisher catches up in order afterwards.
struct FleetSection {
  bool enabled = false;
  std::string urls;              // "nats://10.0.0.2:4222,nats://10.0.0.3:4222" (tried in order)
  std::string site = "default";  // subject tokens: faultline.<site>.<rack>.<node>.<kind>
  std::string rack = "default";
  std::string credentials_file;  // mode 0600: a NATS .creds file, "user:password" or a token
  std::string ca_file;           // PEM CA bundle: TLS with certificate verification
  int64_t interval_ns = 1'000'000'000;     // how often new rows are looked for
  int64_t max_backoff_ns = 60'000'000'000;  // retry cap while NATS is unreachable
};

struct IsolateSection {
  int64_t window_ns = 1800'000'000'000;  // findings/observations considered per evaluation
};

struct AgentConfig {
  AgentSection agent;
  KmsgSection kmsg;
  NvmlSection nvml;
  DcgmExporterSection dcgm_exporter;
  RedfishSection redfish;
  SysfsSection sysfs;
  EthernetSection ethernet;
  AmdSection amd;
  WorkloadSection workload;
  ServerSection server;
  AssistantSection assistant;
  IsolateSection isolate;
  FleetSection fleet;
  policy::PolicyConfig policy;  // [policy]: remediation (docs/remediation.md)
};

// Parses TOML text. kInvalidArgument names the section/key and why.
Result<AgentConfig> ParseAgentConfig(std::string_view toml_text);
// Reads and parses a file: kNotFound when it is absent, else as ParseAgentConfig.
Result<AgentConfig> LoadAgentConfig(const std::string& path);
// The default configuration as a commented TOML file (`faultline agent --print-default-config`).
std::string DefaultAgentConfigToml();

}  // namespace faultline::daemon
