// Store::*After: reading rows after an id, in id order (the fleet publisher's feed).
#include <gtest/gtest.h>

#include "store/store.h"
#include "test_util.h"

namespace faultline {
namespace {

using testing::kT0;
using testing::OpenStore;
using testing::PsuVoltage;
using testing::RawExec;
using testing::TempDir;
using testing::XidRecord;

TEST(StoreAfterTest, ObservationsComeInIdOrderAfterTheCursorInPages) {
  TempDir dir;
  auto store = OpenStore(dir.File("f.db"));
  ASSERT_NE(store, nullptr);
  // Stored out of time order, over two nodes: id order is storage order, not time order.
  std::vector<Observation> batch = {XidRecord(1, kT0 + 5'000'000'000), PsuVoltage(11.9, kT0, "n2"),
                                    XidRecord(2, kT0 + 1'000'000'000, "n3")};
  ASSERT_TRUE(store->Append(batch).ok());
  ASSERT_TRUE(store->Append({PsuVoltage(12.4, kT0 + 9'000'000'000, "n2")}).ok());
  // A duplicate adds no row.
  ASSERT_TRUE(store->Append({XidRecord(1, kT0 + 5'000'000'000)}).ok());

  auto all = store->ObservationsAfter(0, 0);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->rows.size(), 4u);
  for (size_t i = 1; i < all->rows.size(); ++i) EXPECT_LT(all->rows[i - 1].id, all->rows[i].id);
  EXPECT_EQ(all->rows[0].value.seq, 1u);
  EXPECT_EQ(all->rows[1].node, "n2");
  EXPECT_EQ(all->rows[2].node, "n3");
  EXPECT_DOUBLE_EQ(*all->rows[3].value.value, 12.4);

  auto page1 = store->ObservationsAfter(0, 2);
  ASSERT_TRUE(page1.ok());
  ASSERT_EQ(page1->rows.size(), 2u);
  auto page2 = store->ObservationsAfter(page1->rows.back().id, 2);
  ASSERT_TRUE(page2.ok());
  ASSERT_EQ(page2->rows.size(), 2u);
  EXPECT_EQ(page2->rows[0].id, all->rows[2].id);
  auto none = store->ObservationsAfter(all->rows.back().id, 10);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->rows.empty());
  // A cursor past the end (or negative) is not an error.
  EXPECT_TRUE(store->ObservationsAfter(1'000'000, 10)->rows.empty());
  EXPECT_EQ(store->ObservationsAfter(-5, 0)->rows.size(), 4u);
}

TEST(StoreAfterTest, RecordsComeInIdOrderAndUndecodableOnesAreReportedWithTheirIds) {
  TempDir dir;
  const std::string path = dir.File("r.db");
  {
    auto store = OpenStore(path);
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < 3; ++i) {
      Finding f;
      f.layer = Layer::kGpu;
      f.fault_class = i == 1 ? FaultClass::kNvlinkErrors : FaultClass::kHbmSbeAging;
      f.first_ns = kT0 - i;  // older times at higher ids: order is by id
      f.last_ns = kT0;
      f.summary = "finding " + std::to_string(i);
      ASSERT_TRUE(store->PutFinding("n" + std::to_string(i), f).ok());
      Diagnosis d;
      d.fault_class = FaultClass::kGpuThermal;
      d.summary = "diagnosis " + std::to_string(i);
      ASSERT_TRUE(store->PutDiagnosis("n1", d, kT0 + i).ok());
      ActionRecord a;
      a.node = "n1";
      a.time_ns = kT0 - 10 * i;
      a.action = Action::kDrain;
      a.reason = "action " + std::to_string(i);
      ASSERT_TRUE(store->PutAction(a).ok());
    }
  }
  RawExec(path, "UPDATE findings SET payload = replace(payload, 'nvlink_errors', 'cosmic_ray') WHERE id = 2");
  auto store = OpenStore(path);
  ASSERT_NE(store, nullptr);
  auto findings = store->FindingsAfter(0, 0);
  ASSERT_TRUE(findings.ok());
  ASSERT_EQ(findings->rows.size(), 2u);
  EXPECT_EQ(findings->rows[0].value.summary, "finding 0");
  EXPECT_EQ(findings->rows[1].value.summary, "finding 2");
  EXPECT_EQ(findings->rows[1].node, "n2");
  ASSERT_EQ(findings->bad_rows.size(), 1u);
  EXPECT_EQ(findings->bad_rows[0].id, 2);
  EXPECT_EQ(findings->bad_rows[0].table, "findings");

  auto diagnoses = store->DiagnosesAfter(1, 1);
  ASSERT_TRUE(diagnoses.ok());
  ASSERT_EQ(diagnoses->rows.size(), 1u);
  EXPECT_EQ(diagnoses->rows[0].id, 2);
  EXPECT_EQ(diagnoses->rows[0].value.summary, "diagnosis 1");

  auto actions = store->ActionsAfter(0, 0);
  ASSERT_TRUE(actions.ok());
  ASSERT_EQ(actions->rows.size(), 3u);
  EXPECT_EQ(actions->rows[2].value.reason, "action 2");
  EXPECT_TRUE(store->ActionsAfter(3, 0)->rows.empty());
}

TEST(StoreAfterTest, MaxRowIdsFollowEachTableAndRestartWhenRetentionEmptiesIt) {
  TempDir dir;
  auto store = OpenStore(dir.File("m.db"));
  ASSERT_NE(store, nullptr);
  auto empty = store->GetMaxRowIds();
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->observations, 0);
  EXPECT_EQ(empty->diagnoses, 0);
  ASSERT_TRUE(store->Append({XidRecord(1), XidRecord(2), XidRecord(3)}).ok());
  Diagnosis d;
  d.fault_class = FaultClass::kGpuFellOffBus;
  d.first_ns = d.last_ns = kT0;
  ASSERT_TRUE(store->PutDiagnosis("n1", d, kT0).ok());
  ASSERT_TRUE(store->PutDiagnosis("n1", d, kT0).ok());
  auto ids = store->GetMaxRowIds();
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->observations, 3);
  EXPECT_EQ(ids->findings, 0);
  EXPECT_EQ(ids->diagnoses, 2);
  EXPECT_EQ(ids->actions, 0);
  // Everything ages out: the tables empty and the next ids start again from 1.
  ASSERT_TRUE(store->ApplyRetention(kT0 + int64_t{400} * 24 * 3600 * 1'000'000'000).ok());
  ASSERT_TRUE(store->PutDiagnosis("n1", d, kT0).ok());
  ids = store->GetMaxRowIds();
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->observations, 0);
  EXPECT_EQ(ids->diagnoses, 1);
}

TEST(StoreAfterTest, AClosedStoreIsUnavailable) {
  auto store = OpenStore(":memory:");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Close().ok());
  EXPECT_EQ(store->ObservationsAfter(0, 1).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(store->DiagnosesAfter(0, 1).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace faultline
