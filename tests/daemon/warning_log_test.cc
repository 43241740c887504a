#include "daemon/warning_log.h"

#include <gtest/gtest.h>

#include <sstream>

#include "core/clock.h"

namespace faultline::daemon {
namespace {

constexpr int64_t kSec = 1'000'000'000;

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct Fixture {
  FakeClock clock{1'800'000'000 * kSec, 0};
  std::ostringstream out;
  Logger logger{out, LogLevel::kInfo, clock};
};

TEST(WarningLogTest, ShapeFoldsDigitRuns) {
  EXPECT_EQ(WarningShape("records 100..2000 lost"), "records #..# lost");
  EXPECT_EQ(WarningShape("GET /redfish/v1/Chassis/1/Sensors/Temp12: HTTP 404"),
            "GET /redfish/v#/Chassis/#/Sensors/Temp#: HTTP #");
  EXPECT_EQ(WarningShape(""), "");
  EXPECT_EQ(WarningShape("no digits"), "no digits");
}

TEST(WarningLogTest, AWarningRepeatedEverySweepIsLoggedOnceThenCounted) {
  Fixture f;
  WarningLog log(f.logger);
  for (int sweep = 0; sweep < 100; ++sweep) {
    log.Report("redfish", {"GET /redfish/v1/Chassis/1/Sensors/Inlet: HTTP 404"}, sweep * 30 * kSec);
  }
  EXPECT_EQ(Count(f.out.str(), " warn "), 1u) << f.out.str();
  // The hour ends at the 121st sweep: the 99 repeats so far... are reported in one line.
  log.Report("redfish", {"GET /redfish/v1/Chassis/1/Sensors/Inlet: HTTP 404"}, 3600 * kSec);
  EXPECT_NE(f.out.str().find("99 more warning(s) like this one"), std::string::npos) << f.out.str();
  // A new window logs the warning itself again.
  EXPECT_EQ(Count(f.out.str(), "Sensors/Inlet: HTTP 404\n"), 3u) << f.out.str();
}

TEST(WarningLogTest, DistinctKindsAndSourcesAreEachShown) {
  Fixture f;
  WarningLog log(f.logger);
  log.Report("redfish", {"GET /a: timed out", "GET /a: HTTP 404", "bad JSON at /b"}, 0);
  log.Report("kmsg", {"GET /a: HTTP 404"}, kSec);
  EXPECT_EQ(Count(f.out.str(), " warn "), 4u) << f.out.str();
  // Numbers are folded, so another status of the same request is the same kind.
  log.Report("redfish", {"GET /a: HTTP 500"}, kSec);
  EXPECT_EQ(Count(f.out.str(), " warn "), 4u) << f.out.str();
  // Same kind, other numbers: one kind.
  log.Report("kmsg", {"kmsg ring overwrote records 10..20", "kmsg ring overwrote records 30..40"}, 2 * kSec);
  EXPECT_EQ(Count(f.out.str(), " warn "), 5u) << f.out.str();
}

TEST(WarningLogTest, FlushReportsRepeatsSoNoneIsLostAtStop) {
  Fixture f;
  WarningLog log(f.logger);
  log.Report("sysfs", {"cannot read /sys/x", "cannot read /sys/x", "cannot read /sys/x"}, 0);
  log.Flush();
  EXPECT_NE(f.out.str().find("2 more warning(s) like this one since it was logged: source sysfs: cannot read /sys/x"),
            std::string::npos)
      << f.out.str();
  log.Flush();  // nothing left to say
  EXPECT_EQ(Count(f.out.str(), " warn "), 2u) << f.out.str();
}

TEST(WarningLogTest, HostileFloodOfDistinctTextsIsBounded) {
  Fixture f;
  WarningLog log(f.logger, {.window_ns = 3600 * kSec, .max_shapes = 8});
  std::vector<std::string> flood;
  for (int i = 0; i < 10000; ++i) flood.push_back("weird path /x" + std::string(static_cast<size_t>(i % 50), 'a'));
  log.Report("redfish", flood, 0);
  EXPECT_EQ(Count(f.out.str(), " warn "), 8u);
  log.Flush();
  EXPECT_NE(f.out.str().find("other source warning(s)"), std::string::npos) << f.out.str();
}

}  // namespace
}  // namespace faultline::daemon
