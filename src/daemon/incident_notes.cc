#include "daemon/incident_notes.h"

#include <utility>

#include "assistant/ask.h"
#include "assistant/kb/incidents.h"
#include "assistant/kb/knowledge_base.h"
#include "assistant/tools.h"
#include "daemon/why_slow.h"

namespace faultline::daemon {

namespace {
constexpr char kQuestion[] = "What failed on this node, what rules other causes out, and what should be done?";
}  // namespace

IncidentNotes::IncidentNotes(const AssistantSection& section, Store& store, std::string node, Logger& logger)
    : section_(section), store_(store), node_(std::move(node)), logger_(logger) {
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

IncidentNotes::~IncidentNotes() = default;

int64_t IncidentNotes::AfterEvaluation(const EvaluateResult& result, int64_t now_ns) {
  if (!section_.incident_notes || !result.diagnosis_stored || result.diagnoses.empty()) return 0;
  if (result.diagnoses.front().fault_class == FaultClass::kNone) return 0;
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
