// dcgm-exporter scrapes through the GPU detector set: source -> observations -> findings.
#include <gtest/gtest.h>

#include <map>

#include "core/clock.h"
#include "dcgm_test_util.h"
#include "engine/detect/gpu_detectors.h"
#include "sources/dcgm_exporter/dcgm_exporter.h"

namespace faultline {
namespace {

std::map<std::string, Finding> RunScrape(const std::string& file) {
  FakeClock clock(1'764'400'000LL * 1'000'000'000LL);
  DcgmExporterOptions opt;
  opt.file = testing::DcgmDataPath(file);
  DcgmExporterSource source(opt, clock, nullptr);
  auto r = source.Collect();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  auto detectors = MakeGpuDetectors();
  std::map<std::string, Finding> out;  // by "gpu/N fault_class"
  for (auto& d : detectors) {
    for (const Observation& o : r->observations) d->Observe(o);
    for (Finding& f : d->Findings()) {
      out[f.component.Id() + " " + std::string(ToString(f.fault_class))] = std::move(f);
    }
  }
  return out;
}

TEST(DcgmPipelineTest, HealthyScrapeHasNoFindings) { EXPECT_TRUE(RunScrape("h100_healthy.prom").empty()); }

TEST(DcgmPipelineTest, FaultyScrapeNamesEachFaultOnItsGpu) {
  auto f = RunScrape("h100_faulty.prom");
  ASSERT_TRUE(f.count("gpu/3 hbm_uncorrectable")) << f.size();
  EXPECT_EQ(f["gpu/3 hbm_uncorrectable"].action, Action::kResetGpu);
  EXPECT_EQ(f["gpu/3 hbm_uncorrectable"].component.keys.at("bdf"), "0000:5d:00.0");
  ASSERT_TRUE(f.count("gpu/3 row_remap_pending"));
  ASSERT_TRUE(f.count("gpu/5 gpu_power_brake"));
  EXPECT_EQ(f["gpu/5 gpu_power_brake"].attrs.at("symptom"), "true");
  ASSERT_TRUE(f.count("gpu/7 row_remap_exhausted"));
  EXPECT_EQ(f["gpu/7 row_remap_exhausted"].action, Action::kRma);
  // One scrape is one sample: HBM at 97 C needs a second sample over 95 C.
  EXPECT_FALSE(f.count("gpu/6 gpu_thermal"));
  EXPECT_EQ(f.size(), 4u);
  for (const auto& [key, finding] : f) {
    EXPECT_EQ(finding.layer, Layer::kGpu) << key;
    EXPECT_FALSE(finding.evidence.empty()) << key;
    EXPECT_EQ(finding.evidence[0].source, Source::kDcgmExporter) << key;
  }
}

}  // namespace
}  // namespace faultline
