// The simulator's AMD node (sim/node/amd_node.h): which fault kinds an AMD node takes,
// and the lines its GPU faults print, read back by the amdgpu kernel-line parser.
#include <gtest/gtest.h>

#include "parse/amdgpu_line.h"
#include "parse/kernel_line.h"
#include "sim/node/node_model.h"
#include "sim/node/node_scenario.h"

namespace faultline::sim {
namespace {

std::string Scenario(const std::string& vendor, const std::string& fault) {
  return "name: t\nduration_s: 60\nnode:\n  gpu_vendor: " + vendor +
         "\ntruth:\n  fault_class: none\nfaults:\n- at: 10\n  fault: " + fault + "\n  gpu: 1\n";
}

TEST(AmdScenario, VendorDecidesWhichKindsFit) {
  for (const char* nvidia_only : {"gsp_timeout", "nvlink_down\n  link: 1"}) {
    auto s = ParseNodeScenario(Scenario("amd", nvidia_only));
    ASSERT_FALSE(s.ok()) << nvidia_only;
    EXPECT_NE(s.status().message().find("NVIDIA-only"), std::string::npos) << s.status().message();
  }
  for (const char* amd_only : {"bad_page_threshold", "ring_timeout"}) {
    auto s = ParseNodeScenario(Scenario("nvidia", amd_only));
    ASSERT_FALSE(s.ok()) << amd_only;
    EXPECT_NE(s.status().message().find("needs node.gpu_vendor: amd"), std::string::npos) << s.status().message();
    EXPECT_TRUE(ParseNodeScenario(Scenario("amd", amd_only)).ok()) << amd_only;
  }
  auto bad = ParseNodeScenario(Scenario("intel", "dbe"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("gpu_vendor"), std::string::npos);
}

// Every kernel line an AMD node prints for its GPU faults is an amdgpu line the parser
// reads, on the faulty GPU; none is an NVIDIA line.
TEST(AmdScenario, FaultLinesAreAmdgpuLinesOnTheFaultyGpu) {
  const NodeLayout layout = DefaultNodeLayout(8);
  for (const char* fault : {"dbe", "bad_page_threshold", "remap_failure", "sram_uncorrectable", "fall_off_bus",
                            "user_xid", "ring_timeout"}) {
    auto sc = ParseNodeScenario(Scenario("amd", fault));
    ASSERT_TRUE(sc.ok()) << fault << ": " << sc.status().message();
    NodeModel model(*sc, layout);
    model.AdvanceTo(20);
    auto lines = model.TakeKmsg();
    ASSERT_FALSE(lines.empty()) << fault;
    for (const SimKmsg& k : lines) {
      EXPECT_EQ(k.text.find("NVRM"), std::string::npos) << k.text;
      const KernelEvent ev = ClassifyKernelMessage(k.text);
      ASSERT_EQ(ev.type, KernelEventType::kAmdgpu) << fault << ": " << k.text;
      EXPECT_EQ(ev.device, layout.gpu_bdfs[1]) << k.text;
    }
  }
}

}  // namespace
}  // namespace faultline::sim
