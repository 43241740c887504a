// What the API gives the dashboard for one diagnosis (GET /api/v1/diagnoses/{id}): the
// policy's plan with each step's recorded state, and the kinds of reading that show the fault.
// In process: ApiHandler over a StoreProvider, no sockets.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "actions/actuator.h"
#include "api/diagnosis_view.h"
#include "api/handlers.h"
#include "api/provider.h"
#include "policy/identity.h"
#include "policy/rules.h"
#include "store/store.h"

namespace faultline {
namespace {

using actions::ActionClass;

constexpr int64_t kT0 = 1795996800LL * 1'000'000'000;  // 2026-11-30T00:00:00Z
constexpr int64_t kSec = 1'000'000'000;
const std::string kNode = "gpu-node-12";

Diagnosis RemapFailure() {
  Diagnosis d;
  d.fault_class = FaultClass::kRowRemapExhausted;
  d.layer = Layer::kGpu;
  d.component = GpuComponent("4");
  d.action = Action::kRma;
  d.confidence = 0.95;
  d.severity = Severity::kFatal;
  d.first_ns = kT0 + 127 * kSec;
  d.last_ns = kT0 + 135 * kSec;
  d.summary = "row remapping failed on gpu/4 (spare rows exhausted)";
  return d;
}

// An action row as the policy engine writes it (policy/engine.cc Engine::Record).
ActionRecord Recorded(const Diagnosis& d, int64_t diagnosis_id, ActionClass c, const std::string& state, int64_t t) {
  ActionRecord r;
  r.time_ns = t;
  r.node = kNode;
  r.action = actions::CoreAction(c);
  r.diagnosis_id = diagnosis_id;
  r.dry_run = state == "dry_run";
  r.outcome = state + ": would " + std::string(actions::ToString(c));
  r.attrs["key"] = policy::DecisionKey(kNode, c, d);
  r.attrs["incident"] = policy::IncidentKey(d);
  r.attrs["fault"] = policy::FaultKey(d);
  r.attrs["class"] = std::string(actions::ToString(c));
  r.attrs["state"] = state;
  r.attrs["rule"] = "test";
  return r;
}

class DiagnosisView : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("faultline-dashboard-api-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
    std::filesystem::remove(path_);
    auto s = Store::Open(path_.string());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove(path_);
  }

  int64_t Put(const Diagnosis& d) { return *store_->PutDiagnosis(kNode, d, d.last_ns); }
  void Put(const ActionRecord& r) { ASSERT_TRUE(store_->PutAction(r).ok()); }

  Json Get(int64_t id) {
    api::StoreProvider provider(*store_, {.node = kNode});
    api::ApiHandler handler(provider, {});
    api::ApiResponse r = handler.Handle({"GET", "/api/v1/diagnoses/" + std::to_string(id), "", "", ""});
    EXPECT_EQ(r.status, 200) << r.body;
    return Json::parse(r.body);
  }

  std::filesystem::path path_;
  std::unique_ptr<Store> store_;
};

std::vector<std::string> Actions(const Json& plan) {
  std::vector<std::string> out;
  for (const Json& step : plan) out.push_back(step["action"].get<std::string>());
  return out;
}

// The plan is the policy's own (policy::PlanActions), in order, with the on-call webhook
// named as a webhook: the dashboard words it "webhook to on-call", never "notify user".
TEST_F(DiagnosisView, PlanIsThePolicysStepsInOrder) {
  const Diagnosis d = RemapFailure();
  const Json j = Get(Put(d));
  ASSERT_TRUE(j["plan"].is_array()) << j.dump();
  EXPECT_EQ(Actions(j["plan"]), (std::vector<std::string>{"drain", "rma_bundle", "webhook"}));
  std::vector<std::string> expected;
  for (const policy::Proposal& p : policy::PlanActions(d))
    expected.push_back(std::string(actions::ToString(p.action_class)));
  EXPECT_EQ(Actions(j["plan"]), expected);
  for (const Json& step : j["plan"]) {
    EXPECT_FALSE(step.contains("state")) << "nothing recorded yet: " << step.dump();
    EXPECT_EQ(step["refused"], false);
  }
}

// Each step carries the newest row recorded under its decision key; rows of another
// incident (same part, earlier start) and assistant notes are not its state.
TEST_F(DiagnosisView, StepsCarryTheirNewestRecordedState) {
  const Diagnosis d = RemapFailure();
  const int64_t id = Put(d);
  Put(Recorded(d, id, ActionClass::kDrain, "held_until_settled", kT0 + 136 * kSec));
  Put(Recorded(d, id, ActionClass::kDrain, "done", kT0 + 160 * kSec));
  Put(Recorded(d, id, ActionClass::kWebhook, "dry_run", kT0 + 160 * kSec));
  Diagnosis earlier = d;
  earlier.first_ns -= 3600 * kSec;
  Put(Recorded(earlier, id, ActionClass::kRmaBundle, "failed", kT0 + 170 * kSec));
  ActionRecord note;
  note.time_ns = kT0 + 171 * kSec;
  note.node = kNode;
  note.diagnosis_id = id;
  note.attrs["kind"] = "assistant_transcript";
  Put(note);

  const Json plan = Get(id)["plan"];
  ASSERT_EQ(plan.size(), 3u) << plan.dump();
  EXPECT_EQ(plan[0]["state"], "done");
  EXPECT_EQ(plan[0]["time_ns"], kT0 + 160 * kSec);
  EXPECT_EQ(plan[0]["dry_run"], false);
  EXPECT_FALSE(plan[1].contains("state")) << "the other incident's row is not this step's: " << plan[1].dump();
  EXPECT_EQ(plan[2]["action"], "webhook");
  EXPECT_EQ(plan[2]["state"], "dry_run");
  EXPECT_EQ(plan[2]["dry_run"], true);
}

// A step recorded for this incident that the plan no longer has (the diagnosis was fatal,
// now it is not) is still shown, marked as no longer planned.
TEST_F(DiagnosisView, RecordedStepsOutsideThePlanFollowIt) {
  Diagnosis d = RemapFailure();
  d.fault_class = FaultClass::kGpuThermal;  // plans a drain only when it slows jobs
  d.action = Action::kMonitor;
  d.severity = Severity::kWarning;
  const int64_t id = Put(d);
  Put(Recorded(d, id, ActionClass::kDrain, "dry_run", kT0 + 140 * kSec));
  const Json plan = Get(id)["plan"];
  ASSERT_EQ(plan.size(), 1u) << plan.dump();
  EXPECT_EQ(plan[0]["action"], "drain");
  EXPECT_EQ(plan[0]["planned"], false);
  EXPECT_EQ(plan[0]["state"], "dry_run");
}

std::string FirstSignal(const Json& j) {
  return j["signal"]["kinds"].empty() ? "" : j["signal"]["kinds"][0].get<std::string>();
}

// The plot shows the diagnosis' own reading: remaps for a remap failure (not the
// correctable ECC count beside it), the port state for a downed IB port, and so on.
TEST_F(DiagnosisView, SignalIsTheReadingTheFaultIsAbout) {
  const Diagnosis d = RemapFailure();
  const Json j = Get(Put(d));
  EXPECT_EQ(j["signal"]["component"], "gpu/4");
  EXPECT_EQ(FirstSignal(j), "row_remap_failure");
  for (const Json& k : j["signal"]["kinds"]) EXPECT_NE(k, "ecc_sbe");

  const std::pair<FaultClass, std::string> cases[] = {
      {FaultClass::kIbLinkDown, "ib_port_state"},
      {FaultClass::kNvlinkDown, "nvlink_state"},
      {FaultClass::kCoolantLeak, "leak"},
      {FaultClass::kPowerSupply, "psu_state"},
      {FaultClass::kRowRemapPending, "row_remap_pending"},
      {FaultClass::kHbmUncorrectable, "ecc_dbe"},
      {FaultClass::kGpuThermal, "temperature"},
      {FaultClass::kNvlinkErrors, "nvlink_crc_flit"},
  };
  for (const auto& [cls, kind] : cases) {
    ASSERT_FALSE(api::SignalKinds(cls).empty()) << ToString(cls);
    EXPECT_EQ(ToString(api::SignalKinds(cls).front()), kind) << ToString(cls);
  }
  // A program's fault is shown by its kernel lines, not a reading.
  EXPECT_TRUE(api::SignalKinds(FaultClass::kUserApplication).empty());
}

// Every kind named as a signal is a reading (a number over time), never an event line.
TEST(SignalKinds, AreReadingsNotEvents) {
  for (FaultClass c : AllFaultClasses()) {
    for (ObsKind k : api::SignalKinds(c)) {
      EXPECT_FALSE(IsKernelEventKind(k) || k == ObsKind::kSelEntry || k == ObsKind::kOther)
          << ToString(c) << " -> " << ToString(k);
    }
  }
}

}  // namespace
}  // namespace faultline
