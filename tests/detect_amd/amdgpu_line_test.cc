// The amdgpu kernel-line forms (SIGNALS-ethernet-amd.md B3), classified next to the XID
// forms: several variants of each family, with and without the decorations newer kernels
// add, in the log forms the reader knows (dmesg, journal, syslog), and lines that are not
// amdgpu's or not a fault.
#include "parse/amdgpu_line.h"

#include <gtest/gtest.h>

#include "amd_test_util.h"
#include "parse/kernel_line.h"

namespace faultline {
namespace {

using testing_amd::Read;

struct Case {
  const char* line;
  std::string_view event;
  const char* detail;  // block / ring / mode / threshold ("" = none)
  int64_t code;        // -1 = none
};

class AmdgpuLineForms : public ::testing::TestWithParam<Case> {};

TEST_P(AmdgpuLineForms, Classified) {
  const Case& c = GetParam();
  const KernelEvent ev = ClassifyKernelMessage(c.line);
  ASSERT_EQ(ev.type, KernelEventType::kAmdgpu) << c.line;
  EXPECT_EQ(ev.event, c.event) << c.line;
  EXPECT_EQ(std::string(ev.detail), c.detail) << c.line;
  EXPECT_EQ(ev.code, c.code) << c.line;
}

namespace E = amdgpu_event;
const Case kCases[] = {
    // RAS, older form (count first), newer with socket/die, with and without event id / "amdgpu:".
    {"amdgpu 0000:0c:00.0: amdgpu: 3 correctable hardware errors detected in umc block, no user action is needed.",
     E::kRasCe, "umc", 3},
    {"amdgpu 0000:0c:00.0: {12}socket: 0, die: 1, 5 new correctable hardware errors detected in umc block, no user "
     "action is needed",
     E::kRasCe, "umc", 5},
    {"amdgpu 0000:0c:00.0: amdgpu: 1 uncorrectable hardware errors detected in umc block", E::kRasUe, "umc", 1},
    {"amdgpu 0000:22:00.0: amdgpu: {3}socket: 1, die: 0, 2 new uncorrectable hardware errors detected in gfx block",
     E::kRasUe, "gfx", 2},
    {"amdgpu 0000:22:00.0: 7 new uncorrectable hardware errors detected in xgmi_wafl block", E::kRasUe, "xgmi_wafl", 7},
    {"amdgpu 0000:22:00.0: amdgpu: socket: 0, die: 0, 4 new deferred hardware errors detected in umc block",
     E::kRasDeferred, "umc", 4},
    {"amdgpu 0000:22:00.0: amdgpu: socket: 0, die: 0, 1 new poison consumption detected in sdma block",
     E::kPoisonConsumed, "sdma", 1},
    {"amdgpu 0000:1c:00.0: {1}uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!", E::kRasFatal,
     "ERREVENT_ATHUB_INTERRUPT", -1},
    {"amdgpu 0000:e3:00.0: amdgpu: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!", E::kRasFatal,
     "ERREVENT_ATHUB_INTERRUPT", -1},
    {"amdgpu 0000:42:00.0: {1}[Hardware Error]: Accelerator Check Architecture events logged", E::kAca, "", -1},
    {"amdgpu 0000:42:00.0: {1}[Hardware Error]: aca entry[00].STATUS=0x98000800003e0000", E::kAca, "", -1},
    {"amdgpu 0000:0c:00.0: amdgpu: Poison is created, no user action is needed.", E::kPoisonCreated, "", -1},
    {"amdgpu 0000:0c:00.0: amdgpu: GPU reset for umc RAS poison consumption is issued!", E::kPoisonConsumed, "umc", -1},
    // Bad pages.
    {"amdgpu 0000:0c:00.0: amdgpu: Saved 4 pages to EEPROM table.", E::kBadPagesSaved, "", 4},
    {"amdgpu 0000:0c:00.0: amdgpu: RAS records:1967 exceed threshold:1966", E::kBadPageThreshold, "1966", 1967},
    {"amdgpu 0000:0c:00.0: amdgpu: GPU will not be initialized. Replace this GPU or increase the threshold",
     E::kBadPageThreshold, "", -1},
    {"amdgpu 0000:0c:00.0: amdgpu: Please consult AMD Service Action Guide (SAG) for appropriate service procedures",
     E::kRmaAdvised, "", -1},
    {"amdgpu 0000:0c:00.0: amdgpu: Failed to save EEPROM table data!", E::kEepromError, "", -1},
    {"amdgpu 0000:0c:00.0: amdgpu: Uncorrectable error detected in UMC inst: 3, chan_idx: 7", E::kRasUe, "umc", 1},
    // Resets.
    {"amdgpu 0000:c5:00.0: amdgpu: GPU reset begin!", E::kResetBegin, "", -1},
    {"amdgpu 0000:c5:00.0: amdgpu: GPU reset begin!. Source:  1", E::kResetBegin, "", -1},
    {"amdgpu 0000:c5:00.0: amdgpu: MODE2 reset", E::kResetMode, "MODE2", -1},
    {"amdgpu 0000:c5:00.0: amdgpu: BACO reset", E::kResetMode, "BACO", -1},
    {"amdgpu 0000:c5:00.0: amdgpu: GPU reset succeeded, trying to resume", E::kResetSucceeded, "", -1},
    {"amdgpu 0000:c5:00.0: amdgpu: GPU reset(2) succeeded!", E::kResetSucceeded, "", -1},
    {"amdgpu 0000:c5:00.0: amdgpu: GPU reset(3) failed", E::kResetFailed, "", -1},
    {"amdgpu 0000:c5:00.0: amdgpu: GPU Recovery Failed: -19", E::kResetFailed, "", -1},
    {"amdgpu 0000:c5:00.0: amdgpu: GPU reset end with ret = -19", E::kResetFailed, "", -1},
    {"amdgpu 0000:c5:00.0: amdgpu: GPU reset end with ret = 0", E::kResetSucceeded, "", -1},
    {"amdgpu 0000:c5:00.0: amdgpu: VRAM is lost due to GPU reset!", E::kVramLost, "", -1},
    // Rings and VM faults.
    {"amdgpu 0000:c5:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=2662395, emitted seq=2662397", E::kRingTimeout,
     "gfx_0.0.0", -1},
    {"amdgpu 0000:03:00.0: amdgpu: ring sdma0 timeout, signaled seq=10, emitted seq=12", E::kRingTimeout, "sdma0", -1},
    {"amdgpu 0000:c5:00.0: amdgpu: Starting gfx_0.0.0 ring reset", E::kRingReset, "gfx_0.0.0", -1},
    {"amdgpu 0000:c5:00.0: amdgpu: Ring gfx_0.0.0 reset failed", E::kRingReset, "gfx_0.0.0", -1},
    {"amdgpu 0000:c5:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:3 pasid:32769, for process python3 pid "
     "5200 thread python3 pid 5201)",
     E::kVmFault, "", -1},
    // The GPU leaving the bus, SMU, init.
    {"amdgpu 0000:04:00.0: device lost from bus!", E::kDeviceLost, "", -1},
    {"amdgpu 0000:04:00.0: SMU: bus error for message: TransferTableSmu2Dram(18) response:0xFFFFFFFF", E::kSmuBusError,
     "", -1},
    {"amdgpu 0000:04:00.0: amdgpu: Fatal error during GPU init", E::kInitFailed, "", -1},
    // The BDF-less form of older kernels.
    {"[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout, signaled seq=1, emitted seq=3", E::kRingTimeout,
     "gfx", -1},
};
INSTANTIATE_TEST_SUITE_P(All, AmdgpuLineForms, ::testing::ValuesIn(kCases));

TEST(AmdgpuLine, ProcessLineNamesTheProgramInBothForms) {
  for (const char* line : {"amdgpu 0000:c5:00.0: amdgpu: Process python3 pid 4242 thread python3 pid 4243",
                           "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* Process information: process python3 pid 4242 "
                           "thread python3 pid 4243"}) {
    const KernelEvent ev = ClassifyKernelMessage(line);
    ASSERT_EQ(ev.type, KernelEventType::kAmdgpu) << line;
    EXPECT_EQ(ev.event, amdgpu_event::kRingProcess);
    EXPECT_EQ(ev.process, "python3");
    EXPECT_EQ(ev.pid, "4242");
  }
}

TEST(AmdgpuLine, NotAmdgpuOrNotAFault) {
  for (const char* line : {
           "amdgpu 0000:0c:00.0: amdgpu: MEM ECC is active.",
           "amdgpu 0000:0c:00.0: amdgpu: RAS INFO: ras initialized successfully, hardware ability[7fff] ras_mask[7fff]",
           "[drm] amdgpu kernel modesetting enabled.",
           "amdgpu 0000:0c:00.0: amdgpu: SMU is initialized successfully!",
           "amdgpu 0000:0c:00.0: amdgpu: ring gfx",                                           // truncated
           "amdgpu 0000:0c:00.0: amdgpu: correctable hardware errors detected in umc block",  // no count
           "amdgpu 0000:0c:00.0: amdgpu: 3 correctable hardware errors detected in",          // truncated block
           "amdgpu 0000:0c:00.0: amdgpu: 3 new uncorrectable hardware errors detected in a block name far too long "
           "to be one block",
           "amdgpu 0000:0c:00.0: amdgpu: Process",
           "amdgpu 0000:0c:00.0:",
           "amdgpu: 1 uncorrectable hardware errors detected in umc block",  // no device, no drm prefix
           "python3[123]: amdgpu ring gfx timeout in my log message",
       }) {
    EXPECT_EQ(ClassifyKernelMessage(line).type, KernelEventType::kNone) << line;
  }
}

TEST(AmdgpuLine, HostileInputNeverCrashesOrOverreads) {
  std::string big = "amdgpu 0000:0c:00.0: amdgpu: " + std::string(100000, '9') +
                    " new uncorrectable hardware errors detected in umc block";
  KernelEvent ev = ClassifyKernelMessage(big);
  if (ev.type == KernelEventType::kAmdgpu) {
    EXPECT_LE(ev.code, INT64_MAX);
  }
  std::string nul("amdgpu 0000:0c:00.0: amdgpu: ring \0gfx timeout", 43);
  (void)ClassifyKernelMessage(nul);
  (void)ClassifyKernelMessage("amdgpu 0000:0c:00.0: amdgpu: {99999999999999999}socket: 0, die:");
  (void)ClassifyKernelMessage("amdgpu 0000:0c:00.0: amdgpu: RAS records:-5 exceed threshold:");
  (void)ClassifyKernelMessage("[drm:x [amdgpu]]");
  (void)ClassifyKernelMessage("amdgpu 0000:0c:00.0: amdgpu: Starting  ring reset");
}

TEST(AmdgpuLine, ReadThroughEveryLogFormIntoGpuObservations) {
  const std::string msg = "amdgpu 0000:0c:00.0: amdgpu: 1 uncorrectable hardware errors detected in umc block";
  for (const std::string& log : {
           "[ 1234.567890] " + msg + "\n",                                                 // dmesg
           "Dec 02 09:56:04 node1 kernel: " + msg + "\n",                                  // journal short
           "2026-12-02T09:56:04.123456+00:00 node1 kernel: [ 1234.567890] " + msg + "\n",  // syslog ISO
           "3,812,1234567890,-;" + msg + "\n",                                             // /dev/kmsg record
       }) {
    auto obs = Read(log);
    ASSERT_EQ(obs.size(), 1u) << log;
    EXPECT_EQ(obs[0].kind, ObsKind::kAmdgpuEvent);
    EXPECT_EQ(obs[0].component.type, ComponentType::kGpu);
    EXPECT_EQ(obs[0].component.keys.at("bdf"), "0000:0c:00.0");
    EXPECT_EQ(obs[0].attrs.at("event"), "ras_ue");
    EXPECT_EQ(obs[0].attrs.at("block"), "umc");
    EXPECT_EQ(obs[0].value, 1);
  }
}

TEST(AmdgpuLine, DeviceLostTakesTheXid79Path) {
  auto obs = Read("[ 10.0] amdgpu 0000:04:00.0: device lost from bus!\n");
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_EQ(obs[0].kind, ObsKind::kGpuFellOffBus);
  EXPECT_EQ(obs[0].component.keys.at("bdf"), "0000:04:00.0");
  EXPECT_EQ(obs[0].component.keys.at("driver"), "amdgpu");
}

TEST(AmdgpuLine, NvidiaLinesStillXids) {
  auto obs = Read("[ 10.0] NVRM: Xid (PCI:0000:18:00): 48, pid=1, name=x, An uncorrectable double bit error\n");
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_EQ(obs[0].kind, ObsKind::kXid);
}

}  // namespace
}  // namespace faultline
