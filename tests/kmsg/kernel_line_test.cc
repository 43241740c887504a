#include "parse/kernel_line.h"

#include <gtest/gtest.h>

#include <string>

namespace faultline {
namespace {

using KT = KernelEventType;

TEST(KernelLineTest, XidWithPciPidAndName) {
  auto ev = ClassifyKernelMessage(
      "NVRM: Xid (PCI:0000:b5:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on "
      "(GPC 1, TPC 3, SM 0): Out Of Range Address");
  EXPECT_EQ(ev.type, KT::kXid);
  EXPECT_EQ(ev.code, 13);
  EXPECT_EQ(ev.device, "0000:b5:00");
  EXPECT_EQ(ev.pid, "<unknown>");
  EXPECT_EQ(ev.process, "<unknown>");
  EXPECT_EQ(ev.gpc, 1);
  EXPECT_EQ(ev.tpc, 3);
  EXPECT_EQ(ev.message.substr(0, 26), "Graphics SM Warp Exception");
}

TEST(KernelLineTest, XidGspTimeoutWithNumericPid) {
  auto ev = ClassifyKernelMessage(
      "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response "
      "from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).");
  EXPECT_EQ(ev.type, KT::kXid);
  EXPECT_EQ(ev.code, 119);
  EXPECT_EQ(ev.pid, "2024380");
  EXPECT_EQ(ev.process, "nvidia-smi");
  EXPECT_EQ(ev.message.substr(0, 13), "Timeout after");
}

TEST(KernelLineTest, XidWithoutPciPrefixOrPid) {
  auto ev = ClassifyKernelMessage("NVRM: Xid (0000:3b:00): 31, Ch 00000010, engmask 00000101, intr 10000000");
  EXPECT_EQ(ev.type, KT::kXid);
  EXPECT_EQ(ev.code, 31);
  EXPECT_EQ(ev.device, "0000:3b:00");
  EXPECT_TRUE(ev.pid.empty());
  EXPECT_EQ(ev.message, "Ch 00000010, engmask 00000101, intr 10000000");
  auto bare = ClassifyKernelMessage("NVRM: Xid: 79, GPU has fallen off the bus.");
  EXPECT_EQ(bare.type, KT::kXid);
  EXPECT_EQ(bare.code, 79);
  EXPECT_TRUE(bare.device.empty());
}

TEST(KernelLineTest, NvLink5ExtendedForm) {
  auto ev = ClassifyKernelMessage(
      "NVRM: Xid (PCI:0000:1b:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 0x00000000 0x00000000 "
      "0x00000000 0x00000000 0x00000000)");
  EXPECT_EQ(ev.type, KT::kXid);
  EXPECT_EQ(ev.code, 149);
  EXPECT_EQ(ev.unit, "NETIR_LINK_EVT");
  EXPECT_EQ(ev.severity, "Fatal");
  EXPECT_EQ(ev.link, 1);
  EXPECT_TRUE(ev.has_intr);
  EXPECT_EQ(ev.intr_info, 0x021425c6u);
  EXPECT_EQ(ev.error_status, 0u);
  auto nolink = ClassifyKernelMessage(
      "NVRM: Xid (PCI:0000:1b:00): 144, SAW_MVB  Nonfatal XC0 i0 Link -1 (0x00000021 0x00000001 0x0 0x0)");
  EXPECT_EQ(nolink.severity, "Nonfatal");
  EXPECT_EQ(nolink.link, -1);
  EXPECT_EQ(nolink.error_status, 1u);
}

TEST(KernelLineTest, Xid154RecoveryAction) {
  auto ev = ClassifyKernelMessage(
      "NVRM: Xid (PCI:0000:b5:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)");
  EXPECT_EQ(ev.code, 154);
  EXPECT_EQ(ev.recovery_from, 0);
  EXPECT_EQ(ev.recovery_to, 4);
  EXPECT_EQ(ev.detail, "Drain and Reset");
}

TEST(KernelLineTest, SxidWithAndWithoutSeverity) {
  auto fatal = ClassifyKernelMessage("nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 46 LTSSM Fault Up");
  EXPECT_EQ(fatal.type, KT::kSxid);
  EXPECT_EQ(fatal.driver, "nvidia-nvswitch0");
  EXPECT_EQ(fatal.code, 20034);
  EXPECT_EQ(fatal.severity, "Fatal");
  EXPECT_EQ(fatal.link, 46);
  EXPECT_EQ(fatal.message, "LTSSM Fault Up");
  auto nonfatal =
      ClassifyKernelMessage("nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20009, Non-fatal, Link 32 RX Short Error Rate");
  EXPECT_EQ(nonfatal.severity, "Non-fatal");
  EXPECT_EQ(nonfatal.link, 32);
  auto bare = ClassifyKernelMessage("nvidia-nvswitch3: SXid (PCI:0000:c6:00.0): 26008, SOE Watchdog error");
  EXPECT_EQ(bare.type, KT::kSxid);
  EXPECT_TRUE(bare.severity.empty());
  EXPECT_EQ(bare.link, -2);
  EXPECT_EQ(bare.message, "SOE Watchdog error");
  auto data = ClassifyKernelMessage(
      "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Data {0x00400000, 0x00400000, 0x00000000, 0x00000000}");
  EXPECT_EQ(data.type, KT::kSxidDetail);
  EXPECT_EQ(data.code, 20034);
  auto sev = ClassifyKernelMessage(
      "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Severity 1 Engine instance 46 Sub-engine instance 00");
  EXPECT_EQ(sev.type, KT::kSxidDetail);
}

TEST(KernelLineTest, FallenOffTheBusSingleAndMultiLine) {
  auto single = ClassifyKernelMessage("NVRM: GPU 0000:91:00.0: GPU has fallen off the bus.");
  EXPECT_EQ(single.type, KT::kFellOffBus);
  EXPECT_EQ(single.device, "0000:91:00.0");
  auto head = ClassifyKernelMessage("NVRM: The NVIDIA GPU 0000:b3:00.0");
  EXPECT_EQ(head.type, KT::kFellOffBusHeader);
  EXPECT_EQ(head.device, "0000:b3:00.0");
  EXPECT_EQ(ClassifyKernelMessage("NVRM: (PCI ID: 10de:26b5) installed in this system has").type, KT::kNone);
  auto tail = ClassifyKernelMessage("NVRM: fallen off the bus and is not responding to commands.");
  EXPECT_EQ(tail.type, KT::kFellOffBus);
  EXPECT_TRUE(tail.device.empty());
}

TEST(KernelLineTest, GpuIdentityLines) {
  auto uuid = ClassifyKernelMessage("NVRM: GPU at PCI:0000:3b:00: GPU-7f3c2e1a-9b4d-4c21-8a55-0c1d2e3f4a5b");
  EXPECT_EQ(uuid.type, KT::kGpuUuid);
  EXPECT_EQ(uuid.device, "0000:3b:00");
  EXPECT_EQ(uuid.message, "GPU-7f3c2e1a-9b4d-4c21-8a55-0c1d2e3f4a5b");
  auto serial = ClassifyKernelMessage("NVRM: GPU Board Serial Number: 1320220053911");
  EXPECT_EQ(serial.type, KT::kGpuSerial);
  EXPECT_EQ(serial.message, "1320220053911");
}

TEST(KernelLineTest, AerHeaderDetailAndBits) {
  auto rx = ClassifyKernelMessage("pcieport 0000:00:03.1: AER: Corrected error received: 0000:3b:00.0");
  EXPECT_EQ(rx.type, KT::kAerReceived);
  EXPECT_EQ(rx.driver, "pcieport");
  EXPECT_EQ(rx.device, "0000:00:03.1");
  EXPECT_EQ(rx.severity, "Corrected");
  EXPECT_EQ(rx.source, "0000:3b:00.0");
  auto multi =
      ClassifyKernelMessage("pcieport 0000:00:03.1: AER: Multiple Uncorrected (Fatal) error received: 0000:3b:00.0");
  EXPECT_EQ(multi.severity, "Uncorrected (Fatal)");
  auto bus = ClassifyKernelMessage(
      "nvidia 0000:3b:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)");
  EXPECT_EQ(bus.type, KT::kAerBusError);
  EXPECT_EQ(bus.driver, "nvidia");
  EXPECT_EQ(bus.severity, "Corrected");
  EXPECT_EQ(bus.detail, "Physical Layer");
  auto newer = ClassifyKernelMessage(
      "mlx5_core 0000:0c:00.0: AER: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, "
      "(Requester ID)");
  EXPECT_EQ(newer.type, KT::kAerBusError);
  EXPECT_EQ(newer.severity, "Uncorrected (Non-Fatal)");
  auto status = ClassifyKernelMessage("nvidia 0000:3b:00.0:   device [10de:2330] error status/mask=00000001/0000e000");
  EXPECT_EQ(status.type, KT::kAerStatus);
  auto bit = ClassifyKernelMessage("nvidia 0000:3b:00.0:    [ 0] RxErr                  (First)");
  EXPECT_EQ(bit.type, KT::kAerBit);
  EXPECT_EQ(bit.code, 0);
  EXPECT_EQ(bit.detail, "RxErr");
  auto replay = ClassifyKernelMessage("pcieport 0000:00:03.1:    [12] Replay Timer Timeout");
  EXPECT_EQ(replay.code, 12);
  EXPECT_EQ(replay.detail, "Replay Timer Timeout");
}

TEST(KernelLineTest, HostMemoryHangsAndPrograms) {
  EXPECT_EQ(ClassifyKernelMessage("mce: [Hardware Error]: Machine check events logged").type, KT::kMce);
  auto edac = ClassifyKernelMessage(
      "EDAC MC0: 3 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0 page:0x12345)");
  EXPECT_EQ(edac.type, KT::kEdac);
  EXPECT_EQ(edac.severity, "CE");
  EXPECT_EQ(edac.code, 3);
  EXPECT_EQ(ClassifyKernelMessage("EDAC MC1: 1 UE memory read error on CPU_SrcID#1_MC#0_Chan#0_DIMM#0").severity, "UE");
  auto lockup = ClassifyKernelMessage("watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [python3:12345]");
  EXPECT_EQ(lockup.type, KT::kSoftLockup);
  EXPECT_EQ(lockup.process, "python3");
  EXPECT_EQ(lockup.pid, "12345");
  auto hung = ClassifyKernelMessage("INFO: task kworker/u16:2:341 blocked for more than 120 seconds.");
  EXPECT_EQ(hung.type, KT::kHungTask);
  EXPECT_EQ(hung.process, "kworker/u16:2");
  EXPECT_EQ(hung.pid, "341");
  auto seg = ClassifyKernelMessage(
      "python3[48213]: segfault at 7f1c2b3a4000 ip 00007f1c29e1b2a4 sp 00007ffd5c9e0a10 error 4 in "
      "libnccl.so.2[7f1c29c00000+2b6e000]");
  EXPECT_EQ(seg.type, KT::kSegfault);
  EXPECT_EQ(seg.process, "python3");
  EXPECT_EQ(seg.pid, "48213");
  EXPECT_EQ(seg.detail, "libnccl.so.2");
  auto trap = ClassifyKernelMessage(
      "traps: pt_main_thread[9912] general protection fault ip:7f00aa1b2c3d sp:7ffd00112233 error:0 in "
      "libcuda.so.1[7f00a9000000+1a00000]");
  EXPECT_EQ(trap.type, KT::kTrap);
  EXPECT_EQ(trap.process, "pt_main_thread");
  EXPECT_EQ(trap.detail, "libcuda.so.1");
  auto oom = ClassifyKernelMessage(
      "Out of memory: Killed process 77123 (python3) total-vm:812345678kB, anon-rss:501234567kB, file-rss:0kB");
  EXPECT_EQ(oom.type, KT::kOomKill);
  EXPECT_EQ(oom.pid, "77123");
  EXPECT_EQ(oom.process, "python3");
}

TEST(KernelLineTest, Mlx5AndDriverLines) {
  auto power = ClassifyKernelMessage(
      "mlx5_core 0000:0c:00.0: mlx5_pcie_event:301:(pid 0): Detected insufficient power on the PCIe slot (27W).");
  EXPECT_EQ(power.type, KT::kMlx5SlotPower);
  EXPECT_EQ(power.device, "0000:0c:00.0");
  EXPECT_EQ(power.detail, "27W");
  auto module = ClassifyKernelMessage(
      "mlx5_core 0000:0c:00.0: mlx5_port_module_event:1172:(pid 0): Port module event[error]: module 0, Cable "
      "error, High Temperature");
  EXPECT_EQ(module.type, KT::kMlx5ModuleEvent);
  auto down = ClassifyKernelMessage("mlx5_core 0000:0c:00.0 ibp12s0: Link down");
  EXPECT_EQ(down.type, KT::kMlx5LinkDown);
  EXPECT_EQ(down.device, "0000:0c:00.0");
  EXPECT_EQ(ClassifyKernelMessage("mlx5_core 0000:0c:00.0 ibp12s0: Link up").type, KT::kMlx5LinkUp);
  EXPECT_EQ(ClassifyKernelMessage("NVRM: API mismatch: the client has the version 535.129.03, but").type,
            KT::kDriverMismatch);
  auto rm = ClassifyKernelMessage("NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x22:0x56:742)");
  EXPECT_EQ(rm.type, KT::kRmInitFailed);
  EXPECT_EQ(rm.device, "0000:3b:00.0");
}

TEST(KernelLineTest, AerVerdictLinesAreFatalBusErrors) {
  struct Case {
    const char* line;
    const char* device;
    const char* verdict;
  };
  const Case cases[] = {
      {"pcieport 0000:15:01.0: AER: device recovery failed", "0000:15:01.0", "device recovery failed"},
      {"nvidia 0000:1b:00.0: AER: can't recover (no error_detected callback)", "0000:1b:00.0", "can't recover"},
      {"pcieport 0000:40:03.1: DPC: containment event, status:0x1f01 source:0x0000", "0000:40:03.1",
       "DPC: containment event"},
      {"pcieport 0000:00:1c.0: AER: subordinate device reset failed", "0000:00:1c.0",
       "subordinate device reset failed"},
  };
  for (const Case& c : cases) {
    auto ev = ClassifyKernelMessage(c.line);
    EXPECT_EQ(ev.type, KT::kAerBusError) << c.line;
    EXPECT_EQ(ev.device, c.device) << c.line;
    EXPECT_EQ(ev.severity, "Uncorrected (Fatal)") << c.line;
    EXPECT_EQ(ev.detail, c.verdict) << c.line;
  }
  EXPECT_EQ(ClassifyKernelMessage("pcieport 0000:15:01.0: AER: device recovery successful").type, KT::kNone);
}

TEST(KernelLineTest, EdacFormsAndTheirDimmLocation) {
  struct Case {
    const char* line;
    const char* severity;
    int64_t count;
    const char* location;
  };
  const Case cases[] = {
      {"EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0 page:0x4f21 offset:0x0 "
       "grain:32 syndrome:0x0)",
       "CE", 1, "CPU_SrcID#0_MC#0_Chan#1_DIMM#0"},
      {"EDAC MC1: 3 CE on mc#1csrow#2channel#0 (csrow:2 channel:0 page:0x1a2b offset:0x40 grain:64 syndrome:0x5d)",
       "CE", 3, "mc#1csrow#2channel#0"},
      {"EDAC MC0: 1 UE memory read error on DIMM_B2 (node:0 card:1 module:2 rank:0)", "UE", 1, "DIMM_B2"},
      {"EDAC MC3: 1 UE Uncorrected error on unknown memory (DIMM location: P1-DIMMC1 page:0x0)", "UE", 1, "P1-DIMMC1"},
      {"EDAC MC2: 2 CE memory read error on DIMM A1 (rank:1)", "CE", 2, "DIMM A1"},
      {"EDAC MC0: 1 CE unknown error on unknown memory ( page:0x0 offset:0x0 grain:1 syndrome:0x0)", "CE", 1, ""},
      {"EDAC skx MC2: HANDLING MCE MEMORY ERROR", "", 0, ""},
  };
  for (const Case& c : cases) {
    auto ev = ClassifyKernelMessage(c.line);
    EXPECT_EQ(ev.type, KT::kEdac) << c.line;
    EXPECT_EQ(ev.severity, c.severity) << c.line;
    EXPECT_EQ(ev.code, c.count) << c.line;
    EXPECT_EQ(MemoryErrorLocation(c.line), c.location) << c.line;
  }
  EXPECT_EQ(ClassifyKernelMessage("EDAC amd64: Node 0: DRAM ECC enabled.").type, KT::kNone);
  EXPECT_EQ(MemoryErrorLocation("EDAC MC0: 1 CE (DIMM location: not present. DMI handle: 0x0015)"), "");
  EXPECT_EQ(MemoryErrorLocation("DIMM "), "");
  EXPECT_EQ(MemoryErrorLocation("(channel:"), "");
}

TEST(KernelLineTest, MachineCheckSeverityFromTheBankStatus) {
  EXPECT_EQ(McaSeverity("CPU 3: Machine Check Exception: 5 Bank 8: be00000000010091"), "UE");
  EXPECT_EQ(McaSeverity("CPU 0: Machine Check: 0 Bank 13: cc00008000010090"), "CE");
  EXPECT_EQ(McaSeverity("CPU 0: Machine Check: 0 Bank 5: bd80000000100134"), "UE");  // UC set, PCC set
  EXPECT_EQ(McaSeverity("Machine check events logged"), "");
  EXPECT_EQ(McaSeverity("Bank 7: "), "");
  EXPECT_EQ(McaSeverity("Bank 7: zz"), "");
  EXPECT_EQ(McaSeverity("Bank 7: 0c00000000000000"), "") << "not valid (bit 63 clear)";
  EXPECT_EQ(McaSeverity("Bank 7: " + std::string(64, 'f')), "UE") << "overlong: the first 16 digits";
  auto ev = ClassifyKernelMessage("mce: [Hardware Error]: CPU 3: Machine Check Exception: 5 Bank 8: be00000000010091");
  EXPECT_EQ(ev.type, KT::kMce);
  EXPECT_EQ(ev.severity, "UE");
}

TEST(KernelLineTest, Mlx5HealthMessages) {
  struct Case {
    const char* rest;
    const char* event;
  };
  const Case cases[] = {
      {"wait_func:1113:(pid 2211): QUERY_VPORT_COUNTER(0x770) timeout. Will cause a leak of a command resource",
       "fw_cmd_timeout"},
      {"cmd_work_handler:955:(pid 5096): cmd[0]: ACCESS_REG(0x805) Async, timeout. Will cause a leak of a command "
       "resource",
       "fw_cmd_timeout"},
      {"mlx5_cmd_comp_handler:1712:(pid 0): Command completion arrived after timeout (entry idx = 0).", "fw_cmd_late"},
      {"poll_health:738:(pid 0): device's health compromised - reached miss count", "health_compromised"},
      {"print_health_info:423:(pid 0): synd 0x8: unrecoverable hardware error", "hw_error"},
      {"print_health_info:431:(pid 0): Health issue observed, firmware internal error, severity(3) ERROR:", "syndrome"},
      {"poll_health:800:(pid 0): Fatal error 1 detected", "fatal_error"},
      {"mlx5_enter_error_state:121:(pid 0): start", "error_state"},
      {"print_health_info:434:(pid 0): fw_state 0x0000000f", "fw_state"},
      {"mlx5e_tx_timeout_work:141:(pid 1234): TX timeout on queue: 3, SQ: 0x1a7", "tx_timeout"},
      {"mlx5_pcie_event:301:(pid 0): PCIe slot advertised sufficient power (75W).", "slot_power_ok"},
      {"mlx5_pcie_event:295:(pid 0): PCIe slot power capability was not advertised.", "slot_power_unknown"},
  };
  for (const Case& c : cases) {
    const std::string line = std::string("mlx5_core 0000:3b:00.0: ") + c.rest;
    auto ev = ClassifyKernelMessage(line);
    EXPECT_EQ(ev.type, KT::kMlx5Health) << line;
    EXPECT_EQ(ev.event, c.event) << line;
    EXPECT_EQ(ev.device, "0000:3b:00.0") << line;
  }
  auto named = ClassifyKernelMessage(
      "mlx5_core 0000:3b:00.0 mlx5_0: poll_health:738:(pid 0): device's health "
      "compromised - reached miss count");
  EXPECT_EQ(named.ifname, "mlx5_0");
  EXPECT_EQ(named.event, "health_compromised");
  EXPECT_EQ(ClassifyKernelMessage("mlx5_core 0000:3b:00.0: firmware version: 28.39.1002").type, KT::kNone);
}

TEST(KernelLineTest, BenignLinesAreNone) {
  for (const char* line :
       {"pcieport 0000:00:01.0: AER: enabled with IRQ 24", "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.129.03",
        "e1000e 0000:00:1f.6 eno1: NIC Link is Up 1000 Mbps Full Duplex", "EDAC MC: Ver: 3.0.0",
        "usb 1-1: new high-speed USB device number 2 using xhci_hcd", ""}) {
    EXPECT_EQ(ClassifyKernelMessage(line).type, KT::kNone) << line;
  }
}

TEST(KernelLineTest, HostileAndTruncatedInputNeverCrashes) {
  static const char kWithNuls[] = "NVRM: Xid (PCI:0000:b5:00): 13, \0\0\0";
  const std::string samples[] = {"NVRM: Xid (PCI:0000:b5:00): ",
                                 "NVRM: Xid (PCI:0000:b5:00",
                                 "NVRM: Xid (",
                                 "NVRM: Xid (PCI:0000:b5:00): 99999999999999999999999, x",
                                 "NVRM: Xid (PCI:0000:b5:00): -5, x",
                                 "nvidia-nvswitch0: SXid (PCI:",
                                 "pcieport 0000:00:03.1: AER: Corrected error received: ",
                                 "nvidia 0000:3b:00.0:    [99] RxErr",
                                 "nvidia 0000:3b:00.0:    [",
                                 "traps: ",
                                 ": segfault at ",
                                 "Out of memory: Killed process ",
                                 "watchdog: BUG: soft lockup - CPU#",
                                 "mce: [Hardware Error]: Bank ",
                                 "mce: [Hardware Error]: Bank 1: ffffffffffffffffffffffffffff",
                                 "EDAC MC0: 1 CE on DIMM#",
                                 "EDAC MC0: 99999999999999999999 UE x",
                                 "mlx5_core 0000:3b:00.0 : timeout leak",
                                 "pcieport 0000:15:01.0: DPC: containment event",
                                 std::string(100000, 'A'),
                                 std::string(kWithNuls, sizeof kWithNuls - 1)};
  for (const std::string& s : samples) {
    KernelEvent ev = ClassifyKernelMessage(s);
    if (ev.type == KT::kXid) {
      EXPECT_GE(ev.code, 0);
    }
    if (ev.type == KT::kAerBit) {
      EXPECT_LE(ev.code, 31);
    }
  }
  EXPECT_EQ(ClassifyKernelMessage("NVRM: Xid (PCI:0000:b5:00): -5, x").type, KT::kNone);
  EXPECT_EQ(ClassifyKernelMessage("nvidia 0000:3b:00.0:    [99] RxErr").type, KT::kNone);
}

}  // namespace
}  // namespace faultline
