#include <gtest/gtest.h>

#include "policy/rules.h"
#include "policy_fakes.h"

namespace faultline::policy {
namespace {

using actions::ActionClass;
using testing::MakeDiagnosis;

bool Has(const std::vector<Proposal>& plan, ActionClass c, bool refused) {
  for (const Proposal& p : plan) {
    if (p.action_class == c && p.refused == refused) return true;
  }
  return false;
}
bool AllowsAnyOf(const std::vector<Proposal>& plan, std::initializer_list<ActionClass> classes) {
  for (ActionClass c : classes) {
    if (Has(plan, c, false)) return true;
  }
  return false;
}

// Whatever the isolator recommends, a physical cause never resets/reboots or RMAs a GPU.
TEST(PolicyRules, PhysicalCauseGetsFacilityTicketNeverGpuAction) {
  const FaultClass physical[] = {FaultClass::kPowerSupply,       FaultClass::kPowerInsufficient,
                                 FaultClass::kVoltageOutOfRange, FaultClass::kThermalInlet,
                                 FaultClass::kCoolingDegraded,   FaultClass::kCoolantLeak};
  for (FaultClass c : physical) {
    for (Action a : AllActions()) {
      if (a <= Action::kMonitor) continue;
      auto plan = PlanActions(MakeDiagnosis(c, a, GpuComponent("2"), 1));
      SCOPED_TRACE(std::string(ToString(c)) + " / " + std::string(ToString(a)));
      // A PSU goes to facilities only when its input was lost (plans.cc); every other
      // physical cause always does.
      if (c != FaultClass::kPowerSupply || a == Action::kFacilityTicket) {
        EXPECT_TRUE(Has(plan, ActionClass::kFacilityTicket, false));
      }
      EXPECT_FALSE(AllowsAnyOf(plan, {ActionClass::kResetGpu, ActionClass::kRebootNode, ActionClass::kRmaBundle}));
      if (a == Action::kRma || a == Action::kResetGpu || a == Action::kRebootNode) {
        EXPECT_TRUE(Has(plan, ActionClass::kRmaBundle, true) || Has(plan, ActionClass::kResetGpu, true) ||
                    Has(plan, ActionClass::kRebootNode, true));
      }
    }
  }
}

TEST(PolicyRules, FailingPsuMayBeReturnedButNotAsAGpu) {
  auto plan =
      PlanActions(MakeDiagnosis(FaultClass::kPowerSupply, Action::kRma, ComponentRef{ComponentType::kPsu, "1"}, 1));
  // Failed with its input normal: a vendor part, not a facility ticket (policy_plans_test).
  EXPECT_FALSE(Has(plan, ActionClass::kFacilityTicket, false));
  EXPECT_TRUE(Has(plan, ActionClass::kRmaBundle, false));
  auto leak = PlanActions(
      MakeDiagnosis(FaultClass::kCoolantLeak, Action::kDrain, ComponentRef{ComponentType::kCoolant, "loop1"}, 1));
  EXPECT_TRUE(Has(leak, ActionClass::kFacilityTicket, false));
  EXPECT_TRUE(Has(leak, ActionClass::kDrain, false));
  EXPECT_TRUE(WarrantsDrain(leak));
}

// A user-program fault is never answered by taking the node or GPU away.
TEST(PolicyRules, UserProgramFaultOnlyNotifiesTheUser) {
  for (Action a : AllActions()) {
    if (a <= Action::kMonitor) continue;
    auto plan = PlanActions(MakeDiagnosis(FaultClass::kUserApplication, a, GpuComponent("0"), 1));
    SCOPED_TRACE(std::string(ToString(a)));
    EXPECT_TRUE(Has(plan, ActionClass::kNotifyUser, false));
    EXPECT_FALSE(AllowsAnyOf(plan, {ActionClass::kCordon, ActionClass::kDrain, ActionClass::kResetGpu,
                                    ActionClass::kRebootNode, ActionClass::kRmaBundle, ActionClass::kFacilityTicket}));
    EXPECT_FALSE(WarrantsDrain(plan));
    if (a >= Action::kResetGpu) {
      bool refused = false;
      for (const Proposal& p : plan) refused |= p.refused && p.rule == "user_program_never_disruptive";
      EXPECT_TRUE(refused);
    }
  }
}

TEST(PolicyRules, HardwareFaultsFollowTheRecommendedAction) {
  auto rma = PlanActions(MakeDiagnosis(FaultClass::kHbmUncorrectable, Action::kRma, GpuComponent("3"), 1));
  EXPECT_TRUE(Has(rma, ActionClass::kDrain, false));
  EXPECT_TRUE(Has(rma, ActionClass::kRmaBundle, false));
  EXPECT_TRUE(Has(rma, ActionClass::kWebhook, false));
  EXPECT_TRUE(WarrantsDrain(rma));
  auto reset = PlanActions(MakeDiagnosis(FaultClass::kRowRemapPending, Action::kResetGpu, GpuComponent("1"), 1));
  EXPECT_TRUE(Has(reset, ActionClass::kDrain, false));
  EXPECT_TRUE(Has(reset, ActionClass::kResetGpu, false));
  auto cordon = PlanActions(MakeDiagnosis(FaultClass::kHostMemory, Action::kCordon, HostComponent(), 1));
  EXPECT_TRUE(Has(cordon, ActionClass::kCordon, false));
  EXPECT_FALSE(Has(cordon, ActionClass::kDrain, false));
  Diagnosis warning = MakeDiagnosis(FaultClass::kNvlinkErrors, Action::kReseatOrReplaceLink, GpuComponent("1"), 1);
  warning.severity = Severity::kWarning;  // a critical one drains (policy_plans_test)
  auto link = PlanActions(warning);
  EXPECT_FALSE(WarrantsDrain(link));
  EXPECT_TRUE(Has(link, ActionClass::kWebhook, false));
  EXPECT_TRUE(PlanActions(MakeDiagnosis(FaultClass::kGpuThermal, Action::kMonitor, GpuComponent("1"), 1)).empty());
  EXPECT_TRUE(PlanActions(MakeDiagnosis(FaultClass::kNone, Action::kDrain, HostComponent(), 1)).empty());
}

}  // namespace
}  // namespace faultline::policy
