// The amdgpu detector: RAS lines to the existing fault classes, the bad-page threshold,
// ring timeouts told apart (a program's, a RAS error's echo, a GPU that keeps hanging),
// resets as evidence, and a healthy node's log making no finding.
#include <gtest/gtest.h>

#include "amd_test_util.h"
#include "engine/detect/kernel_detector.h"

namespace faultline {
namespace {

using testing_amd::Amd;
using testing_amd::Detect;
using testing_amd::Line;
using testing_amd::OfClass;
using testing_amd::Read;

constexpr const char* kGpu = "0000:0c:00.0";
constexpr const char* kOther = "0000:22:00.0";

TEST(AmdDetector, UmcUncorrectableIsHbmResetWithResetAndSavedPageAsEvidence) {
  const std::string log =
      Line(100, Amd(kGpu, "{4}socket: 0, die: 0, 1 new uncorrectable hardware errors detected in umc block")) +
      Line(100.1, Amd(kGpu, "Saved 1 pages to EEPROM table.")) + Line(100.2, Amd(kGpu, "GPU reset begin!")) +
      Line(101, Amd(kGpu, "MODE1 reset")) + Line(103, Amd(kGpu, "GPU reset succeeded, trying to resume"));
  auto fs = Detect(log);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kHbmUncorrectable);
  EXPECT_EQ(fs[0].action, Action::kResetGpu);
  EXPECT_EQ(fs[0].layer, Layer::kGpu);
  EXPECT_EQ(fs[0].component.keys.at("bdf"), kGpu);
  EXPECT_EQ(fs[0].evidence.size(), 5u);  // the error, the saved page and the reset lines
  EXPECT_NE(fs[0].summary.find("HBM"), std::string::npos);
}

TEST(AmdDetector, BlocksMapToTheirClasses) {
  struct Case {
    const char* block;
    FaultClass fc;
    Layer layer;
  } cases[] = {{"umc", FaultClass::kHbmUncorrectable, Layer::kGpu},
               {"gfx", FaultClass::kGpuSram, Layer::kGpu},
               {"sdma", FaultClass::kGpuSram, Layer::kGpu},
               {"mmhub", FaultClass::kGpuSram, Layer::kGpu},
               {"xgmi_wafl", FaultClass::kNvlinkErrors, Layer::kFabric}};
  for (const Case& c : cases) {
    auto fs =
        Detect(Line(5, Amd(kGpu, std::string("2 uncorrectable hardware errors detected in ") + c.block + " block")));
    ASSERT_EQ(fs.size(), 1u) << c.block;
    EXPECT_EQ(fs[0].fault_class, c.fc) << c.block;
    EXPECT_EQ(fs[0].layer, c.layer) << c.block;
  }
}

TEST(AmdDetector, CorrectableAndTotalLinesMakeNoFinding) {
  const std::string log =
      Line(1, Amd(kGpu, "3 correctable hardware errors detected in umc block, no user action is needed.")) +
      Line(
          2,
          Amd(kGpu,
              "socket: 0, die: 0, 4 new correctable hardware errors detected in umc block, no user action is needed")) +
      Line(3, Amd(kGpu, "socket: 0, die: 0, 9 uncorrectable hardware errors detected in total in umc block")) +
      Line(4, Amd(kGpu, "Poison is created, no user action is needed."));
  EXPECT_TRUE(Detect(log).empty());
}

TEST(AmdDetector, DeferredAndPoisonAreContainedRestartJob) {
  auto fs = Detect(Line(1, Amd(kGpu, "socket: 0, die: 0, 1 new deferred hardware errors detected in umc block")) +
                   Line(2, Amd(kGpu, "socket: 0, die: 0, 1 new poison consumption detected in umc block")));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kHbmUncorrectable);
  EXPECT_EQ(fs[0].action, Action::kRestartJob);
  EXPECT_EQ(fs[0].count, 2u);
}

TEST(AmdDetector, FatalInterruptIsUncontained) {
  auto fs = Detect(Line(1, "amdgpu 0000:1c:00.0: {1}uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!") +
                   Line(1.1, "amdgpu 0000:42:00.0: {1}[Hardware Error]: Accelerator Check Architecture events logged"));
  // The other hive member's ACA dump is context, not a second fault.
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].component.keys.at("bdf"), "0000:1c:00.0");
  EXPECT_EQ(fs[0].attrs.at("uncontained"), "true");
  EXPECT_EQ(fs[0].action, Action::kResetGpu);
}

TEST(AmdDetector, BadPageThresholdIsRma) {
  for (const std::string& text :
       {std::string("RAS records:1967 exceed threshold:1966"),
        std::string("GPU will not be initialized. Replace this GPU or increase the threshold"),
        std::string("Please consult AMD Service Action Guide (SAG) for appropriate service "
                    "procedures")}) {
    auto fs = Detect(Line(3, Amd(kGpu, text)));
    ASSERT_EQ(fs.size(), 1u) << text;
    EXPECT_EQ(fs[0].fault_class, FaultClass::kHbmUncorrectable) << text;
    EXPECT_EQ(fs[0].action, Action::kRma) << text;
  }
}

TEST(AmdDetector, RingTimeoutNamingAProcessIsTheProgram) {
  const std::string log = Line(50, Amd(kGpu, "ring gfx_0.0.0 timeout, signaled seq=2662395, emitted seq=2662397")) +
                          Line(50.001, Amd(kGpu, "Process python3 pid 4711 thread python3 pid 4712")) +
                          Line(50.01, Amd(kGpu, "GPU reset begin!")) + Line(50.02, Amd(kGpu, "MODE2 reset")) +
                          Line(51, Amd(kGpu, "GPU reset succeeded, trying to resume"));
  auto fs = Detect(log);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kUserApplication);
  EXPECT_EQ(fs[0].action, Action::kNotifyUser);
  EXPECT_EQ(fs[0].attrs.at("process"), "python3");
  EXPECT_EQ(fs[0].attrs.at("pid"), "4711");
  EXPECT_EQ(fs[0].layer, Layer::kOs);
}

TEST(AmdDetector, RingTimeoutNextToARasErrorIsItsEcho) {
  const std::string log = Line(10, Amd(kGpu, "1 uncorrectable hardware errors detected in umc block")) +
                          Line(12, Amd(kGpu, "ring gfx_0.0.0 timeout, signaled seq=1, emitted seq=3")) +
                          Line(12.001, Amd(kGpu, "Process python3 pid 4711 thread python3 pid 4712"));
  auto fs = Detect(log);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kHbmUncorrectable);
  EXPECT_TRUE(OfClass(fs, FaultClass::kUserApplication).empty());
  // A timeout on another GPU at the same time is that GPU's own business.
  auto two = Detect(log + Line(12.5, Amd(kOther, "ring sdma0 timeout, signaled seq=1, emitted seq=3")) +
                    Line(12.501, Amd(kOther, "Process train pid 99 thread train pid 99")));
  ASSERT_EQ(OfClass(two, FaultClass::kUserApplication).size(), 1u);
  EXPECT_EQ(OfClass(two, FaultClass::kUserApplication)[0].component.keys.at("bdf"), kOther);
}

TEST(AmdDetector, RepeatedTimeoutsWithoutAProcessAreTheGpuOrDriver) {
  std::string one = Line(10, Amd(kGpu, "ring gfx_0.0.0 timeout, signaled seq=1, emitted seq=3"));
  auto single = Detect(one);
  ASSERT_EQ(single.size(), 1u);
  EXPECT_EQ(single[0].fault_class, FaultClass::kUserApplication);  // one: not hardware
  std::string many = one;
  for (int i = 1; i < 4; ++i)
    many += Line(10 + 600 * i, Amd(kGpu, "ring gfx_0.0.0 timeout, signaled seq=1, emitted seq=3"));
  auto fs = Detect(many);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kDriverFault);
  EXPECT_EQ(fs[0].action, Action::kResetGpu);
  // Spread over more than the window: never three in an hour.
  std::string sparse;
  for (int i = 0; i < 4; ++i)
    sparse += Line(10 + 4000 * i, Amd(kGpu, "ring gfx_0.0.0 timeout, signaled seq=1, emitted seq=3"));
  EXPECT_TRUE(OfClass(Detect(sparse), FaultClass::kDriverFault).empty());
}

TEST(AmdDetector, VmFaultNamingAProcessIsTheProgram) {
  auto fs = Detect(Line(1, Amd(kGpu,
                               "[gfxhub] page fault (src_id:0 ring:24 vmid:3 pasid:32769, for process python3 pid "
                               "5200 thread python3 pid 5200)")) +
                   Line(1.2, Amd(kOther,
                                 "[gfxhub] page fault (src_id:0 ring:24 vmid:3 pasid:32769, for process python3 "
                                 "pid 5200 thread python3 pid 5200)")));
  ASSERT_EQ(fs.size(), 2u);
  for (const Finding& f : fs) EXPECT_EQ(f.fault_class, FaultClass::kUserApplication);
}

TEST(AmdDetector, FailedResetIsAGpuOffTheBus) {
  auto fs = Detect(Line(1, Amd(kGpu, "GPU reset begin!")) + Line(2, Amd(kGpu, "GPU reset(1) failed")));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kGpuFellOffBus);
  EXPECT_EQ(fs[0].action, Action::kRebootNode);
}

TEST(AmdDetector, DeviceLostIsJudgedByTheKernelDetectorAsXid79) {
  KernelDetector kernel;
  auto amd = MakeAmdDetector();
  for (const Observation& o : Read(Line(1, "amdgpu 0000:04:00.0: device lost from bus!"))) {
    kernel.Observe(o);
    amd->Observe(o);
  }
  EXPECT_TRUE(amd->Findings().empty());
  auto fs = kernel.Findings();
  ASSERT_EQ(OfClass(fs, FaultClass::kGpuFellOffBus).size(), 1u);
}

TEST(AmdDetector, HealthyNodeBootAndRoutineLinesAreClean) {
  std::string log = Line(12.9, "[drm] amdgpu kernel modesetting enabled.");
  for (const char* bdf : {kGpu, kOther}) {
    log += Line(20, Amd(bdf, "MEM ECC is active.")) + Line(20.1, Amd(bdf, "SRAM ECC is active.")) +
           Line(20.2, Amd(bdf, "RAS INFO: ras initialized successfully, hardware ability[7fff] ras_mask[7fff]")) +
           Line(3000, Amd(bdf, "1 correctable hardware errors detected in umc block, no user action is needed."));
  }
  KernelDetector kernel;
  auto amd = MakeAmdDetector();
  for (const Observation& o : Read(log)) {
    kernel.Observe(o);
    amd->Observe(o);
  }
  EXPECT_TRUE(amd->Findings().empty());
  EXPECT_TRUE(kernel.Findings().empty());
}

TEST(AmdDetector, BoundedAgainstAHostileLogNamingThousandsOfGpus) {
  AmdDetectorOptions o;
  o.max_gpus = 8;
  std::string log;
  for (int i = 0; i < 200; ++i) {
    char bdf[16];
    std::snprintf(bdf, sizeof bdf, "0000:%02x:00.0", i);
    log += Line(i, Amd(bdf, "1 uncorrectable hardware errors detected in umc block"));
  }
  EXPECT_EQ(Detect(log, o).size(), 8u);
}

TEST(AmdDetector, RevisionMovesOnlyForAmdgpuEvents) {
  auto d = MakeAmdDetector();
  const auto r0 = d->Revision();
  Observation other;
  other.kind = ObsKind::kXid;
  d->Observe(other);
  EXPECT_EQ(d->Revision(), r0);
  for (const Observation& o : Read(Line(1, Amd(kGpu, "GPU reset begin!")))) d->Observe(o);
  EXPECT_NE(d->Revision(), r0);
  EXPECT_TRUE(d->Findings().empty());  // a reset alone is not a fault
}

}  // namespace
}  // namespace faultline
