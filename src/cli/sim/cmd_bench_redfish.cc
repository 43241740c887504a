// `faultline bench redfish-sweep`: times sweeps of a DMTF mockup served by the in-process
// mock BMC over HTTPS on loopback, with optional injected latency. Prints one line per
// sweep. Exit codes: 0 every sweep without errors; 1 login failed or a sweep reported
// errors; 2 usage or an unreadable mockup.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/sim/sim_commands.h"
#include "core/clock.h"
#include "core/time.h"
#include "sim/mock_bmc/mock_bmc.h"
#include "sources/redfish/curl_http_client.h"
#include "sources/redfish/redfish_collector.h"

namespace faultline::cli {
namespace {

struct BenchArgs {
  std::string mockup;
  int latency_ms = 0;
  int sweeps = 3;
  int max_in_flight = 2;
};

int RunBench(const BenchArgs& a) {
  sim::MockBmcOptions mo;
  mo.mockup_dir = a.mockup;
  auto bmc = sim::MockBmc::Start(mo);
  if (!bmc.ok()) {
    std::cerr << "faultline bench redfish-sweep: " << bmc.status().message() << "\n";
    return kExitUsage;
  }
  (*bmc)->SetLatency(std::chrono::milliseconds(a.latency_ms));
  redfish::CurlOptions tls;
  tls.ca_file = (*bmc)->ca_cert_path();
  redfish::CurlHttpClient http(tls);
  SystemClock clock;
  redfish::RedfishClientOptions co;
  co.base_url = (*bmc)->base_url();
  co.credentials = {mo.username, mo.password};
  co.max_in_flight = a.max_in_flight;
  redfish::RedfishClient client(http, clock, co);
  if (Status st = client.Login(clock.MonotonicNs() + 60 * kNsPerSec); !st.ok()) {
    std::cerr << "login: " << st.message() << "\n";
    return kExitFailure;
  }
  int rc = kExitOk;
  for (int i = 0; i < a.sweeps; ++i) {
    // A fresh collector each time: every sweep reads the logs in full, like a first sweep.
    redfish::RedfishCollector collector(client, {.node = "bench", .workers = a.max_in_flight});
    (*bmc)->ResetCounters();
    redfish::SweepResult r = collector.Sweep(clock.MonotonicNs() + 600 * kNsPerSec);
    std::printf(
        "sweep %d: %.1f ms, %llu requests (mock saw %llu), %zu observations, %zu errors, latency %d ms, "
        "in flight %d\n",
        i + 1, r.duration_ns / 1e6, static_cast<unsigned long long>(r.requests),
        static_cast<unsigned long long>((*bmc)->total_requests()), r.observations.size(), r.errors.size(), a.latency_ms,
        a.max_in_flight);
    if (!r.errors.empty()) rc = kExitFailure;
  }
  client.Logout();
  return rc;
}

}  // namespace

void AddBenchRedfishSweepCommand(CliApp& app) {
  auto bench = std::make_shared<BenchArgs>();
  CLI::App* b = app.bench->add_subcommand("redfish-sweep", "Time Redfish sweeps of a mockup served by the mock BMC");
  b->add_option("--mockup", bench->mockup, "DMTF mockup directory")->required()->check(CLI::ExistingDirectory);
  b->add_option("--latency-ms", bench->latency_ms, "latency the mock BMC adds to every request");
  b->add_option("--sweeps", bench->sweeps, "number of sweeps (default 3)");
  b->add_option("--max-in-flight", bench->max_in_flight, "parallel requests (default 2)")->check(CLI::Range(1, 16));
  b->callback([bench, &app] { app.exit_code = RunBench(*bench); });
}

}  // namespace faultline::cli
