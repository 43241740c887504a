// The amdgpu RAS sysfs parsers with good and bad input: truncated, oversized,
// non-numeric, overflowing, duplicated, hostile (control bytes, NUL, huge files).
#include "sources/amdsmi/amdgpu_sysfs_parse.h"

#include <gtest/gtest.h>

namespace faultline::amdsmi {
namespace {

TEST(RasErrCountParse, KernelFormsAndDeferred) {
  auto c = ParseRasErrCount("ue: 0\nce: 1\n");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->ue, 0u);
  EXPECT_EQ(c->ce, 1u);
  EXPECT_FALSE(c->has_de);
  c = ParseRasErrCount("ue: 12\r\nce: 3400\r\nde: 2\r\n");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->ue, 12u);
  EXPECT_EQ(c->ce, 3400u);
  EXPECT_EQ(c->de, 2u);
  EXPECT_TRUE(c->has_de);
  c = ParseRasErrCount("ce: 5\nue: 1");  // order and final newline do not matter
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->ue, 1u);
  EXPECT_EQ(c->ce, 5u);
  c = ParseRasErrCount("ue: 18446744073709551615\nce: 0\n");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->ue, UINT64_MAX);
}

TEST(RasErrCountParse, InaccessibleIsUnavailableNotCorrupt) {
  auto c = ParseRasErrCount("Query currently inaccessible\n");
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
}

TEST(RasErrCountParse, BadInputIsCorruptWithAReason) {
  struct Case {
    std::string text;
    const char* says;
  } cases[] = {
      {"", "no \"ue:\""},
      {"ue: 3\n", "no \"ce:\""},                             // truncated
      {"ue: 3\nce", "no ':'"},                               // cut mid-line
      {"ue: x\nce: 1\n", "not a count"},                     // non-numeric
      {"ue: -1\nce: 1\n", "not a count"},                    // negative
      {"ue: 18446744073709551616\nce: 0\n", "not a count"},  // overflow
      {"ue: 1 2\nce: 0\n", "not a count"},
      {"ue: 1\nce: 0\nue: 2\n", "twice"},
      {"ue: 1\nce: 0\nxe: 2\n", "unknown key"},
      {std::string("ue: 1\0\nce: 0\n", 13), "not a count"},  // NUL inside
      {"\x1b[31mue\x1b[0m: 1\nce: 0\n", "unknown key"},      // terminal escapes
      {std::string(5000, '1'), "too large"},                 // oversized
  };
  for (const Case& c : cases) {
    auto r = ParseRasErrCount(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt) << c.text;
    const std::string msg = r.status().message();
    EXPECT_NE(msg.find(c.says), std::string::npos) << msg;
    for (char ch : msg) EXPECT_TRUE(ch >= 0x20 && ch < 0x7f) << "raw byte in message";
  }
}

TEST(BadPagesParse, CountsFlags) {
  auto p = ParseBadPages(
      "0x00000001 : 0x00001000 : R\n0x00000002 : 0x00001000 : P\n0x00000003 : 0x00001000 : R\n"
      "0x0000abcd : 0x00200000 : F\n");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->reserved, 2u);
  EXPECT_EQ(p->pending, 1u);
  EXPECT_EQ(p->unreservable, 1u);
  EXPECT_EQ(p->total(), 4u);
  auto empty = ParseBadPages("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->total(), 0u);
  EXPECT_TRUE(ParseBadPages("\n\n").ok());
}

TEST(BadPagesParse, BadLinesNamed) {
  for (const char* text : {"0x00000001 : 0x00001000\n",      // truncated: no flag
                           "0x00000001 : 0x00001000 : X\n",  // unknown flag
                           "0x00000001 : 0x00001000 : RR\n",
                           "1 : 0x00001000 : R\n",                      // not hex-prefixed
                           "0xZZ : 0x00001000 : R\n",                   // not hex
                           "0x00000001 : 0x1000000000000000000 : R\n",  // overflow
                           "garbage\n"}) {
    auto p = ParseBadPages(text);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_EQ(p.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(p.status().message().find("line 1"), std::string::npos) << p.status().message();
  }
  auto second = ParseBadPages("0x00000001 : 0x00001000 : R\nbroken\n");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("line 2"), std::string::npos);
}

TEST(BadPagesParse, OversizedAndTooManyRefused) {
  std::string huge(kMaxBadPagesBytes + 1, ' ');
  EXPECT_EQ(ParseBadPages(huge).status().code(), StatusCode::kCorrupt);
  std::string many;
  for (uint64_t i = 0; i <= kMaxBadPageLines && many.size() < kMaxBadPagesBytes - 40; ++i) many += "0x1 : 0x1 : R\n";
  auto r = ParseBadPages(many);
  if (!r.ok()) {
    EXPECT_NE(r.status().message().find("more than"), std::string::npos);
  } else {
    EXPECT_LE(r->total(), kMaxBadPageLines);
  }
}

TEST(FeaturesParse, MaskAndBadForms) {
  auto m = ParseRasFeatures("feature mask: 0x3fbf\n");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, 0x3fbfu);
  for (const char* bad : {"", "feature mask:", "feature mask: 3fbf", "mask: 0x1", "feature mask: 0xZZ"}) {
    EXPECT_EQ(ParseRasFeatures(bad).status().code(), StatusCode::kCorrupt) << bad;
  }
}

TEST(SysfsIntParse, Forms) {
  EXPECT_EQ(*ParseSysfsInt("1966\n"), 1966);
  EXPECT_EQ(*ParseSysfsInt(" -1 \n"), -1);
  for (const char* bad : {"", "\n", "12a", "0x10", "1.5", "99999999999999999999"}) {
    EXPECT_FALSE(ParseSysfsInt(bad).ok()) << bad;
  }
}

TEST(RasBlocks, Known) {
  for (const char* b : {"umc", "gfx", "xgmi_wafl", "sdma", "mmhub", "pcie_bif", "mpio"})
    EXPECT_TRUE(IsKnownRasBlock(b));
  for (const char* b : {"", "UMC", "xgmi", "umc "}) EXPECT_FALSE(IsKnownRasBlock(b));
}

}  // namespace
}  // namespace faultline::amdsmi
