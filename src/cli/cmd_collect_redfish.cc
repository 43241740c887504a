// `faultline collect redfish`: one sweep of a BMC over Redfish, printed as observations,
// the OOB detectors' findings and the sweep's errors (`--json`: one object with
// `observations`, `findings`, `errors`, `warnings` and sweep figures).
// (`faultline bench redfish-sweep` runs the mock BMC, so it lives in faultline-sim:
// src/cli/sim/cmd_bench_redfish.cc.)
// Exit codes: 0 swept without errors; 1 the sweep (or login) reported errors; 2 usage,
// unreadable or unsafe password file.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/render.h"
#include "core/json.h"
#include "core/time.h"
#include "engine/detect/oob_detectors.h"
#include "sources/redfish/credentials.h"
#include "sources/redfish/curl_http_client.h"
#include "sources/redfish/redfish_collector.h"

namespace faultline::cli {
namespace {

struct CollectRedfishArgs {
  std::string url;
  std::string user;
  std::string password_file;
  bool session = false;
  bool basic = false;
  std::string ca;
  bool insecure = false;
  bool allow_http = false;
  bool json = false;
  std::string node;
  double timeout_s = 10;
  double deadline_s = 300;
  int max_in_flight = 2;
};

std::vector<Finding> RunDetectors(const std::vector<Observation>& observations) {
  std::vector<Finding> findings;
  for (auto& d : MakeOobDetectors()) {
    for (const auto& o : observations) d->Observe(o);
    for (auto& f : d->Findings()) findings.push_back(std::move(f));
  }
  return findings;
}

// Credentials: --user with --password-file, else FAULTLINE_BMC_USER/_PASSWORD.
Result<redfish::Credentials> LoadCredentials(const CollectRedfishArgs& a) {
  if (!a.password_file.empty()) {
    auto pw = redfish::ReadPasswordFile(a.password_file);
    if (!pw.ok()) return pw.status();
    return redfish::Credentials{a.user, *pw};
  }
  auto env = redfish::CredentialsFromEnv();
  if (env.ok()) return env;
  return redfish::Credentials{a.user, ""};
}

void PrintHuman(const redfish::SweepResult& r, const std::vector<Finding>& findings) {
  for (const auto& o : r.observations) {
    std::cout << FormatIso8601(o.time_ns) << "  " << o.component.Id() << "  " << ToString(o.kind);
    if (o.value) std::cout << "  " << *o.value << (o.attrs.count("units") ? " " + o.attrs.at("units") : "");
    if (!o.text.empty()) std::cout << "  " << o.text;
    std::cout << "\n";
  }
  RenderFindings(std::cout, findings);
  for (const auto& w : r.warnings) std::cerr << "warning: " << w << "\n";
  for (const auto& e : r.errors) std::cerr << "error: " << e << "\n";
  std::cerr << r.observations.size() << " observations, " << r.requests << " requests, " << r.duration_ns / kNsPerMs
            << " ms\n";
}

Json SweepJson(const redfish::SweepResult& r, const std::vector<Finding>& findings) {
  Json j{{"observations", r.observations},
         {"findings", findings},
         {"errors", r.errors},
         {"warnings", r.warnings},
         {"requests", r.requests},
         {"resources", r.resources},
         {"duration_ms", r.duration_ns / kNsPerMs}};
  if (r.bmc_offset_ns) j["bmc_offset_ns"] = *r.bmc_offset_ns;
  return j;
}

int RunCollect(const CollectRedfishArgs& a) {
  auto creds = LoadCredentials(a);
  if (!creds.ok()) {
    std::cerr << "faultline collect redfish: " << creds.status().message() << "\n";
    return kExitUsage;
  }
  redfish::CurlOptions tls;
  tls.ca_file = a.ca;
  tls.insecure = a.insecure;
  if (a.insecure) std::cerr << "warning: TLS certificate verification is off (--insecure)\n";
  redfish::CurlHttpClient http(tls);
  SystemClock clock;
  redfish::RedfishClientOptions co;
  co.base_url = a.url;
  co.credentials = *creds;
  co.auth =
      a.basic ? redfish::AuthMode::kBasic : (creds->empty() ? redfish::AuthMode::kNone : redfish::AuthMode::kSession);
  co.max_in_flight = a.max_in_flight;
  co.request_timeout_ms = static_cast<int64_t>(a.timeout_s * 1000);
  co.allow_http = a.allow_http;
  redfish::RedfishClient client(http, clock, co);
  const int64_t deadline = clock.MonotonicNs() + static_cast<int64_t>(a.deadline_s * kNsPerSec);
  redfish::SweepResult r;
  if (Status st = client.Login(deadline); !st.ok()) {
    r.errors.push_back("login: " + st.message());
  } else {
    redfish::RedfishCollector collector(client, {.node = a.node, .workers = a.max_in_flight});
    r = collector.Sweep(deadline);
  }
  client.Logout();
  const std::vector<Finding> findings = RunDetectors(r.observations);
  if (a.json) {
    std::cout << SweepJson(r, findings).dump(2) << "\n";
  } else {
    PrintHuman(r, findings);
  }
  return r.errors.empty() ? kExitOk : kExitFailure;
}

}  // namespace

void AddCollectRedfishCommand(CliApp& app) {
  auto args = std::make_shared<CollectRedfishArgs>();
  CLI::App* cmd = app.collect->add_subcommand("redfish", "Sweep a BMC over Redfish once and print what it reports");
  cmd->add_option("--url", args->url, "BMC base URL, e.g. https://10.0.0.5")->required();
  cmd->add_option("--user", args->user, "BMC user (or FAULTLINE_BMC_USER)");
  cmd->add_option("--password-file", args->password_file, "file holding the password (mode 600)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--session", args->session, "session auth (X-Auth-Token; the default, Basic as fallback)");
  cmd->add_flag("--basic", args->basic, "Basic auth on every request instead of a session");
  cmd->add_option("--ca", args->ca, "PEM CA bundle to verify the BMC certificate")->check(CLI::ExistingFile);
  cmd->add_flag("--insecure", args->insecure, "do not verify the BMC certificate");
  cmd->add_flag("--allow-http", args->allow_http,
                "allow a plain http:// BMC URL (credentials cross the network unencrypted; refused otherwise)");
  cmd->add_flag("--json", args->json, "one JSON object: observations, findings, errors");
  cmd->add_option("--node", args->node, "node name for the observations");
  cmd->add_option("--timeout", args->timeout_s, "per-request timeout, seconds (default 10)");
  cmd->add_option("--deadline", args->deadline_s, "whole sweep deadline, seconds (default 300)");
  cmd->add_option("--max-in-flight", args->max_in_flight, "parallel requests to the BMC (default 2)")
      ->check(CLI::Range(1, 16));
  cmd->get_option("--ca")->excludes("--insecure");
  cmd->get_option("--basic")->excludes("--session");
  cmd->callback([args, &app] { app.exit_code = RunCollect(*args); });
}

}  // namespace faultline::cli
