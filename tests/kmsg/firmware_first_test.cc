// Firmware-first PCIe errors (APEI GHES records printed by the kernel) and AER detail
// lines that arrive without their header: placed on the device with the right severity,
// and never read as a user program's fault.
#include <gtest/gtest.h>

#include <string>

#include "kmsg_test_util.h"
#include "parse/kernel_line.h"

namespace faultline {
namespace {

using kmsg_test::Read;

std::string GhesPcie(int record, const std::string& severity, const std::string& bdf, const std::string& stamp) {
  const std::string p = "[" + stamp + "] {" + std::to_string(record) + "}[Hardware Error]: ";
  return p + "Hardware error from APEI Generic Hardware Error Source: 0\n" + p +
         "It has been corrected by h/w and requires no further action\n" + p + "event severity: " + severity + "\n" +
         p + " Error 0, type: " + severity + "\n" + p + "  section_type: PCIe error\n" + p +
         "  port_type: 0, PCIe end point\n" + p + "  version: 3.0\n" + p + "  command: 0x0547, status: 0x0010\n" + p +
         "  device_id: " + bdf + "\n" + p + "  slot: 0\n" + p + "  vendor_id: 0x10de, device_id: 0x2330\n" + p +
         "  class_code: 030200\n";
}

std::vector<Observation> OfKind(const std::vector<Observation>& obs, ObsKind kind) {
  std::vector<Observation> out;
  for (const Observation& o : obs) {
    if (o.kind == kind) out.push_back(o);
  }
  return out;
}

TEST(FirmwareFirstTest, CorrectedGhesPcieRecordIsOneCorrectedAerOnTheDevice) {
  const std::string log = GhesPcie(1, "corrected", "0000:3b:00.0", " 5001.100000") +
                          "[ 5001.100010] nvidia 0000:3b:00.0: AER: aer_status: 0x00000001, aer_mask: 0x00002000\n"
                          "[ 5001.100011] nvidia 0000:3b:00.0:    [ 0] RxErr                 \n"
                          "[ 5001.100012] nvidia 0000:3b:00.0: AER:   Error of this Agent is reported first\n";
  for (size_t chunk : {0u, 17u}) {
    auto obs = Read(log, nullptr, {}, chunk);
    auto aer = OfKind(obs, ObsKind::kPcieAer);
    ASSERT_EQ(aer.size(), 1u) << chunk;
    EXPECT_EQ(aer[0].component.Id(), "pcie/0000:3b:00.0");
    EXPECT_EQ(aer[0].attrs.at("severity"), "Corrected");
    EXPECT_EQ(aer[0].attrs.at("errors"), "RxErr");
    EXPECT_NE(aer[0].raw.find("aer_status"), std::string::npos);
    EXPECT_TRUE(OfKind(obs, ObsKind::kAppFault).empty());
    EXPECT_EQ(obs.size(), 1u);
  }
}

TEST(FirmwareFirstTest, GhesSeverityDecidesTheAerSeverity) {
  const struct {
    const char* printed;
    const char* severity;
  } cases[] = {{"fatal", "Uncorrected (Fatal)"}, {"recoverable", "Uncorrected (Non-Fatal)"}, {"info", "Corrected"}};
  for (const auto& c : cases) {
    auto aer = OfKind(Read(GhesPcie(3, c.printed, "0000:b5:00.0", "  77.000000")), ObsKind::kPcieAer);
    ASSERT_EQ(aer.size(), 1u) << c.printed;
    EXPECT_EQ(aer[0].attrs.at("severity"), c.severity);
    EXPECT_EQ(aer[0].component.Id(), "pcie/0000:b5:00.0");
  }
  // Two records back to back, each on its own device.
  auto aer = OfKind(Read(GhesPcie(1, "corrected", "0000:3b:00.0", "1.0") + GhesPcie(2, "fatal", "0000:5e:00.0", "2.0")),
                    ObsKind::kPcieAer);
  ASSERT_EQ(aer.size(), 2u);
  EXPECT_EQ(aer[1].component.Id(), "pcie/0000:5e:00.0");
  EXPECT_EQ(aer[1].attrs.at("severity"), "Uncorrected (Fatal)");
}

TEST(FirmwareFirstTest, NonPcieSectionsAndDamagedRecordsEmitNoAer) {
  const std::string p = "[  9.000000] {4}[Hardware Error]: ";
  const std::string memory = p + "Hardware error from APEI Generic Hardware Error Source: 1\n" + p +
                             "event severity: corrected\n" + p + " Error 0, type: corrected\n" + p +
                             "  section_type: memory error\n" + p + "  device_id: 0000:3b:00.0\n";
  EXPECT_TRUE(OfKind(Read(memory), ObsKind::kPcieAer).empty());  // a memory section's device_id is no AER
  // No section type, a device_id that is not a BDF, a record number that overflows.
  const std::string odd = p + "event severity: fatal\n" + p + "  device_id: 0000:3b:00.0\n" +
                          "[  9.1] {5}[Hardware Error]:   section_type: PCIe error\n" +
                          "[  9.1] {5}[Hardware Error]:   device_id: 0x2330\n" +
                          "[  9.2] {99999999999999999999999}[Hardware Error]: device_id: 0000:3b:00.0\n";
  auto obs = Read(odd);
  EXPECT_TRUE(OfKind(obs, ObsKind::kPcieAer).empty());
  EXPECT_TRUE(OfKind(obs, ObsKind::kAppFault).empty());
}

TEST(FirmwareFirstTest, AerDetailLinesWithoutTheirHeaderAreNeverAProgramFault) {
  // A paste that starts below the header: bits are placed by what their names mean.
  auto obs = Read(
      "[ 10.0] nvidia 0000:3b:00.0:    [ 0] RxErr                 \n"
      "[ 10.0] nvidia 0000:3b:00.0:    [ 6] BadTLP                \n"
      "[ 20.0] pcieport 0000:3a:00.0:    [14] CmpltTO                (First)\n"
      "[ 30.0] nvidia 0000:5e:00.0:    [ 9] NotAKnownName\n"
      "[ 40.0] nvidia 0000:5e:00.0:   device [10de:2330] error status/mask=00000001/0000e000\n");
  EXPECT_TRUE(OfKind(obs, ObsKind::kAppFault).empty());
  auto aer = OfKind(obs, ObsKind::kPcieAer);
  ASSERT_EQ(aer.size(), 2u);
  EXPECT_EQ(aer[0].component.Id(), "pcie/0000:3b:00.0");
  EXPECT_EQ(aer[0].attrs.at("severity"), "Corrected");
  EXPECT_EQ(aer[0].attrs.at("errors"), "RxErr,BadTLP");
  EXPECT_EQ(aer[1].component.Id(), "pcie/0000:3a:00.0");
  EXPECT_EQ(aer[1].attrs.at("severity"), "Uncorrected (Non-Fatal)");
}

TEST(FirmwareFirstTest, BitSeverityTable) {
  EXPECT_EQ(AerBitSeverity("RxErr"), "Corrected");
  EXPECT_EQ(AerBitSeverity("HeaderOF"), "Corrected");
  EXPECT_EQ(AerBitSeverity("SDES"), "Uncorrected (Non-Fatal)");
  EXPECT_EQ(AerBitSeverity("PoisonTLPBlocked"), "Uncorrected (Non-Fatal)");
  EXPECT_EQ(AerBitSeverity("rxerr"), "");
  EXPECT_EQ(AerBitSeverity(""), "");
}

}  // namespace
}  // namespace faultline

namespace faultline {
namespace {

TEST(HotplugTest, SlotLinkDownAboveAGpuIsAFatalLinkEventOnThePort) {
  auto obs = Read(
      "[  200.000000] pcieport 0000:3a:00.0: pciehp: Slot(6): Link Down\n"
      "[  200.000100] pcieport 0000:3a:00.0: pciehp: Slot(6): Card not present\n"
      "[  200.500000] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n");
  auto aer = OfKind(obs, ObsKind::kPcieAer);
  ASSERT_EQ(aer.size(), 2u);
  EXPECT_EQ(aer[0].component.Id(), "pcie/0000:3a:00.0");
  EXPECT_EQ(aer[0].attrs.at("severity"), "Uncorrected (Fatal)");
  EXPECT_EQ(aer[0].attrs.at("type"), "Link Down");
  // Only pciehp's own lines: "Link Down" in some other driver's message is not a verdict.
  EXPECT_TRUE(OfKind(Read("[ 1.0] pcieport 0000:3a:00.0: some driver: Link Down\n"), ObsKind::kPcieAer).empty());
  EXPECT_TRUE(OfKind(Read("[ 1.0] pcieport 0000:3a:00.0: pciehp: Slot(6): Link Up\n"), ObsKind::kPcieAer).empty());
}

}  // namespace
}  // namespace faultline

namespace faultline {
namespace {

TEST(FirmwareFirstTest, GhesMemoryErrorIsAHostMemoryRecordWithItsDimm) {
  const std::string p = "[ 9.000000] {7}[Hardware Error]: ";
  auto obs = Read(p + "Hardware error from APEI Generic Hardware Error Source: 1\n" + p +
                  "event severity: recoverable\n" + p + " Error 0, type: recoverable\n" + p +
                  "  section_type: memory error\n" + p + "  physical_address: 0x0000003a1b2c3000\n" + p +
                  "  node:0 card:2 module:0 rank:1 bank:3 row:4096 column:512\n" + p +
                  "  DIMM location: CPU0_DIMM_C1\n");
  auto mem = OfKind(obs, ObsKind::kHostMemoryError);
  ASSERT_EQ(mem.size(), 1u);
  EXPECT_EQ(mem[0].attrs.at("severity"), "UE");
  EXPECT_EQ(MemoryErrorLocation(mem[0].text), "CPU0_DIMM_C1") << mem[0].text;
  EXPECT_TRUE(OfKind(obs, ObsKind::kPcieAer).empty());
  EXPECT_TRUE(OfKind(obs, ObsKind::kAppFault).empty());
  // Corrected, without a DIMM line: still one record, severity CE.
  mem = OfKind(Read(p + "event severity: corrected\n" + p + "  section_type: memory error\n"), ObsKind::kHostMemoryError);
  ASSERT_EQ(mem.size(), 1u);
  EXPECT_EQ(mem[0].attrs.at("severity"), "CE");
}

}  // namespace
}  // namespace faultline
