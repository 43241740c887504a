// Conformance: every DMTF public mockup in ../shared is served with every index.json
// reachable at its URI and valid JSON (skipped when ../shared is absent).
#include <gtest/gtest.h>

#include <filesystem>

#include "fixture.h"

namespace faultline::sim::testing {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> MockupDirs() {
  std::vector<std::string> dirs;
  std::error_code ec;
  if (!fs::is_directory(SharedMockups(), ec)) return dirs;
  for (const auto& e : fs::directory_iterator(SharedMockups(), ec)) {
    if (e.is_directory() && fs::exists(e.path() / "index.json")) dirs.push_back(e.path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// URIs of every index.json under a mockup whose service root sits at its top level.
std::vector<std::string> ResourceUris(const std::string& dir) {
  std::vector<std::string> uris;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename() != "index.json") continue;
    std::string rel = fs::relative(e.path().parent_path(), dir).generic_string();
    uris.push_back("/redfish/v1" + (rel == "." ? "" : "/" + rel));
  }
  return uris;
}

TEST(MockBmcDmtfMockups, EveryResourceOfEveryMockupIsServedAsJson) {
  const auto dirs = MockupDirs();
  if (dirs.empty()) GTEST_SKIP() << "no DMTF mockups under " << SharedMockups();
  size_t served = 0;
  for (const std::string& dir : dirs) {
    MockBmcOptions o;
    o.mockup_dir = dir;
    auto bmc = MockBmc::Start(o);
    ASSERT_TRUE(bmc.ok()) << dir << ": " << bmc.status().ToString();
    HttpSession session;
    for (const std::string& uri : ResourceUris(dir)) {
      HttpRequest r;
      // Percent-encode '$' and ' ' the way clients send them.
      std::string path;
      for (char c : uri) path += c == ' ' ? "%20" : std::string(1, c);
      r.url = (*bmc)->base_url() + path;
      r.ca_path = (*bmc)->ca_cert_path();
      r.user = "admin";
      r.password = "mockpassword";
      HttpResult res = session.Fetch(r);
      ASSERT_EQ(res.status, 200) << dir << " " << uri;
      EXPECT_FALSE(nlohmann::json::parse(res.body, nullptr, false).is_discarded()) << dir << " " << uri;
      ++served;
    }
    EXPECT_GT((*bmc)->total_requests(), 0u);
  }
  EXPECT_GT(served, 1000u);
}

}  // namespace
}  // namespace faultline::sim::testing
