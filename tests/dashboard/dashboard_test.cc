#include "dashboard/dashboard.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace faultline::dashboard {
namespace {

std::string Source(const std::string& name) {
  std::ifstream in(std::string(FAULTLINE_SOURCE_DIR) + "/src/dashboard/assets/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(DashboardAssets, EmbeddedBytesAreTheSourceFiles) {
  for (const char* name : {"index.html", "app.js", "style.css"}) {
    auto a = Find(std::string("/ui/") + name);
    ASSERT_TRUE(a) << name;
    EXPECT_EQ(std::string(a->body), Source(name)) << name;
  }
  EXPECT_EQ(Find("/ui/app.js")->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(Find("/ui/style.css")->content_type, "text/css; charset=utf-8");
}

TEST(DashboardAssets, RootServesThePage) {
  for (const char* path : {"/", "/ui", "/ui/"}) {
    auto a = Find(path);
    ASSERT_TRUE(a) << path;
    EXPECT_EQ(a->content_type, "text/html; charset=utf-8");
    EXPECT_NE(a->body.find("<title>faultline</title>"), std::string_view::npos);
  }
}

TEST(DashboardAssets, NothingElseIsServed) {
  for (const char* path : {"/ui/../CMakeLists.txt", "/ui/missing.js", "/etc/passwd", "/api/v1/node", "", "/ui//app.js",
                           "/ui/app.js/", "/ui/APP.JS", "/index.html"}) {
    EXPECT_FALSE(Find(path)) << path;
  }
}

// The page never turns API text into markup: a kernel line is attacker-controlled.
TEST(DashboardAssets, ScriptBuildsTheDomFromTextOnly) {
  const std::string js = Source("app.js");
  for (const char* sink : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("}) {
    EXPECT_EQ(js.find(sink), std::string::npos) << sink;
  }
}

}  // namespace
}  // namespace faultline::dashboard
