// 800,000 duplicate kernel lines -> one action. The lines go the agent's way (log-line
// parser, kernel event assembler, the kmsg source's deduper, the agent's detectors and the
// isolator), the primary diagnosis is stored after every chunk of 100,000 lines (more often
// than the agent would: it stores only when the primary changes), and the policy sees every
// stored row at every evaluation.
#include <gtest/gtest.h>

#include "core/sanitizer.h"
#include "engine/isolate/isolator.h"
#include "engine/offline/offline.h"
#include "parse/log_line.h"
#include "policy/engine.h"
#include "policy_fakes.h"
#include "sources/kmsg/dedup.h"
#include "sources/kmsg/kernel_events.h"
#include "store/store.h"

namespace faultline::policy {
namespace {

using actions::ActionClass;

TEST(PolicyDuplicates, EightHundredThousandDuplicateLinesGiveOneDrain) {
  auto store = Store::Open(":memory:");
  ASSERT_TRUE(store.ok());
  testing::FakePlatform platform;
  testing::FakeActuator slurm(platform, {ActionClass::kDrain, ActionClass::kCordon});
  testing::FakeFleet fleet;
  PolicyConfig config;
  config.enable = {ActionClass::kDrain};
  Engine engine(config, **store, "gpu-7", {&slurm}, &fleet);

  const std::string line =
      "2025-11-29T10:00:00.000000+00:00 gpu-7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
      "name=<unknown>, GPU has fallen off the bus.";
  KernelEventsOptions ko;
  ko.node = "gpu-7";
  KernelEventAssembler assembler(ko);
  ObservationDeduper dedup;
  std::vector<Observation> kept;
  std::vector<Row<Diagnosis>> stored;
  // 800,000 lines; 80,000 under ASan (the same eight chunks, ten times smaller).
  constexpr int kLines = static_cast<int>(SweepSize(800'000, 80'000));
  constexpr int kChunk = kLines / 8;
  uint64_t total_count = 0;
  for (int chunk = 0; chunk < kLines / kChunk; ++chunk) {
    std::vector<Observation> out;
    for (int i = 0; i < kChunk; ++i) {
      LogLine parsed = ParseLogLine(line, 0);
      assembler.Feed(parsed, line, out);
      for (Observation& o : out) dedup.Add(std::move(o));
      out.clear();
    }
    assembler.Finish(out);
    for (Observation& o : out) dedup.Add(std::move(o));
    for (Observation& o : dedup.Take()) kept.push_back(std::move(o));
    ASSERT_FALSE(kept.empty());
    auto diagnoses = Isolate(BuildOfflineInput(kept, {}));
    ASSERT_FALSE(diagnoses.empty());
    ASSERT_EQ(diagnoses.front().fault_class, FaultClass::kGpuFellOffBus);
    const int64_t now = diagnoses.front().last_ns + (chunk + 1) * 1'000'000'000LL;
    auto id = (*store)->PutDiagnosis("gpu-7", diagnoses.front(), now);
    ASSERT_TRUE(id.ok());
    stored.push_back(Row<Diagnosis>{*id, "gpu-7", diagnoses.front()});
    ASSERT_TRUE(engine.OnDiagnoses(stored, now).ok());
  }
  for (const Observation& o : kept) total_count += o.count;
  EXPECT_EQ(total_count, static_cast<uint64_t>(kLines));  // every line counted, none lost
  EXPECT_EQ(stored.size(), 8u);
  EXPECT_EQ(slurm.applied.size(), 1u);
  EXPECT_EQ(platform.applies(), 1);
  RecordQuery q;
  q.limit = 0;
  auto rows = (*store)->ListActions(q);
  ASSERT_TRUE(rows.ok());
  size_t done = 0;
  for (const auto& r : rows->rows) done += r.value.attrs.count("state") && r.value.attrs.at("state") == "done";
  EXPECT_EQ(done, 1u);
}

}  // namespace
}  // namespace faultline::policy
