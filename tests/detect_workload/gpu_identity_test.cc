// The one GPU inventory: what fills it (NVML / dcgm-exporter readings, the kernel log's
// identity lines) and how a reference is named from it.
#include "engine/detect/gpu_identity.h"

#include <gtest/gtest.h>

namespace faultline {
namespace {

// An NVML reading of GPU 0: index, uuid, serial and bus id on the component.
Observation NvmlReading(int index, const std::string& bdf, const std::string& uuid, const std::string& serial = "") {
  Observation o;
  o.layer = Layer::kGpu;
  o.source = Source::kNvml;
  o.kind = ObsKind::kPower;
  o.component = GpuComponent(std::to_string(index));
  o.component.keys = {{"index", std::to_string(index)}, {"bdf", bdf}, {"uuid", uuid}};
  if (!serial.empty()) o.component.keys["serial"] = serial;
  return o;
}

// The kernel's "NVRM: GPU at PCI:<bdf>: GPU-<uuid>" (or the serial line after it):
// component gpu/<bdf>, the other key in attrs.
Observation KernelIdentity(const std::string& bdf, const char* key, const std::string& value) {
  Observation o;
  o.layer = Layer::kOs;
  o.source = Source::kKmsg;
  o.kind = ObsKind::kGpuIdentity;
  o.component = ComponentRef{ComponentType::kGpu, bdf, {{"bdf", bdf}}};
  o.attrs[key] = value;
  return o;
}

ComponentRef KernelGpu(const std::string& bdf) { return ComponentRef{ComponentType::kGpu, bdf, {{"bdf", bdf}}}; }

TEST(GpuIdentityTest, NvmlReadingAndKernelLinesJoinIntoOneGpu) {
  Inventory inv;
  EXPECT_TRUE(LearnGpuIdentity(KernelIdentity("0000:1b:00.0", "uuid", "GPU-aaaa"), inv));
  EXPECT_TRUE(LearnGpuIdentity(KernelIdentity("0000:1b:00.0", "serial", "1650923000111"), inv));
  EXPECT_TRUE(LearnGpuIdentity(NvmlReading(0, "00000000:1B:00.0", "GPU-aaaa"), inv));
  EXPECT_FALSE(LearnGpuIdentity(NvmlReading(0, "00000000:1B:00.0", "GPU-aaaa"), inv));  // nothing new
  ASSERT_EQ(inv.gpus().size(), 1u);
  const GpuIdentity& g = inv.gpus()[0];
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.bdf, "0000:1b:00.0");
  EXPECT_EQ(g.uuid, "GPU-aaaa");
  EXPECT_EQ(g.serial, "1650923000111");
}

TEST(GpuIdentityTest, DcgmIdentityAttrsTeachToo) {
  Observation dcgm;
  dcgm.layer = Layer::kGpu;
  dcgm.source = Source::kDcgmExporter;
  dcgm.kind = ObsKind::kGpuIdentity;
  dcgm.component = GpuComponent("3");
  dcgm.attrs = {{"index", "3"}, {"uuid", "GPU-dddd"}, {"bdf", "0000:9a:00.0"}, {"name", "NVIDIA H100 80GB HBM3"}};
  Inventory inv;
  EXPECT_TRUE(LearnGpuIdentity(dcgm, inv));
  ASSERT_TRUE(inv.FindByBdf("0000:9a:00.0"));
  EXPECT_EQ(inv.FindByBdf("0000:9a:00.0")->index, 3);
  EXPECT_EQ(inv.FindByBdf("0000:9a:00.0")->name, "NVIDIA H100 80GB HBM3");
}

TEST(GpuIdentityTest, OneKeyAloneOrAnotherComponentTeachesNothing) {
  Inventory inv;
  Observation xid = KernelIdentity("0000:1b:00.0", "uuid", "");
  xid.kind = ObsKind::kXid;  // an XID names only the bus id
  EXPECT_FALSE(LearnGpuIdentity(xid, inv));
  Observation plain = NvmlReading(0, "", "");
  plain.component.keys = {{"index", "0"}};
  EXPECT_FALSE(LearnGpuIdentity(plain, inv));
  Observation pcie = NvmlReading(0, "0000:1b:00.0", "GPU-aaaa");
  pcie.component.type = ComponentType::kPcie;
  EXPECT_FALSE(LearnGpuIdentity(pcie, inv));
  Observation attrs_not_identity = NvmlReading(0, "", "");
  attrs_not_identity.component.keys = {{"index", "0"}};
  attrs_not_identity.attrs = {{"uuid", "GPU-from-a-message"}};  // attrs count on identity readings only
  EXPECT_FALSE(LearnGpuIdentity(attrs_not_identity, inv));
  EXPECT_TRUE(inv.gpus().empty());
}

TEST(GpuIdentityTest, AFloodOfBusIdsCannotGrowTheInventoryPastTheCap) {
  Inventory inv;
  for (size_t i = 0; i < kMaxInventoryGpus + 50; ++i) {
    char bdf[16];
    std::snprintf(bdf, sizeof bdf, "%04zx:%02zx:00.0", i / 256, i % 256);
    LearnGpuIdentity(KernelIdentity(bdf, "uuid", "GPU-" + std::to_string(i)), inv);
  }
  EXPECT_EQ(inv.gpus().size(), kMaxInventoryGpus);
  // A known GPU still learns new keys at the cap.
  EXPECT_TRUE(LearnGpuIdentity(KernelIdentity("0000:00:00.0", "serial", "42"), inv));
  EXPECT_EQ(inv.FindByBdf("0000:00:00.0")->serial, "42");
}

TEST(GpuIdentityTest, CanonicalNameIsTheIndexWhicheverKeyTheReferenceUsed) {
  Inventory inv;
  LearnGpuIdentity(NvmlReading(5, "0000:b5:00.0", "GPU-5555", "1320220053911"), inv);
  const ComponentRef by_bdf = CanonicalGpu(inv, KernelGpu("0000:b5:00.0"));
  EXPECT_EQ(by_bdf.Id(), "gpu/5");
  EXPECT_EQ(by_bdf.keys.at("serial"), "1320220053911");
  EXPECT_EQ(CanonicalGpu(inv, GpuComponent("GPU-5555")).Id(), "gpu/5");
  ComponentRef by_serial = GpuComponent("board");
  by_serial.keys["serial"] = "1320220053911";
  EXPECT_EQ(CanonicalGpu(inv, by_serial).Id(), "gpu/5");
  ComponentRef printed = KernelGpu("00000000:B5:00.0");  // NVML's spelling of the bus id
  printed.name = "00000000:B5:00.0";
  EXPECT_EQ(CanonicalGpu(inv, printed).Id(), "gpu/5");
  // The reference's own extra keys survive.
  ComponentRef with_link = KernelGpu("0000:b5:00.0");
  with_link.keys["upstream_bdf"] = "0000:b4:00.0";
  EXPECT_EQ(CanonicalGpu(inv, with_link).keys.at("upstream_bdf"), "0000:b4:00.0");
}

TEST(GpuIdentityTest, UnknownGpusAndOtherPartsStayAsSeen) {
  Inventory inv;
  LearnGpuIdentity(NvmlReading(0, "0000:1b:00.0", "GPU-aaaa"), inv);
  const ComponentRef stranger = KernelGpu("0000:2c:00.0");
  EXPECT_EQ(CanonicalGpu(inv, stranger), stranger);
  const ComponentRef pcie = PcieComponent("0000:1b:00.0");
  EXPECT_EQ(CanonicalGpu(inv, pcie), pcie);
  // Without an index the UUID names it.
  Inventory no_index;
  LearnGpuIdentity(KernelIdentity("0000:2c:00.0", "uuid", "GPU-cccc"), no_index);
  EXPECT_EQ(CanonicalGpu(no_index, stranger).Id(), "gpu/GPU-cccc");
}

}  // namespace
}  // namespace faultline
