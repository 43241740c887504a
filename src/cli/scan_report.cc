#include "cli/scan_report.h"

#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/render.h"

namespace faultline::cli {
namespace {

Json SourceJson(const ScanSourceReport& s) {
  Json j{{"name", s.name},
         {"layer", ToString(s.layer)},
         {"state", ToString(s.state)},
         {"observations", s.observations},
         {"warnings", s.warnings}};
  if (!s.detail.empty()) j[s.state == ScanState::kFailed ? "error" : "detail"] = s.detail;
  return j;
}

Json PlanJson(const std::vector<policy::Proposal>& plan) {
  Json out = Json::array();
  for (const policy::Proposal& p : plan) {
    Json j{{"action", actions::ToString(p.action_class)}, {"rule", p.rule}, {"refused", p.refused}};
    if (!p.why.empty()) j["why"] = p.why;
    out.push_back(std::move(j));
  }
  return out;
}

// What could not be read stands out in capitals.
const char* StateLabel(ScanState s) {
  switch (s) {
    case ScanState::kRead:
      return "read";
    case ScanState::kEmpty:
      return "empty";
    case ScanState::kFailed:
      return "FAILED";
    case ScanState::kTimedOut:
      return "TIMED OUT";
    case ScanState::kNotConfigured:
      return "not configured";
  }
  return "?";
}

void PrintSources(const std::vector<ScanSourceReport>& sources) {
  for (const ScanSourceReport& s : sources) {
    char head[64];
    std::snprintf(head, sizeof head, "  %-14s %-15s ", s.name.c_str(), StateLabel(s.state));
    std::cout << head;
    if (s.state == ScanState::kRead || s.state == ScanState::kEmpty) {
      std::cout << s.observations << " observation(s)";
      if (!s.warnings.empty()) std::cout << ", " << s.warnings.size() << " warning(s): " << s.warnings.front();
    } else {
      std::cout << s.detail;
    }
    std::cout << "\n";
  }
}

void PrintPlan(const std::vector<policy::Proposal>& plan) {
  if (plan.empty()) return;
  std::cout << "Plan (what the agent's policy would do; docs/remediation.md):\n";
  for (const policy::Proposal& p : plan) {
    std::cout << "  " << (p.refused ? "refused: " : "") << actions::ToString(p.action_class) << "  (" << p.rule
              << (p.why.empty() ? "" : ": " + p.why) << ")\n";
  }
  std::cout << "\n";
}

}  // namespace

int ExitCode(Verdict v) {
  switch (v) {
    case Verdict::kHealthy:
      return kExitOk;
    case Verdict::kNeedsAction:
      return kExitFailure;
    case Verdict::kCouldNotSee:
      return kExitUnknown;
  }
  return kExitUnknown;
}

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kHealthy:
      return "healthy";
    case Verdict::kNeedsAction:
      return "needs_action";
    case Verdict::kCouldNotSee:
      return "could_not_see";
  }
  return "could_not_see";
}

const Diagnosis* PrimaryDiagnosis(const ScanAnalysis& a) {
  if (a.verdict == Verdict::kNeedsAction) return &a.diagnoses.front();
  if (a.nothing_wrong) return &*a.nothing_wrong;
  return a.diagnoses.empty() ? nullptr : &a.diagnoses.front();
}

Json ScanReportJson(const std::string& node, const ScanRead& read, const ScanAnalysis& a, int64_t elapsed_ms) {
  Json sources = Json::array();
  for (const ScanSourceReport& s : read.sources) sources.push_back(SourceJson(s));
  Json j{{"node", node},
         {"verdict", VerdictName(a.verdict)},
         {"exit_code", ExitCode(a.verdict)},
         {"elapsed_ms", elapsed_ms},
         {"sources", sources},
         {"diagnoses", a.diagnoses},
         {"plan", PlanJson(a.plan)},
         {"findings", a.findings}};
  const Diagnosis* primary = PrimaryDiagnosis(a);
  j["primary"] = primary ? Json(*primary) : Json(nullptr);
  return j;
}

void PrintScanReport(const std::string& node, const ScanRead& read, const ScanAnalysis& a, int64_t elapsed_ms) {
  size_t read_count = 0, observations = 0;
  for (const ScanSourceReport& s : read.sources) {
    read_count += s.state == ScanState::kRead ? 1 : 0;
    observations += s.observations;
  }
  std::cout << "faultline scan: node " << node << ": " << read_count << " of " << read.sources.size()
            << " source(s) read, " << observations << " observation(s), " << elapsed_ms << " ms\n\n";
  PrintSources(read.sources);
  std::cout << "\n";
  if (a.verdict == Verdict::kCouldNotSee) {
    std::cout << "COULD NOT SEE: no source gave a reading; nothing can be said about this node (exit 3).\n";
    return;
  }
  if (a.verdict == Verdict::kNeedsAction) {
    const Diagnosis& d = a.diagnoses.front();
    std::cout << "NEEDS ACTION: " << ToString(d.fault_class) << " on " << DescribeComponent(d.component)
              << " (exit 1)\n\n";
    RenderDiagnoses(std::cout, a.diagnoses);
    PrintPlan(a.plan);
    return;
  }
  std::cout << "HEALTHY: no fault that needs action in what was read (exit 0).\n\n";
  if (a.nothing_wrong) RenderDiagnoses(std::cout, {*a.nothing_wrong});
  if (!a.diagnoses.empty()) std::cout << "Informational:\n";
  RenderDiagnoses(std::cout, a.diagnoses);
}

}  // namespace faultline::cli
