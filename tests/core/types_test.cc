#include "core/types.h"

#include <gtest/gtest.h>

#include <set>

namespace faultline {
namespace {

TEST(TypesTest, EveryFaultClassNameRoundTrips) {
  std::set<std::string_view> names;
  for (FaultClass c : AllFaultClasses()) {
    auto name = ToString(c);
    EXPECT_NE(name, "unknown");
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
    EXPECT_EQ(ParseFaultClass(name), c);
  }
  EXPECT_EQ(names.size(), 27u);  // the classes listed in DESIGN.md (+ fabric_congestion, docs/ethernet.md)
}

TEST(TypesTest, EveryActionAndKindNameRoundTrips) {
  for (Action a : AllActions()) EXPECT_EQ(ParseAction(ToString(a)), a);
  for (ObsKind k : AllObsKinds()) EXPECT_EQ(ParseObsKind(ToString(k)), k);
  EXPECT_EQ(ParseAction("reseat_or_replace_link"), Action::kReseatOrReplaceLink);
  EXPECT_EQ(ParseObsKind("nvlink_crc_flit"), ObsKind::kNvlinkCrcFlit);
}

TEST(TypesTest, UnknownNamesAreRejectedNotGuessed) {
  EXPECT_FALSE(ParseFaultClass("Power_Supply"));
  EXPECT_FALSE(ParseAction(""));
  EXPECT_FALSE(ParseLayer("physical"));
}

TEST(TypesTest, ActionsAreOrderedByDisruption) {
  EXPECT_LT(Action::kMonitor, Action::kResetGpu);
  EXPECT_LT(Action::kResetGpu, Action::kDrain);
  EXPECT_LT(Action::kDrain, Action::kRma);
}

TEST(TypesTest, ComponentIdsRoundTrip) {
  EXPECT_EQ(GpuComponent("3").Id(), "gpu/3");
  EXPECT_EQ(PcieComponent("0000:3b:00.0").Id(), "pcie/0000:3b:00.0");
  EXPECT_EQ(PcieComponent("0000:3b:00.0").keys.at("bdf"), "0000:3b:00.0");
  auto ref = ParseComponentId("nvlink/3/11");
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->type, ComponentType::kNvlink);
  EXPECT_EQ(ref->name, "3/11");
  EXPECT_EQ(ParseComponentId("chassis")->Id(), "chassis");
  EXPECT_FALSE(ParseComponentId("widget/1"));
}

}  // namespace
}  // namespace faultline
