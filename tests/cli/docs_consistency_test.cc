// What the docs state as numbers and defaults, checked against the tree and the binary so
// they cannot drift (issue 26): the scenario counts, and the store path `serve`, `why-slow`
// and `check` default to against the agent's default store_path and docs/api.md.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "run_faultline.h"

namespace faultline {
namespace {

std::string Source(const std::string& relative) {
  return testing_cli::Slurp(std::string(FAULTLINE_SOURCE_DIR) + "/" + relative);
}

size_t YamlFiles(const std::string& relative) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(FAULTLINE_SOURCE_DIR) + "/" + relative)) {
    n += e.is_regular_file() && e.path().extension() == ".yaml";
  }
  return n;
}

// The number `re`'s first group captures in `text`; -1 when it does not match.
long Stated(const std::string& text, const std::string& re) {
  std::smatch m;
  return std::regex_search(text, m, std::regex(re)) ? std::stol(m[1]) : -1;
}

TEST(CliDocs, ScenarioCountsMatchTheFiles) {
  EXPECT_EQ(Stated(Source("docs/scenarios.md"), R"(`scenarios/` holds (\d+) scenarios)"),
            static_cast<long>(YamlFiles("scenarios")));
  EXPECT_EQ(Stated(Source("scenarios/holdout/README.md"), R"(These (\d+) scenarios)"),
            static_cast<long>(YamlFiles("scenarios/holdout")));
}

TEST(CliDocs, StoreDefaultIsTheAgentsEverywhere) {
  const auto config = testing_cli::Faultline("agent --print-default-config");
  ASSERT_EQ(config.exit_code, 0) << config.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(config.out, m, std::regex(R"(store_path = "([^"]+)\")"))) << config.out;
  const std::string agent_default = m[1];
  for (const char* command : {"serve", "why-slow", "check"}) {
    const auto help = testing_cli::Faultline(std::string(command) + " --help");
    EXPECT_NE(help.out.find("(default " + agent_default), std::string::npos) << command << ":\n" << help.out;
  }
  EXPECT_NE(Source("docs/api.md").find("`--store`: default `" + agent_default + "`"), std::string::npos);
}

}  // namespace
}  // namespace faultline
