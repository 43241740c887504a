#include "parse/prometheus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace faultline {
namespace {

TEST(DcgmPrometheusTest, ParsesHelpTypeAndLabelledSamples) {
  const std::string text =
      "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
      "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
      "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-abc\",pci_bus_id=\"00000000:18:00.0\",Hostname=\"n1\"} 41\n"
      "DCGM_FI_DEV_GPU_TEMP{gpu=\"1\",UUID=\"GPU-def\"} 43.5\n"
      "up 1\n";
  auto r = ParsePrometheusText(text);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->samples.size(), 3u);
  EXPECT_EQ(r->error_count, 0u);
  const PromSample& s = r->samples[0];
  EXPECT_EQ(s.name, "DCGM_FI_DEV_GPU_TEMP");
  EXPECT_EQ(s.value, 41);
  EXPECT_EQ(s.line, 3u);
  ASSERT_NE(s.Label("pci_bus_id"), nullptr);
  EXPECT_EQ(*s.Label("pci_bus_id"), "00000000:18:00.0");
  EXPECT_EQ(s.Label("nope"), nullptr);
  EXPECT_EQ(s.labels.size(), 4u);
  EXPECT_EQ(s.labels[0].first, "gpu");
  EXPECT_EQ(r->samples[1].value, 43.5);
  EXPECT_TRUE(r->samples[2].labels.empty());
  EXPECT_EQ(r->metadata.at("DCGM_FI_DEV_GPU_TEMP").type, "gauge");
  EXPECT_EQ(r->metadata.at("DCGM_FI_DEV_GPU_TEMP").help, "GPU temperature (in C).");
}

TEST(DcgmPrometheusTest, LabelValueEscapes) {
  auto r = ParsePrometheusSample(R"(m{path="C:\\dir",msg="say \"hi\"\nbye",empty=""} 1)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r->Label("path"), "C:\\dir");
  EXPECT_EQ(*r->Label("msg"), "say \"hi\"\nbye");
  EXPECT_EQ(*r->Label("empty"), "");
}

TEST(DcgmPrometheusTest, HelpEscapes) {
  auto r = ParsePrometheusText("# HELP m line one\\nline \\\\two\nm 1\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->metadata.at("m").help, "line one\nline \\two");
}

TEST(DcgmPrometheusTest, SpecialValuesAndTimestamps) {
  auto r = ParsePrometheusText("a NaN\nb +Inf\nc -Inf\nd 1.5e3 1700000000123\ne -0.25\nf 1e999\ng 0x10\nh Inf -5\n");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->error_count, 1u) << "hex without a binary exponent is not a Go float";
  EXPECT_EQ(r->errors[0].line, 7u);
  ASSERT_EQ(r->samples.size(), 7u) << (r->errors.empty() ? "" : r->errors[0].reason);
  EXPECT_TRUE(std::isnan(r->samples[0].value));
  EXPECT_EQ(r->samples[1].value, INFINITY);
  EXPECT_EQ(r->samples[2].value, -INFINITY);
  EXPECT_EQ(r->samples[3].value, 1500);
  ASSERT_TRUE(r->samples[3].timestamp_ms.has_value());
  EXPECT_EQ(*r->samples[3].timestamp_ms, 1700000000123);
  EXPECT_FALSE(r->samples[0].timestamp_ms.has_value());
  EXPECT_EQ(r->samples[4].value, -0.25);
  EXPECT_EQ(r->samples[5].value, INFINITY);
  EXPECT_EQ(*r->samples[6].timestamp_ms, -5);
}

TEST(DcgmPrometheusTest, WhitespaceCrLfTrailingCommaAndComments) {
  auto r = ParsePrometheusText(
      "# just a comment\r\n\r\n   \n\tm{a=\"1\", b = \"2\",} \t 7 \r\n#TYPE m counter\n# TYPE x untyped\n");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->samples.size(), 1u) << (r->errors.empty() ? "" : r->errors[0].reason);
  EXPECT_EQ(*r->samples[0].Label("b"), "2");
  EXPECT_EQ(r->samples[0].value, 7);
  EXPECT_EQ(r->metadata.at("m").type, "counter");
  EXPECT_EQ(r->error_count, 0u);
}

TEST(DcgmPrometheusTest, MalformedLinesAreSkippedAndReported) {
  const std::string text =
      "good 1\n"
      "m{a=\"unterminated} 1\n"
      "m{a=\"1\",a=\"2\"} 1\n"
      "m{a=\"bad \\q escape\"} 1\n"
      "m{a=\"1\"}\n"
      "m{a=\"1\"} twelve\n"
      "m 1 2 3\n"
      "m 1 17.5\n"
      "m{=\"x\"} 1\n"
      "m{a \"x\"} 1\n"
      "9metric 1\n"
      "m-x 1\n"
      "# TYPE m bogus\n"
      "also_good{x=\"y\"} 2\n";
  auto r = ParsePrometheusText(text);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->samples.size(), 2u);
  EXPECT_EQ(r->samples[0].name, "good");
  EXPECT_EQ(r->samples[1].name, "also_good");
  EXPECT_EQ(r->error_count, 12u);
  ASSERT_EQ(r->errors.size(), 12u);
  EXPECT_EQ(r->errors[0].line, 2u);
  EXPECT_NE(r->errors[0].reason.find("unterminated"), std::string::npos);
  EXPECT_NE(r->errors[1].reason.find("duplicate label a"), std::string::npos);
  EXPECT_NE(r->errors[2].reason.find("escape"), std::string::npos);
}

TEST(DcgmPrometheusTest, TruncatedScrapeKeepsWhatCameBefore) {
  const std::string full = "a{gpu=\"0\"} 1\nb{gpu=\"0\"} 2\nc{gpu=\"0\",UUID=\"GPU-1";
  auto r = ParsePrometheusText(full);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->samples.size(), 2u);
  EXPECT_EQ(r->error_count, 1u);
  // Cutting the input at every byte never crashes and never yields more samples.
  for (size_t n = 0; n <= full.size(); ++n) {
    auto part = ParsePrometheusText(full.substr(0, n));
    ASSERT_TRUE(part.ok());
    EXPECT_LE(part->samples.size(), 2u);
  }
}

TEST(DcgmPrometheusTest, OversizedLineIsSkippedNotFatal) {
  PromParseOptions opt;
  opt.max_line_bytes = 1024;
  std::string text = "before 1\nhuge{a=\"" + std::string(5000, 'x') + "\"} 1\nafter 2\n";
  auto r = ParsePrometheusText(text, opt);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->samples.size(), 2u);
  EXPECT_EQ(r->samples[1].name, "after");
  EXPECT_EQ(r->samples[1].line, 3u);
  EXPECT_NE(r->errors.at(0).reason.find("longer"), std::string::npos);
}

TEST(DcgmPrometheusTest, InputOverTheCapFailsWhole) {
  PromParseOptions opt;
  opt.max_input_bytes = 100;
  auto r = ParsePrometheusText(std::string(101, '#'), opt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(DcgmPrometheusTest, TooManySamplesFailsWhole) {
  PromParseOptions opt;
  opt.max_samples = 3;
  auto r = ParsePrometheusText("a 1\nb 2\nc 3\nd 4\n", opt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(DcgmPrometheusTest, TooManyLabelsRejectsTheLine) {
  PromParseOptions opt;
  opt.max_labels = 4;
  std::string line = "m{";
  for (int i = 0; i < 5; ++i) line += "l" + std::to_string(i) + "=\"v\",";
  line += "} 1";
  EXPECT_FALSE(ParsePrometheusSample(line, opt).ok());
}

TEST(DcgmPrometheusTest, ErrorListIsCappedButCounted) {
  PromParseOptions opt;
  opt.max_errors = 5;
  std::string text;
  for (int i = 0; i < 50; ++i) text += "bad line here\n";
  auto r = ParsePrometheusText(text, opt);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->errors.size(), 5u);
  EXPECT_EQ(r->error_count, 50u);
}

TEST(DcgmPrometheusTest, HostileBytesNeverCrash) {
  const std::string cases[] = {std::string("m{a=\"\0\"} 1\n", 11),
                               "{{{{{{{{",
                               "}}}} 1",
                               "m{",
                               "m{a",
                               "m{a=",
                               "m{a=\"",
                               "m{a=\"\\",
                               "m{a=\"x\"",
                               "m{a=\"x\",",
                               "\"\"\"\"",
                               "# HELP",
                               "# TYPE",
                               "# TYPE m",
                               "\xff\xfe\xfd 1",
                               "m 1e",
                               "m -",
                               "m +",
                               "m --1",
                               "m +-1",
                               "m{a=\"x\"}} 1",
                               std::string(10000, '\\'),
                               std::string(10000, '{')};
  for (const std::string& c : cases) {
    auto r = ParsePrometheusText(c);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->samples.size() + r->error_count + (r->samples.empty() && r->error_count == 0), 1u) << c;
  }
}

}  // namespace
}  // namespace faultline
