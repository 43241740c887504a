// `faultline collect dcgm-exporter --url URL | --file F`: reads one scrape of a
// dcgm-exporter /metrics endpoint (or a saved scrape), maps it to observations, runs
// the GPU-layer detectors over them and prints both. --json prints one object
// {observations, findings, errors}. Exit code: 0 read (findings, if any, are in the
// output), 1 the endpoint failed (timeout, refused, HTTP error, oversized body),
// 2 bad arguments or an unreadable file.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/render.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/time.h"
#include "engine/detect/gpu_detectors.h"
#include "sources/dcgm_exporter/dcgm_exporter.h"

namespace faultline::cli {
namespace {

struct CollectDcgmArgs {
  std::string url;
  std::string file;
  std::string node;
  bool json = false;
  double timeout_s = 5;
  std::string ca_file;
  bool insecure = false;
};

std::vector<Finding> RunDetectors(const std::vector<Observation>& observations) {
  std::vector<Finding> out;
  for (auto& detector : MakeGpuDetectors()) {
    for (const Observation& o : observations) detector->Observe(o);
    for (Finding& f : detector->Findings()) out.push_back(std::move(f));
  }
  return out;
}

std::string ObservationLine(const Observation& o) {
  std::string line = o.component.Id() + "  " + std::string(ToString(o.kind));
  if (o.value) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.15g", *o.value);
    line += std::string("  ") + buf;
  }
  if (o.code) line += "  code " + std::to_string(*o.code);
  for (const auto& [k, v] : o.attrs) line += "  " + k + "=" + v;
  return line;
}

void RenderHuman(const DcgmCollection& c, const std::vector<Finding>& findings) {
  std::cout << c.observations.size() << " observations, " << findings.size() << " findings, " << c.errors.size()
            << " errors, " << c.blank_values << " blank values skipped\n";
  for (const Observation& o : c.observations) std::cout << "  " << ObservationLine(o) << "\n";
  if (!findings.empty()) {
    std::cout << "findings:\n";
    RenderFindings(std::cout, findings);
  }
  for (const std::string& e : c.errors) std::cout << "error: " << e << "\n";
}

int ExitCodeFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
      return kExitUsage;
    default:
      return kExitFailure;
  }
}

int Run(const CollectDcgmArgs& args) {
  DcgmExporterOptions opt;
  opt.url = args.url;
  opt.file = args.file;
  opt.node = args.node;
  opt.http.timeout_ms = static_cast<int64_t>(args.timeout_s * 1000);
  opt.http.ca_file = args.ca_file;
  opt.http.verify_tls = !args.insecure;
  SystemClock clock;
  CurlHttpFetcher fetcher;
  DcgmExporterSource source(opt, clock, &fetcher);
  Result<DcgmCollection> c = source.Collect();
  if (!c.ok()) {
    if (args.json) {
      Json out{{"observations", Json::array()}, {"findings", Json::array()}, {"errors", {c.status().ToString()}}};
      std::cout << out.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
    } else {
      std::cerr << "faultline collect dcgm-exporter: " << c.status().ToString() << "\n";
    }
    return ExitCodeFor(c.status());
  }
  const std::vector<Finding> findings = RunDetectors(c->observations);
  if (args.json) {
    Json out{{"observations", c->observations}, {"findings", findings}, {"errors", c->errors}};
    // Scraped label values are untrusted bytes: never let invalid UTF-8 abort the dump.
    std::cout << out.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
  } else {
    RenderHuman(*c, findings);
  }
  return kExitOk;
}

}  // namespace

void AddCollectDcgmCommand(CliApp& app) {
  auto args = std::make_shared<CollectDcgmArgs>();
  CLI::App* cmd = app.collect->add_subcommand(
      "dcgm-exporter",
      "Read one scrape of a dcgm-exporter /metrics endpoint (or a saved scrape file), map the DCGM_FI_DEV_* series\n"
      "to observations and run the GPU-layer detectors. Exit code: 0 read, 1 endpoint failed, 2 bad arguments\n"
      "or unreadable file.");
  auto* url = cmd->add_option("--url", args->url, "dcgm-exporter URL, e.g. http://127.0.0.1:9400/metrics");
  auto* file = cmd->add_option("--file", args->file, "A saved scrape (curl -s host:9400/metrics > file)");
  url->excludes(file);
  cmd->add_option("--node", args->node, "Node name for the observations (default: the series' Hostname label)");
  cmd->add_flag("--json", args->json, "Print one JSON object {observations, findings, errors}");
  cmd->add_option("--timeout", args->timeout_s, "Seconds for the whole HTTP request (default 5)");
  cmd->add_option("--ca-file", args->ca_file, "Extra CA bundle (PEM) to verify an https endpoint");
  cmd->add_flag("--insecure", args->insecure, "Do not verify the endpoint's TLS certificate (explicit opt-out)");
  cmd->callback([args, &app] {
    if (args->url.empty() == args->file.empty()) {
      std::cerr << "faultline collect dcgm-exporter: give exactly one of --url or --file\n";
      app.exit_code = kExitUsage;
      return;
    }
    app.exit_code = Run(*args);
  });
}

}  // namespace faultline::cli
