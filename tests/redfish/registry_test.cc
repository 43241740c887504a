#include <gtest/gtest.h>

#include "parse/redfish_registry.h"

namespace faultline::redfish {
namespace {

TEST(RedfishRegistry, MessageIdIgnoresVersion) {
  auto a = ParseMessageId("Power.1.2.0.PowerSupplyFailed");
  auto b = ParseMessageId("Power.PowerSupplyFailed");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(a->registry, "Power");
  EXPECT_EQ(a->key, "PowerSupplyFailed");
  EXPECT_FALSE(ParseMessageId("0x592A28").has_value());
  EXPECT_FALSE(ParseMessageId("Power.x.PowerSupplyFailed").has_value());
  EXPECT_FALSE(ParseMessageId(".Key").has_value());
  EXPECT_FALSE(ParseMessageId("Power.").has_value());
}

TEST(RedfishRegistry, LookupByPrefixAndKey) {
  auto m = LookupMessage(*ParseMessageId("Power.1.0.1.VoltageBelowLowerCriticalThreshold"));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->fault_class, FaultClass::kVoltageOutOfRange);
  auto clear = LookupMessage(*ParseMessageId("Environmental.1.0.LeakDetectedNormal"));
  ASSERT_TRUE(clear.has_value());
  EXPECT_TRUE(clear->clears);
  auto leak = LookupMessage(*ParseMessageId("Environmental.1.1.LeakDetectedCritical"));
  ASSERT_TRUE(leak.has_value());
  EXPECT_FALSE(leak->clears);
  EXPECT_EQ(leak->fault_class, FaultClass::kCoolantLeak);
  EXPECT_FALSE(LookupMessage(*ParseMessageId("Base.1.0.Success")).has_value());
  // Same key under another registry is a different message.
  EXPECT_FALSE(LookupMessage({"OpenBMC", "PowerSupplyFailed"}).has_value());
}

}  // namespace
}  // namespace faultline::redfish
