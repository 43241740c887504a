// `faultline scan`'s verdict and its rendering: the terminal report and the --json object
// (docs/scan.md "What it prints"). Prints only to std::cout; no I/O otherwise.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/scan_sources.h"
#include "core/json.h"
#include "core/types.h"
#include "policy/rules.h"

namespace faultline::cli {

// What the exit code says: 0, 1 and 3 (docs/scan.md "Exit codes").
enum class Verdict { kHealthy, kNeedsAction, kCouldNotSee };

struct ScanAnalysis {
  std::vector<Finding> findings;
  std::optional<Diagnosis> nothing_wrong;  // the isolator's `none`, with the layers it ruled out
  std::vector<Diagnosis> diagnoses;        // real fault classes, most important first
  std::vector<policy::Proposal> plan;      // the policy's plan for the first of them
  Verdict verdict = Verdict::kCouldNotSee;
};

int ExitCode(Verdict v);
const char* VerdictName(Verdict v);  // "healthy", "needs_action", "could_not_see"
// The acting diagnosis when one needs action, else the isolator's `none`, else the first
// informational one; null when nothing could be read.
const Diagnosis* PrimaryDiagnosis(const ScanAnalysis& a);

// {node, verdict, exit_code, elapsed_ms, sources, primary, diagnoses, plan, findings}.
Json ScanReportJson(const std::string& node, const ScanRead& read, const ScanAnalysis& a, int64_t elapsed_ms);
// Sources, verdict, diagnoses (cli/render.h) and the plan, for a terminal.
void PrintScanReport(const std::string& node, const ScanRead& read, const ScanAnalysis& a, int64_t elapsed_ms);

}  // namespace faultline::cli
