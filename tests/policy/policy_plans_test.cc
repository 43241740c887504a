// The plan table (policy/plans.h): every fault class has one row, the rules follow it, and
// the runbooks carry exactly the table's plan. FAULTLINE_UPDATE_RUNBOOKS=1 rewrites the
// generated block of each kb/runbooks/<class>.md instead of failing (then review the diff).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "policy/plans.h"
#include "policy/rules.h"
#include "policy_fakes.h"

namespace faultline::policy {
namespace {

using actions::ActionClass;
using testing::MakeDiagnosis;

bool Allows(const std::vector<Proposal>& plan, ActionClass c) {
  for (const Proposal& p : plan) {
    if (p.action_class == c && !p.refused) return true;
  }
  return false;
}

TEST(PolicyPlans, EveryFaultClassHasExactlyOneRowInOrder) {
  const auto table = PlanTable();
  ASSERT_EQ(table.size(), AllFaultClasses().size());
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(table[i].fault, AllFaultClasses()[i]) << i;
    EXPECT_FALSE(table[i].reason.empty()) << ToString(table[i].fault);
    EXPECT_EQ(&PlanFor(table[i].fault), &table[i]);
  }
}

// Steps are carried out in order: taking the node out comes before what needs it out.
TEST(PolicyPlans, DrainComesBeforeWhatNeedsTheNodeOut) {
  for (const PlanRow& row : PlanTable()) {
    bool drained = false;
    for (const PlanStep& s : row.steps) {
      if (s.action == ActionClass::kDrain || s.action == ActionClass::kCordon) drained = true;
      if (s.action == ActionClass::kResetGpu || s.action == ActionClass::kRebootNode) {
        EXPECT_TRUE(drained) << ToString(row.fault) << ": " << actions::ToString(s.action) << " before a drain";
      }
    }
  }
}

TEST(PolicyPlans, ALeakDrainsNowWhateverTheIsolatorRecommended) {
  for (Action a : {Action::kFacilityTicket, Action::kDrain, Action::kRma}) {
    auto plan =
        PlanActions(MakeDiagnosis(FaultClass::kCoolantLeak, a, ComponentRef{ComponentType::kCoolant, "coldplate3"}, 1));
    EXPECT_TRUE(Allows(plan, ActionClass::kDrain)) << ToString(a);
    EXPECT_TRUE(Allows(plan, ActionClass::kFacilityTicket));
    EXPECT_TRUE(WarrantsDrain(plan));
  }
}

TEST(PolicyPlans, AFailedPsuWithNormalInputIsAVendorPartNotAFacilityTicket) {
  Diagnosis d = MakeDiagnosis(FaultClass::kPowerSupply, Action::kRma, ComponentRef{ComponentType::kPsu, "2"}, 1);
  d.severity = Severity::kWarning;  // redundancy holds, jobs at full speed
  auto plan = PlanActions(d);
  EXPECT_TRUE(Allows(plan, ActionClass::kRmaBundle));
  EXPECT_FALSE(Allows(plan, ActionClass::kFacilityTicket));
  EXPECT_FALSE(Allows(plan, ActionClass::kDrain));
  d.slowdown_ratio = 2.0;  // the brake doubles step time
  EXPECT_TRUE(Allows(PlanActions(d), ActionClass::kDrain));
  d.slowdown_ratio = 0;
  d.severity = Severity::kCritical;  // redundancy gone
  EXPECT_TRUE(Allows(PlanActions(d), ActionClass::kDrain));
  // Input lost: the feed's, a facility ticket, no part returned.
  Diagnosis input = d;
  input.action = Action::kFacilityTicket;
  input.severity = Severity::kWarning;
  auto fed = PlanActions(input);
  EXPECT_TRUE(Allows(fed, ActionClass::kFacilityTicket));
  EXPECT_FALSE(Allows(fed, ActionClass::kRmaBundle));
}

// Jobs slowed beyond the threshold by a hardware fault mean drain, for every hardware class
// whose plan names a drain; below it the same fault is planned work.
TEST(PolicyPlans, AHardwareFaultSlowingJobsBeyondTheThresholdDrains) {
  for (FaultClass c :
       {FaultClass::kPcieLinkDegraded, FaultClass::kNvlinkErrors, FaultClass::kIbLinkErrors, FaultClass::kIbLinkDown,
        FaultClass::kGpuPowerBrake, FaultClass::kGpuThermal, FaultClass::kPowerInsufficient}) {
    Diagnosis d = MakeDiagnosis(c, Action::kReseatOrReplaceLink, GpuComponent("4"), 1);
    d.severity = Severity::kWarning;
    d.slowdown_ratio = kSlowsJobsRatio + 0.15;  // 35 % slower
    EXPECT_TRUE(WarrantsDrain(PlanActions(d))) << ToString(c);
    d.slowdown_ratio = 1.05;
    EXPECT_FALSE(WarrantsDrain(PlanActions(d))) << ToString(c);
  }
  // Congestion slows jobs without a part at fault: never a drain.
  Diagnosis congestion = MakeDiagnosis(FaultClass::kFabricCongestion, Action::kMonitor, GpuComponent("0"), 1);
  congestion.slowdown_ratio = 3;
  EXPECT_FALSE(WarrantsDrain(PlanActions(congestion)));
}

TEST(PolicyPlans, ACriticalLinkFaultDrainsAWarningOneIsPlannedWork) {
  for (FaultClass c : {FaultClass::kPcieLinkDegraded, FaultClass::kNvlinkErrors, FaultClass::kIbLinkErrors}) {
    Diagnosis d = MakeDiagnosis(c, Action::kReseatOrReplaceLink, GpuComponent("1"), 1);
    EXPECT_TRUE(WarrantsDrain(PlanActions(d))) << ToString(c);  // MakeDiagnosis: critical
    d.severity = Severity::kWarning;
    auto plan = PlanActions(d);
    EXPECT_FALSE(WarrantsDrain(plan)) << ToString(c);
    EXPECT_TRUE(Allows(plan, ActionClass::kWebhook)) << ToString(c);  // the reseat is a person's job
  }
}

TEST(PolicyPlans, AGpuOffTheBusDrainsAndAWatchedEchoDoesNothing) {
  EXPECT_TRUE(
      WarrantsDrain(PlanActions(MakeDiagnosis(FaultClass::kGpuFellOffBus, Action::kRebootNode, GpuComponent("7"), 1))));
  // The isolator only watches an echo of a fault it cannot see (action monitor).
  for (FaultClass c : {FaultClass::kGpuFellOffBus, FaultClass::kNvswitchFault, FaultClass::kRowRemapPending}) {
    EXPECT_TRUE(PlanActions(MakeDiagnosis(c, Action::kMonitor, GpuComponent("7"), 1)).empty()) << ToString(c);
  }
}

TEST(PolicyPlans, TheWorkloadIsOnlyToldNeverTakenOut) {
  for (FaultClass c : {FaultClass::kUserApplication, FaultClass::kWorkloadImbalance}) {
    Diagnosis d = MakeDiagnosis(c, Action::kNotifyUser, HostComponent(), 1);
    d.slowdown_ratio = 3;
    auto plan = PlanActions(d);
    EXPECT_TRUE(Allows(plan, ActionClass::kNotifyUser)) << ToString(c);
    EXPECT_FALSE(Allows(plan, ActionClass::kWebhook)) << ToString(c);
    EXPECT_FALSE(WarrantsDrain(plan)) << ToString(c);
  }
}

// What the isolator recommends outside the plan is refused with the plan's reason.
TEST(PolicyPlans, ARecommendationOutsideThePlanIsRefusedWithItsReason) {
  auto plan = PlanActions(MakeDiagnosis(FaultClass::kHbmSbeAging, Action::kResetGpu, GpuComponent("2"), 1));
  bool refused = false;
  for (const Proposal& p : plan) {
    if (p.action_class == ActionClass::kResetGpu && p.refused) {
      refused = true;
      EXPECT_EQ(p.rule, "not_in_plan");
      EXPECT_NE(p.why.find("corrected errors are corrected"), std::string::npos) << p.why;
    }
  }
  EXPECT_TRUE(refused);
}

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The generated block of one runbook, or "" when it has none.
std::string PlanBlock(const std::string& text, size_t* begin, size_t* end) {
  const size_t b = text.find(kPlanBegin);
  const size_t e = text.find(kPlanEnd);
  if (b == std::string::npos || e == std::string::npos || e < b) return "";
  *begin = b + kPlanBegin.size();
  *end = e;
  return text.substr(*begin, e - *begin);
}

// The runbooks cannot contradict the table: each one's "Safe actions" section carries the
// table's plan for its class, generated.
TEST(PolicyPlans, EveryRunbookCarriesTheTablesPlanInItsSafeActions) {
  const std::filesystem::path dir = std::filesystem::path(FAULTLINE_SOURCE_DIR) / "kb" / "runbooks";
  const bool update = std::getenv("FAULTLINE_UPDATE_RUNBOOKS") != nullptr;
  for (FaultClass c : AllFaultClasses()) {
    if (c == FaultClass::kNone) continue;
    const std::filesystem::path file = dir / (std::string(ToString(c)) + ".md");
    SCOPED_TRACE(file.string());
    ASSERT_TRUE(std::filesystem::exists(file));
    std::string text = ReadFile(file);
    const std::string want = "\n" + RenderPlanMarkdown(c) + "\n";
    size_t b = 0, e = 0;
    const std::string got = PlanBlock(text, &b, &e);
    if (update) {
      if (got.empty()) {
        const size_t section = text.find("## Safe actions\n");
        ASSERT_NE(section, std::string::npos);
        const size_t at = section + std::string("## Safe actions\n").size();
        text.insert(at, std::string(kPlanBegin) + want + std::string(kPlanEnd) + "\n\n");
      } else {
        text.replace(b, e - b, want);
      }
      std::ofstream(file) << text;
      continue;
    }
    ASSERT_FALSE(got.empty()) << "no generated plan block; run with FAULTLINE_UPDATE_RUNBOOKS=1";
    EXPECT_EQ(got, want) << "stale plan block; run with FAULTLINE_UPDATE_RUNBOOKS=1";
    const size_t section = text.find("## Safe actions");
    const size_t next = text.find("\n## ", section + 1);
    EXPECT_TRUE(section != std::string::npos && section < b && b < next) << "the block sits in 'Safe actions'";
  }
}

}  // namespace
}  // namespace faultline::policy
