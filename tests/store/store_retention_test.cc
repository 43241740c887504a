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
  Diagnosis none;  // first_ns = last_ns = 0
  ASSERT_TRUE(store->PutDiagnosis("gpu-node-07", none, kT0).ok());             // stored 30 days ago
  ASSERT_TRUE(store->PutDiagnosis("gpu-node-07", none, now - kDayNs).ok());    // stored yesterday
  Diagnosis old_evidence;
  old_evidence.first_ns = old_evidence.last_ns = kT0;
  ASSERT_TRUE(store->PutDiagnosis("gpu-node-07", old_evidence, now).ok());     // old evidence, stored now
  auto r = store->ApplyRetention(now);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->records_deleted, 2);
  auto left = store->DiagnosesAfter(0, 10);
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->rows.size(), 1u);
  EXPECT_EQ(left->rows[0].value.last_ns, 0);
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
