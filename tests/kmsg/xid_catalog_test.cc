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

TEST(XidCatalogTest, RecoveryActions) {
  EXPECT_EQ(RecoveryActionFor(0), Action::kNone);
  EXPECT_EQ(RecoveryActionFor(1), Action::kResetGpu);
  EXPECT_EQ(RecoveryActionFor(2), Action::kRebootNode);
  EXPECT_EQ(RecoveryActionFor(4), Action::kDrain);
  EXPECT_FALSE(RecoveryActionFor(99));
}

}  // namespace
}  // namespace faultline
