// AMD readings (sources/amdsmi's AmdGpuReading) through EmitAmdReading into the EXISTING
// GPU, NVLink-class and PCIe detectors: the classes an NVIDIA GPU's NVML readings give.
#include <gtest/gtest.h>

#include "engine/detect/fabric_detectors.h"
#include "engine/detect/gpu_detectors.h"
#include "sources/amdsmi/amd_collector.h"

namespace faultline {
namespace {

using amdsmi::AmdGpuReading;
using amdsmi::RasErrCount;

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kT0 = 1'790'000'000LL * kSec;

AmdGpuReading Healthy() {
  AmdGpuReading r;
  r.bdf = "0000:0c:00.0";
  r.uuid = "5f1c74a1-0000-1000-80e9-000000000000";
  r.blocks["umc"] = RasErrCount{0, 2, 0, true};
  r.blocks["gfx"] = RasErrCount{};
  r.blocks["xgmi_wafl"] = RasErrCount{};
  r.bad_pages = amdsmi::BadPages{};
  r.bad_page_threshold = 1966;
  r.temps["hotspot"] = {70, 105.0, 115.0};
  r.temps["memory"] = {60, 95.0, std::nullopt};
  r.temps["edge"] = {50, std::nullopt, std::nullopt};
  r.power_w = 600;
  r.power_limit_w = 750;
  r.throttle_mask = amdsmi::ThrottleMaskFor(false, false, false, false, false);
  r.xgmi_status = 0;
  r.pcie_replay = 0;
  return r;
}

struct Pipeline {
  std::vector<std::unique_ptr<Detector>> d = MakeGpuDetectors();
  Pipeline() {
    for (auto& f : MakeFabricDetectors(FabricOptions{}, nullptr)) d.push_back(std::move(f));
  }
  void Feed(const AmdGpuReading& r, int64_t t) {
    std::vector<Observation> obs;
    amdsmi::EmitAmdReading(r, 0, "n1", t, obs);
    for (auto& det : d) {
      for (const Observation& o : obs) det->Observe(o);
    }
  }
  std::vector<Finding> Findings() const {
    std::vector<Finding> out;
    for (auto& det : d) {
      for (Finding& f : det->Findings()) out.push_back(std::move(f));
    }
    return out;
  }
  bool Has(FaultClass c) const {
    for (const Finding& f : Findings()) {
      if (f.fault_class == c) return true;
    }
    return false;
  }
};

TEST(AmdGpuMapping, ObservationsFollowTheNvidiaConventions) {
  std::vector<Observation> obs;
  amdsmi::EmitAmdReading(Healthy(), 3, "n1", kT0, obs);
  std::map<std::string, int> kinds;
  for (const Observation& o : obs) {
    ++kinds[std::string(ToString(o.kind))];
    EXPECT_EQ(o.component.Id(), "gpu/3");
    EXPECT_EQ(o.component.keys.at("bdf"), "0000:0c:00.0");
    EXPECT_EQ(o.source, Source::kAmdSmi);
    if (o.kind == ObsKind::kEccSbe || o.kind == ObsKind::kEccDbe) {
      EXPECT_EQ(o.attrs.at("counter"), "volatile");
    }
    if (o.kind == ObsKind::kTemperature && o.attrs.at("sensor") == "gpu") {
      EXPECT_EQ(o.attrs.at("amd_sensor"), "hotspot");
      EXPECT_EQ(o.attrs.at("slowdown"), "105");
    }
    if (o.kind == ObsKind::kRetiredPages) {
      EXPECT_EQ(o.attrs.at("limit"), "1966");
    }
    if (o.kind == ObsKind::kNvlinkCrcData) {
      EXPECT_EQ(o.attrs.at("scope"), "total");
    }
  }
  EXPECT_EQ(kinds["gpu_identity"], 1);
  EXPECT_EQ(kinds["ecc_sbe"], 3);  // total, dram (umc), sram (on-chip)
  EXPECT_EQ(kinds["ecc_dbe"], 3);
  EXPECT_EQ(kinds["temperature"], 3);
  EXPECT_EQ(kinds["clock_throttle"], 1);
  EXPECT_EQ(kinds["retired_pages"], 1);
}

TEST(AmdGpuMapping, HealthyGpuOverAnHourIsClean) {
  Pipeline run;
  AmdGpuReading r = Healthy();
  for (int i = 0; i <= 360; ++i) {
    if (i % 120 == 0) ++r.blocks["umc"].ce;  // a few corrected errors: background
    run.Feed(r, kT0 + i * 10 * kSec);
  }
  EXPECT_TRUE(run.Findings().empty());
}

TEST(AmdGpuMapping, UmcUncorrectableIsHbmAndGfxIsSram) {
  Pipeline hbm;
  AmdGpuReading r = Healthy();
  hbm.Feed(r, kT0);
  r.blocks["umc"].ue = 1;
  hbm.Feed(r, kT0 + 10 * kSec);
  EXPECT_TRUE(hbm.Has(FaultClass::kHbmUncorrectable));
  EXPECT_FALSE(hbm.Has(FaultClass::kGpuSram));

  Pipeline sram;
  r = Healthy();
  sram.Feed(r, kT0);
  r.blocks["gfx"].ue = 1;
  sram.Feed(r, kT0 + 10 * kSec);
  EXPECT_TRUE(sram.Has(FaultClass::kGpuSram));
  EXPECT_FALSE(sram.Has(FaultClass::kHbmUncorrectable));
}

TEST(AmdGpuMapping, CorrectableStormIsSbeAging) {
  Pipeline run;
  AmdGpuReading r = Healthy();
  for (int i = 0; i <= 72; ++i) {  // 2 hours, 10/min
    r.blocks["umc"].ce += 50;
    run.Feed(r, kT0 + i * 100 * kSec);
  }
  EXPECT_TRUE(run.Has(FaultClass::kHbmSbeAging));
}

TEST(AmdGpuMapping, RetirementJudgedAgainstTheDriversThreshold) {
  Pipeline under;
  AmdGpuReading r = Healthy();
  r.bad_pages->reserved = 100;  // above DCGM's 63, far below amdgpu's 1966
  under.Feed(r, kT0);
  r.bad_pages->reserved = 120;
  under.Feed(r, kT0 + 60 * kSec);
  EXPECT_FALSE(under.Has(FaultClass::kHbmUncorrectable));

  Pipeline over;
  r.bad_pages->reserved = 1967;
  over.Feed(r, kT0);
  bool rma = false;
  for (const Finding& f : over.Findings())
    rma = rma || (f.fault_class == FaultClass::kHbmUncorrectable && f.action == Action::kRma);
  EXPECT_TRUE(rma);
}

// A page that cannot be reserved is the remap-failure analog; a pending retirement is the
// HBM's uncorrectable error, repaired by a reset (AMD has no row remapping).
TEST(AmdGpuMapping, UnreservablePageIsRemapExhaustedPendingIsReset) {
  Pipeline run;
  AmdGpuReading r = Healthy();
  r.bad_pages->unreservable = 1;
  run.Feed(r, kT0);
  EXPECT_TRUE(run.Has(FaultClass::kRowRemapExhausted));
  Pipeline pending;
  r = Healthy();
  r.bad_pages->pending = 2;
  pending.Feed(r, kT0);
  EXPECT_TRUE(pending.Has(FaultClass::kHbmUncorrectable));
  EXPECT_FALSE(pending.Has(FaultClass::kRowRemapPending));
}

TEST(AmdGpuMapping, SocketThermalViolationIsGpuThermalPptIsPolicy) {
  Pipeline hot;
  AmdGpuReading r = Healthy();
  r.throttle_mask = amdsmi::ThrottleMaskFor(true, false, false, false, false);
  hot.Feed(r, kT0);
  EXPECT_TRUE(hot.Has(FaultClass::kGpuThermal));

  Pipeline capped;
  r.throttle_mask = amdsmi::ThrottleMaskFor(false, false, false, false, true);
  for (int i = 0; i < 120; ++i) capped.Feed(r, kT0 + i * 10 * kSec);
  EXPECT_TRUE(capped.Findings().empty());
}

TEST(AmdGpuMapping, HotspotAtCriticalIsGpuThermal) {
  Pipeline run;
  AmdGpuReading r = Healthy();
  r.temps["hotspot"].c = 106;
  run.Feed(r, kT0);
  run.Feed(r, kT0 + 10 * kSec);
  EXPECT_TRUE(run.Has(FaultClass::kGpuThermal));
}

TEST(AmdGpuMapping, XgmiErrorsAreTheNvlinkClass) {
  Pipeline run;
  AmdGpuReading r = Healthy();
  for (int i = 0; i < 30; ++i) {
    r.blocks["xgmi_wafl"].ce += 5000;
    run.Feed(r, kT0 + i * 10 * kSec);
  }
  EXPECT_TRUE(run.Has(FaultClass::kNvlinkErrors));
  Pipeline ue;
  r = Healthy();
  ue.Feed(r, kT0);
  r.blocks["xgmi_wafl"].ue = 1;
  ue.Feed(r, kT0 + 10 * kSec);
  EXPECT_TRUE(ue.Has(FaultClass::kNvlinkErrors));
}

TEST(AmdGpuMapping, LostGpuIsFellOffBus) {
  Pipeline run;
  AmdGpuReading r = Healthy();
  run.Feed(r, kT0);
  r.lost = true;
  r.lost_call = "amdsmi_get_processor_handles";
  run.Feed(r, kT0 + 10 * kSec);
  EXPECT_TRUE(run.Has(FaultClass::kGpuFellOffBus));
}

TEST(AmdGpuMapping, ThrottleBits) {
  EXPECT_EQ(amdsmi::ThrottleMaskFor(false, false, false, false, false), 0u);
  EXPECT_EQ(amdsmi::ThrottleMaskFor(true, false, false, false, false), 0x48u);
  EXPECT_EQ(amdsmi::ThrottleMaskFor(false, true, false, false, false), 0x48u);
  EXPECT_EQ(amdsmi::ThrottleMaskFor(false, false, true, false, false), 0x8u);
  EXPECT_EQ(amdsmi::ThrottleMaskFor(false, false, false, true, false), 0x8u);
  EXPECT_EQ(amdsmi::ThrottleMaskFor(false, false, false, false, true), 0x4u);
}

}  // namespace
}  // namespace faultline
