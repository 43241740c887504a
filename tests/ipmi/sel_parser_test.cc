#include "sources/ipmi/sel_parser.h"

#include <gtest/gtest.h>

#include "core/time.h"
#include "engine/detect/oob_detectors.h"

namespace faultline::ipmi {
namespace {

const char kIpmitool[] =
    "   1 | 11/15/2019 | 18:50:40 | Power Unit Pwr Unit Status | Power off/down | Asserted\n"
    "  1a | Pre-Init  |  0000012 | System Event #0x01 | Timestamp Clock Sync | Asserted  \n"
    "  1b | 04/01/2020 | 10:00:00 | Temperature Inlet Temp | Upper Critical going high | Asserted | Reading 45 > "
    "Threshold 42 degrees C\n"
    "  1c | 04/01/2020 | 10:05:00 | Temperature Inlet Temp | Upper Critical going high | Deasserted | Reading 40 < "
    "Threshold 42 degrees C\n";

TEST(IpmiSelParser, ParsesIpmitoolRows) {
  auto r = ParseSelText(kIpmitool, {.node = "n1"});
  ASSERT_TRUE(r.errors.empty()) << r.errors[0];
  ASSERT_EQ(r.observations.size(), 4u);
  const Observation& o = r.observations[0];
  EXPECT_EQ(o.kind, ObsKind::kSelEntry);
  EXPECT_EQ(o.layer, Layer::kOob);
  EXPECT_EQ(o.source, Source::kIpmi);
  EXPECT_EQ(o.node, "n1");
  EXPECT_EQ(o.seq, 1u);
  EXPECT_EQ(o.attrs.at("sensor_type"), "Power Unit");
  EXPECT_EQ(o.attrs.at("sensor"), "Pwr Unit Status");
  EXPECT_EQ(o.attrs.at("entry_code"), "Power off/down");
  EXPECT_EQ(o.attrs.at("assertion"), "asserted");
  EXPECT_EQ(o.time_ns, *ParseIso8601("2019-11-15T18:50:40Z"));
}

TEST(IpmiSelParser, HexIdsPreInitAndTrailingSpaces) {
  auto r = ParseSelText(kIpmitool);
  ASSERT_EQ(r.observations.size(), 4u);
  EXPECT_EQ(r.observations[1].seq, 0x1au);
  EXPECT_EQ(r.observations[1].time_ns, 0);
  EXPECT_EQ(r.observations[1].attrs.at("time_quality"), "pre-init");
  EXPECT_EQ(r.observations[1].attrs.at("sensor_type"), "System Event");
  EXPECT_EQ(r.observations[1].attrs.at("assertion"), "asserted");
}

TEST(IpmiSelParser, ThresholdReadings) {
  auto r = ParseSelText(kIpmitool);
  const Observation& o = r.observations[2];
  ASSERT_TRUE(o.value.has_value());
  EXPECT_DOUBLE_EQ(*o.value, 45.0);
  EXPECT_EQ(o.attrs.at("threshold"), "42");
  EXPECT_EQ(o.attrs.at("units"), "degrees C");
  EXPECT_EQ(r.observations[3].attrs.at("assertion"), "deasserted");
}

TEST(IpmiSelParser, FreeIpmiWithHeader) {
  const char text[] =
      "ID  | Date        | Time     | Name            | Type          | State    | Event Direction   | Event\n"
      "5   | Jan-02-2021 | 03:04:05 | PS1 Status      | Power Supply  | Critical | Assertion Event   | Power "
      "Supply Failure detected\n"
      "6   | PostInit    | 00:00:01 | Fan 3           | Fan           | Nominal  | Deassertion Event | Lower "
      "Critical - going low\n";
  auto r = ParseSelText(text);
  ASSERT_TRUE(r.errors.empty()) << r.errors[0];
  ASSERT_EQ(r.observations.size(), 2u);
  EXPECT_EQ(r.observations[0].seq, 5u);
  EXPECT_EQ(r.observations[0].attrs.at("sensor"), "PS1 Status");
  EXPECT_EQ(r.observations[0].attrs.at("sensor_type"), "Power Supply");
  EXPECT_EQ(r.observations[0].attrs.at("severity"), "Critical");
  EXPECT_EQ(r.observations[0].attrs.at("entry_code"), "Power Supply Failure detected");
  EXPECT_EQ(r.observations[0].time_ns, *ParseIso8601("2021-01-02T03:04:05Z"));
  EXPECT_EQ(r.observations[1].attrs.at("assertion"), "deasserted");
  EXPECT_EQ(r.observations[1].time_ns, 0);
}

TEST(IpmiSelParser, FreeIpmiWithoutHeader) {
  auto r = ParseSelText("12 | Nov-15-2019 | 18:50:40 | PSU2 | Power Supply | Power Supply input lost (AC/DC)\n");
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].seq, 12u);
  EXPECT_EQ(r.observations[0].attrs.at("sensor_type"), "Power Supply");
  EXPECT_EQ(r.observations[0].attrs.at("sensor"), "PSU2");
}

TEST(IpmiSelParser, BmcOffsetCorrectsTime) {
  auto r = ParseSelText("1 | 11/15/2019 | 18:50:40 | Fan FAN1 | Lower Critical going low | Asserted\n",
                        {.bmc_offset_ns = 60 * kNsPerSec});
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].time_ns, *ParseIso8601("2019-11-15T18:49:40Z"));
}

TEST(IpmiSelParser, BadRowsBecomeErrorsAndParsingContinues) {
  const std::string text = std::string("garbage without pipes\n") +
                           "zz | 11/15/2019 | 18:50:40 | Fan FAN1 | Lower Critical going low | Asserted\n" +
                           "2 | 13/45/2019 | 18:50:40 | Fan FAN1 | x | Asserted\n" +
                           "3 | 11/15/2019 | 25:00:00 | Fan FAN1 | x | Asserted\n" +
                           "4 | 11/15/2019 | 18:5\n" +  // truncated
                           "5 | 11/15/2019 | 18:50:40 | Fan FAN1 | Lower Critical going low | Asserted\n";
  auto r = ParseSelText(text);
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].seq, 5u);
  ASSERT_EQ(r.errors.size(), 5u);
  EXPECT_EQ(r.errors[0].rfind("line 1:", 0), 0u);
  EXPECT_NE(r.errors[1].find("bad record id"), std::string::npos);
  EXPECT_NE(r.errors[2].find("bad date"), std::string::npos);
}

// A year past what nanoseconds since 1970 hold (2262) is a bad date, not an overflow
// (UBSan traps it in the sanitizer and fuzz builds); 2200 is still read.
TEST(IpmiSelParser, AYearPastTheClocksRangeIsABadDate) {
  auto r = ParseSelText("1 | 04/01/4040 | 10:00:00 | Fan FAN1 | Lower Critical going low | Asserted\n"
                        "2 | 04/01/2200 | 10:00:00 | Fan FAN1 | Lower Critical going low | Asserted\n");
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].time_ns, *ParseIso8601("2200-04-01T10:00:00Z"));
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("bad date"), std::string::npos) << r.errors[0];
}

TEST(IpmiSelParser, OversizedLinesAndRowLimit) {
  std::string huge(10000, 'x');
  std::string text = "1 | 11/15/2019 | 18:50:40 | Fan FAN1 | " + huge + " | Asserted\n";
  for (int i = 0; i < 5; ++i) text += "2 | 11/15/2019 | 18:50:40 | Fan FAN1 | x | Asserted\n";
  auto r = ParseSelText(text, {.max_rows = 3});
  EXPECT_EQ(r.observations.size(), 3u);
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_NE(r.errors[0].find("longer than"), std::string::npos);
  EXPECT_NE(r.errors[1].find("row limit"), std::string::npos);
}

TEST(IpmiSelParser, HostileBytesDoNotCrash) {
  std::string text = "1|\x00\xff|\n||||||||||||\n|\n\r\n 0x | 00/00/0000 | 00:00:00 | | | \n";
  text += std::string("\0\0|\0", 4);
  auto r = ParseSelText(text);
  EXPECT_TRUE(r.observations.empty());
  EXPECT_FALSE(r.errors.empty());
}

TEST(IpmiSelParser, SplitSensorFieldPrefersLongestType) {
  EXPECT_EQ(SplitSensorField("Power Supply PS1 Status").first, "Power Supply");
  EXPECT_EQ(SplitSensorField("Power Supply PS1 Status").second, "PS1 Status");
  EXPECT_EQ(SplitSensorField("Fan #0x30").second, "#0x30");
  EXPECT_EQ(SplitSensorField("Fantastic 1").first, "");
}

// The same SEL rows drive the OOB event detector: assert opens, deassert closes.
TEST(IpmiSelParser, AssertDeassertPairClosesFinding) {
  auto r = ParseSelText(kIpmitool);
  auto detector = MakeOobEventDetector({});
  for (const auto& o : r.observations) detector->Observe(o);
  auto findings = detector->Findings();
  const Finding* inlet = nullptr;
  for (const auto& f : findings) {
    if (f.fault_class == FaultClass::kThermalInlet) inlet = &f;
  }
  ASSERT_NE(inlet, nullptr);
  EXPECT_EQ(inlet->attrs.at("state"), "cleared");
  EXPECT_EQ(inlet->action, Action::kFacilityTicket);
  EXPECT_EQ(inlet->last_ns, *ParseIso8601("2020-04-01T10:05:00Z"));
}

}  // namespace
}  // namespace faultline::ipmi
