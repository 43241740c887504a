#include "engine/isolate/component_match.h"

#include <gtest/gtest.h>

#include "isolate_test_util.h"

namespace faultline::isolate {
namespace {

using testing_isolate::Gpu3;
using testing_isolate::Ref;

TEST(IsolateComponentMatch, GpuMatchesByAnySharedKey) {
  const ComponentRef by_bdf = Ref(ComponentType::kGpu, "0000:3b:00.0");  // the kernel's name
  const ComponentRef by_uuid = Ref(ComponentType::kGpu, "GPU-5f1b2c3d-0000-1111-2222-333344445555");
  const ComponentRef by_serial = Ref(ComponentType::kGpu, "x", {{"serial", "1650923012345"}});
  const ComponentRef by_index = Ref(ComponentType::kGpu, "3");
  EXPECT_TRUE(SameComponent(Gpu3(), by_bdf));
  EXPECT_TRUE(SameComponent(by_uuid, Gpu3()));
  EXPECT_TRUE(SameComponent(Gpu3(), by_serial));
  EXPECT_TRUE(SameComponent(Gpu3(), by_index));
}

TEST(IsolateComponentMatch, BdfSpellingsAreNormalized) {
  const ComponentRef nvml_style = Ref(ComponentType::kGpu, "3", {{"bdf", "00000000:3B:00.0"}});
  const ComponentRef kernel_style = Ref(ComponentType::kGpu, "3b:00.0");
  EXPECT_TRUE(SameComponent(nvml_style, kernel_style));
}

TEST(IsolateComponentMatch, DifferentPartsAndAbsentKeysNeverMatch) {
  EXPECT_FALSE(SameComponent(Gpu3(), Ref(ComponentType::kGpu, "4")));
  EXPECT_FALSE(SameComponent(Ref(ComponentType::kGpu, "a"), Ref(ComponentType::kGpu, "b")));
  // Same bdf but different types: a GPU and its PCIe function are attached, not the same part.
  EXPECT_FALSE(SameComponent(Gpu3(), PcieComponent("0000:3b:00.0")));
  EXPECT_TRUE(Attached(Gpu3(), PcieComponent("0000:3b:00.0")));
  // Empty key values are not identities.
  EXPECT_FALSE(
      SameComponent(Ref(ComponentType::kGpu, "1", {{"serial", ""}}), Ref(ComponentType::kGpu, "2", {{"serial", ""}})));
}

TEST(IsolateComponentMatch, NvlinkIsAttachedToItsGpuButLinksStayDistinct) {
  const ComponentRef link11 = Ref(ComponentType::kNvlink, "3/11");
  const ComponentRef link12 = Ref(ComponentType::kNvlink, "3/12");
  EXPECT_TRUE(Attached(link11, Gpu3()));
  EXPECT_FALSE(Attached(link11, Ref(ComponentType::kGpu, "4")));
  EXPECT_FALSE(SameComponent(link11, link12));
  EXPECT_TRUE(SameComponent(link11, Ref(ComponentType::kNvlink, "3/11")));
}

TEST(IsolateComponentMatch, UpstreamPortAttachesThroughEitherSidesKeys) {
  const ComponentRef port = PcieComponent("0000:3a:00.0");
  ComponentRef gpu_with_upstream = Gpu3();
  gpu_with_upstream.keys["upstream_bdf"] = "0000:3a:00.0";
  EXPECT_TRUE(Attached(port, gpu_with_upstream));
  ComponentRef port_with_device = port;
  port_with_device.keys["downstream_bdf"] = "0000:3B:00.0";
  EXPECT_TRUE(Attached(port_with_device, Gpu3()));
  EXPECT_FALSE(Attached(port, Gpu3()));
}

TEST(IsolateComponentMatch, UpstreamChainKeyAttachesEveryBridgeAbove) {
  ComponentRef gpu_fn = PcieComponent("0000:3b:00.0");
  gpu_fn.keys["upstream"] = "0000:00:01.0>0000:3a:00.0";
  gpu_fn.keys["device"] = "gpu";
  EXPECT_TRUE(Attached(PcieComponent("0000:3a:00.0"), gpu_fn));
  EXPECT_TRUE(Attached(gpu_fn, PcieComponent("0000:00:01.0")));
  EXPECT_TRUE(Attached(gpu_fn, Gpu3()));
  // Two devices behind the same switch share an upstream port but are not attached.
  ComponentRef sibling = PcieComponent("0000:3c:00.0");
  sibling.keys["upstream"] = "0000:00:01.0>0000:3a:00.0";
  EXPECT_FALSE(Attached(gpu_fn, sibling));
  ComponentRef garbage = PcieComponent("0000:3d:00.0");
  garbage.keys["upstream"] = ">>,not-a-bdf>";
  EXPECT_FALSE(Attached(garbage, Gpu3()));
}

TEST(IsolateComponentMatch, NicPortIsNotAttachedToAGpu) {
  ComponentRef nic = PcieComponent("0000:5e:00.0");
  nic.keys["device_class"] = "network";
  EXPECT_FALSE(Attached(nic, Gpu3()));
}

TEST(IsolateComponentMatch, ScopingKeysSeparateCoolingLoops) {
  const ComponentRef loop_a = Ref(ComponentType::kCoolant, "loopA");
  const ComponentRef gpu_on_b = Ref(ComponentType::kGpu, "2", {{"coolant_loop", "loopB"}});
  const ComponentRef gpu_on_a = Ref(ComponentType::kGpu, "1", {{"coolant_loop", "loopA"}});
  EXPECT_FALSE(SameScope(loop_a, gpu_on_b));
  EXPECT_TRUE(SameScope(loop_a, gpu_on_a));
  EXPECT_TRUE(SameScope(loop_a, Gpu3()));  // unscoped: the node is the scope
}

TEST(IsolateComponentMatch, MergeKeysAddsButNeverOverwrites) {
  ComponentRef into = Ref(ComponentType::kGpu, "3", {{"bdf", "0000:3b:00.0"}});
  MergeKeys(into, Ref(ComponentType::kGpu, "x", {{"bdf", "0000:ff:00.0"}, {"serial", "S1"}}));
  EXPECT_EQ(into.keys.at("bdf"), "0000:3b:00.0");
  EXPECT_EQ(into.keys.at("serial"), "S1");
}

}  // namespace
}  // namespace faultline::isolate
