// Past incidents: diagnoses closed with policy::ResolveIncident (`faultline resolve`) become
// knowledge-base documents, so a recurring fault retrieves how it was fixed last time.
#include <gtest/gtest.h>

#include "assistant/kb/incidents.h"
#include "assistant/kb/knowledge_base.h"
#include "kb_test_util.h"
#include "policy/resolve.h"
#include "store/store.h"

namespace faultline::assistant::kb {
namespace {

using testing::TempTree;

constexpr int64_t kT0 = 1'764'400'000LL * 1'000'000'000LL;
constexpr int64_t kHour = 3600LL * 1'000'000'000LL;

Diagnosis MakeDiag(FaultClass c, ComponentType type, const std::string& name, const std::string& summary, int64_t t) {
  Diagnosis d;
  d.fault_class = c;
  d.component.type = type;
  d.component.name = name;
  d.summary = summary;
  d.first_ns = t;
  d.last_ns = t + 60'000'000'000LL;
  d.severity = Severity::kCritical;
  d.action = Action::kDrain;
  return d;
}

class KbIncidentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Open(":memory:");
    ASSERT_TRUE(s.ok());
    store_ = std::move(*s);
  }
  int64_t Put(const std::string& node, const Diagnosis& d) {
    auto id = store_->PutDiagnosis(node, d, d.last_ns);
    EXPECT_TRUE(id.ok());
    return id.ok() ? *id : 0;
  }
  void Resolve(int64_t id, const std::string& fixed_by, int64_t when) {
    auto r = policy::ResolveIncident(*store_, id, fixed_by, nullptr, "", when);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  std::unique_ptr<Store> store_;
};

TEST_F(KbIncidentsTest, OnlyResolvedDiagnosesWithFixedByBecomeIncidents) {
  const int64_t lost = Put(
      "node-7", MakeDiag(FaultClass::kGpuFellOffBus, ComponentType::kGpu, "3", "GPU 3 fell off the bus (XID 79)", kT0));
  const int64_t psu =
      Put("node-8", MakeDiag(FaultClass::kPowerSupply, ComponentType::kPsu, "2", "PSU2 lost AC input", kT0 + kHour));
  Put("node-9", MakeDiag(FaultClass::kNvlinkErrors, ComponentType::kNvlink, "1/4", "NVLink CRC errors",
                         kT0 + 2 * kHour));  // open: not an incident
  Resolve(lost, "reseated the GPU 3 riser; passed dcgmi diag -r 3", kT0 + 5 * kHour);
  Resolve(psu, "replaced the PDU power cord", kT0 + 6 * kHour);
  // A non-resolution action row of an open diagnosis is ignored.
  ActionRecord other;
  other.time_ns = kT0;
  other.node = "node-9";
  other.action = Action::kDrain;
  other.diagnosis_id = 3;
  other.attrs["fixed_by"] = "not a resolution";
  ASSERT_TRUE(store_->PutAction(other).ok());

  auto incidents = ResolvedIncidents(*store_);
  ASSERT_TRUE(incidents.ok()) << incidents.status().ToString();
  ASSERT_EQ(incidents->size(), 2u);
  const Incident& a = (*incidents)[0];
  EXPECT_EQ(a.diagnosis_id, lost);
  EXPECT_EQ(a.node, "node-7");
  EXPECT_EQ(a.fault_class, FaultClass::kGpuFellOffBus);
  EXPECT_EQ(a.component, "gpu/3");
  EXPECT_EQ(a.fixed_by, "reseated the GPU 3 riser; passed dcgmi diag -r 3");
  EXPECT_EQ(a.first_ns, kT0);
  EXPECT_EQ(a.resolved_ns, kT0 + 5 * kHour);
  EXPECT_EQ((*incidents)[1].component, "psu/2");
}

TEST_F(KbIncidentsTest, RecurringFaultRetrievesLastFix) {
  TempTree t("incidents");
  t.Write("runbooks/gpu_fell_off_bus.md",
          "---\nclass: gpu_fell_off_bus\ncomponent: gpu\n---\n# GPU fell off the bus\n\n## Safe actions\n"
          "Drain and reboot the node.\n");
  const int64_t lost = Put(
      "node-7", MakeDiag(FaultClass::kGpuFellOffBus, ComponentType::kGpu, "3", "GPU 3 fell off the bus (XID 79)", kT0));
  Resolve(lost, "reseated the riser card of GPU 3", kT0 + 5 * kHour);
  auto kb = KnowledgeBase::Open(t.kb(), t.index());
  ASSERT_TRUE(kb.ok());
  ASSERT_TRUE((*kb)->Reindex().ok());
  auto n = IndexResolvedIncidents(*store_, **kb);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1u);
  auto again = IndexResolvedIncidents(*store_, **kb);  // idempotent
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*(*kb)->DocumentCount(), 2u);

  auto hits = (*kb)->Search("gpu 3 fell off the bus again on node-7, how did we fix it", 3);
  ASSERT_TRUE(hits.ok());
  ASSERT_FALSE(hits->empty());
  EXPECT_EQ((*hits)[0].doc_id, "incident/" + std::to_string(lost));
  EXPECT_NE((*hits)[0].text.find("reseated the riser card"), std::string::npos);
  EXPECT_NE((*hits)[0].title.find("gpu_fell_off_bus on gpu/3"), std::string::npos);
}

TEST_F(KbIncidentsTest, EmptyStoreHasNoIncidents) {
  auto incidents = ResolvedIncidents(*store_);
  ASSERT_TRUE(incidents.ok());
  EXPECT_TRUE(incidents->empty());
}

}  // namespace
}  // namespace faultline::assistant::kb
