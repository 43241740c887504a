// Helper of slurm_real_test.sh and slurm_breaker_test.sh: writes a store holding one
// drain-worthy diagnosis, or reads back the policy's stored drain decisions.
//   slurm_store_tool STORE NODE [--later|--later2|--later3]   -> prints the new diagnosis row id; also
//     stores one observation dated now, so `faultline check` finds the node's data fresh
//   slurm_store_tool --count-done|--count-failed STORE NODE
//   slurm_store_tool --latest STORE NODE  -> the latest drain decision: "STATE<TAB>OUTCOME" ("none")
#include <cstdio>
#include <cstring>
#include <string>

#include "core/clock.h"
#include "store/store.h"

using namespace faultline;

int main(int argc, char** argv) {
  if (argc >= 4 && std::strcmp(argv[1], "--latest") == 0) {
    auto store = Store::Open(argv[2]);
    if (!store.ok()) return 2;
    RecordQuery q;
    q.node = argv[3];
    q.limit = 0;
    auto rows = (*store)->ListActions(q);
    if (!rows.ok()) return 2;
    const Row<ActionRecord>* latest = nullptr;
    for (const auto& r : rows->rows) {
      auto c = r.value.attrs.find("class");
      if (c == r.value.attrs.end() || c->second != "drain") continue;
      if (latest == nullptr || r.id > latest->id) latest = &r;
    }
    if (latest == nullptr) {
      std::printf("none\n");
    } else {
      auto s = latest->value.attrs.find("state");
      std::printf("%s\t%s\n", s == latest->value.attrs.end() ? "?" : s->second.c_str(), latest->value.outcome.c_str());
    }
    return 0;
  }
  if (argc >= 4 && (std::strcmp(argv[1], "--count-done") == 0 || std::strcmp(argv[1], "--count-failed") == 0)) {
    const std::string want = std::strcmp(argv[1], "--count-done") == 0 ? "done" : "failed";
    auto store = Store::Open(argv[2]);
    if (!store.ok()) return 2;
    RecordQuery q;
    q.node = argv[3];
    q.limit = 0;
    auto rows = (*store)->ListActions(q);
    if (!rows.ok()) return 2;
    int n = 0;
    for (const auto& r : rows->rows) {
      auto s = r.value.attrs.find("state");
      auto c = r.value.attrs.find("class");
      if (s != r.value.attrs.end() && c != r.value.attrs.end() && s->second == want && c->second == "drain") ++n;
    }
    std::printf("%d\n", n);
    return 0;
  }
  if (argc < 3) {
    std::fprintf(stderr, "usage: slurm_store_tool STORE NODE [--later|--later2|--later3]\n");
    return 2;
  }
  auto store = Store::Open(argv[1]);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 2;
  }
  const std::string variant = argc > 3 ? argv[3] : "";
  // One incident per variant: another GPU, first seen an hour later each.
  const int later = variant.empty() ? 0 : variant == "--later" ? 1 : variant == "--later2" ? 2 : 3;
  Diagnosis d;
  d.fault_class = FaultClass::kHbmUncorrectable;
  d.layer = Layer::kGpu;
  d.component = GpuComponent(std::string(1, "3567"[later]));
  d.action = Action::kRma;
  d.severity = Severity::kCritical;
  d.confidence = 0.9;
  d.first_ns = 1'764'400'000LL * 1'000'000'000LL + later * 3600'000'000'000LL;
  d.last_ns = d.first_ns + 60'000'000'000LL;
  d.summary = "uncorrectable ECC error on GPU";
  d.evidence.push_back(Evidence{d.first_ns, std::nullopt, Source::kKmsg, d.component.Id(), "NVRM: Xid 48: DBE", 1});
  auto id = (*store)->PutDiagnosis(argv[2], d, d.last_ns);
  if (!id.ok()) {
    std::fprintf(stderr, "%s\n", id.status().ToString().c_str());
    return 2;
  }
  Observation heard;
  heard.time_ns = SystemClock().NowNs();
  heard.node = argv[2];
  heard.layer = Layer::kGpu;
  heard.component = d.component;
  heard.text = "slurm_store_tool: the agent's sources answered";
  if (auto appended = (*store)->Append({heard}); !appended.ok()) {
    std::fprintf(stderr, "%s\n", appended.status().ToString().c_str());
    return 2;
  }
  std::printf("%lld\n", static_cast<long long>(*id));
  return 0;
}
