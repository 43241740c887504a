// `faultline bench agent`: the assistant's answer to "why is this node slow, and what
// failed?" scored over the scenario corpus (docs/assistant.md "Evaluation"). Every scenario
// runs in lockstep with the real agent; the question is asked over the store it leaves,
// offline or through an OpenAI-compatible model (--llm-url). The scoring lives in
// sim/harness/agent_bench.h; this file opens the knowledge base and the model, runs, prints.
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "assistant/kb/knowledge_base.h"
#include "assistant/llm_client.h"
#include "cli/sim/sim_commands.h"
#include "core/json.h"
#include "sim/harness/agent_bench.h"
#include "sim/harness/lockstep.h"
#include "sim/harness/workdir.h"

namespace faultline::cli {
namespace {

namespace fs = std::filesystem;
using sim::ScenarioAgentRun;

struct AgentBenchArgs {
  std::string dir;
  std::string filter;
  std::string nvml_lib;
  std::string workdir;
  std::string kb_dir;
  std::string llm_url;
  std::string llm_model;
  std::string llm_key_file;
  std::string llm_ca;
  bool llm_allow_http = false;
  double llm_timeout_s = 120;
  double skip_longer_than_s = 3600;
  bool json = false;
  bool keep = false;
};

std::string Secs(double s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(s < 100 ? 1 : 0) << s << "s";
  return os.str();
}

std::string Rate(int n, int of) {
  if (of == 0) return "n/a";
  std::ostringstream os;
  os << n << "/" << of << " (" << std::fixed << std::setprecision(0) << 100.0 * n / of << "%)";
  return os.str();
}

std::string Mark(const std::optional<bool>& v) { return !v ? "-" : (*v ? "yes" : "NO"); }

std::string ClassCell(const sim::AnswerScore& s) {
  if (s.healthy) return s.fault_claimed ? "CLAIMED" : "quiet";
  if (s.class_in_primary) return "primary";
  return s.class_in_text ? "text" : "NO";
}

std::string Answered(const ScenarioAgentRun& r) {
  if (!r.answer.primary) return "-";
  const Diagnosis& d = *r.answer.primary;
  return std::string(ToString(d.fault_class)) + " " + d.component.Id() + " (" + std::string(ToString(d.action)) + ")";
}

void PrintTable(const std::vector<ScenarioAgentRun>& runs, bool model) {
  std::cout << "per scenario (class: named in the primary / the model's text; healthy: quiet or CLAIMED):\n"
            << "  " << std::left << std::setw(38) << "scenario" << std::setw(46) << "truth" << std::setw(9) << "class"
            << std::setw(6) << "part" << std::setw(7) << "action" << std::setw(6) << "cites";
  if (model) std::cout << std::setw(9) << "refused";
  std::cout << std::setw(8) << "verdict"
            << "answered (primary)\n";
  for (const ScenarioAgentRun& r : runs) {
    const sim::AnswerScore& s = r.score;
    const std::string truth =
        std::string(ToString(r.truth.fault_class)) + " (" + std::string(ToString(r.truth.action)) + ")";
    std::cout << "  " << std::setw(38) << r.name << std::setw(46) << truth << std::setw(9) << ClassCell(s)
              << std::setw(6) << Mark(s.component_named) << std::setw(7) << Mark(s.action_matches) << std::setw(6)
              << s.citations;
    if (model) std::cout << std::setw(9) << (std::to_string(s.refused) + "/" + std::to_string(s.proposals));
    std::cout << std::setw(8) << (s.correct ? "ok" : "MISS") << Answered(r) << "\n";
  }
  std::cout << std::right;
}

void PrintSummary(const sim::AgentBenchSummary& s, const std::vector<std::string>& skipped, const std::string& mode,
                  const std::string& kb_note, const AgentBenchArgs& a) {
  std::cout << "\nscenarios run: " << s.scenarios << " (answers: " << mode << "; question: \""
            << sim::kAgentBenchQuestion << "\")\n";
  if (!kb_note.empty()) std::cout << "knowledge base: " << kb_note << "\n";
  if (!skipped.empty()) {
    std::cout << "skipped (longer than " << Secs(a.skip_longer_than_s) << ", --skip-longer-than):";
    for (const std::string& k : skipped) std::cout << " " << k;
    std::cout << "\n";
  }
  std::cout << "fault class named:     " << Rate(s.class_named, s.faulty) << " of faulty scenarios\n"
            << "component named:       " << Rate(s.component_named, s.component_scored)
            << " of those whose truth names a part\n"
            << "action matches:        " << Rate(s.action_matches, s.action_scored)
            << " of those whose truth states an action\n"
            << "evidence cited:        " << Rate(s.evidence_cited, s.faulty) << " of faulty scenarios\n"
            << "healthy, no fault claimed: " << Rate(s.healthy_quiet, s.healthy) << "\n"
            << "all checks passed:     " << Rate(s.correct, s.scenarios) << "\n";
  if (mode != "offline") std::cout << "proposals refused:     " << s.refused << " of " << s.proposals << "\n";
  for (const std::string& m : s.misses) std::cout << "  miss: " << m << "\n";
}

nlohmann::json RunJson(const ScenarioAgentRun& r) {
  const sim::AnswerScore& s = r.score;
  auto opt = [](const std::optional<bool>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  return {{"scenario", r.name},
          {"truth",
           {{"fault_class", ToString(r.truth.fault_class)},
            {"action", ToString(r.truth.action)},
            {"components", r.truth.components}}},
          {"score",
           {{"healthy", s.healthy},
            {"fault_claimed", s.fault_claimed},
            {"class_in_primary", s.class_in_primary},
            {"class_in_text", s.class_in_text},
            {"class_named", s.class_named},
            {"component_named", opt(s.component_named)},
            {"action_matches", opt(s.action_matches)},
            {"citations", s.citations},
            {"evidence_cited", s.evidence_cited},
            {"proposals", s.proposals},
            {"refused", s.refused},
            {"correct", s.correct},
            {"miss", sim::MissReason(s)}}},
          {"answer", assistant::AnswerJson(r.answer)},
          {"run_wall_s", r.run_wall_s},
          {"ask_wall_s", r.ask_wall_s}};
}

nlohmann::json SummaryJson(const sim::AgentBenchSummary& s, const std::vector<std::string>& skipped) {
  return {{"scenarios", s.scenarios},
          {"skipped", skipped},
          {"faulty", s.faulty},
          {"class_named", s.class_named},
          {"component_scored", s.component_scored},
          {"component_named", s.component_named},
          {"action_scored", s.action_scored},
          {"action_matches", s.action_matches},
          {"evidence_cited", s.evidence_cited},
          {"healthy", s.healthy},
          {"healthy_quiet", s.healthy_quiet},
          {"correct", s.correct},
          {"proposals", s.proposals},
          {"refused", s.refused},
          {"misses", s.misses}};
}

// The knowledge base (--kb, else ./kb when it exists), indexed once into `index_dir` for
// every scenario. Past incidents are not added: each scenario's store is its own node's
// history, and one scenario's incidents must not answer another's question.
std::unique_ptr<assistant::kb::KnowledgeBase> OpenKb(const AgentBenchArgs& a, const std::string& index_dir,
                                                     std::string& note) {
  std::string dir = a.kb_dir;
  if (dir.empty() && fs::is_directory("kb")) dir = "kb";
  if (dir.empty()) {
    note = "none (--kb DIR): answers without runbook sections";
    return nullptr;
  }
  auto kb = assistant::kb::KnowledgeBase::Open(dir, index_dir);
  if (!kb.ok()) {
    note = "unavailable: " + kb.status().message();
    return nullptr;
  }
  auto stats = (*kb)->Reindex();
  if (!stats.ok()) {
    note = "could not be indexed: " + stats.status().message();
    return nullptr;
  }
  note = dir;
  return std::move(kb).value();
}

int RunAgentBench(const AgentBenchArgs& a) {
  const char* me = "faultline bench agent";
  if (a.llm_url.empty() != a.llm_model.empty()) {
    std::cerr << me << ": --llm-url and --llm-model go together\n";
    return kExitUsage;
  }
  std::error_code ec;
  const std::vector<fs::path> files = ScenarioFiles(a.dir, ec);
  if (ec) {
    std::cerr << me << ": " << a.dir << ": " << ec.message() << "\n";
    return kExitUsage;
  }
  if (files.empty()) {
    std::cerr << me << ": no scenario files (*.yaml, *.json) in " << a.dir << "\n";
    return kExitUsage;
  }
  if (!a.kb_dir.empty() && !fs::is_directory(a.kb_dir)) {
    std::cerr << me << ": --kb " << a.kb_dir << ": not a directory\n";
    return kExitUsage;
  }
  std::unique_ptr<assistant::OpenAiChatClient> client;
  if (!a.llm_url.empty()) {
    assistant::LlmConfig config{a.llm_url, a.llm_model, a.llm_key_file, a.llm_ca};
    config.allow_http = a.llm_allow_http;
    config.timeout_ms = static_cast<int64_t>(a.llm_timeout_s * 1000);
    auto c = assistant::OpenAiChatClient::Create(config);
    if (!c.ok()) {
      std::cerr << me << ": " << c.status().message() << "\n";
      return c.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
    }
    client = std::move(c).value();
  }
  auto workdir = sim::PrepareRunDir(a.workdir, "faultline-agent-bench");
  if (!workdir.ok()) {
    std::cerr << me << ": " << workdir.status().message() << "\n";
    return kExitUsage;
  }
  int failed = 0;
  std::vector<ScenarioAgentRun> runs;
  std::vector<std::string> skipped;
  std::string kb_note;
  {
    // The index lives in the run directory; closed (end of this block) before it is removed.
    const std::string index_dir = workdir->path + "/kb-index";
    std::unique_ptr<assistant::kb::KnowledgeBase> kb = OpenKb(a, index_dir, kb_note);
    sim::AgentBenchOptions o;
    o.lockstep.workdir = workdir->path;
    o.lockstep.nvml_library = a.nvml_lib;
    o.lockstep.keep_workdir = a.keep;
    o.kb = kb.get();
    o.model = client.get();
    for (const fs::path& f : files) {
      if (!a.filter.empty() && f.filename().string().find(a.filter) == std::string::npos) continue;
      auto sc = sim::LoadNodeScenario(f.string());
      if (!sc.ok()) {
        std::cerr << me << ": " << sc.status().message() << "\n";
        ++failed;
        continue;
      }
      if (sc->duration_s > a.skip_longer_than_s) {
        skipped.push_back(sc->name + " (" + Secs(sc->duration_s) + ")");
        continue;
      }
      auto run = sim::RunScenarioAgent(*sc, o);
      if (!run.ok()) {
        std::cerr << me << ": " << f.string() << ": " << run.status().ToString() << "\n";
        ++failed;
        continue;
      }
      std::cerr << std::left << std::setw(6) << (run->score.correct ? "ok" : "MISS") << std::right << sc->name << " ("
                << Secs(run->run_wall_s) << " run, " << Secs(run->ask_wall_s) << " ask)\n";
      runs.push_back(std::move(run).value());
    }
  }
  if (!a.keep) sim::RemoveIfCreated(*workdir);

  const sim::AgentBenchSummary summary = sim::SummarizeAgentBench(runs);
  const std::string mode = client ? "model " + a.llm_model : "offline";
  if (a.json) {
    nlohmann::json runs_json = nlohmann::json::array();
    for (const ScenarioAgentRun& r : runs) runs_json.push_back(RunJson(r));
    nlohmann::json j = {{"summary", SummaryJson(summary, skipped)},
                        {"runs", runs_json},
                        {"mode", mode},
                        {"knowledge_base", kb_note},
                        {"failed", failed}};
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    PrintTable(runs, client != nullptr);
    PrintSummary(summary, skipped, mode, kb_note, a);
    if (a.keep) std::cout << "\nrun files kept under " << workdir->path << "\n";
  }
  return failed ? kExitFailure : kExitOk;
}

}  // namespace

void AddBenchAgentCommand(CliApp& app) {
  auto args = std::make_shared<AgentBenchArgs>();
  args->nvml_lib = sim::DefaultFakeNvmlPath();
  CLI::App* b = app.bench->add_subcommand(
      "agent",
      "Score the assistant's answer to \"why is this node slow, and what failed?\" over the scenarios:\n"
      "fault class and component named, action matching, evidence cited, no fault claimed on healthy nodes");
  b->footer(
      "Each scenario runs as in `bench accuracy` (the real agent in lockstep with the simulated node); the\n"
      "question is then asked over the store it left, offline (the default: the isolator's diagnosis and the\n"
      "runbook sections) or through an OpenAI-compatible model (--llm-url, --llm-model), whose proposals are\n"
      "judged and only counted, never executed. Scoring: docs/assistant.md \"Evaluation\".\n"
      "\n"
      "Exit codes: 0 every scenario ran and was answered (whatever the scores); 1 a run failed; 2 bad arguments.");
  b->add_option("--scenarios", args->dir, "Directory of scenario files")->required();
  b->add_option("--filter", args->filter, "Only scenario files whose name contains this");
  b->add_option("--skip-longer-than", args->skip_longer_than_s,
                "Skip scenarios longer than this many simulated seconds (default 3600; listed in the output)")
      ->check(CLI::PositiveNumber);
  b->add_option("--kb", args->kb_dir, "Knowledge base directory (default ./kb when it exists)");
  b->add_option("--llm-url", args->llm_url,
                "OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1 (llama.cpp server); default: offline");
  b->add_option("--llm-model", args->llm_model, "Model name the server knows");
  b->add_option("--llm-key-file", args->llm_key_file, "File whose first line is the API key (never printed)");
  b->add_option("--llm-ca", args->llm_ca, "PEM bundle to trust for an https --llm-url");
  b->add_flag("--llm-allow-http", args->llm_allow_http, "Allow a plain http --llm-url to a host that is not loopback");
  b->add_option("--llm-timeout", args->llm_timeout_s, "Seconds per model request (default 120)")
      ->check(CLI::Range(1.0, 3600.0));
  b->add_option("--workdir", args->workdir,
                "Directory for the runs' files (default: a fresh one in /dev/shm or $TMPDIR)");
  b->add_option("--nvml-lib", args->nvml_lib, "The fake libnvidia-ml.so.1 (default: the one built with faultline)");
  b->add_flag("--keep", args->keep, "Keep the runs' files (agent stores, knowledge-base index)");
  b->add_flag("--json", args->json, "The report as JSON (every answer in full)");
  b->callback([&app, args] { app.exit_code = RunAgentBench(*args); });
}

}  // namespace faultline::cli
