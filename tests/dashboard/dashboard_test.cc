#include "dashboard/dashboard.h"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "actions/actuator.h"
#include "core/types.h"
#include "policy/ledger.h"

namespace faultline::dashboard {
namespace {

std::string Source(const std::string& name) {
  std::ifstream in(std::string(FAULTLINE_SOURCE_DIR) + "/src/dashboard/assets/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(DashboardAssets, EmbeddedBytesAreTheSourceFiles) {
  for (const char* name : {"index.html", "vocab.js", "plot.js", "app.js", "style.css"}) {
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
  for (const char* name : {"vocab.js", "plot.js", "app.js"}) {
    const std::string js = Source(name);
    for (const char* sink : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function("}) {
      EXPECT_EQ(js.find(sink), std::string::npos) << name << ": " << sink;
    }
  }
}

// Skips a quoted JavaScript string starting at js[i] (a quote); returns the index after it.
size_t SkipString(const std::string& js, size_t i) {
  const char quote = js[i];
  for (++i; i < js.size() && js[i] != quote; ++i) {
    if (js[i] == '\\') ++i;
  }
  return i + 1;
}

// The unquoted keys of the object literal `const NAME = {...}` in a script, top level only
// (nested objects and strings skipped), so a test can ask whether a name has an entry.
std::set<std::string> ObjectKeys(const std::string& js, const std::string& name) {
  std::set<std::string> keys;
  size_t i = js.find("const " + name + " = {");
  if (i == std::string::npos) return keys;
  i = js.find('{', i);
  int depth = 0;
  std::string word;
  bool gap = false;  // whitespace after the word: a key may still follow ("a :"), a new word starts afresh
  while (i < js.size()) {
    const char c = js[i];
    if (c == '\'' || c == '"' || c == '`') {
      i = SkipString(js, i);
      word.clear();
      continue;
    }
    if (c == '{' || c == '(' || c == '[') ++depth;
    if (c == '}' || c == ')' || c == ']') {
      if (--depth == 0) break;
    }
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      if (gap) word.clear();
      gap = false;
      word += c;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      gap = !word.empty();
    } else {
      if (c == ':' && depth == 1 && !word.empty()) keys.insert(word);
      word.clear();
      gap = false;
    }
    ++i;
  }
  return keys;
}

TEST(DashboardVocabulary, KeyScannerReadsTopLevelKeysOnly) {
  const std::string js = "const T = {a: 1, b_2: {c: 3}, d: 'x: y', e: f => ({g: 1}), h: [{i: 2}], j k : 4};";
  EXPECT_EQ(ObjectKeys(js, "T"), (std::set<std::string>{"a", "b_2", "d", "e", "h", "k"}));
  EXPECT_TRUE(ObjectKeys(js, "MISSING").empty());
}

// Every action class the policy can plan has operator words ("webhook to on-call"), so no
// step reaches the page as a raw identifier or as the store's core action ("notify user").
TEST(DashboardVocabulary, EveryPlannedActionHasWords) {
  const std::set<std::string> keys = ObjectKeys(Source("vocab.js"), "ACTION_WORDS");
  for (actions::ActionClass c : actions::AllActionClasses()) {
    EXPECT_TRUE(keys.contains(std::string(actions::ToString(c)))) << actions::ToString(c);
  }
  const std::set<std::string> recommended = ObjectKeys(Source("vocab.js"), "RECOMMENDED_WORDS");
  for (Action a : AllActions()) EXPECT_TRUE(recommended.contains(std::string(ToString(a)))) << ToString(a);
}

// Every ledger state (attrs.state of an action row) says where the step stands in words.
TEST(DashboardVocabulary, EveryLedgerStateHasWords) {
  const std::set<std::string> keys = ObjectKeys(Source("vocab.js"), "STATE_WORDS");
  for (int s = 0; s <= static_cast<int>(policy::State::kWithdrawn); ++s) {
    const std::string name(policy::ToString(static_cast<policy::State>(s)));
    EXPECT_TRUE(keys.contains(name)) << name;
  }
}

// Every observation kind is placed (event, state, flag, counter, gauge): the ruled-out
// sentences and the plot's shape (steps for states, flags and counters) depend on it.
TEST(DashboardVocabulary, EveryObservationKindIsPlaced) {
  const std::set<std::string> keys = ObjectKeys(Source("vocab.js"), "KINDS");
  for (ObsKind k : AllObsKinds()) EXPECT_TRUE(keys.contains(std::string(ToString(k)))) << ToString(k);
  const std::set<std::string> parts = ObjectKeys(Source("vocab.js"), "PARTS");
  for (int t = 0; t <= static_cast<int>(ComponentType::kEth); ++t) {
    const std::string name(ToString(static_cast<ComponentType>(t)));
    EXPECT_TRUE(parts.contains(name)) << name;
  }
}

}  // namespace
}  // namespace faultline::dashboard
