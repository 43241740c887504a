#include "assistant/kb/eval.h"

#include <cstdio>

namespace faultline::assistant::kb {
namespace {

constexpr size_t kMaxQueries = 10000;
constexpr size_t kMaxLineBytes = 1024;

std::vector<std::string_view> SplitTabs(std::string_view line) {
  std::vector<std::string_view> out;
  while (true) {
    const size_t tab = line.find('\t');
    out.push_back(line.substr(0, tab));
    if (tab == std::string_view::npos) break;
    line.remove_prefix(tab + 1);
  }
  return out;
}

}  // namespace

Result<std::vector<EvalQuery>> ParseEvalQueries(std::string_view tsv) {
  std::vector<EvalQuery> out;
  size_t line_no = 0;
  while (!tsv.empty()) {
    ++line_no;
    const size_t nl = tsv.find('\n');
    std::string_view line = tsv.substr(0, nl);
    tsv.remove_prefix(nl == std::string_view::npos ? tsv.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    if (line.size() > kMaxLineBytes) {
      return Status(StatusCode::kInvalidArgument, "line " + std::to_string(line_no) + ": longer than 1 KiB");
    }
    const auto fields = SplitTabs(line);
    if (fields.size() != 3 || fields[0].empty() || fields[1].empty() || fields[2].empty()) {
      return Status(StatusCode::kCorrupt, "line " + std::to_string(line_no) + ": want group<TAB>expected<TAB>query");
    }
    if (out.size() >= kMaxQueries) return Status(StatusCode::kInvalidArgument, "more than 10000 queries");
    out.push_back(EvalQuery{std::string(fields[0]), std::string(fields[1]), std::string(fields[2]), line_no});
  }
  return out;
}

std::string_view DocumentOf(std::string_view doc_id) { return doc_id.substr(0, doc_id.find('#')); }

Result<EvalReport> Evaluate(const Retriever& retriever, const std::vector<EvalQuery>& queries) {
  EvalReport report;
  for (const EvalQuery& q : queries) {
    auto hits = retriever.Search(q.query, 3);
    if (!hits.ok()) return hits.status();
    EvalRow& row = report.by_group[q.group];
    ++row.queries;
    ++report.total.queries;
    size_t rank = 0;
    std::vector<std::string> got;
    for (size_t i = 0; i < hits->size(); ++i) {
      got.emplace_back((*hits)[i].doc_id);
      if (rank == 0 && DocumentOf((*hits)[i].doc_id) == q.expected) rank = i + 1;
    }
    if (rank == 1) {
      ++row.top1;
      ++report.total.top1;
    }
    if (rank >= 1 && rank <= 3) {
      ++row.top3;
      ++report.total.top3;
    } else {
      report.misses.push_back(EvalMiss{q, std::move(got)});
    }
  }
  return report;
}

std::string FormatEvalReport(const EvalReport& report) {
  std::string out;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%-24s %7s %7s %7s\n", "class", "queries", "top-1", "top-3");
  out += buf;
  auto line = [&](const std::string& name, const EvalRow& r) {
    std::snprintf(buf, sizeof buf, "%-24s %7zu %6.0f%% %6.0f%%\n", name.c_str(), r.queries, 100 * r.Top1Rate(),
                  100 * r.Top3Rate());
    out += buf;
  };
  for (const auto& [group, row] : report.by_group) line(group, row);
  line("TOTAL", report.total);
  return out;
}

}  // namespace faultline::assistant::kb
