#include <gtest/gtest.h>

#include "store/store.h"
#include "test_util.h"

namespace faultline {
namespace {

using testing::kT0;
using testing::PsuVoltage;
using testing::TempDir;
using testing::XidRecord;

constexpr int64_t kDayNs = int64_t{24} * 3600 * kNsPerSec;

// A store that keeps a week by age and has no size limit.
std::unique_ptr<Store> OpenWeekStore(TempDir& dir, const std::string& name) {
  StoreOptions options;
  options.max_age_ns = 7 * kDayNs;
  options.max_bytes = 0;
  return testing::OpenStore(dir.File(name), options);
}

TEST(StoreRetentionTest, DeletesRowsOlderThanMaxAgeButKeepsCursors) {
  TempDir dir;
  auto store = OpenWeekStore(dir, "f.db");
  const int64_t now = kT0 + 30 * kDayNs;
  std::vector<Observation> batch;
  for (int d = 0; d <= 30; ++d) batch.push_back(PsuVoltage(200 + d, kT0 + d * kDayNs));
  ASSERT_TRUE(store->Append(batch, {{"gpu-node-07", "redfish:bmc", "sel_last_id", "9"}}).ok());
  Finding old_finding;
  old_finding.first_ns = old_finding.last_ns = kT0;
  Finding recent_finding;
  recent_finding.first_ns = recent_finding.last_ns = now - kDayNs;
  ASSERT_TRUE(store->PutFinding("gpu-node-07", old_finding).ok());
  ASSERT_TRUE(store->PutFinding("gpu-node-07", recent_finding).ok());

  auto r = store->ApplyRetention(now);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->observations_deleted, 23);  // days 0..22 are older than now - 7d
  EXPECT_EQ(r->records_deleted, 1);
  auto rows = store->QueryObservations({})->rows;
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows.front().value.time_ns, now - 7 * kDayNs);
  EXPECT_EQ(store->ListFindings({})->rows.size(), 1u);
  EXPECT_EQ(store->GetCursor("gpu-node-07", "redfish:bmc", "sel_last_id")->value_or(""), "9");
}

// A healthy node's diagnosis ("none") has no evidence and so no times: it ages from when
// it was stored. Dated 1970, the first hourly retention deleted it, and the agent, which
// stores a diagnosis only when it changes, never stored it again.
TEST(StoreRetentionTest, ADiagnosisWithoutEvidenceAgesFromWhenItWasStored) {
  TempDir dir;
  auto store = OpenWeekStore(dir, "d.db");
  const int64_t now = kT0 + 30 * kDayNs;
  Diagnosis none;                                                            // first_ns = last_ns = 0
  ASSERT_TRUE(store->PutDiagnosis("gpu-node-07", none, kT0).ok());           // stored 30 days ago
  ASSERT_TRUE(store->PutDiagnosis("gpu-node-07", none, now - kDayNs).ok());  // stored yesterday
  Diagnosis old_evidence;
  old_evidence.first_ns = old_evidence.last_ns = kT0;
  ASSERT_TRUE(store->PutDiagnosis("gpu-node-07", old_evidence, now).ok());  // old evidence, stored now
  auto r = store->ApplyRetention(now);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->records_deleted, 2);
  auto left = store->DiagnosesAfter(0, 10);
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->rows.size(), 1u);
  EXPECT_EQ(left->rows[0].value.last_ns, 0);
}

// A training job's step report (the workload source's step_time, or its throughput).
Observation StepReport(const std::string& job, uint64_t step, int64_t time_ns, ObsKind kind = ObsKind::kStepTime) {
  Observation o;
  o.time_ns = time_ns;
  o.node = "gpu-node-07";
  o.layer = Layer::kWorkload;
  o.source = Source::kWorkload;
  o.component = GpuComponent("0");
  o.kind = kind;
  o.seq = step;
  o.value = kind == ObsKind::kStepTime ? 1.0 : 512.0;
  o.attrs["job"] = job;
  o.attrs["step"] = std::to_string(step);
  return o;
}

// Store options that thin only (no age or size limit): a day back, one step a minute.
StoreOptions ThinningOnly() {
  StoreOptions options;
  options.max_age_ns = 0;
  options.max_bytes = 0;
  return options;
}

int64_t CountOf(Store& store, ObsKind kind, const std::string& job) {
  int64_t n = 0;
  auto all = store.QueryObservations({});
  EXPECT_TRUE(all.ok());
  if (!all.ok()) return -1;
  for (const auto& row : all->rows) {
    const Observation& o = row.value;
    n += o.kind == kind && o.attrs.count("job") && o.attrs.at("job") == job;
  }
  return n;
}

// Per-step samples a day old keep one row a minute per job and kind (the first of each
// minute); recent steps, and anything that is not a per-step sample, are all kept.
TEST(StoreRetentionTest, StepReportsOlderThanADayAreThinnedToOneAMinutePerJob) {
  TempDir dir;
  auto store = testing::OpenStore(dir.File("t.db"), ThinningOnly());
  const int64_t now = kT0 + 2 * kDayNs;                   // kT0 is on a whole minute
  const int64_t start = now - kDayNs - 3600 * kNsPerSec;  // 25 h ago: 1 h to thin, 1 h to keep
  std::vector<Observation> batch;
  for (uint64_t i = 0; i < 720; ++i) {  // a step every 10 s for 2 h, two jobs, both kinds
    const int64_t t = start + static_cast<int64_t>(i) * 10 * kNsPerSec;
    batch.push_back(StepReport("llm", i, t));
    batch.push_back(StepReport("llm", i, t, ObsKind::kThroughput));
    batch.push_back(StepReport("eval", i, t + kNsPerSec));
  }
  batch.push_back(XidRecord(1, start));  // a day-old kernel event: never thinned
  ASSERT_TRUE(store->Append(batch, {}).ok());

  auto r = store->ApplyRetention(now);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // The older hour: 360 steps of each series -> 60 (one a minute); the recent hour: 360.
  EXPECT_EQ(r->observations_thinned, 3 * (360 - 60));
  EXPECT_EQ(r->observations_deleted, r->observations_thinned);
  EXPECT_EQ(CountOf(*store, ObsKind::kStepTime, "llm"), 60 + 360);
  EXPECT_EQ(CountOf(*store, ObsKind::kThroughput, "llm"), 60 + 360);
  EXPECT_EQ(CountOf(*store, ObsKind::kStepTime, "eval"), 60 + 360);
  ObservationQuery xid;
  xid.kind = ObsKind::kXid;
  EXPECT_EQ(store->QueryObservations(xid)->rows.size(), 1u);
  // The row kept for a minute is its first report, a real one.
  ObservationQuery first;
  first.until_ns = start + 59 * kNsPerSec;
  auto first_minute = store->QueryObservations(first);
  ASSERT_TRUE(first_minute.ok());
  for (const auto& row : first_minute->rows) {
    if (row.value.kind == ObsKind::kStepTime && row.value.attrs.at("job") == "llm") {
      EXPECT_EQ(row.value.time_ns, start);
    }
  }
}

// Each retention thins only what aged past a day since the last one, and the same
// minute is never thinned twice (so never left with two rows or with none).
TEST(StoreRetentionTest, ThinningGoesOnAsStepsAgeAndDoesNotThinAMinuteTwice) {
  TempDir dir;
  auto store = testing::OpenStore(dir.File("t.db"), ThinningOnly());
  const int64_t start = kT0;
  std::vector<Observation> batch;
  for (uint64_t i = 0; i < 1080; ++i) {  // a step every 10 s for 3 h
    batch.push_back(StepReport("llm", i, start + int64_t(i) * 10 * kNsPerSec));
  }
  ASSERT_TRUE(store->Append(batch, {}).ok());
  int64_t now = start + kDayNs + 3600 * kNsPerSec + 30 * kNsPerSec;  // first hour and half a minute aged
  auto r1 = store->ApplyRetention(now);
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(r1->observations_thinned, 360 - 60);  // whole minutes only: the half minute waits
  auto again = store->ApplyRetention(now);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->observations_thinned, 0);
  now += 3600 * kNsPerSec;  // the second hour ages
  auto r2 = store->ApplyRetention(now);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->observations_thinned, 360 - 60);
  EXPECT_EQ(CountOf(*store, ObsKind::kStepTime, "llm"), 60 + 60 + 360);
}

// A store reopened (the agent restarted, or upgraded over weeks of steps never thinned)
// thins from its oldest step on, a day of history per pass, until it has caught up.
TEST(StoreRetentionTest, ThinningAfterAReopenCatchesUpADayPerPass) {
  TempDir dir;
  const int64_t now = kT0 + 10 * kDayNs;
  {
    auto store = testing::OpenStore(dir.File("t.db"), ThinningOnly());
    std::vector<Observation> batch;
    for (uint64_t i = 0; i < 60; ++i) batch.push_back(StepReport("llm", i, kT0 + int64_t(i) * kNsPerSec));
    for (uint64_t i = 0; i < 60; ++i) {
      batch.push_back(StepReport("llm", 100 + i, kT0 + 5 * kDayNs + int64_t(i) * kNsPerSec));
    }
    ASSERT_TRUE(store->Append(batch, {}).ok());
  }
  auto store = testing::OpenStore(dir.File("t.db"), ThinningOnly());
  std::vector<int64_t> thinned;
  for (int pass = 0; pass < 10; ++pass) {
    auto r = store->ApplyRetention(now);
    ASSERT_TRUE(r.ok());
    thinned.push_back(r->observations_thinned);
  }
  // Day 0 at the first pass, day 5 at the sixth; days 1-4 and 6-8 had nothing to thin.
  EXPECT_EQ(thinned, (std::vector<int64_t>{59, 0, 0, 0, 0, 59, 0, 0, 0, 0}));
  EXPECT_EQ(CountOf(*store, ObsKind::kStepTime, "llm"), 2);
}

TEST(StoreRetentionTest, ThinningTurnedOffKeepsEveryStep) {
  TempDir dir;
  StoreOptions options = ThinningOnly();
  options.thin_after_ns = 0;
  auto store = testing::OpenStore(dir.File("t.db"), options);
  std::vector<Observation> batch;
  for (uint64_t i = 0; i < 120; ++i) batch.push_back(StepReport("llm", i, kT0 + int64_t(i) * kNsPerSec));
  ASSERT_TRUE(store->Append(batch, {}).ok());
  auto r = store->ApplyRetention(kT0 + 5 * kDayNs);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->observations_thinned, 0);
  EXPECT_EQ(CountOf(*store, ObsKind::kStepTime, "llm"), 120);
}

TEST(StoreRetentionTest, SizeLimitDropsOldestObservationsAndShrinksTheFile) {
  TempDir dir;
  StoreOptions options;
  options.synchronous = StoreOptions::Synchronous::kNormal;
  options.max_age_ns = 0;
  options.max_bytes = 1 << 20;
  options.retention_batch_rows = 500;
  auto store = testing::OpenStore(dir.File("f.db"), options);
  std::vector<Observation> batch;
  for (uint64_t i = 0; i < 6000; ++i) {
    Observation o = XidRecord(i, kT0 + static_cast<int64_t>(i) * kNsPerSec);
    o.raw += std::string(400, 'x');
    batch.push_back(std::move(o));
  }
  ASSERT_EQ(store->Append(batch)->inserted, 6000u);
  auto before = store->Stats();
  ASSERT_GT(before->used_bytes, options.max_bytes);

  auto r = store->ApplyRetention(kT0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto after = store->Stats();
  EXPECT_LE(after->used_bytes, options.max_bytes);
  EXPECT_LT(after->file_bytes, before->file_bytes);  // freed pages went back to the OS
  EXPECT_EQ(r->observations_deleted, 6000 - after->observations);
  // What is left is the newest tail, contiguous up to the last record.
  auto rows = store->QueryObservations({})->rows;
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.back().value.seq, 5999u);
  EXPECT_EQ(*rows.front().value.seq, 6000u - rows.size());
  // Under the limit, retention deletes nothing.
  EXPECT_EQ(store->ApplyRetention(kT0)->observations_deleted, 0);
}

}  // namespace
}  // namespace faultline
