// The detector table: one row per detector, each row builds the detector it names, and
// the context reaches the detectors (the shared inventory names the kernel's GPUs).
#include "engine/detect/all_detectors.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "engine/detect/gpu_identity.h"

namespace faultline {
namespace {

TEST(DetectorTableTest, EveryRowBuildsTheDetectorItNamesOnce) {
  const auto table = DetectorTable();
  const auto all = MakeAllDetectors({});
  ASSERT_EQ(all.size(), table.size());
  std::set<std::string> names;
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(all[i]->name(), table[i].name);
    EXPECT_FALSE(table[i].reads.empty()) << table[i].name;
    names.insert(std::string(table[i].name));
  }
  EXPECT_EQ(names.size(), table.size());
  for (const char* layer : {"kernel", "gpu_throttle", "oob_power", "fabric_pcie", "workload"}) {
    EXPECT_TRUE(names.contains(layer)) << layer;
  }
}

TEST(DetectorTableTest, TheSharedInventoryNamesTheKernelsGpusAsItFills) {
  Inventory inventory;
  auto all = MakeAllDetectors({.inventory = &inventory});
  Observation xid;
  xid.time_ns = 1764410400LL * 1'000'000'000;
  xid.layer = Layer::kOs;
  xid.source = Source::kKmsg;
  xid.kind = ObsKind::kXid;
  xid.code = 48;
  xid.component = ComponentRef{ComponentType::kGpu, "0000:1b:00.0", {{"bdf", "0000:1b:00.0"}}};
  for (auto& d : all) d->Observe(xid);
  // NVML's identity arrives after the XID: the inventory is read when findings are asked for.
  Observation nvml;
  nvml.layer = Layer::kGpu;
  nvml.source = Source::kNvml;
  nvml.kind = ObsKind::kGpuIdentity;
  nvml.component = GpuComponent("2");
  nvml.component.keys = {{"index", "2"}, {"bdf", "0000:1b:00.0"}, {"uuid", "GPU-2222"}};
  ASSERT_TRUE(LearnGpuIdentity(nvml, inventory));
  std::vector<Finding> findings;
  for (auto& d : all) {
    for (Finding& f : d->Findings()) findings.push_back(std::move(f));
  }
  ASSERT_FALSE(findings.empty());
  for (const Finding& f : findings) EXPECT_EQ(f.component.Id(), "gpu/2") << ToString(f.fault_class);
}

}  // namespace
}  // namespace faultline
