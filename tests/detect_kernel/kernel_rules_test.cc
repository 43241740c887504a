// The kernel detector's knowledge beyond single XIDs: fatal PCIe errors on a GPU's
// port, host memory errors with their DIMM, SXids by NVIDIA's per-code recovery, NVLink5
// decode rows that defer to XID 154, and mlx5 NIC health. Log text written for each class.
#include <gtest/gtest.h>

#include <string>

#include "engine/isolate/isolator.h"
#include "kernel_test_util.h"

namespace faultline {
namespace {

using namespace testing_kernel;  // NOLINT(google-build-using-namespace)

const std::string kOffBus1b =
    "NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.";

// An Intel root port that reports its own Surprise Down, then its verdict.
std::string SurpriseDownOnPort(double t) {
  return Line(t, "pcieport 0000:15:01.0: AER: Uncorrected (Fatal) error received: 0000:15:01.0") +
         Line(t,
              "pcieport 0000:15:01.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, "
              "(Receiver ID)") +
         Line(t, "pcieport 0000:15:01.0:   device [8086:352a] error status/mask=00000020/00100000") +
         Line(t, "pcieport 0000:15:01.0:    [ 5] SDES                   (First)") +
         Line(t + 0.2, "pcieport 0000:15:01.0: AER: device recovery failed");
}

TEST(KernelFatalLink, SurpriseDownOnTheRootPortNamesThePortAndMarksTheGpuAttached) {
  auto fs = Detect(SurpriseDownOnPort(500) + Line(500.4, "NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus.") +
                   Line(500.4, kOffBus1b));
  auto link = OfClass(fs, FaultClass::kPcieLinkDegraded);
  ASSERT_EQ(link.size(), 1u);
  EXPECT_EQ(link[0].component.Id(), "pcie/0000:15:01.0");
  EXPECT_EQ(link[0].component.keys.at("downstream_bdf"), "0000:1b:00.0");
  EXPECT_EQ(link[0].severity, Severity::kFatal);
  EXPECT_EQ(link[0].action, Action::kDrain);
  auto off = OfClass(fs, FaultClass::kGpuFellOffBus);
  ASSERT_EQ(off.size(), 1u);
  EXPECT_EQ(off[0].component.keys.at("upstream_port"), "0000:15:01.0");
  EXPECT_NE(off[0].summary.find("consequence"), std::string::npos) << off[0].summary;
}

TEST(KernelFatalLink, DpcContainmentWithCompletionTimeoutThenTheThreeLineFallOff) {
  // An AMD root port: DPC contains the link, the completion timeout follows, then the
  // driver's three-line "fallen off the bus" message.
  auto fs = Detect(Line(80, "pcieport 0000:40:03.1: DPC: containment event, status:0x1f01 source:0x0000") +
                   Line(80,
                        "pcieport 0000:40:03.1: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction "
                        "Layer, (Requester ID)") +
                   Line(80, "pcieport 0000:40:03.1:    [14] CmpltTO                (First)") +
                   Line(81, "NVRM: The NVIDIA GPU 0000:41:00.0") +
                   Line(81, "NVRM: (PCI ID: 10de:2330) installed in this system has") +
                   Line(81, "NVRM: fallen off the bus and is not responding to commands."));
  auto link = OfClass(fs, FaultClass::kPcieLinkDegraded);
  ASSERT_EQ(link.size(), 1u);
  EXPECT_EQ(link[0].component.Id(), "pcie/0000:40:03.1");
  EXPECT_EQ(link[0].component.keys.at("downstream_bdf"), "0000:41:00.0");
  auto off = OfClass(fs, FaultClass::kGpuFellOffBus);
  ASSERT_EQ(off.size(), 1u);
  EXPECT_EQ(off[0].component.keys.at("upstream_port"), "0000:40:03.1");
}

TEST(KernelFatalLink, FatalErrorOnTheGpusOwnFunctionIsEvidenceOfTheFall) {
  // The endpoint's fatal completion timeout, reported through its root port, then the
  // driver's own verdict line for the GPU: one fault, named by the link.
  auto fs = Detect(
      Line(90, "pcieport 0000:15:01.0: AER: Uncorrected (Fatal) error received: 0000:1b:00.0") +
      Line(90,
           "nvidia 0000:1b:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester "
           "ID)") +
      Line(90, "nvidia 0000:1b:00.0:    [14] CmpltTO                (First)") +
      Line(90.1, "nvidia 0000:1b:00.0: AER: can't recover (no error_detected callback)") + Line(91, kOffBus1b));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kGpuFellOffBus);
  EXPECT_EQ(fs[0].component.keys.at("upstream_port"), "0000:15:01.0");
  EXPECT_EQ(fs[0].evidence.front().component, "pcie/0000:1b:00.0");
}

TEST(KernelFatalLink, AFatalPortErrorMinutesBeforeIsNotTheGpusLink) {
  auto fs = Detect(SurpriseDownOnPort(100) + Line(400, kOffBus1b));
  auto link = OfClass(fs, FaultClass::kPcieLinkDegraded);
  ASSERT_EQ(link.size(), 1u);
  EXPECT_EQ(link[0].component.keys.count("downstream_bdf"), 0u);
  auto off = OfClass(fs, FaultClass::kGpuFellOffBus);
  ASSERT_EQ(off.size(), 1u);
  EXPECT_EQ(off[0].component.keys.count("upstream_port"), 0u);
}

TEST(KernelFatalLink, TheIsolatorExplainsTheGpuAndTheProgramsXid31ByThePort) {
  const std::string log =
      SurpriseDownOnPort(500) + Line(500.4, kOffBus1b) +
      Line(500.5,
           "NVRM: Xid (PCI:0000:1b:00): 31, pid=4242, name=train.py, Ch 00000008, intr 00000000. MMU Fault: "
           "ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f3a_12340000. Fault is of type FAULT_PDE");
  IsolateInput in;
  in.findings = Detect(log);
  in.layers_with_data = {Layer::kOs, Layer::kFabric};
  auto ds = Isolate(in);
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].fault_class, FaultClass::kPcieLinkDegraded);
  EXPECT_EQ(ds[0].component.Id(), "pcie/0000:15:01.0");
  for (const Diagnosis& d : ds) {
    EXPECT_NE(d.fault_class, FaultClass::kUserApplication) << "XID 31 after the link died is not a program bug";
    EXPECT_NE(d.fault_class, FaultClass::kGpuFellOffBus);
    EXPECT_NE(d.action, Action::kRma);
  }
}

TEST(KernelHostMemory, SkxCorrectedErrorsNameTheDimm) {
  std::string log = Line(10, "EDAC skx MC2: HANDLING MCE MEMORY ERROR");
  for (int i = 0; i < 12; ++i) {
    log += Line(10 + i,
                "EDAC MC2: 1 CE memory read error on CPU_SrcID#1_MC#0_Chan#1_DIMM#0 (channel:1 slot:0 "
                "page:0x4f21a offset:0x0 grain:32 syndrome:0x0 - err_code:0x0000:0x009f socket:1 imc:0)");
  }
  auto fs = OfClass(Detect(log), FaultClass::kHostMemory);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].component.Id(), "host/CPU_SrcID#1_MC#0_Chan#1_DIMM#0");
  EXPECT_EQ(fs[0].component.keys.at("dimm"), "CPU_SrcID#1_MC#0_Chan#1_DIMM#0");
  EXPECT_EQ(fs[0].action, Action::kMonitor);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_NE(fs[0].summary.find("DIMM#0"), std::string::npos);
}

TEST(KernelHostMemory, UncorrectedErrorsPerDimmInSeveralDriverForms) {
  struct Case {
    std::string line, location;
  };
  const Case cases[] = {
      {"EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#2_DIMM#1 (channel:2 slot:1 page:0x12 offset:0x0)",
       "CPU_SrcID#0_Ha#0_Chan#2_DIMM#1"},
      {"EDAC MC1: 1 UE on mc#1csrow#2channel#0 (csrow:2 channel:0 page:0x1a2b offset:0x40 grain:64)",
       "mc#1csrow#2channel#0"},
      {"EDAC MC0: 1 UE memory read error on DIMM_B2 (node:0 card:1 module:2 rank:0 bank:3)", "DIMM_B2"},
      {"EDAC MC3: 1 UE Uncorrected error on unknown memory (DIMM location: P1-DIMMC1 page:0x0)", "P1-DIMMC1"},
  };
  for (const Case& c : cases) {
    auto fs = OfClass(Detect(Line(5, c.line)), FaultClass::kHostMemory);
    ASSERT_EQ(fs.size(), 1u) << c.line;
    EXPECT_EQ(fs[0].action, Action::kDrain) << c.line;
    EXPECT_EQ(fs[0].component.keys.at("dimm"), c.location) << c.line;
  }
}

TEST(KernelHostMemory, MachineCheckSeverityComesFromTheBankStatus) {
  // UC bit (61) set: uncorrected; without it a corrected error (below the threshold: none).
  auto ue =
      OfClass(Detect(Line(7, "mce: [Hardware Error]: CPU 3: Machine Check Exception: 5 Bank 8: be00000000010091")),
              FaultClass::kHostMemory);
  ASSERT_EQ(ue.size(), 1u);
  EXPECT_EQ(ue[0].action, Action::kDrain);
  EXPECT_TRUE(OfClass(Detect(Line(7, "mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 13: cc00008000010090")),
                      FaultClass::kHostMemory)
                  .empty());
  // "events logged" alone says an MCE happened, not how bad: a warning to read them.
  auto logged = OfClass(Detect(Line(7, "mce: [Hardware Error]: Machine check events logged")), FaultClass::kHostMemory);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0].severity, Severity::kWarning);
  EXPECT_LE(logged[0].action, Action::kMonitor);
}

TEST(KernelHostMemory, ContextLinesJoinTheDimmsFinding) {
  auto fs = OfClass(Detect(Line(9, "mce: [Hardware Error]: Machine check events logged") +
                           Line(9,
                                "EDAC MC0: 1 UE memory read error on CPU_SrcID#0_MC#1_Chan#0_DIMM#1 (channel:0 "
                                "slot:1 page:0x9 offset:0x0 grain:32)")),
                    FaultClass::kHostMemory);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].count, 2u);
  EXPECT_EQ(fs[0].component.keys.at("dimm"), "CPU_SrcID#0_MC#1_Chan#0_DIMM#1");
}

std::string Sxid(double t, int sw, const std::string& bdf, const std::string& rest) {
  return Line(t, "nvidia-nvswitch" + std::to_string(sw) + ": SXid (PCI:" + bdf + "): " + rest);
}

TEST(KernelSxid, OneNonFatalLinkSxidIsWatchedARepeatingPortIsAReseat) {
  auto one = Detect(Sxid(60, 1, "0000:c4:00.0", "20009, Non-fatal, Link 32 RX Short Error Rate"));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].fault_class, FaultClass::kNvlinkErrors);
  EXPECT_EQ(one[0].action, Action::kMonitor) << "a single non-fatal SXid is not a cable replacement";
  std::string many;
  for (int i = 0; i < 12; ++i) many += Sxid(60 + i, 1, "0000:c4:00.0", "20001, Non-fatal, Link 32 TX Replay Error");
  auto rep = Detect(many);
  ASSERT_EQ(rep.size(), 1u);
  EXPECT_EQ(rep[0].action, Action::kReseatOrReplaceLink);
  EXPECT_EQ(rep[0].component.keys.at("link"), "32");
}

TEST(KernelSxid, SafeToIgnoreCodesMakeNoFinding) {
  EXPECT_TRUE(Detect(Sxid(1, 0, "0000:c2:00.0", "11012, Non-fatal, Link 4 Single bit ECC error") +
                     Sxid(2, 2, "0000:c5:00.0", "22013, Non-fatal, Link 9 Minion Link DLREQ interrupt"))
                  .empty());
}

TEST(KernelSxid, InterleavedDetailLinesBelongToTheirSwitchesNeverToAProgram) {
  // Two switches report LTSSM faults; their Severity/Data lines arrive interleaved.
  auto fs = Detect(Sxid(10, 1, "0000:06:00.0", "20034, Fatal, Link 48 LTSSM Fault Up") +
                   Sxid(10, 0, "0000:05:00.0", "20034, Fatal, Link 63 LTSSM Fault Up") +
                   Sxid(10, 2, "0000:07:00.0", "20034, Severity 1 Engine instance 60 Sub-engine instance 00") +
                   Sxid(10, 0, "0000:05:00.0", "20034, Data {0x10000000, 0x10000000, 0x00000000, 0x10000000}") +
                   Sxid(10, 0, "0000:05:00.0", "20034, Severity 1 Engine instance 63 Sub-engine instance 00"));
  ASSERT_EQ(fs.size(), 2u);
  for (const Finding& f : fs) {
    EXPECT_EQ(f.fault_class, FaultClass::kNvswitchFault);
    EXPECT_EQ(f.count, 1u);
    EXPECT_NE(f.summary.find("LTSSM Fault Up"), std::string::npos) << f.summary;
  }
  EXPECT_TRUE(OfClass(fs, FaultClass::kUserApplication).empty());
  // A detail line whose head is not in the log at all is still not a program's line.
  EXPECT_TRUE(Detect(Sxid(5, 3, "0000:c6:00.0", "20034, Data {0x00000000, 0x00000010}")).empty());
}

TEST(KernelSxid, GuideRecoveriesDecideTheAction) {
  auto vm = Detect(Sxid(1, 0, "0000:c2:00.0", "12028, Non-fatal, Link 7 egress non-posted PRIV error"));
  ASSERT_EQ(vm.size(), 1u);
  EXPECT_EQ(vm[0].fault_class, FaultClass::kNvswitchFault);
  EXPECT_EQ(vm[0].action, Action::kResetGpu);
  auto always = Detect(Sxid(1, 0, "0000:c2:00.0", "23001, Fatal, Link 7 ingress SRC-VC buffer overflow"));
  ASSERT_EQ(always.size(), 1u);
  EXPECT_EQ(always[0].severity, Severity::kFatal);
  EXPECT_NE(always[0].summary.find("restart the host"), std::string::npos);
  EXPECT_EQ(always[0].action, Action::kRebootNode);
  // A fatal code the guide lacks: at least the GPUs on the port are reset (drained first by
  // the policy), never a bare drain that leaves the node out for good.
  auto unknown_fatal = Detect(Sxid(1, 0, "0000:c2:00.0", "29999, Fatal, Link 1 something new"));
  ASSERT_EQ(unknown_fatal.size(), 1u);
  EXPECT_EQ(unknown_fatal[0].action, Action::kResetGpu);
  auto unknown = Detect(Sxid(1, 0, "0000:c2:00.0", "29998, Non-fatal, Link 1 something else"));
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0].action, Action::kMonitor);
}

std::string Nvl5(double t, int xid, const std::string& unit, const std::string& sev, uint32_t intr, uint32_t status) {
  char regs[64];
  std::snprintf(regs, sizeof regs, "(0x%08x 0x%08x 0x00000000 0x00000000)", intr, status);
  return Line(
      t, "NVRM: Xid (PCI:0000:1b:00): " + std::to_string(xid) + ", " + unit + "  " + sev + "   XC0 i0 Link 03 " + regs);
}

TEST(KernelNvlink5, AnXid154EvalRowStaysAtApplicationLevelUntilTheXid154) {
  // 145 RLW_REMAP (v2 intrInfo 0x4), errorStatus 0x1: "evaluate the following XID 154".
  auto alone = Detect(Nvl5(70, 145, "RLW_REMAP", "Nonfatal", 0x4, 0x1));
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].action, Action::kRestartJob);
  EXPECT_EQ(alone[0].attrs.at("awaits_xid154"), "true");
  auto with154 = Detect(Nvl5(70, 145, "RLW_REMAP", "Nonfatal", 0x4, 0x1) +
                        Line(70.01,
                             "NVRM: Xid (PCI:0000:1b:00): 154, pid='<unknown>', name=<unknown>, GPU recovery "
                             "action changed from 0x0 (None) to 0x1 (GPU Reset Required)"));
  ASSERT_EQ(with154.size(), 1u);
  EXPECT_EQ(with154[0].action, Action::kResetGpu);
}

TEST(KernelNvlink5, StatusValuesAreExactNotBitMasks) {
  // 149 NETIR_MFDE_EVENT (v2 0x14): status 3 is its own IGNORE row (as a mask it would
  // also hit the RESET_GPU row for 1); status 5 resets.
  EXPECT_TRUE(Detect(Nvl5(5, 149, "NETIR_MFDE_EVENT", "Nonfatal", 0x14, 0x3)).empty());
  auto reset = Detect(Nvl5(5, 149, "NETIR_MFDE_EVENT", "Fatal", 0x14, 0x5));
  ASSERT_EQ(reset.size(), 1u);
  EXPECT_EQ(reset[0].action, Action::kResetGpu);
  // 149 NETIR_BER_EVENT (v2 0x13) status 0: a row that must match (IGNORE: no finding).
  EXPECT_TRUE(Detect(Nvl5(5, 149, "NETIR_BER_EVENT", "Nonfatal", 0x13, 0x0)).empty());
}

std::string Mlx5(double t, const std::string& rest) { return Line(t, "mlx5_core 0000:3b:00.0: " + rest); }

TEST(KernelNic, LeakingFirmwareCommandTimeoutsNameTheNic) {
  const std::string timeout =
      "wait_func:1113:(pid 2211): QUERY_VPORT_COUNTER(0x770) timeout. Will cause a leak of a command resource";
  auto one = Detect(Mlx5(30, timeout));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].component.Id(), "pcie/0000:3b:00.0");
  EXPECT_EQ(one[0].action, Action::kMonitor);
  auto three = Detect(Mlx5(30, timeout) +
                      Mlx5(40,
                           "cmd_work_handler:955:(pid 5096): cmd[0]: ACCESS_REG(0x805) Async, timeout. Will cause "
                           "a leak of a command resource") +
                      Mlx5(50, timeout));
  ASSERT_EQ(three.size(), 1u);
  EXPECT_EQ(three[0].severity, Severity::kCritical);
  EXPECT_EQ(three[0].action, Action::kRebootNode);
}

TEST(KernelNic, HealthCompromisedAndSyndromesAreTheAdapterDown) {
  for (const std::string& line :
       {std::string("poll_health:738:(pid 0): device's health compromised - reached miss count"),
        std::string("print_health_info:423:(pid 0): synd 0x8: unrecoverable hardware error"),
        std::string("print_health_info:431:(pid 0): Health issue observed, firmware internal error, severity(3) "
                    "ERROR:")}) {
    auto fs = Detect(Mlx5(20, line) + Mlx5(20, "print_health_info:434:(pid 0): fw_state 0x0000000f"));
    ASSERT_EQ(fs.size(), 1u) << line;
    EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkDown) << line;
    EXPECT_EQ(fs[0].component.Id(), "pcie/0000:3b:00.0");
    EXPECT_EQ(fs[0].component.keys.count("uuid"), 0u) << "a NIC is never a GPU";
    EXPECT_EQ(fs[0].action, Action::kRebootNode);
  }
}

TEST(KernelNic, InformationalMlx5MessagesMakeNoFinding) {
  EXPECT_TRUE(Detect(Mlx5(1, "mlx5_pcie_event:301:(pid 0): PCIe slot advertised sufficient power (75W).") +
                     Mlx5(2, "mlx5_port_module_event:1145:(pid 0): Port module event: module 0, Cable plugged") +
                     Mlx5(3, "poll_health:800:(pid 0): fw_state 0x00000000") +
                     Line(4, "mlx5_core 0000:3b:00.0 mlx5_0: Link up"))
                  .empty());
  // Insufficient slot power stays a power finding on the NIC's slot.
  auto power = Detect(Mlx5(5, "mlx5_pcie_event:298:(pid 0): Detected insufficient power on the PCIe slot (27W)."));
  ASSERT_EQ(power.size(), 1u);
  EXPECT_EQ(power[0].fault_class, FaultClass::kPowerInsufficient);
}

// A module pulled out leaves no link: a link down on the NIC (reseat), not link errors.
TEST(KernelNic, CableUnpluggedIsALinkDown) {
  auto fs = Detect(Mlx5(1, "mlx5_port_module_event:1145:(pid 0): Port module event: module 0, Cable unplugged"));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].fault_class, FaultClass::kIbLinkDown);
  EXPECT_EQ(fs[0].action, Action::kReseatOrReplaceLink);
  // Another module event stays link errors.
  auto other = Detect(Mlx5(2,
                           "mlx5_port_module_event:1145:(pid 0): Port module event[error]: module 0, Cable error, "
                           "High Temperature"));
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].fault_class, FaultClass::kIbLinkErrors);
}

TEST(KernelNic, TheNetdevNameTravelsWithTheNic) {
  auto fs = Detect(Line(9,
                        "mlx5_core 0000:3b:00.0 mlx5_0: poll_health:738:(pid 0): device's health compromised - "
                        "reached miss count"));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].component.keys.at("netdev"), "mlx5_0");
  EXPECT_NE(fs[0].summary.find("mlx5_0"), std::string::npos);
}

}  // namespace
}  // namespace faultline
