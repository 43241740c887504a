#include "sources/sysfs/counter_parse.h"

#include <gtest/gtest.h>

#include <string>

namespace faultline {
namespace {

TEST(SysfsCounterParse, AerFileAsTheKernelPrintsIt) {
  auto c = ParseAerCounters("RxErr 3\nBadTLP 0\nBadDLLP 12\nRollover 0\nTimeout 1\nTOTAL_ERR_COR 16\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->size(), 6u);
  EXPECT_EQ((*c)[0].name, "RxErr");
  EXPECT_EQ((*c)[0].value, 3u);
  EXPECT_EQ((*c)[5].name, "TOTAL_ERR_COR");
  EXPECT_EQ((*c)[5].value, 16u);
}

TEST(SysfsCounterParse, AerRejectsGarbage) {
  for (const char* bad : {"", "\n\n", "RxErr\n", "RxErr x\n", "RxErr -1\n", "Rx-Err 1\n",
                          "RxErr 99999999999999999999999\n", "\x01\x02 3\n", "RxErr 1 2\n"}) {
    auto c = ParseAerCounters(bad);
    EXPECT_FALSE(c.ok()) << "accepted: " << bad;
    if (!c.ok()) {
      EXPECT_EQ(c.status().code(), StatusCode::kCorrupt);
    }
  }
}

TEST(SysfsCounterParse, AerRejectsOversizedAndTooManyLines) {
  EXPECT_FALSE(ParseAerCounters(std::string(kMaxAttrBytes + 1, 'A')).ok());
  std::string many;
  for (int i = 0; i < 200; ++i) many += "E" + std::to_string(i) + " 1\n";
  ASSERT_LE(many.size(), kMaxAttrBytes);
  EXPECT_FALSE(ParseAerCounters(many).ok());
}

TEST(SysfsCounterParse, Counter) {
  EXPECT_EQ(ParseCounter("42\n").value(), 42u);
  EXPECT_EQ(ParseCounter("18446744073709551615").value(), UINT64_MAX);
  for (const char* bad : {"", "\n", "-1", "4 2", "0x10", "18446744073709551616", "abc"}) {
    EXPECT_FALSE(ParseCounter(bad).ok()) << bad;
  }
}

TEST(SysfsCounterParse, LinkSpeedAndWidth) {
  EXPECT_DOUBLE_EQ(ParseLinkSpeed("32.0 GT/s PCIe\n").value(), 32.0);
  EXPECT_DOUBLE_EQ(ParseLinkSpeed("2.5 GT/s").value(), 2.5);
  EXPECT_EQ(ParseLinkSpeed("Unknown\n").status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(ParseLinkSpeed("fast").status().code(), StatusCode::kCorrupt);
  EXPECT_FALSE(ParseLinkSpeed("nan GT/s").ok());
  EXPECT_FALSE(ParseLinkSpeed("-8 GT/s").ok());
  EXPECT_EQ(ParseLinkWidth("16\n").value(), 16);
  EXPECT_EQ(ParseLinkWidth("0").value(), 0);
  EXPECT_FALSE(ParseLinkWidth("64").ok());
  EXPECT_FALSE(ParseLinkWidth("x16").ok());
  EXPECT_EQ(PcieGenFromSpeed(32.0), 5);
  EXPECT_EQ(PcieGenFromSpeed(8.0), 3);
  EXPECT_EQ(PcieGenFromSpeed(2.5), 1);
  EXPECT_EQ(PcieGenFromSpeed(3.0), 0);
}

TEST(SysfsCounterParse, IbStateAndRate) {
  auto s = ParseIbState("4: ACTIVE\n");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->number, 4);
  EXPECT_EQ(s->name, "ACTIVE");
  EXPECT_EQ(ParseIbState("5: LinkUp").value().name, "LinkUp");
  EXPECT_FALSE(ParseIbState("ACTIVE").ok());
  EXPECT_FALSE(ParseIbState("4:").ok());
  EXPECT_FALSE(ParseIbState("999: X").ok());
  EXPECT_DOUBLE_EQ(ParseIbRate("400 Gb/sec (4X NDR)\n").value(), 400);
  EXPECT_DOUBLE_EQ(ParseIbRate("2.5 Gb/sec (1X SDR)").value(), 2.5);
  EXPECT_FALSE(ParseIbRate("400 Gbps").ok());
  EXPECT_FALSE(ParseIbRate("inf Gb/sec").ok());
}

TEST(SysfsCounterParse, PciId) {
  EXPECT_EQ(ParsePciId("0x030200\n").value(), 0x030200u);
  EXPECT_FALSE(ParsePciId("030200").ok());
  EXPECT_FALSE(ParsePciId("0x").ok());
  EXPECT_FALSE(ParsePciId("0xffffffff").ok());
}

TEST(SysfsCounterParse, NoPmaIsUnsupportedNotCorrupt) {
  auto r = ParseCounter("N/A (no PMA)\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(ParseCounter("NaN\n").status().code(), StatusCode::kCorrupt);
}

TEST(SysfsCounterParse, SaturationFollowsEachCountersWidth) {
  EXPECT_EQ(IbCounterWidthBits("link_downed"), 8);
  EXPECT_EQ(IbCounterWidthBits("symbol_error"), 16);
  EXPECT_EQ(IbCounterWidthBits("excessive_buffer_overrun_errors"), 4);
  EXPECT_EQ(IbCounterWidthBits("port_xmit_data"), 0);  // 32 or 64 bits depending on the HCA
  EXPECT_EQ(IbCounterMax("link_error_recovery"), 255u);
  EXPECT_TRUE(IbCounterSaturated("link_downed", 255));
  EXPECT_FALSE(IbCounterSaturated("link_downed", 256));  // impossible for 8 bits: a wider driver
  EXPECT_TRUE(IbCounterSaturated("symbol_error", 65535));
  EXPECT_FALSE(IbCounterSaturated("symbol_error", 255));
  EXPECT_TRUE(IbCounterSaturated("local_link_integrity_errors", 15));
  EXPECT_TRUE(IbCounterSaturated("port_xmit_data", 4294967295ULL));
  EXPECT_TRUE(IbCounterSaturated("anything", UINT64_MAX));
  EXPECT_FALSE(IbCounterSaturated("anything", 65535));
  EXPECT_FALSE(IbCounterSaturated("", 0));
}

}  // namespace
}  // namespace faultline
