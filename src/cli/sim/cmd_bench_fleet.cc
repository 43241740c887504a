// `faultline bench fleet --nodes N [--json] [--nats URL|local]`: the fleet analyzer over a
// generated fleet (sim/fleet/fleet_bench.h) on the scenario clock. Reports ingest
// throughput (observations decoded + ingested per second, batched), the time from a
// slowdown's start (and from its first evidence reaching the analyzer) to the slow node
// being named, precision / recall / F1 of slow-node detection, correlation accuracy on
// shared causes, the analyzer's CPU and the process's peak RSS; with --nats, the same
// envelopes published to JetStream and consumed into a second analyzer. Then the same
// slow-node figures on 128-node fleets whose jobs checkpoint, evaluate, stall on data and
// jitter by 2-6% (sim/fleet/pause_bench.h), over --pause-seeds seeds.
// docs/fleet.md and docs/scenarios.md "Fleet scenarios" hold measured figures.
#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli/sim/sim_commands.h"
#include "sim/fleet/fleet_bench.h"
#include "sim/fleet/fleet_run.h"
#include "sim/fleet/pause_bench.h"
#ifdef FAULTLINE_SIM_FLEET_NATS
#include "sim/fleet/fleet_nats.h"
#include "sim/fleet/nats_server.h"
#endif

namespace faultline::cli {
namespace {

using Json = nlohmann::json;

struct BenchFleetArgs {
  size_t nodes = 10000;
  uint64_t seed = 1;
  double duration = 900;
  std::string nats;         // URL(s), or "local": start a nats-server on loopback
  bool nats_no_kv = false;  // consume acking at once, without the KV snapshots
  size_t nats_pack_bytes = 64 << 10;  // the agents' envelopes packed up to this (0: as the agents batch them)
  double nats_pack_hold = -1;         // scenario seconds an agent may hold rows; < 0: 1 s at the target rate
  size_t pause_seeds = 20;            // pause fleets (healthy and with stragglers) per run; 0 = none
  bool json = false;
};

// VmHWM / VmRSS from /proc/self/status, in MiB (0 when unreadable).
double ProcMiB(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      std::istringstream is(line.substr(key.size() + 1));
      double kb = 0;
      is >> kb;
      return kb / 1024;
    }
  }
  return 0;
}

struct Dist {
  double median = 0, p99 = 0, max = 0, mean = 0;
  size_t n = 0;
};

Dist Distribution(std::vector<double> v) {
  Dist d;
  d.n = v.size();
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  d.median = v[v.size() / 2];
  d.p99 = v[std::min(v.size() - 1, static_cast<size_t>(static_cast<double>(v.size()) * 0.99))];
  d.max = v.back();
  double sum = 0;
  for (double x : v) sum += x;
  d.mean = sum / static_cast<double>(v.size());
  return d;
}

Json DistJson(const Dist& d) {
  return {{"n", d.n}, {"median", d.median}, {"p99", d.p99}, {"max", d.max}, {"mean", d.mean}};
}

std::string Fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

Json PauseFleetsJson(const sim::PauseBenchResult& p) {
  return {{"seeds", p.fleets / 2},
          {"nodes_per_fleet", p.nodes_per_fleet},
          {"jitter", {{"min", p.healthy_jitter_min}, {"max", p.healthy_jitter_max}}},
          {"healthy",
           {{"fleets", p.healthy_fleets},
            {"clean", p.healthy_clean},
            {"false_stragglers", p.healthy_false_stragglers},
            {"false_causes", p.healthy_false_causes}}},
          {"stragglers",
           {{"truth", p.truth},
            {"true_positives", p.true_positives},
            {"false_positives", p.false_positives},
            {"false_negatives", p.false_negatives},
            {"precision", p.precision},
            {"recall", p.recall},
            {"class_right", p.class_right},
            {"gpu_right", p.gpu_right},
            {"gpu_found", p.gpu_truth},
            {"reopened", p.reopened},
            {"false_causes", p.false_causes}}},
          {"false", p.false_named},
          {"wall_s", p.wall_s}};
}

void PrintPauseFleets(const sim::PauseBenchResult& p) {
  std::cout << "pause fleets (" << p.fleets / 2 << " seeds of " << p.nodes_per_fleet
            << " nodes; checkpoints, evaluation passes, data stalls, jitter " << Fixed(100 * p.healthy_jitter_min, 1)
            << "-" << Fixed(100 * p.healthy_jitter_max, 1) << "%): healthy: " << p.healthy_clean << "/"
            << p.healthy_fleets << " named nothing (" << p.healthy_false_stragglers << " false stragglers, "
            << p.healthy_false_causes << " false causes); with stragglers: " << p.truth << " true, " << p.true_positives
            << " found, " << p.false_positives << " false: precision " << Fixed(p.precision, 3) << ", recall "
            << Fixed(p.recall, 3) << "; class right " << p.class_right << "/" << p.true_positives << ", GPU right "
            << p.gpu_right << "/" << p.gpu_truth << ", reopened " << p.reopened << " (" << Fixed(p.wall_s, 1)
            << " s)\n";
  for (size_t i = 0; i < p.false_named.size() && i < 10; ++i) std::cout << "  FALSE " << p.false_named[i] << "\n";
}

int RunBenchFleet(const BenchFleetArgs& a) {
  sim::FleetBenchSpec spec;
  spec.nodes = a.nodes;
  spec.seed = a.seed;
  spec.duration_s = a.duration;
  const sim::FleetScenario sc = sim::GenerateBenchFleet(spec);
  const double rss_before = ProcMiB("VmRSS");
  auto r = sim::RunFleetScenario(sc);
  if (!r.ok()) {
    std::cerr << "bench fleet: " << r.status().ToString() << "\n";
    return kExitFailure;
  }
  const sim::FleetTimings& tm = r->timings;
  const sim::FleetScore& s = r->score;
  const double ingest_wall = tm.decode_s + tm.ingest_s;
  std::vector<double> from_start, from_evidence, from_evidence_k;
  Json missed = Json::array();
  size_t gpu_right = 0;
  for (const sim::StragglerVerdict& v : s.stragglers) {
    if (!v.found) {
      missed.push_back(
          {{"node", v.truth.node}, {"gpu", v.truth.gpu}, {"job", v.truth.job}, {"start_s", v.truth.start_s}});
      continue;
    }
    from_start.push_back(v.named_s - v.truth.start_s);
    from_evidence.push_back(std::max(0.0, v.named_s - v.evidence_s));
    from_evidence_k.push_back(v.named_s - v.evidence_k_s);
    gpu_right += v.gpu_right;
  }
  std::map<std::string, std::pair<size_t, size_t>> by_cause;  // found, total
  std::vector<double> cause_delay;
  for (const sim::CauseVerdict& v : s.causes) {
    auto& [found, total] = by_cause[v.truth.cause];
    ++total;
    if (v.found) {
      ++found;
      cause_delay.push_back(v.named_s - v.truth.start_s);
    }
  }
  const Dist eval = Distribution(tm.evaluate_ms), start = Distribution(from_start), evid = Distribution(from_evidence),
             evid_k = Distribution(from_evidence_k), causes = Distribution(cause_delay);
  const size_t fp_unexplained = s.straggler_fp - s.false_stragglers_shared;
  const double precision_unexplained =
      s.straggler_tp + fp_unexplained == 0
          ? 1
          : static_cast<double>(s.straggler_tp) / static_cast<double>(s.straggler_tp + fp_unexplained);
  double eval_total_s = 0;
  for (double ms : tm.evaluate_ms) eval_total_s += ms / 1000;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double process_cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                             static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;

  Json j = {
      {"nodes", sc.topology.nodes.size()},
      {"racks", sc.topology.nodes.empty() ? 0 : std::stoi(sc.topology.nodes.back().rack.substr(1))},
      {"jobs", sc.jobs.size()},
      {"duration_s", sc.duration_s},
      {"seed", sc.seed},
      {"envelopes", tm.envelopes},
      {"observations", tm.observations},
      {"bytes", tm.bytes},
      {"in_process",
       {{"decode_s", tm.decode_s},
        {"ingest_s", tm.ingest_s},
        {"observations_per_s", ingest_wall > 0 ? static_cast<double>(tm.observations) / ingest_wall : 0},
        {"ingest_only_observations_per_s", tm.ingest_s > 0 ? static_cast<double>(tm.observations) / tm.ingest_s : 0},
        {"envelopes_per_s", ingest_wall > 0 ? static_cast<double>(tm.envelopes) / ingest_wall : 0},
        {"duplicates", r->ingest.duplicates},
        {"refused", r->ingest.refused}}},
      {"evaluate_ms", DistJson(eval)},
      {"evaluate_total_s", eval_total_s},
      {"stragglers",
       {{"truth", s.stragglers.size()},
        {"true_positives", s.straggler_tp},
        {"false_positives", s.straggler_fp},
        {"false_negatives", s.straggler_fn},
        {"precision", s.precision},
        {"recall", s.recall},
        {"f1", s.f1},
        {"gpu_right", gpu_right},
        {"named_after_start_s", DistJson(start)},
        {"named_after_evidence_s", DistJson(evid)},
        {"named_after_persistence_evidence_s", DistJson(evid_k)},
        {"false_on_shared_cause_nodes", s.false_stragglers_shared},
        {"precision_without_shared_cause_nodes", precision_unexplained},
        {"false", s.false_stragglers},
        {"missed", missed}}},
      {"correlation",
       {{"truth", s.causes.size()},
        {"accuracy", s.correlation_accuracy},
        {"false_causes", s.false_causes.size()},
        {"false", s.false_causes},
        {"named_after_start_s", DistJson(causes)}}},
      {"analyzer_cpu_s", tm.analyzer_cpu_s},
      {"generate_s", tm.generate_s},
      {"encode_s", tm.encode_s},
      {"process_cpu_s", process_cpu},
      {"rss_before_run_mib", rss_before},
      {"peak_rss_mib", ProcMiB("VmHWM")},
  };
  for (const auto& [cause, counts] : by_cause) {
    j["correlation"]["by_cause"][cause] = {{"found", counts.first}, {"truth", counts.second}};
  }

  if (!a.nats.empty()) {
#ifdef FAULTLINE_SIM_FLEET_NATS
    std::unique_ptr<sim::LocalNatsServer> local;
    std::string url = a.nats;
    if (a.nats == "local") {
      auto started = sim::LocalNatsServer::Start("/dev/shm");
      if (!started.ok()) {
        std::cerr << "bench fleet: " << started.status().ToString() << "\n";
        return kExitFailure;
      }
      local = std::move(*started);
      url = local->url();
    }
    // The bench's own stream (on a shared server it must not touch the agents' one).
    sim::FleetNatsPublishOptions po;
    po.urls = url;
    po.stream = "FAULTLINE_BENCH";
    po.subjects = {"faultline." + sc.topology.site + ".>"};
    // A fleet producing the target rate fills each agent's store that much faster than this
    // one does, and the agents' 1 s hold then spans this many seconds of this fleet's time.
    constexpr double kTargetObsPerS = 1e6;
    const double natural = static_cast<double>(tm.observations) / std::max(1.0, sc.duration_s);
    const double hold_s = a.nats_pack_hold >= 0 ? a.nats_pack_hold : kTargetObsPerS / std::max(1.0, natural);
    po.pack.max_bytes = a.nats_pack_bytes;
    po.pack.max_hold_ns = static_cast<int64_t>(hold_s * 1e9);
    auto pub = sim::PublishFleetScenario(sc, po);
    if (!pub.ok()) {
      std::cerr << "bench fleet: publish: " << pub.status().ToString() << "\n";
      return kExitFailure;
    }
    sim::FleetNatsConsumeOptions co;
    co.urls = url;
    co.stream = po.stream;
    co.filter_subject = po.subjects.front();
    co.expect_messages = pub->messages - pub->failed;
    if (a.nats_no_kv) co.kv_bucket.clear();
    auto con = sim::ConsumeFleetScenario(sc, co);
    if (!con.ok()) {
      std::cerr << "bench fleet: consume: " << con.status().ToString() << "\n";
      return kExitFailure;
    }
    j["nats"] = {
        {"url", local ? "local nats-server (file store in /dev/shm)" : url},
        {"published", pub->messages},
        {"agent_envelopes", pub->agent_envelopes},
        {"pack_bytes", a.nats_pack_bytes},
        {"pack_hold_s", hold_s},
        {"observations_per_message",
         pub->messages > 0 ? static_cast<double>(pub->observations) / static_cast<double>(pub->messages) : 0},
        {"publish_failed", pub->failed},
        {"publish_duplicates", pub->duplicates},
        {"publish_s", pub->publish_s},
        {"publish_observations_per_s",
         pub->publish_s > 0 ? static_cast<double>(pub->observations) / pub->publish_s : 0},
        {"publish_mib_per_s", pub->publish_s > 0 ? static_cast<double>(pub->bytes) / pub->publish_s / (1 << 20) : 0},
        {"consumed", con->messages},
        {"consumed_observations", con->observations},
        {"analyzer_observations", con->analyzer.observations},
        {"analyzer_duplicates", con->analyzer.duplicates},
        {"analyzer_refused", con->analyzer.refused},
        {"malformed", con->malformed},
        {"consume_wall_s", con->wall_s},
        {"consume_cpu_s", con->cpu_s},
        {"consume_observations_per_s", con->wall_s > 0 ? static_cast<double>(con->observations) / con->wall_s : 0},
        {"consume_acks", co.kv_bucket.empty() ? "each message once ingested" : "after the KV snapshot holding it"},
        {"fetch_s", con->fetch_s},
        {"decode_s", con->decode_s},
        {"ingest_s", con->ingest_s},
        {"ack_s", con->ack_s},
        {"evaluate_s", con->evaluate_s},
        {"evaluations", con->evaluations},
        {"snapshot_s", con->snapshot_s},
        {"snapshots", con->snapshots},
        {"open_diagnoses", con->open_diagnoses},
        {"first_error", pub->first_error},
    };
    j["peak_rss_mib"] = ProcMiB("VmHWM");
#else
    std::cerr << "bench fleet: this build has no NATS transport (libnats-dev was missing)\n";
    return kExitUsage;
#endif
  }

  std::optional<sim::PauseBenchResult> pauses;
  if (a.pause_seeds > 0) {
    pauses = sim::RunPauseBench(a.pause_seeds, a.seed);
    j["pause_fleets"] = PauseFleetsJson(*pauses);
  }
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  const Json& ip = j["in_process"];
  std::cout << "fleet: " << sc.topology.nodes.size() << " nodes, " << sc.jobs.size() << " jobs, "
            << Fixed(sc.duration_s, 0) << " s simulated (seed " << sc.seed << ")\n"
            << "published: " << tm.envelopes << " envelopes, " << tm.observations << " observations, "
            << Fixed(static_cast<double>(tm.bytes) / (1 << 20), 1) << " MiB\n"
            << "ingest (decode + ingest, in process): " << Fixed(ip["observations_per_s"].get<double>() / 1e6, 2)
            << " M obs/s (" << Fixed(ingest_wall, 2) << " s; ingest alone "
            << Fixed(ip["ingest_only_observations_per_s"].get<double>() / 1e6, 2) << " M obs/s), duplicates "
            << r->ingest.duplicates << ", refused " << r->ingest.refused << "\n"
            << "evaluate: " << eval.n << " calls, median " << Fixed(eval.median, 2) << " ms, p99 " << Fixed(eval.p99, 2)
            << " ms, max " << Fixed(eval.max, 2) << " ms (" << Fixed(eval_total_s, 2) << " s)\n"
            << "stragglers: " << s.stragglers.size() << " true, " << s.straggler_tp << " found, " << s.straggler_fp
            << " false, " << s.straggler_fn << " missed: precision " << Fixed(s.precision, 3) << ", recall "
            << Fixed(s.recall, 3) << ", F1 " << Fixed(s.f1, 3) << "; right GPU " << gpu_right << "/" << s.straggler_tp
            << "\n"
            << "  of the false: " << s.false_stragglers_shared << " on nodes a shared cause slows or touches ("
            << "precision counting only the others " << Fixed(precision_unexplained, 3) << ")\n"
            << "  named after the slowdown began: median " << Fixed(start.median, 1) << " s, max "
            << Fixed(start.max, 1) << " s; after its first evidence arrived: median " << Fixed(evid.median, 1)
            << " s, max " << Fixed(evid.max, 1) << " s; after the "
            << (fleet::AnalyzerOptions{}.recent_samples + 1) / 2 + fleet::AnalyzerOptions{}.persistence - 1
            << " slowed reports the analyzer's persistence needs had arrived: median " << Fixed(evid_k.median, 1)
            << " s, max " << Fixed(evid_k.max, 1) << " s (scenario clock, evaluation every "
            << Fixed(sc.agent.evaluate_s, 1) << " s)\n"
            << "shared causes: " << s.causes.size() << " true, accuracy " << Fixed(s.correlation_accuracy, 3) << ", "
            << s.false_causes.size() << " false; named after start: median " << Fixed(causes.median, 1) << " s, max "
            << Fixed(causes.max, 1) << " s\n";
  for (const auto& [cause, counts] : by_cause) {
    std::cout << "  " << cause << ": " << counts.first << "/" << counts.second << "\n";
  }
  for (size_t i = 0; i < s.false_causes.size() && i < 10; ++i) std::cout << "  FALSE " << s.false_causes[i] << "\n";
  for (size_t i = 0; i < s.false_stragglers.size() && i < 10; ++i) {
    std::cout << "  FALSE straggler " << s.false_stragglers[i] << "\n";
  }
  if (pauses) PrintPauseFleets(*pauses);
  std::cout << "analyzer CPU (decode + ingest + evaluate): " << Fixed(tm.analyzer_cpu_s, 2) << " s; simulation "
            << Fixed(tm.generate_s, 2) << " s, encode " << Fixed(tm.encode_s, 2) << " s; peak RSS "
            << Fixed(j["peak_rss_mib"].get<double>(), 0) << " MiB (" << Fixed(rss_before, 0)
            << " MiB before the run)\n";
  if (j.contains("nats")) {
    const Json& n = j["nats"];
    std::cout << "NATS (" << n["url"].get<std::string>() << "): published " << n["published"].get<uint64_t>()
              << " messages (" << Fixed(n["observations_per_message"].get<double>(), 1)
              << " obs each: the agents' envelopes packed up to " << n["pack_bytes"].get<size_t>()
              << " bytes, held up to " << Fixed(n["pack_hold_s"].get<double>(), 0) << " scenario s) at "
              << Fixed(n["publish_observations_per_s"].get<double>() / 1e6, 2) << " M obs/s ("
              << Fixed(n["publish_mib_per_s"].get<double>(), 0) << " MiB/s), " << n["publish_failed"].get<uint64_t>()
              << " failed; consumed " << n["consumed"].get<uint64_t>() << " into the analyzer at "
              << Fixed(n["consume_observations_per_s"].get<double>() / 1e6, 2) << " M obs/s (fetch "
              << Fixed(n["fetch_s"].get<double>(), 2) << " s, decode " << Fixed(n["decode_s"].get<double>(), 2)
              << " s, ingest " << Fixed(n["ingest_s"].get<double>(), 2) << " s, ack "
              << Fixed(n["ack_s"].get<double>(), 2) << " s, evaluate " << Fixed(n["evaluate_s"].get<double>(), 2)
              << " s in " << n["evaluations"].get<size_t>() << ", snapshot " << Fixed(n["snapshot_s"].get<double>(), 2)
              << " s in " << n["snapshots"].get<size_t>() << "; acks " << n["consume_acks"].get<std::string>() << ")\n";
  }
  return kExitOk;
}

}  // namespace

void AddBenchFleetCommand(CliApp& app) {
  auto args = std::make_shared<BenchFleetArgs>();
  CLI::App* cmd = app.bench->add_subcommand(
      "fleet",
      "The fleet analyzer over a generated fleet of N nodes (racks of 16-32, jobs of 16-512 nodes, injected\n"
      "stragglers and shared faults with their truth): ingest throughput, time to name a slow node,\n"
      "precision/recall/F1, correlation accuracy, the analyzer's CPU and peak RSS. --nats: also through JetStream.");
  cmd->add_option("--nodes", args->nodes, "Fleet size (default 10000)")->check(CLI::Range(16, 100000));
  cmd->add_option("--seed", args->seed, "Seed of the generated fleet (default 1)");
  cmd->add_option("--duration", args->duration, "Simulated seconds (default 900)")->check(CLI::Range(600.0, 86400.0));
  cmd->add_option("--nats", args->nats,
                  "Also publish to and consume from JetStream: a server URL, or `local` to start nats-server on "
                  "loopback");
  cmd->add_flag("--nats-no-kv", args->nats_no_kv,
                "With --nats: consume without the KV snapshots (each message acked once ingested)");
  cmd->add_option("--nats-pack-bytes", args->nats_pack_bytes,
                  "With --nats: pack each node's consecutive observation batches into messages of up to this many "
                  "bytes (default 65536; 0 = one message per agent batch)")
      ->check(CLI::Range(size_t{0}, size_t{1} << 20));
  cmd->add_option("--nats-pack-hold", args->nats_pack_hold,
                  "With --nats: scenario seconds an agent may hold rows for packing (default: its 1 s hold in a "
                  "fleet producing 1 M observations/s, i.e. 1e6 / this fleet's observations per second)");
  cmd->add_option("--pause-seeds", args->pause_seeds,
                  "Also run this many seeds of 128-node fleets whose jobs checkpoint, evaluate, stall on data and "
                  "jitter by 2-6% (each seed: one healthy fleet, one with 3 stragglers): slow-node precision/recall "
                  "where pauses are the job's (default 20; 0 = none)")
      ->check(CLI::Range(size_t{0}, size_t{1000}));
  cmd->add_flag("--json", args->json, "The figures as JSON");
  cmd->callback([&app, args] { app.exit_code = RunBenchFleet(*args); });
}

}  // namespace faultline::cli
