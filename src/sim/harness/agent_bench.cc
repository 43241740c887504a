#include "sim/harness/agent_bench.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <utility>

#include "assistant/tools.h"
#include "daemon/agent.h"
#include "daemon/why_slow.h"
#include "store/store.h"

namespace faultline::sim {
namespace {

namespace fs = std::filesystem;

bool WordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// `word` at text[i..]: case-insensitive; '_' in the word also matches ' ' or '-'.
bool MatchesAt(const std::string& text, size_t i, const std::string& word) {
  for (size_t k = 0; k < word.size(); ++k) {
    const char t = Lower(text[i + k]);
    const char w = Lower(word[k]);
    if (t == w) continue;
    if (w == '_' && (t == ' ' || t == '-')) continue;
    return false;
  }
  return true;
}

bool IsEvidenceRef(const std::string& ref) { return ref.rfind("obs:", 0) == 0 || ref.rfind("finding:", 0) == 0; }

int64_t SimTimeNs(double s) { return kSimEpochNs + static_cast<int64_t>(s * 1e9); }

}  // namespace

bool NamesWord(const std::string& text, const std::string& word) {
  if (word.empty() || word.size() > text.size()) return false;
  for (size_t i = 0; i + word.size() <= text.size(); ++i) {
    if (i > 0 && WordChar(text[i - 1])) continue;
    const size_t end = i + word.size();
    if (end < text.size() && WordChar(text[end])) continue;
    if (MatchesAt(text, i, word)) return true;
  }
  return false;
}

AnswerScore ScoreAnswer(const Truth& truth, const assistant::AskAnswer& answer, const std::set<std::string>& part_ids) {
  AnswerScore s;
  s.healthy = truth.fault_class == FaultClass::kNone;
  // Only a model's own words are read as text: an offline answer's text is its primary
  // rendered, plus the other diagnoses, which are not its claim.
  const bool model_text = answer.mode == "llm";
  const std::optional<Diagnosis>& p = answer.primary;
  const bool primary_fault = p && p->fault_class != FaultClass::kNone;
  s.proposals = static_cast<int>(answer.proposals.size());
  for (const assistant::ProposalVerdict& v : answer.proposals) s.refused += v.accepted ? 0 : 1;
  s.fault_claimed = primary_fault || s.proposals > 0;
  for (const assistant::Citation& c : answer.evidence) s.citations += IsEvidenceRef(c.ref) ? 1 : 0;
  s.evidence_cited = s.citations > 0;
  if (s.healthy) {
    s.correct = !s.fault_claimed;
    return s;
  }

  s.class_in_primary = p && p->fault_class == truth.fault_class;
  s.class_in_text = model_text && NamesWord(answer.text, std::string(ToString(truth.fault_class)));
  s.class_named = s.class_in_primary || s.class_in_text;

  if (!truth.components.empty()) {
    bool named = primary_fault && part_ids.count(p->component.Id()) > 0;
    if (!named && model_text) {
      for (const std::string& id : part_ids) named = named || NamesWord(answer.text, id);
      for (const std::string& t : truth.components) named = named || NamesWord(answer.text, t);
    }
    s.component_named = named;
  }

  if (truth.action != Action::kNone) {
    const std::string action(ToString(truth.action));
    bool match = primary_fault && p->action == truth.action;
    for (const assistant::ProposalVerdict& v : answer.proposals) match = match || v.action == action;
    if (!match && model_text) match = NamesWord(answer.text, action);
    s.action_matches = match;
  }

  s.correct = s.class_named && s.component_named.value_or(true) && s.action_matches.value_or(true) && s.evidence_cited;
  return s;
}

std::string MissReason(const AnswerScore& s) {
  if (s.healthy) return s.fault_claimed ? "claimed a fault on a healthy node" : "";
  std::string out;
  auto add = [&out](const char* what) { out += (out.empty() ? "" : ", ") + std::string(what); };
  if (!s.class_named) add("fault class not named");
  if (s.component_named == false) add("component not named");
  if (s.action_matches == false) add("action does not match");
  if (!s.evidence_cited) add("no evidence cited");
  return out;
}

Result<ScenarioAgentRun> RunScenarioAgent(const NodeScenario& scenario, const AgentBenchOptions& options) {
  ScenarioAgentRun out;
  out.name = scenario.name;
  out.truth = scenario.truth;
  out.duration_s = scenario.duration_s;

  // The simulated node exists only during the run: which components name the truth's part
  // is decided there, for every diagnosis the agent made.
  struct Capture {
    const SimNode* node = nullptr;
    std::string agent_node;
  } cap;
  LockstepOptions lo = options.lockstep;
  lo.keep_workdir = true;  // the store is read afterwards; removed below unless asked to keep
  const auto user_created = options.lockstep.on_agent_created;
  lo.on_agent_created = [&](daemon::Agent& agent, const SimNode& node) {
    cap.node = &node;
    cap.agent_node = agent.node();
    if (user_created) user_created(agent, node);
  };
  const auto user_hook = options.lockstep.on_evaluation;
  lo.on_evaluation = [&](double t, const std::vector<Diagnosis>& dx) {
    if (cap.node != nullptr && !scenario.truth.components.empty()) {
      for (const Diagnosis& d : dx) {
        if (ComponentMatches(d.component, scenario.truth.components, *cap.node)) out.part_ids.insert(d.component.Id());
      }
    }
    if (user_hook) user_hook(t, dx);
  };
  const auto wall0 = std::chrono::steady_clock::now();
  auto run = RunScenarioLockstep(scenario, lo);
  if (!run.ok()) return run.status();
  cap.node = nullptr;  // gone with the run
  const auto wall1 = std::chrono::steady_clock::now();
  out.run_wall_s = std::chrono::duration<double>(wall1 - wall0).count();

  auto cleanup = [&] {
    if (options.lockstep.keep_workdir) {
      out.workdir = run->workdir;
    } else {
      std::error_code ec;
      fs::remove_all(run->workdir, ec);
    }
  };
  StoreOptions so;
  so.read_only = true;
  auto store = Store::Open(run->workdir + "/faultline.db", so);
  if (!store.ok()) {
    cleanup();
    return store.status();
  }
  Store& s = **store;
  const std::string node = cap.agent_node;
  assistant::ToolContext ctx;
  ctx.store = &s;
  ctx.node = node;
  ctx.retriever = options.kb;
  ctx.now_ns = SimTimeNs(scenario.duration_s);  // "since: 2h" is relative to the run's end
  ctx.why_slow = [&s, node](int64_t since, int64_t until) -> Result<std::vector<Diagnosis>> {
    auto a = daemon::WhySlow(s, {.node = node, .since_ns = since, .until_ns = until});
    if (!a.ok()) return a.status();
    return a->diagnoses;
  };
  assistant::Toolbox tools(ctx);
  assistant::AskRequest request;
  request.question = options.question;
  out.answer = options.model != nullptr ? assistant::AskWithModel(*options.model, tools, request, options.ask)
                                        : assistant::AskOffline(tools, request, options.ask);
  out.ask_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall1).count();
  store->reset();  // closed before its directory goes
  cleanup();
  out.score = ScoreAnswer(scenario.truth, out.answer, out.part_ids);
  return out;
}

AgentBenchSummary SummarizeAgentBench(const std::vector<ScenarioAgentRun>& runs) {
  AgentBenchSummary sum;
  for (const ScenarioAgentRun& r : runs) {
    const AnswerScore& s = r.score;
    ++sum.scenarios;
    sum.correct += s.correct;
    sum.proposals += s.proposals;
    sum.refused += s.refused;
    if (s.healthy) {
      ++sum.healthy;
      sum.healthy_quiet += !s.fault_claimed;
    } else {
      ++sum.faulty;
      sum.class_named += s.class_named;
      sum.evidence_cited += s.evidence_cited;
      if (s.component_named) {
        ++sum.component_scored;
        sum.component_named += *s.component_named;
      }
      if (s.action_matches) {
        ++sum.action_scored;
        sum.action_matches += *s.action_matches;
      }
    }
    const std::string why = MissReason(s);
    if (!why.empty()) sum.misses.push_back(r.name + ": " + why);
  }
  return sum;
}

}  // namespace faultline::sim
