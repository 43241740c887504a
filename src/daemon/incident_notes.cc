#include "daemon/incident_notes.h"

#include <algorithm>
#include <utility>

#include "assistant/ask.h"
#include "assistant/kb/incidents.h"
#include "assistant/kb/knowledge_base.h"
#include "assistant/tools.h"
#include "daemon/why_slow.h"
#include "policy/identity.h"

namespace faultline::daemon {

namespace {
constexpr char kQuestion[] = "What failed on this node, what rules other causes out, and what should be done?";
}  // namespace

IncidentNotes::IncidentNotes(const AssistantSection& section, Store& store, std::string node, const Clock& clock,
                             Logger& logger)
    : section_(section), store_(store), node_(std::move(node)), logger_(logger), clock_(clock) {
  OpenKnowledgeBase();
  if (section_.llm_url.empty()) return;
  auto inv = IncidentInvestigator::Create(InvestigatorOptionsFor(section_), store_, node_, kb_.get(), clock_, logger_);
  if (!inv.ok()) {
    // The error names the URL's problem or the key file, never the key.
    logger_.Error("assistant: model " + section_.llm_model + " not used: " + inv.status().ToString() +
                  " (deterministic notes only)");
    return;
  }
  investigator_ = std::move(inv).value();
  logger_.Info("assistant: model " + section_.llm_model + " investigates new diagnoses (at most " +
               std::to_string(section_.llm_max_per_hour) + " per hour)");
}

void IncidentNotes::OpenKnowledgeBase() {
  if (section_.kb_dir.empty()) return;
  auto kb = assistant::kb::KnowledgeBase::Open(section_.kb_dir, section_.index_dir);
  if (!kb.ok()) {
    logger_.Warn("assistant: knowledge base " + section_.kb_dir + " unavailable: " + kb.status().ToString() +
                 " (incident notes and /api/v1/ask go without runbook sections)");
    return;
  }
  if (auto stats = (*kb)->Reindex(); !stats.ok()) {
    logger_.Warn("assistant: knowledge base could not be indexed: " + stats.status().ToString());
    return;
  }
  if (auto incidents = assistant::kb::IndexResolvedIncidents(store_, **kb); !incidents.ok()) {
    logger_.Warn("assistant: past incidents not indexed: " + incidents.status().ToString());
  }
  kb_ = std::move(kb).value();
}

IncidentNotes::~IncidentNotes() { StopInvestigations(); }

void IncidentNotes::StopInvestigations() {
  if (investigator_) investigator_->Stop();
}

int64_t IncidentNotes::AfterEvaluation(const EvaluateResult& result, int64_t now_ns) {
  const bool new_primary =
      result.diagnosis_stored && !result.diagnoses.empty() && result.diagnoses.front().fault_class != FaultClass::kNone;
  const int64_t id = new_primary && section_.incident_notes ? WriteNote(result, now_ns) : 0;
  if (investigator_) Investigate(result, new_primary);
  return id;
}

void IncidentNotes::Investigate(const EvaluateResult& result, bool new_primary) {
  const int64_t now = clock_.MonotonicNs();
  // "Slow, and no rule explains it": the isolator's workload answer (slow steps that no
  // hardware, fabric or software finding lines up with).
  const auto slow = std::find_if(result.diagnoses.begin(), result.diagnoses.end(),
                                 [](const Diagnosis& d) { return d.fault_class == FaultClass::kWorkloadImbalance; });
  if (new_primary) {
    const Diagnosis& d = result.diagnoses.front();
    const bool is_slow = d.fault_class == FaultClass::kWorkloadImbalance;
    if (is_slow) last_slow_mono_ns_ = now;
    investigator_->Submit(
        {.trigger = is_slow ? Investigation::Trigger::kSlowUnexplained : Investigation::Trigger::kDiagnosis,
         .diagnosis_id = result.diagnosis_id,
         .fault_class = d.fault_class,
         .key = is_slow ? std::string("slow") : "fault:" + policy::FaultKey(d)});
    return;
  }
  if (slow == result.diagnoses.end()) return;
  if (last_slow_mono_ns_ && now - *last_slow_mono_ns_ < section_.slow_recheck_ns) return;
  last_slow_mono_ns_ = now;
  investigator_->Submit({.trigger = Investigation::Trigger::kSlowUnexplained,
                         .diagnosis_id = 0,
                         .fault_class = slow->fault_class,
                         .key = "slow"});
}

int64_t IncidentNotes::WriteNote(const EvaluateResult& result, int64_t now_ns) {
  assistant::ToolContext ctx;
  ctx.store = &store_;
  ctx.node = node_;
  ctx.retriever = kb_.get();
  ctx.now_ns = now_ns;
  ctx.why_slow = [this](int64_t since, int64_t until) -> Result<std::vector<Diagnosis>> {
    auto a = WhySlow(store_, {.node = node_, .since_ns = since, .until_ns = until});
    if (!a.ok()) return a.status();
    return a->diagnoses;
  };
  assistant::Toolbox tools(ctx);
  const assistant::AskRequest request{.question = kQuestion};
  const assistant::AskAnswer answer = assistant::AskOffline(tools, request);
  auto id = assistant::StoreTranscript(store_, node_, request, answer, now_ns);
  if (!id.ok()) {
    logger_.Error("assistant: incident note not stored: " + id.status().ToString());
    return 0;
  }
  ++written_;
  logger_.Info("assistant: incident note " + std::to_string(*id) + " for diagnosis " +
               std::to_string(result.diagnosis_id));
  return *id;
}

}  // namespace faultline::daemon
