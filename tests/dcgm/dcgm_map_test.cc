#include "parse/dcgm_map.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "dcgm_test_util.h"
#include "parse/prometheus.h"

namespace faultline {
namespace {

constexpr int64_t kScrapeNs = 1'764'400'000LL * 1'000'000'000LL;

DcgmMapResult MapText(const std::string& text, const DcgmMapOptions& opt = {}) {
  auto scrape = ParsePrometheusText(text);
  EXPECT_TRUE(scrape.ok());
  return MapDcgmScrape(*scrape, kScrapeNs, opt);
}

const Observation* FindObs(const DcgmMapResult& r, ObsKind kind, const std::string& gpu,
                           const std::string& attr_key = "", const std::string& attr_value = "") {
  for (const Observation& o : r.observations) {
    if (o.kind != kind || o.component.Id() != gpu) continue;
    if (!attr_key.empty() && (o.attrs.count(attr_key) == 0 || o.attrs.at(attr_key) != attr_value)) continue;
    return &o;
  }
  return nullptr;
}

TEST(DcgmMapTest, BlankSentinelsAreMissing) {
  for (double v : {9223372036854775792.0, 9223372036854775794.0, 9223372036854775807.0, 2147483632.0, 2147483634.0,
                   2147483647.0, 140737488355328.0, 140737488355331.0, std::nan("")}) {
    EXPECT_TRUE(IsDcgmBlank(v)) << v;
  }
  for (double v : {0.0, 1.0, 2147483631.0, 2147483648.0, 1e12, 95.0, -1.0, 2147483640.5}) {
    EXPECT_FALSE(IsDcgmBlank(v)) << v;
  }
}

TEST(DcgmMapTest, HealthyH100ScrapeMapsEveryGpu) {
  DcgmMapResult r = MapText(testing::ReadDcgmData("h100_healthy.prom"));
  EXPECT_TRUE(r.warnings.empty());
  std::set<std::string> gpus;
  for (const Observation& o : r.observations) {
    gpus.insert(o.component.Id());
    EXPECT_EQ(o.node, "gpu-node-a07");
    EXPECT_EQ(o.source, Source::kDcgmExporter);
    EXPECT_EQ(o.time_ns, kScrapeNs);
    EXPECT_EQ(o.component.type, ComponentType::kGpu);
  }
  EXPECT_EQ(gpus.size(), 8u);
  // Retired pages are blank on H100 (it remaps rows instead): 3 fields x 8 GPUs.
  EXPECT_EQ(r.blank_values, 24u);
  EXPECT_EQ(r.unmapped_series, 4u * 8);  // energy, util, FB used, profiling
  EXPECT_EQ(FindObs(r, ObsKind::kRetiredPages, "gpu/0"), nullptr);
  EXPECT_EQ(FindObs(r, ObsKind::kXid, "gpu/0"), nullptr) << "XID gauge 0 = none";

  const Observation* id = FindObs(r, ObsKind::kGpuIdentity, "gpu/1");
  ASSERT_NE(id, nullptr);
  EXPECT_EQ(id->attrs.at("uuid"), "GPU-a2c4e6f8-1b3d-4f5a-8c7e-9d0b1a2c3e42");
  EXPECT_EQ(id->attrs.at("bdf"), "0000:2a:00.0");
  EXPECT_EQ(id->attrs.at("name"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(id->component.keys.at("bdf"), "0000:2a:00.0");
  EXPECT_EQ(id->component.keys.at("index"), "1");

  const Observation* sbe = FindObs(r, ObsKind::kEccSbe, "gpu/2", "counter", "aggregate");
  ASSERT_NE(sbe, nullptr);
  EXPECT_EQ(*sbe->value, 3);
  EXPECT_EQ(sbe->layer, Layer::kGpu);
  EXPECT_NE(sbe->raw.find("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL{gpu=\"2\""), std::string::npos);

  const Observation* mem = FindObs(r, ObsKind::kTemperature, "gpu/4", "sensor", "memory");
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(*mem->value, 48);
  EXPECT_EQ(mem->attrs.at("slowdown"), "95");
  const Observation* core = FindObs(r, ObsKind::kTemperature, "gpu/4", "sensor", "gpu");
  ASSERT_NE(core, nullptr);
  EXPECT_EQ(core->attrs.at("max_op"), "87");
  EXPECT_EQ(core->attrs.count("slowdown"), 0u);

  const Observation* gen = FindObs(r, ObsKind::kPcieLinkGen, "gpu/0");
  ASSERT_NE(gen, nullptr);
  EXPECT_EQ(gen->layer, Layer::kFabric);
  EXPECT_EQ(gen->attrs.at("max"), "5");
  const Observation* crc = FindObs(r, ObsKind::kNvlinkCrcFlit, "gpu/7");
  ASSERT_NE(crc, nullptr);
  EXPECT_EQ(crc->attrs.at("scope"), "total");
  const Observation* power = FindObs(r, ObsKind::kPower, "gpu/2");
  ASSERT_NE(power, nullptr);
  EXPECT_DOUBLE_EQ(*power->value, 519.25);
  ASSERT_NE(FindObs(r, ObsKind::kClock, "gpu/0", "clock", "sm"), nullptr);
  ASSERT_NE(FindObs(r, ObsKind::kPowerLimit, "gpu/0"), nullptr);
}

TEST(DcgmMapTest, FaultyScrapeCarriesTheFaults) {
  DcgmMapResult r = MapText(testing::ReadDcgmData("h100_faulty.prom"));
  const Observation* dbe = FindObs(r, ObsKind::kEccDbe, "gpu/3", "counter", "volatile");
  ASSERT_NE(dbe, nullptr);
  EXPECT_EQ(*dbe->value, 2);
  ASSERT_NE(FindObs(r, ObsKind::kRowRemapPending, "gpu/3"), nullptr);
  EXPECT_EQ(*FindObs(r, ObsKind::kRowRemapPending, "gpu/3")->value, 1);
  const Observation* mask = FindObs(r, ObsKind::kClockThrottle, "gpu/5");
  ASSERT_NE(mask, nullptr);
  EXPECT_EQ(*mask->value, 0x88);
  EXPECT_EQ(mask->attrs.at("mask"), "0x88");
  const Observation* xid = FindObs(r, ObsKind::kXid, "gpu/3");
  ASSERT_NE(xid, nullptr);
  EXPECT_EQ(xid->code, 48);
  EXPECT_EQ(xid->layer, Layer::kOs);
  const Observation* width = FindObs(r, ObsKind::kPcieLinkWidth, "gpu/1");
  ASSERT_NE(width, nullptr);
  EXPECT_EQ(*width->value, 8);
  EXPECT_EQ(width->attrs.at("max"), "16");
  EXPECT_EQ(FindObs(r, ObsKind::kEccSbe, "gpu/0", "counter", "volatile"), nullptr) << "sentinel";
  EXPECT_EQ(FindObs(r, ObsKind::kPower, "gpu/4"), nullptr) << "NaN";
  EXPECT_EQ(r.blank_values, 24u + 2);
}

TEST(DcgmMapTest, NodeOptionOverridesHostnameLabel) {
  DcgmMapResult r = MapText("m_unused 1\nDCGM_FI_DEV_GPU_TEMP{gpu=\"0\",hostname=\"lower\"} 40\n", {"n42"});
  ASSERT_FALSE(r.observations.empty());
  for (const Observation& o : r.observations) EXPECT_EQ(o.node, "n42");
  r = MapText("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",hostname=\"lower\"} 40\n");
  EXPECT_EQ(r.observations.back().node, "lower");
}

TEST(DcgmMapTest, GpuIdentifiedByUuidOrBusIdWhenIndexIsMissing) {
  DcgmMapResult r = MapText(
      "DCGM_FI_DEV_GPU_TEMP{UUID=\"GPU-77\"} 40\n"
      "DCGM_FI_DEV_GPU_TEMP{pci_bus_id=\"00000000:9A:00.0\"} 41\n"
      "DCGM_FI_DEV_GPU_TEMP{device=\"nvidia6\"} 42\n"
      "DCGM_FI_DEV_GPU_TEMP{gpu=\"-1\",Hostname=\"x\"} 43\n");
  EXPECT_NE(FindObs(r, ObsKind::kTemperature, "gpu/GPU-77"), nullptr);
  EXPECT_NE(FindObs(r, ObsKind::kTemperature, "gpu/0000:9a:00.0"), nullptr);
  EXPECT_NE(FindObs(r, ObsKind::kTemperature, "gpu/6"), nullptr);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("line 4"), std::string::npos);
}

TEST(DcgmMapTest, SampleTimestampsAreUsedWhenPlausible) {
  DcgmMapResult r = MapText(
      "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 40 1764400005000\n"
      "DCGM_FI_DEV_MEMORY_TEMP{gpu=\"0\"} 41 99999999999999999\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 41 -7\n");
  EXPECT_EQ(FindObs(r, ObsKind::kTemperature, "gpu/0", "sensor", "gpu")->time_ns, 1764400005000LL * 1000000);
  EXPECT_EQ(FindObs(r, ObsKind::kTemperature, "gpu/0", "sensor", "memory")->time_ns, kScrapeNs);
  EXPECT_EQ(FindObs(r, ObsKind::kPower, "gpu/0")->time_ns, kScrapeNs);
}

TEST(DcgmMapTest, ImpossibleMasksAreDropped) {
  DcgmMapResult r = MapText(
      "DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu=\"0\"} -8\n"
      "DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu=\"1\"} 8.5\n"
      "DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu=\"2\"} +Inf\n"
      "DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu=\"3\"} 64\n");
  EXPECT_EQ(FindObs(r, ObsKind::kClockThrottle, "gpu/0"), nullptr);
  EXPECT_EQ(FindObs(r, ObsKind::kClockThrottle, "gpu/1"), nullptr);
  EXPECT_EQ(FindObs(r, ObsKind::kClockThrottle, "gpu/2"), nullptr);
  ASSERT_NE(FindObs(r, ObsKind::kClockThrottle, "gpu/3"), nullptr);
  EXPECT_EQ(FindObs(r, ObsKind::kClockThrottle, "gpu/3")->attrs.at("mask"), "0x40");
}

}  // namespace
}  // namespace faultline
