#include "sources/ipmi/command_runner.h"

#include <gtest/gtest.h>

namespace faultline::ipmi {
namespace {

TEST(IpmiCommandRunner, SplitsQuotedCommandLines) {
  auto argv = SplitCommandLine("ipmitool -H 'bmc one' -P \"a b\" sel elist");
  ASSERT_TRUE(argv.ok());
  std::vector<std::string> want = {"ipmitool", "-H", "bmc one", "-P", "a b", "sel", "elist"};
  EXPECT_EQ(*argv, want);
  EXPECT_FALSE(SplitCommandLine("ipmitool 'oops").ok());
  EXPECT_FALSE(SplitCommandLine("   ").ok());
}

TEST(IpmiCommandRunner, CapturesStdout) {
  ProcessRunner runner;
  auto out = runner.Run({"printf", "1 | a\n2 | b\n"}, {});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "1 | a\n2 | b\n");
}

TEST(IpmiCommandRunner, NonZeroExitIsUnavailable) {
  ProcessRunner runner;
  auto out = runner.Run({"sh", "-c", "echo nope >&2; exit 3"}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(out.status().message().find("nope"), std::string::npos);
  auto missing = runner.Run({"/nonexistent/ipmitool"}, {});
  EXPECT_FALSE(missing.ok());
}

TEST(IpmiCommandRunner, TimeoutKillsChild) {
  ProcessRunner runner;
  auto out = runner.Run({"sleep", "30"}, {.timeout_ms = 200});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kTimeout);
}

TEST(IpmiCommandRunner, OutputLimit) {
  ProcessRunner runner;
  auto out = runner.Run({"head", "-c", "100000", "/dev/zero"}, {.max_output_bytes = 1000});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kCorrupt);
}

}  // namespace
}  // namespace faultline::ipmi
