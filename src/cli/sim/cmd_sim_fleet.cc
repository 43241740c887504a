// `faultline sim fleet --scenario FILE [--json] [--nats URL]`: a fleet scenario
// (docs/scenarios.md "Fleet scenarios"). In process: the agents' envelopes go through the
// wire format into a fleet analyzer on the scenario's clock, and the fleet diagnoses are
// scored against the file's truth. With --nats: the envelopes are published to JetStream
// instead (for `faultline fleet --nats URL --topology FILE` to consume), with the topology
// file written next to it.
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/sim/sim_commands.h"
#include "sim/fleet/fleet_run.h"
#include "sim/fleet/fleet_sim.h"
#ifdef FAULTLINE_SIM_FLEET_NATS
#include "sim/fleet/fleet_nats.h"
#endif

namespace faultline::cli {
namespace {

using Json = nlohmann::json;

struct SimFleetArgs {
  std::string scenario;
  std::string nats;
  std::string topology_out;
  std::string credentials;
  double duration = 0;
  double speed = 0;
  bool json = false;
  bool check = false;
};

std::string Secs(double s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << s << "s";
  return os.str();
}

Json TimelineJson(const sim::FleetRunResult& r) {
  Json out = Json::array();
  for (const sim::TimedFleetDiagnosis& td : r.timeline) {
    const fleet::FleetDiagnosis& d = td.diagnosis;
    out.push_back({{"t", td.t},
                   {"id", d.id},
                   {"cause", d.cause},
                   {"component", d.component},
                   {"fault_class", ToString(d.fault_class)},
                   {"action", ToString(d.action)},
                   {"nodes", d.nodes},
                   {"linked", d.linked.size()},
                   {"job", d.job},
                   {"summary", d.summary}});
  }
  return out;
}

Json ScoreJson(const sim::FleetScore& s) {
  Json stragglers = Json::array(), causes = Json::array();
  for (const sim::StragglerVerdict& v : s.stragglers) {
    stragglers.push_back({{"node", v.truth.node},
                          {"gpu", v.truth.gpu},
                          {"start_s", v.truth.start_s},
                          {"found", v.found},
                          {"gpu_right", v.gpu_right},
                          {"named_s", v.found ? Json(v.named_s) : Json()},
                          {"evidence_s", v.evidence_s}});
  }
  for (const sim::CauseVerdict& v : s.causes) {
    causes.push_back({{"cause", v.truth.cause},
                      {"truth_component", v.truth.components},
                      {"start_s", v.truth.start_s},
                      {"found", v.found},
                      {"component", v.component},
                      {"named_s", v.found ? Json(v.named_s) : Json()},
                      {"node_jaccard", v.node_jaccard}});
  }
  return {{"pass", s.pass},
          {"stragglers", stragglers},
          {"causes", causes},
          {"false_stragglers", s.false_stragglers},
          {"false_causes", s.false_causes},
          {"precision", s.precision},
          {"recall", s.recall},
          {"f1", s.f1},
          {"correlation_accuracy", s.correlation_accuracy}};
}

void PrintHuman(const sim::FleetScenario& sc, const sim::FleetRunResult& r) {
  std::cout << "scenario " << sc.name << ": " << sc.topology.nodes.size() << " nodes, " << sc.jobs.size() << " jobs, "
            << sc.faults.size() << " faults, " << Secs(sc.duration_s) << "\n";
  std::cout << "published " << r.timings.envelopes << " envelopes, " << r.timings.observations << " observations ("
            << r.timings.bytes / 1024 << " KiB); analyzer ingested " << r.ingest.observations << ", duplicates "
            << r.ingest.duplicates << ", refused " << r.ingest.refused << "\n\nfleet diagnoses:\n";
  if (r.timeline.empty()) std::cout << "  (none)\n";
  for (const sim::TimedFleetDiagnosis& td : r.timeline) {
    const fleet::FleetDiagnosis& d = td.diagnosis;
    std::cout << "  t=" << std::setw(7) << Secs(td.t) << "  " << d.cause << " " << d.component << " ["
              << ToString(d.fault_class) << ", " << ToString(d.action) << "] " << d.nodes.size() << " node(s)\n"
              << "             " << d.summary << "\n";
  }
  std::cout << "\ntruth:\n";
  const sim::FleetScore& s = r.score;
  for (const sim::StragglerVerdict& v : s.stragglers) {
    std::cout << "  straggler " << v.truth.node << (v.truth.gpu >= 0 ? " gpu " + std::to_string(v.truth.gpu) : "")
              << " from " << Secs(v.truth.start_s) << ": "
              << (v.found ? "named at " + Secs(v.named_s) + " (+" + Secs(v.named_s - v.truth.start_s) + ")" +
                                (v.gpu_right ? "" : ", wrong GPU")
                          : "MISSED")
              << "\n";
  }
  for (const sim::CauseVerdict& v : s.causes) {
    std::cout << "  " << v.truth.cause << " " << v.truth.components.front() << " from " << Secs(v.truth.start_s) << ": "
              << (v.found ? "named at " + Secs(v.named_s) + " as " + v.component + ", nodes " +
                                std::to_string(static_cast<int>(v.node_jaccard * 100)) + "% right"
                          : "MISSED")
              << "\n";
  }
  if (s.stragglers.empty() && s.causes.empty()) std::cout << "  nothing wrong\n";
  for (const std::string& f : s.false_stragglers) std::cout << "  FALSE straggler " << f << "\n";
  for (const std::string& f : s.false_causes) std::cout << "  FALSE cause " << f << "\n";
  std::cout << "\nverdict: " << (s.pass ? "PASS" : "FAIL") << "  (straggler precision " << s.precision << ", recall "
            << s.recall << "; shared causes " << s.correlation_accuracy * 100 << "% found)\n";
}

int RunInProcess(const SimFleetArgs& a, const sim::FleetScenario& sc) {
  sim::FleetRunOptions opt;
  if (a.duration > 0) opt.duration_s = a.duration;
  auto r = sim::RunFleetScenario(sc, opt);
  if (!r.ok()) {
    std::cerr << "sim fleet: " << r.status().ToString() << "\n";
    return kExitFailure;
  }
  if (a.json) {
    Json j = {{"scenario", sc.name},
              {"nodes", sc.topology.nodes.size()},
              {"envelopes", r->timings.envelopes},
              {"observations", r->timings.observations},
              {"ingest",
               {{"envelopes", r->ingest.envelopes},
                {"observations", r->ingest.observations},
                {"duplicates", r->ingest.duplicates},
                {"refused", r->ingest.refused}}},
              {"timeline", TimelineJson(*r)},
              {"score", ScoreJson(r->score)}};
    std::cout << j.dump(2) << "\n";
  } else {
    PrintHuman(sc, *r);
  }
  return kExitOk;
}

int RunSimFleet(const SimFleetArgs& a) {
  auto sc = sim::LoadFleetScenario(a.scenario);
  if (!sc.ok()) {
    std::cerr << "sim fleet: " << sc.status().ToString() << "\n";
    return kExitUsage;
  }
  if (!a.topology_out.empty()) {
    std::ofstream out(a.topology_out, std::ios::binary | std::ios::trunc);
    out << sim::FleetTopologyJson(sc->topology) << "\n";
    if (!out.flush()) {
      std::cerr << "sim fleet: cannot write " << a.topology_out << "\n";
      return kExitFailure;
    }
  }
  if (a.check) {
    std::cout << sc->name << ": " << sc->topology.nodes.size() << " nodes, " << sc->topology.cables.size()
              << " cables, " << sc->jobs.size() << " jobs, " << sc->faults.size()
              << " faults, truth: " << sc->truth.causes.size() << " shared cause(s), " << sc->truth.stragglers.size()
              << " straggler(s)\n";
    return kExitOk;
  }
  if (a.nats.empty()) return RunInProcess(a, *sc);
#ifdef FAULTLINE_SIM_FLEET_NATS
  sim::FleetNatsPublishOptions opt;
  opt.urls = a.nats;
  opt.credentials_file = a.credentials;
  opt.speed = a.speed;
  if (a.duration > 0) opt.duration_s = a.duration;
  auto r = sim::PublishFleetScenario(*sc, opt);
  if (!r.ok()) {
    std::cerr << "sim fleet: " << r.status().ToString() << "\n";
    return kExitFailure;
  }
  for (const std::string& note : r->notes)
    std::cerr << "sim fleet: warning: stream " << opt.stream << ": " << note << "\n";
  if (a.json) {
    std::cout << Json{{"scenario", sc->name},  {"messages", r->messages},     {"observations", r->observations},
                      {"bytes", r->bytes},     {"duplicates", r->duplicates}, {"failed", r->failed},
                      {"retried", r->retried}, {"publish_s", r->publish_s}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << "published " << r->messages << " messages (" << r->observations << " observations, " << r->bytes / 1024
              << " KiB) to stream " << opt.stream << " in " << Secs(r->publish_s) << "; " << r->duplicates
              << " duplicate(s), " << r->retried << " re-sent, " << r->failed << " failed\n";
    if (a.topology_out.empty()) std::cout << "(write the topology for `faultline fleet` with --topology-out FILE)\n";
  }
  return r->failed == 0 ? kExitOk : kExitFailure;
#else
  std::cerr << "sim fleet: this build has no NATS transport (libnats-dev was missing)\n";
  return kExitUsage;
#endif
}

}  // namespace

void AddSimFleetCommand(CliApp& app) {
  CLI::App* sim_cmd = app.root->get_subcommand("sim");
  auto args = std::make_shared<SimFleetArgs>();
  CLI::App* cmd = sim_cmd->add_subcommand(
      "fleet",
      "Simulate a fleet (racks, PDUs, cooling loops, leaf switches, jobs across nodes) from a fleet scenario.\n"
      "  default: feed the fleet analyzer in process on the scenario's clock and score it against the truth.\n"
      "  --nats URL: publish what every node's agent would publish to NATS JetStream instead.\n"
      "Format: docs/scenarios.md \"Fleet scenarios\"; examples in scenarios/fleet/.");
  cmd->add_option("--scenario", args->scenario, "Fleet scenario file (YAML or JSON)")->required();
  cmd->add_option("--nats", args->nats, "NATS server URL(s), comma-separated: publish instead of analyzing");
  cmd->add_option("--credentials", args->credentials, "NATS credentials file (with --nats)");
  cmd->add_option("--speed", args->speed, "With --nats: scenario seconds per wall second (default: as fast as it can)")
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--topology-out", args->topology_out, "Write the fleet's topology file (for `faultline fleet`)");
  cmd->add_option("--duration", args->duration, "Override the scenario's duration (seconds)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", args->json, "The run as JSON (timeline, verdicts)");
  cmd->add_flag("--check", args->check, "Parse the scenario and print what it holds; run nothing");
  cmd->callback([&app, args] { app.exit_code = RunSimFleet(*args); });
}

}  // namespace faultline::cli
