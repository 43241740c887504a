// Pipeline tests: realistic kernel-log text -> KernelLogReader -> KernelDetector.
#include "engine/detect/kernel_detector.h"

#include <gtest/gtest.h>

#include <string>

#include "sources/kmsg/log_reader.h"

namespace faultline {
namespace {

std::vector<Finding> Detect(const std::string& log, Inventory inv = {}) {
  auto reader = KernelLogReader::Create({});
  EXPECT_TRUE(reader.ok());
  (*reader)->Feed(log);
  (*reader)->Finish();
  KernelDetector detector({}, std::move(inv));
  for (const Observation& o : (*reader)->TakeObservations()) detector.Observe(o);
  return detector.Findings();
}

std::vector<Finding> OfClass(const std::vector<Finding>& fs, FaultClass c) {
  std::vector<Finding> out;
  for (const Finding& f : fs) {
    if (f.fault_class == c) out.push_back(f);
  }
  return out;
}

std::string Xid(double t, const std::string& bdf, int code, const std::string& pid, const std::string& name,
                const std::string& msg) {
  char ts[32];
  std::snprintf(ts, sizeof ts, "[%12.6f] ", t);
  return std::string(ts) + "NVRM: Xid (PCI:" + bdf + "): " + std::to_string(code) + ", pid=" + pid + ", name=" + name +
         ", " + msg + "\n";
}

const std::string kWarp = "Graphics SM Warp Exception on (GPC 1, TPC 3, SM 0): Out Of Range Address";

TEST(KernelDetectTest, Xid13FromOneProgramIsTheProgram) {
  std::string log;
  for (int i = 0; i < 50; ++i) log += Xid(100 + i, "0000:b5:00", 13, "4242", "train.py", kWarp);
  auto fs = Detect(log);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kUserApplication);
  EXPECT_EQ(fs[0].action, Action::kNotifyUser);
  EXPECT_EQ(fs[0].count, 50u);
  EXPECT_EQ(fs[0].component.Id(), "gpu/0000:b5:00.0");
}

TEST(KernelDetectTest, Xid13OnOneGpcTpcAcrossProgramsSuspectsHardware) {
  std::string log = Xid(100, "0000:b5:00", 13, "4242", "train.py", kWarp) +
                    Xid(900, "0000:b5:00", 13, "5151", "eval.py", kWarp) +
                    Xid(1900, "0000:b5:00", 13, "6161", "train.py", kWarp);
  auto fs = Detect(log);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kGpuSram);
  EXPECT_EQ(fs[0].action, Action::kDrain);
  EXPECT_EQ(fs[0].attrs.at("suspect"), "hardware");
}

TEST(KernelDetectTest, SameProgramFaultingOnManyGpusIsStillTheProgram) {
  std::string log = Xid(100, "0000:b5:00", 31, "4242", "train.py", "MMU Fault") +
                    Xid(200, "0000:b5:00", 31, "4343", "train.py", "MMU Fault") +
                    Xid(300, "0000:17:00", 31, "4444", "train.py", "MMU Fault");
  auto fs = Detect(log);
  ASSERT_EQ(fs.size(), 2u);
  for (const Finding& f : fs) EXPECT_EQ(f.fault_class, FaultClass::kUserApplication);
}

TEST(KernelDetectTest, Xid13OnDifferentTpcsFromDifferentProgramsIsNotHardware) {
  std::string log = Xid(100, "0000:b5:00", 13, "1", "a", "Graphics SM Warp Exception on (GPC 1, TPC 3, SM 0)") +
                    Xid(200, "0000:b5:00", 13, "2", "b", "Graphics SM Warp Exception on (GPC 4, TPC 0, SM 1)");
  auto fs = Detect(log);
  ASSERT_EQ(fs.size(), 2u);
  for (const Finding& f : fs) EXPECT_EQ(f.fault_class, FaultClass::kUserApplication);
}

TEST(KernelDetectTest, Xid48AloneResetsWith63Drains) {
  auto alone = Detect(Xid(10, "0000:b5:00", 48, "7", "x", "An uncorrectable double bit error (DBE) has been detected"));
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].fault_class, FaultClass::kHbmUncorrectable);
  EXPECT_EQ(alone[0].action, Action::kResetGpu);
  auto paired =
      Detect(Xid(10, "0000:b5:00", 48, "7", "x", "DBE") +
             Xid(10.5, "0000:b5:00", 63, "'<unknown>'", "<unknown>", "Row Remapper: New row marked for remapping"));
  ASSERT_EQ(paired.size(), 1u);
  EXPECT_EQ(paired[0].action, Action::kDrain);
  EXPECT_EQ(paired[0].attrs.at("then"), "reset_gpu");
  EXPECT_EQ(paired[0].count, 2u);
  auto exhausted = Detect(Xid(10, "0000:b5:00", 64, "'<unknown>'", "<unknown>", "Row Remapper Error"));
  ASSERT_EQ(exhausted.size(), 1u);
  EXPECT_EQ(exhausted[0].fault_class, FaultClass::kRowRemapExhausted);
}

TEST(KernelDetectTest, Xid45AfterAnotherXidIsSympatheticAloneItIsItsOwn) {
  auto after = Detect(Xid(10, "0000:b5:00", 48, "7", "x", "DBE") + Xid(12, "0000:b5:00", 45, "7", "x", "Ch 00000010"));
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].fault_class, FaultClass::kHbmUncorrectable);
  EXPECT_EQ(after[0].attrs.at("sympathetic_xid45"), "1");
  EXPECT_EQ(after[0].evidence.size(), 2u);
  auto alone = Detect(Xid(12, "0000:b5:00", 45, "7", "x", "Ch 00000010"));
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].fault_class, FaultClass::kDriverFault);
  auto other_gpu = Detect(Xid(10, "0000:17:00", 48, "7", "x", "DBE") + Xid(12, "0000:b5:00", 45, "7", "x", "Ch"));
  EXPECT_EQ(other_gpu.size(), 2u);
}

TEST(KernelDetectTest, Xid94NeverEscalatesToRma) {
  std::string log;
  for (int i = 0; i < 1000; ++i) log += Xid(10 + i * 400, "0000:b5:00", 94, std::to_string(i), "job", "Contained: SM");
  for (const Finding& f : Detect(log)) {
    EXPECT_LT(f.action, Action::kRma);
    EXPECT_LT(f.action, Action::kResetGpu);
  }
}

TEST(KernelDetectTest, FallenOffAfterAerNamesTheLink) {
  std::string log =
      "[  102.500000] pcieport 0000:b0:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:b5:00.0\n"
      "[  102.500001] nvidia 0000:b5:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, "
      "(Requester ID)\n"
      "[  102.500003] nvidia 0000:b5:00.0:    [14] CmpltTO                (First)\n"
      "[  103.000000] NVRM: GPU 0000:b5:00.0: GPU has fallen off the bus.\n"
      "[  103.000001] NVRM: Xid (PCI:0000:b5:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n";
  auto fs = Detect(log);
  ASSERT_EQ(fs.size(), 1u) << "the AER errors are evidence of the fall, not a separate fault";
  EXPECT_EQ(fs[0].fault_class, FaultClass::kGpuFellOffBus);
  EXPECT_EQ(fs[0].component.keys.at("upstream_port"), "0000:b0:01.0");
  EXPECT_NE(fs[0].summary.find("0000:b0:01.0"), std::string::npos);
  EXPECT_EQ(fs[0].evidence.front().component, "pcie/0000:b5:00.0");  // the chain starts with the link error
  auto bare = Detect("[ 103.0] NVRM: GPU 0000:b5:00.0: GPU has fallen off the bus.\n");
  ASSERT_EQ(bare.size(), 1u);
  EXPECT_EQ(bare[0].component.keys.count("upstream_port"), 0u);
  EXPECT_NE(bare[0].summary.find("no PCIe AER"), std::string::npos);
}

std::string CorrectedAer(double t, const std::string& port, const std::string& drv, const std::string& dev) {
  char ts[32];
  std::snprintf(ts, sizeof ts, "[%12.6f] ", t);
  return std::string(ts) + "pcieport " + port + ": AER: Corrected error received: " + dev + "\n" + ts + drv + " " +
         dev + ": PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n" + ts + drv + " " + dev +
         ":    [ 0] RxErr                  (First)\n";
}

TEST(KernelDetectTest, NicCorrectedAerStormNeverImplicatesAGpu) {
  std::string log = Xid(1, "0000:b5:00", 13, "1", "app", kWarp);  // an unrelated GPU nearby
  for (int i = 0; i < 60; ++i) log += CorrectedAer(200 + i * 0.5, "0000:a0:03.0", "mlx5_core", "0000:a3:00.0");
  auto fs = Detect(log);
  auto link = OfClass(fs, FaultClass::kPcieLinkDegraded);
  ASSERT_EQ(link.size(), 1u);
  EXPECT_EQ(link[0].component.Id(), "pcie/0000:a3:00.0");
  EXPECT_EQ(link[0].component.keys.at("driver"), "mlx5_core");
  EXPECT_EQ(link[0].component.keys.count("uuid"), 0u);
  for (const Finding& f : fs) {
    if (f.component.type == ComponentType::kGpu) {
      EXPECT_NE(f.fault_class, FaultClass::kPcieLinkDegraded);
    }
  }
  // A handful of corrected errors is noise, not a finding.
  EXPECT_TRUE(
      OfClass(Detect(CorrectedAer(5, "0000:a0:03.0", "mlx5_core", "0000:a3:00.0")), FaultClass::kPcieLinkDegraded)
          .empty());
}

TEST(KernelDetectTest, Xid154RaisesTheGpusAction) {
  auto fs = Detect(Xid(10, "0000:b5:00", 95, "1", "x", "Uncontained: FBHUB") +
                   Xid(10.1, "0000:b5:00", 154, "'<unknown>'", "<unknown>",
                       "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].action, Action::kRebootNode);
  EXPECT_EQ(fs[0].attrs.at("driver_recovery_action"), "Node Reboot Required");
}

TEST(KernelDetectTest, SxidFatalIsSwitchNonFatalIsLink) {
  auto fs = Detect(
      "[ 50.0] nvidia-nvswitch3: SXid (PCI:0000:c6:00.0): 24007, Fatal, Link 12 sourcetrack timeout\n"
      "[ 50.0] nvidia-nvswitch3: SXid (PCI:0000:c6:00.0): 24007, Severity 1 Engine instance 12 Sub-engine instance 00\n"
      "[ 50.0] nvidia-nvswitch3: SXid (PCI:0000:c6:00.0): 24007, Data {0x00000000, 0x00000010}\n"
      "[ 60.0] nvidia-nvswitch1: SXid (PCI:0000:c4:00.0): 20009, Non-fatal, Link 32 RX Short Error Rate\n");
  auto sw = OfClass(fs, FaultClass::kNvswitchFault);
  ASSERT_EQ(sw.size(), 1u);
  EXPECT_EQ(sw[0].component.Id(), "nvswitch/3");
  EXPECT_EQ(sw[0].component.keys.at("link"), "12");
  EXPECT_EQ(sw[0].count, 1u) << "continuation lines belong to the same SXid";
  auto link = OfClass(fs, FaultClass::kNvlinkErrors);
  ASSERT_EQ(link.size(), 1u);
  EXPECT_EQ(link[0].action, Action::kMonitor);
}

TEST(KernelDetectTest, NvLink5FatalNamesTheLink) {
  auto fs = Detect(
      "[ 70.0] NVRM: Xid (PCI:0000:1b:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 0x00000000 "
      "0x00000000 0x00000000)\n");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kNvlinkErrors);
  EXPECT_EQ(fs[0].component.Id(), "nvlink/0000:1b:00.0/1");
  EXPECT_EQ(fs[0].action, Action::kResetGpu);
}

TEST(KernelDetectTest, GpuMapAndLogIdentityAttributeGpus) {
  Inventory inv;
  inv.AddGpu({3, "GPU-3333", "1650000000003", "0000:b5:00.0", "H100"});
  auto mapped = Detect(Xid(10, "0000:b5:00", 48, "1", "x", "DBE"), inv);
  ASSERT_EQ(mapped.size(), 1u);
  EXPECT_EQ(mapped[0].component.Id(), "gpu/3");
  EXPECT_EQ(mapped[0].component.keys.at("serial"), "1650000000003");
  EXPECT_NE(mapped[0].summary.find("serial 1650000000003"), std::string::npos);
  auto from_log = Detect("[ 1.0] NVRM: GPU at PCI:0000:17:00: GPU-abcd\n[ 1.0] NVRM: GPU Board Serial Number: 99\n" +
                         Xid(10, "0000:17:00", 48, "1", "x", "DBE"));
  ASSERT_EQ(from_log.size(), 1u);
  EXPECT_EQ(from_log[0].component.keys.at("uuid"), "GPU-abcd");
  EXPECT_EQ(from_log[0].component.keys.at("serial"), "99");
  auto unmapped = Detect(Xid(10, "0000:3b:00", 48, "1", "x", "DBE"), inv);
  EXPECT_EQ(unmapped[0].component.Id(), "gpu/0000:3b:00.0");
}

TEST(KernelDetectTest, HostMemoryAndProgramFaults) {
  auto ue = Detect("[ 5.0] EDAC MC1: 1 UE memory read error on CPU_SrcID#1_MC#0_Chan#0_DIMM#0\n");
  ASSERT_EQ(ue.size(), 1u);
  EXPECT_EQ(ue[0].fault_class, FaultClass::kHostMemory);
  EXPECT_EQ(ue[0].action, Action::kDrain);
  EXPECT_TRUE(Detect("[ 5.0] EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0\n").empty());
  auto oom = Detect("[ 9.0] Out of memory: Killed process 77123 (python3) total-vm:8123kB, anon-rss:5012kB\n");
  ASSERT_EQ(oom.size(), 1u);
  EXPECT_EQ(oom[0].fault_class, FaultClass::kUserApplication);
  EXPECT_EQ(oom[0].attrs.at("process"), "python3");
}

TEST(KernelDetectTest, NicLinkFlapIsALinkFinding) {
  std::string log;
  for (int i = 0; i < 4; ++i) {
    log += "[ " + std::to_string(100 + i * 10) + ".0] mlx5_core 0000:0c:00.0 ibp12s0: Link down\n";
    log += "[ " + std::to_string(105 + i * 10) + ".0] mlx5_core 0000:0c:00.0 ibp12s0: Link up\n";
  }
  auto fs = Detect(log);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkDown);
  EXPECT_EQ(fs[0].action, Action::kReseatOrReplaceLink);
  EXPECT_TRUE(
      Detect("[ 1.0] mlx5_core 0000:0c:00.0 ibp12s0: Link down\n[ 2.0] mlx5_core 0000:0c:00.0 ibp12s0: Link up\n")
          .empty());
}

TEST(KernelDetectTest, IgnoresObservationsFromOtherSources) {
  KernelDetector d;
  Observation o;
  o.source = Source::kNvml;
  o.kind = ObsKind::kXid;
  o.code = 48;
  d.Observe(o);
  EXPECT_TRUE(d.Findings().empty());
}

TEST(KernelDetectTest, Xid31FromOneProgramRestartedIsStillTheProgram) {
  // The scheduler restarts the job: new pids, same program, same MMU fault.
  std::string log = Xid(100, "0000:b5:00", 31, "4242", "train.py", "MMU Fault") +
                    Xid(400, "0000:b5:00", 31, "5353", "train.py", "MMU Fault") +
                    Xid(700, "0000:b5:00", 31, "6464", "train.py", "MMU Fault");
  auto fs = Detect(log);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kUserApplication);
  EXPECT_EQ(fs[0].action, Action::kNotifyUser);
}

TEST(KernelDetectTest, Xid31FromDifferentProgramsOnOneGpuSuspectsHardware) {
  std::string log = Xid(100, "0000:b5:00", 31, "4242", "train.py", "MMU Fault") +
                    Xid(400, "0000:b5:00", 31, "5353", "dcgmproftester", "MMU Fault");
  auto fs = Detect(log);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kGpuSram);
  EXPECT_EQ(fs[0].attrs.at("suspect"), "hardware");
}

TEST(KernelDetectTest, OneExceptionPerProcessIsBackgroundARepeatingProcessIsAnEvent) {
  // A notebook's single bad index: informational (the isolator leads with "none").
  auto fs = Detect(Xid(100, "0000:b5:00", 13, "4242", "python3", kWarp));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kUserApplication);
  EXPECT_EQ(fs[0].severity, Severity::kInfo);
  // The same process faulting in several units: one program's storm, an event.
  fs = Detect(Xid(100, "0000:b5:00", 13, "4242", "python3", "Graphics SM Warp Exception on (GPC 1, TPC 3, SM 0)") +
              Xid(101, "0000:b5:00", 13, "4242", "python3", "Graphics SM Warp Exception on (GPC 5, TPC 0, SM 1)"));
  ASSERT_FALSE(fs.empty());
  for (const Finding& f : fs) {
    EXPECT_EQ(f.fault_class, FaultClass::kUserApplication);
    EXPECT_EQ(f.severity, Severity::kWarning);
  }
}

TEST(KernelDetectTest, Xid13WithoutAUnitFromRestartsIsNotHardware) {
  // "Graphics Exception: ESR ..." lines name no GPC/TPC: like XID 31, restarts of one
  // program are the program.
  const std::string esr = "Graphics Exception: ESR 0x405840=0x4000000 0x405844=0x0";
  auto fs =
      Detect(Xid(100, "0000:b5:00", 13, "4242", "python3", esr) + Xid(900, "0000:b5:00", 13, "5353", "python3", esr));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kUserApplication);
}

}  // namespace
}  // namespace faultline
