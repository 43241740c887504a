// The knowledge base (docs/assistant.md "Knowledge base"): retrieval quality and speed.
// First prints top-1 / top-3 hit rates per fault class for tests/assistant_kb/queries.tsv and the
// held-out queries_heldout.tsv over the repository's kb/ (index built in a temporary folder),
// and the queries that missed; then
// times a full index build, an incremental re-index with nothing changed, and one search.
//   build/bench/bench_kb [--benchmark_min_time=0.2]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "assistant/kb/eval.h"
#include "assistant/kb/knowledge_base.h"

namespace fs = std::filesystem;
using faultline::assistant::kb::KnowledgeBase;

namespace {

const std::string kKb = std::string(FAULTLINE_SOURCE_DIR) + "/kb";

fs::path TempDir(const char* tag) {
  fs::path p = fs::temp_directory_path() / ("bench_kb_" + std::string(tag) + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p;
}

std::unique_ptr<KnowledgeBase> OpenIndexed(const fs::path& dir) {
  auto kb = KnowledgeBase::Open(kKb, dir.string());
  if (!kb.ok()) {
    std::fprintf(stderr, "open: %s\n", kb.status().ToString().c_str());
    std::exit(1);
  }
  auto st = (*kb)->Reindex();
  if (!st.ok()) {
    std::fprintf(stderr, "reindex: %s\n", st.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*kb);
}

int PrintHitRates(KnowledgeBase& kb, const char* file) {
  std::ifstream in(std::string(FAULTLINE_SOURCE_DIR) + "/tests/assistant_kb/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  auto queries = faultline::assistant::kb::ParseEvalQueries(ss.str());
  if (!queries.ok()) {
    std::fprintf(stderr, "%s: %s\n", file, queries.status().ToString().c_str());
    return 1;
  }
  auto report = faultline::assistant::kb::Evaluate(kb, *queries);
  if (!report.ok()) {
    std::fprintf(stderr, "evaluate: %s\n", report.status().ToString().c_str());
    return 1;
  }
  std::printf("== %s\n%s", file, faultline::assistant::kb::FormatEvalReport(*report).c_str());
  for (const auto& m : report->misses) {
    std::printf("miss [%s] \"%s\" want %s got", m.query.group.c_str(), m.query.query.c_str(), m.query.expected.c_str());
    for (const auto& g : m.got) std::printf(" %s", g.c_str());
    std::printf("\n");
  }
  return 0;
}

int PrintHitRates() {
  const fs::path dir = TempDir("eval");
  auto kb = OpenIndexed(dir);
  int rc = PrintHitRates(*kb, "queries.tsv");
  if (rc == 0) rc = PrintHitRates(*kb, "queries_heldout.tsv");
  kb.reset();
  fs::remove_all(dir);
  return rc;
}

void BM_KbFullIndex(benchmark::State& state) {
  for (auto _ : state) {
    const fs::path dir = TempDir("full");
    auto kb = OpenIndexed(dir);
    kb.reset();
    fs::remove_all(dir);
  }
}
BENCHMARK(BM_KbFullIndex)->Unit(benchmark::kMillisecond);

void BM_KbReindexUnchanged(benchmark::State& state) {
  const fs::path dir = TempDir("inc");
  auto kb = OpenIndexed(dir);
  for (auto _ : state) benchmark::DoNotOptimize(kb->Reindex());
  kb.reset();
  fs::remove_all(dir);
}
BENCHMARK(BM_KbReindexUnchanged)->Unit(benchmark::kMillisecond);

void BM_KbSearch(benchmark::State& state) {
  const fs::path dir = TempDir("search");
  auto kb = OpenIndexed(dir);
  for (auto _ : state) benchmark::DoNotOptimize(kb->Search("gpu fell off the bus after a power blip", 5));
  kb.reset();
  fs::remove_all(dir);
}
BENCHMARK(BM_KbSearch)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  if (int rc = PrintHitRates(); rc != 0) return rc;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
