#include "core/inventory.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace faultline {
namespace {

TEST(InventoryTest, NormalizesEveryBdfForm) {
  EXPECT_EQ(NormalizeBdf("0000:b5:00"), "0000:b5:00.0");
  EXPECT_EQ(NormalizeBdf("00000000:B5:00.0"), "0000:b5:00.0");
  EXPECT_EQ(NormalizeBdf("b5:00.1"), "0000:b5:00.1");
  EXPECT_EQ(NormalizeBdf("0001:3b:00.0"), "0001:3b:00.0");
  EXPECT_EQ(NormalizeBdf("not-a-bdf"), "");
  EXPECT_EQ(NormalizeBdf("0000:b5:0"), "");
  EXPECT_EQ(NormalizeBdf("00010000:b5:00.0"), "");
  EXPECT_EQ(NormalizeBdf(""), "");
}

TEST(InventoryTest, MergesKeysFromDifferentSources) {
  Inventory inv;
  inv.AddGpu({std::nullopt, "GPU-aaaa", "", "0000:b5:00", ""});     // from a kernel log line
  inv.AddGpu({std::nullopt, "GPU-aaaa", "1320220053911", "", ""});  // serial line
  inv.AddGpu({3, "", "", "00000000:B5:00.0", "H100"});              // from NVML
  ASSERT_EQ(inv.gpus().size(), 1u);
  ComponentRef ref = inv.GpuAt("0000:b5:00.0");
  EXPECT_EQ(ref.Id(), "gpu/3");
  EXPECT_EQ(ref.keys.at("uuid"), "GPU-aaaa");
  EXPECT_EQ(ref.keys.at("serial"), "1320220053911");
}

TEST(InventoryTest, UnmappedBdfStaysABdf) {
  Inventory inv;
  inv.AddGpu({0, "GPU-x", "", "0000:17:00.0", ""});
  ComponentRef ref = inv.GpuAt("0000:b5:00");
  EXPECT_EQ(ref.Id(), "gpu/0000:b5:00.0");
  EXPECT_EQ(ref.keys.count("uuid"), 0u);
  EXPECT_EQ(ref.keys.at("bdf"), "0000:b5:00.0");
}

TEST(InventoryTest, LoadsGpuMapAndRejectsBadOnes) {
  const std::string path = testing::TempDir() + "/gpumap.json";
  {
    std::ofstream(path) << R"({"gpus":[{"index":0,"uuid":"GPU-0","serial":"S0","pci_bus_id":"00000000:17:00.0"},
                                       {"index":1,"uuid":"GPU-1","pci_bus_id":"0000:3b:00.0"}]})";
  }
  auto inv = Inventory::LoadGpuMap(path);
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  EXPECT_EQ(inv->GpuAt("0000:3b:00").Id(), "gpu/1");
  EXPECT_EQ(inv->GpuAt("0000:17:00.0").keys.at("serial"), "S0");

  { std::ofstream(path) << R"({"gpus":[{"model":"x"}]})"; }
  EXPECT_EQ(Inventory::LoadGpuMap(path).status().code(), StatusCode::kCorrupt);
  { std::ofstream(path) << "{not json"; }
  EXPECT_EQ(Inventory::LoadGpuMap(path).status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(Inventory::LoadGpuMap(path + ".missing").status().code(), StatusCode::kNotFound);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace faultline
