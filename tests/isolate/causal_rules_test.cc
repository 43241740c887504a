#include "engine/isolate/causal_rules.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace faultline::isolate {
namespace {

// Following "explained by" links must always end at a root: no class may reach itself.
bool ReachesItself(FaultClass start) {
  std::set<FaultClass> seen;
  std::vector<FaultClass> frontier{start};
  while (!frontier.empty()) {
    const FaultClass c = frontier.back();
    frontier.pop_back();
    for (const CausalRule& r : CausalRules()) {
      if (r.cause != c) continue;
      if (r.symptom == start) return true;
      if (seen.insert(r.symptom).second) frontier.push_back(r.symptom);
    }
  }
  return false;
}

TEST(IsolateRules, RuleGraphIsAcyclic) {
  for (FaultClass c : AllFaultClasses()) EXPECT_FALSE(ReachesItself(c)) << ToString(c);
}

TEST(IsolateRules, EveryRuleCitesAFactAndIsUnique) {
  std::set<std::pair<FaultClass, FaultClass>> pairs;
  for (const CausalRule& r : CausalRules()) {
    EXPECT_FALSE(r.fact.empty()) << ToString(r.cause) << " -> " << ToString(r.symptom);
    EXPECT_TRUE(pairs.insert({r.cause, r.symptom}).second) << "duplicate rule " << ToString(r.cause);
    EXPECT_NE(r.symptom, FaultClass::kNone);
  }
}

TEST(IsolateRules, SlowdownIsOnlyEverASymptom) {
  for (const CausalRule& r : CausalRules()) EXPECT_NE(r.cause, kSlowdown);
}

TEST(IsolateRules, UserClassesNeverDefaultToHardwareActions) {
  for (FaultClass c : AllFaultClasses()) {
    if (IsUserClass(c)) {
      EXPECT_LE(DefaultAction(c), Action::kRestartJob) << ToString(c);
    }
  }
  EXPECT_EQ(DefaultAction(FaultClass::kNone), Action::kNone);
  EXPECT_EQ(DefaultAction(FaultClass::kRowRemapPending), Action::kResetGpu);
  EXPECT_EQ(DefaultAction(FaultClass::kPowerSupply), Action::kRma);
}

TEST(IsolateRules, EveryFaultClassHasAnAction) {
  for (FaultClass c : AllFaultClasses()) {
    if (c != FaultClass::kNone) {
      EXPECT_NE(DefaultAction(c), Action::kNone) << ToString(c);
    }
  }
}

}  // namespace
}  // namespace faultline::isolate
