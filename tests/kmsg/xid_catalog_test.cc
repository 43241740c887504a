#include "parse/xid_catalog.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace faultline {
namespace {

// Minimal RFC 4180 reader (quoted fields with commas, quotes and newlines) for the test.
std::vector<std::vector<std::string>> ReadCsv(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
        field += '"', ++i;
      else if (c == '"')
        quoted = false;
      else
        field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field), field.clear();
    } else if (c == '\n') {
      rows.back().push_back(field), field.clear();
      rows.emplace_back();
    } else if (c != '\r') {
      field += c;
    }
  }
  if (!field.empty() || !rows.back().empty()) rows.back().push_back(field);
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

// The generator folds runs of whitespace (including newlines inside cells) into one space.
std::string Collapse(const std::string& s) {
  std::istringstream in(s);
  std::string word, out;
  while (in >> word) out += (out.empty() ? "" : " ") + word;
  return out;
}

std::string CatalogDir() { return std::string(FAULTLINE_SOURCE_DIR) + "/../shared/reference/nvidia-xid-catalog"; }

TEST(XidCatalogTest, CoversEveryCodeInNvidiasCatalog) {
  const std::string csv = CatalogDir() + "/xids.csv";
  if (!std::filesystem::exists(csv)) GTEST_SKIP() << "../shared not present";
  auto rows = ReadCsv(csv);
  ASSERT_GT(rows.size(), 100u);
  size_t checked = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    const int code = std::stoi(rows[i][1]);
    const XidInfo* info = FindXid(code);
    ASSERT_NE(info, nullptr) << "XID " << code << " missing from the catalog";
    EXPECT_EQ(info->mnemonic, Collapse(rows[i][2])) << code;
    EXPECT_EQ(std::string(info->immediate).empty(), rows[i][8].empty()) << code;
    ++checked;
  }
  EXPECT_EQ(checked, AllXids().size());
}

TEST(XidCatalogTest, DecodeTableMatchesCsvRowCount) {
  const std::string csv = CatalogDir() + "/xid-144-150-decode.csv";
  if (!std::filesystem::exists(csv)) GTEST_SKIP() << "../shared not present";
  size_t rows = 0;
  for (const auto& r : ReadCsv(csv)) {
    if (!r.empty() && !r[0].empty() && std::isdigit(static_cast<unsigned char>(r[0][0]))) ++rows;
  }
  EXPECT_EQ(rows, NvlinkDecodeRowCount());
}

TEST(XidCatalogTest, KnownCodesAndTheProjectsReading) {
  ASSERT_NE(FindXid(79), nullptr);
  EXPECT_EQ(FindXid(79)->mnemonic, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS");
  EXPECT_EQ(FindXid(48)->immediate, "WORKFLOW_XID_48");
  EXPECT_EQ(FindXid(999999), nullptr);
  EXPECT_EQ(RuleForXid(79).fault_class, FaultClass::kGpuFellOffBus);
  EXPECT_EQ(RuleForXid(48).fault_class, FaultClass::kHbmUncorrectable);
  EXPECT_EQ(RuleForXid(48).action, Action::kResetGpu);
  EXPECT_EQ(RuleForXid(13).fault_class, FaultClass::kUserApplication);
  EXPECT_EQ(RuleForXid(119).fault_class, FaultClass::kGspFirmware);
  EXPECT_EQ(RuleForXid(74).layer, Layer::kFabric);
  EXPECT_LT(RuleForXid(94).action, Action::kRma);
  // Unknown codes get a conservative reading, never a hardware action.
  EXPECT_LE(RuleForXid(4242).action, Action::kMonitor);
  for (const XidInfo& x : AllXids()) EXPECT_NE(RuleForXid(x.code).action, Action::kRma) << x.code;
}

TEST(XidCatalogTest, NvlinkDecodeUsesUnitIntrInfoAndStatus) {
  // 144 SAW_MVB v2 pattern "------000000-------------0000001" with status bit 0x2 = RESET_GPU (Fatal).
  auto fatal = DecodeNvlinkXid(144, 0x00000001, 0x00000002);
  ASSERT_TRUE(fatal.matched);
  EXPECT_EQ(fatal.bucket, "RESET_GPU");
  auto benign = DecodeNvlinkXid(144, 0x00000001, 0x00000004);
  ASSERT_TRUE(benign.matched);
  EXPECT_EQ(benign.bucket, "IGNORE");
  EXPECT_FALSE(DecodeNvlinkXid(13, 0, 0).matched);
}

// Every row of NVIDIA's decode table decodes to a match when its own intrInfo pattern
// (don't-care bits 0) and errorStatus value are fed back: status 0 rows included.
TEST(XidCatalogTest, EveryDecodeRowMatchesItsOwnValues) {
  const std::string csv = CatalogDir() + "/xid-144-150-decode.csv";
  if (!std::filesystem::exists(csv)) GTEST_SKIP() << "../shared not present";
  size_t rows = 0;
  for (const auto& r : ReadCsv(csv)) {
    if (r.size() < 6 || r[0].empty() || !std::isdigit(static_cast<unsigned char>(r[0][0]))) continue;
    uint32_t intr = 0;
    for (char c : r[3]) {
      if (c == '0' || c == '1' || c == '-') intr = (intr << 1) | (c == '1' ? 1u : 0u);
    }
    const std::string status = r[4].substr(0, r[4].find('/'));
    const uint32_t value = status.empty() ? 0u : static_cast<uint32_t>(std::stoul(status, nullptr, 16));
    const auto d = DecodeNvlinkXid(std::stoi(r[0]), intr, value);
    EXPECT_TRUE(d.matched) << r[0] << " " << r[1] << " status " << r[4];
    ++rows;
  }
  EXPECT_GT(rows, 50u);
}

TEST(XidCatalogTest, DecodeStatusIsAnExactValue) {
  // 149 NETIR_MFDE_EVENT (v2 intrInfo 0x14): 0x3 is its own IGNORE row, not "bits 1 and 2".
  auto mfde3 = DecodeNvlinkXid(149, 0x14, 0x3);
  ASSERT_TRUE(mfde3.matched);
  EXPECT_EQ(mfde3.bucket, "IGNORE");
  EXPECT_EQ(DecodeNvlinkXid(149, 0x14, 0x5).bucket, "RESET_GPU");
  EXPECT_FALSE(DecodeNvlinkXid(149, 0x14, 0x6).matched) << "no row lists 6";
  // Status 0 is a value rows list (149 NETIR_BER_EVENT, 150 MSE_WATCHDOG).
  auto ber0 = DecodeNvlinkXid(149, 0x13, 0x0);
  ASSERT_TRUE(ber0.matched);
  EXPECT_EQ(ber0.bucket, "IGNORE");
  EXPECT_EQ(DecodeNvlinkXid(150, 0x0, 0x0).bucket, "RESET_GPU");
  // "0x00000000/0xFFFFFFFF": either value.
  EXPECT_EQ(DecodeNvlinkXid(150, 0x0, 0xFFFFFFFF).bucket, "RESET_GPU");
  // A value with several bits set never matches a single-bit row by accident.
  EXPECT_FALSE(DecodeNvlinkXid(144, 0x1, 0x3).matched);
}

TEST(XidCatalogTest, PromotableRowsUseTheirActionTwoDecode) {
  // 145 RLW_RXPIPE (v2 0x06, "Non-fatal*"): intrInfo bit 7 set promotes it to RESET_GPU.
  EXPECT_EQ(DecodeNvlinkXid(145, 0x06, 0x1).bucket, "IGNORE");
  EXPECT_EQ(DecodeNvlinkXid(145, 0x86, 0x1).bucket, "RESET_GPU");
  // 145 RLW_REMAP (v2 0x04): defers to the XID 154 that follows.
  EXPECT_EQ(DecodeNvlinkXid(145, 0x04, 0x1).bucket, "XID_154_EVAL");
}

TEST(XidCatalogTest, SxidCatalogIsSortedUniqueAndNamesItsClasses) {
  auto all = AllSxids();
  ASSERT_GT(all.size(), 80u);
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1].code, all[i].code);
  ASSERT_NE(FindSxid(20034), nullptr);
  EXPECT_EQ(FindSxid(20034)->name, "LTSSM Fault Up");
  EXPECT_EQ(FindSxid(20034)->severity, SxidSeverity::kFatal);
  EXPECT_EQ(FindSxid(11012)->recovery, SxidRecovery::kNone);
  EXPECT_EQ(FindSxid(23001)->severity, SxidSeverity::kAlwaysFatal);
  EXPECT_EQ(FindSxid(12028)->recovery, SxidRecovery::kRestartGuestVm);
  EXPECT_EQ(FindSxid(1), nullptr);
  EXPECT_EQ(FindSxid(99999), nullptr);
}

TEST(XidCatalogTest, SxidReadingFollowsTheGuide) {
  EXPECT_EQ(RuleForSxid(11012, "Non-fatal").fault_class, FaultClass::kNone);  // corrected by hardware
  EXPECT_EQ(RuleForSxid(22013, "").fault_class, FaultClass::kNone);           // safe to ignore
  const XidRule watch = RuleForSxid(20009, "Non-fatal");
  EXPECT_EQ(watch.fault_class, FaultClass::kNvlinkErrors);
  EXPECT_EQ(watch.action, Action::kMonitor);
  EXPECT_EQ(RuleForSxid(12028, "Non-fatal").action, Action::kResetGpu);
  EXPECT_EQ(RuleForSxid(24007, "Fatal").fault_class, FaultClass::kNvswitchFault);
  // Fatal in the guide even when the line omits it: the GPUs on the port are reset (after a
  // drain, which the policy adds), not merely drained.
  EXPECT_EQ(RuleForSxid(24007, "").action, Action::kResetGpu);
  for (const SxidInfo& x : AllSxids()) {
    if (x.recovery == SxidRecovery::kRestartHost || x.recovery == SxidRecovery::kResetGpuAndSwitch) {
      EXPECT_EQ(RuleForSxid(x.code, "").action, Action::kRebootNode) << x.code;
    }
    if (x.severity != SxidSeverity::kNonFatal) {
      EXPECT_GE(RuleForSxid(x.code, "").action, Action::kResetGpu) << x.code;
    }
  }
  EXPECT_EQ(RuleForSxid(23005, "Fatal").severity, Severity::kFatal);
  EXPECT_EQ(RuleForSxid(10004, "").fault_class, FaultClass::kCoolingDegraded);
  // The driver calling a non-fatal code fatal on this line escalates it.
  EXPECT_EQ(RuleForSxid(20009, "Fatal").fault_class, FaultClass::kNvswitchFault);
  EXPECT_EQ(RuleForSxid(29999, "Fatal").action, Action::kResetGpu);
  EXPECT_EQ(RuleForSxid(29999, "Non-fatal").action, Action::kMonitor);
  for (const SxidInfo& x : AllSxids()) EXPECT_NE(RuleForSxid(x.code, "").action, Action::kRma) << x.code;
}

TEST(XidCatalogTest, RecoveryActions) {
  EXPECT_EQ(RecoveryActionFor(0), Action::kNone);
  EXPECT_EQ(RecoveryActionFor(1), Action::kResetGpu);
  EXPECT_EQ(RecoveryActionFor(2), Action::kRebootNode);
  EXPECT_EQ(RecoveryActionFor(4), Action::kDrain);
  EXPECT_FALSE(RecoveryActionFor(99));
}

}  // namespace
}  // namespace faultline
