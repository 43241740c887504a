// Retrieval quality of the knowledge base (docs/assistant.md "Knowledge base"): natural-
// language queries an operator would type, each with the document that should answer it,
// scored as top-1 / top-3 hit rates per fault class. Used by tests/assistant_kb (floors) and
// bench/bench_kb.cc (prints the table).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "assistant/retriever.h"
#include "core/status.h"

namespace faultline::assistant::kb {

struct EvalQuery {
  std::string group;     // fault class the query is about (the per-class row it counts in)
  std::string expected;  // document id without section: "runbook/gpu_fell_off_bus", "xid/79"
  std::string query;
  size_t line = 0;
};

// Tab-separated lines "group<TAB>expected<TAB>query"; '#' comments and blank lines are
// skipped. kCorrupt naming the line for a line without three non-empty fields; at most
// 10,000 queries and 1 KiB per line (kInvalidArgument past that).
Result<std::vector<EvalQuery>> ParseEvalQueries(std::string_view tsv);

struct EvalRow {
  size_t queries = 0;
  size_t top1 = 0;
  size_t top3 = 0;
  double Top1Rate() const { return queries == 0 ? 0 : static_cast<double>(top1) / static_cast<double>(queries); }
  double Top3Rate() const { return queries == 0 ? 0 : static_cast<double>(top3) / static_cast<double>(queries); }
};

struct EvalMiss {
  EvalQuery query;
  std::vector<std::string> got;  // the top-3 document ids returned
};

struct EvalReport {
  std::map<std::string, EvalRow> by_group;
  EvalRow total;
  std::vector<EvalMiss> misses;  // queries whose expected document was not in the top 3
};

// "runbook/x#symptoms" -> "runbook/x".
std::string_view DocumentOf(std::string_view doc_id);

Result<EvalReport> Evaluate(const Retriever& retriever, const std::vector<EvalQuery>& queries);

// The report as a fixed-width table: group, queries, top-1, top-3, then the total.
std::string FormatEvalReport(const EvalReport& report);

}  // namespace faultline::assistant::kb
