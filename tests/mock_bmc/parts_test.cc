// Unit tests of the mock BMC's parts: glob matching and fault decisions, paging, sessions,
// the event log, the resource tree and YAML conversion.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fixture.h"
#include "sim/mock_bmc/event_log.h"
#include "sim/mock_bmc/fault_injector.h"
#include "sim/mock_bmc/paging.h"
#include "sim/mock_bmc/resource_tree.h"
#include "sim/mock_bmc/sessions.h"
#include "sim/mock_bmc/yaml_json.h"

namespace faultline::sim {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

TEST(MockBmcGlob, MatchesStarsAcrossSlashes) {
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("*", "/redfish/v1"));
  EXPECT_TRUE(GlobMatch("/redfish/v1/Chassis/*", "/redfish/v1/Chassis/1U/Power"));
  EXPECT_TRUE(GlobMatch("*/Power", "/redfish/v1/Chassis/1U/Power"));
  EXPECT_TRUE(GlobMatch("/redfish/v1/*/1U/*er", "/redfish/v1/Chassis/1U/Power"));
  EXPECT_FALSE(GlobMatch("*/Thermal", "/redfish/v1/Chassis/1U/Power"));
  EXPECT_FALSE(GlobMatch("/redfish/v1", "/redfish/v1/Chassis"));
  EXPECT_FALSE(GlobMatch("", "x"));
  // Pathological pattern stays fast (no exponential backtracking).
  EXPECT_FALSE(GlobMatch(std::string(50, '*') + "b", std::string(10000, 'a')));
}

TEST(MockBmcFaultInjector, EveryNthTimesMethodAndLatencyAddUp) {
  FaultInjector f;
  f.SetLatency(milliseconds(5));
  f.Add({.kind = FaultKind::kStatus, .path_glob = "*/Power", .status = 500, .every_nth = 3});
  f.Add({.kind = FaultKind::kLatency, .path_glob = "*", .latency = milliseconds(7)});
  f.Add({.kind = FaultKind::kStatus, .path_glob = "*/Sessions", .status = 503, .times = 1, .method = "POST"});
  std::vector<bool> fired;
  for (int i = 0; i < 6; ++i) {
    FaultPlan p = f.Decide("GET", "/redfish/v1/Chassis/1U/Power");
    EXPECT_EQ(p.latency, milliseconds(12));
    fired.push_back(p.action.has_value());
  }
  EXPECT_EQ(fired, (std::vector<bool>{false, false, true, false, false, true}));
  EXPECT_FALSE(f.Decide("GET", "/redfish/v1/SessionService/Sessions").action);
  auto first = f.Decide("POST", "/redfish/v1/SessionService/Sessions");
  ASSERT_TRUE(first.action);
  EXPECT_EQ(first.action->status, 503);
  EXPECT_FALSE(f.Decide("POST", "/redfish/v1/SessionService/Sessions").action);  // times: 1
  f.Clear();
  EXPECT_FALSE(f.Decide("GET", "/redfish/v1/Chassis/1U/Power").action);
}

json Collection(int n) {
  json doc = {{"Name", "C"}, {"Members", json::array()}, {"Members@odata.count", n}};
  for (int i = 0; i < n; ++i) doc["Members"].push_back({{"@odata.id", "/c/" + std::to_string(i)}});
  return doc;
}

TEST(MockBmcPaging, ServerPagesCarryNextLinksUntilTheEnd) {
  json doc = Collection(25);
  json p1 = PageCollection(doc, "/c", {.page_size = 10});
  EXPECT_EQ(p1["Members"].size(), 10u);
  EXPECT_EQ(p1["Members@odata.count"], 25);
  EXPECT_EQ(p1["@odata.nextLink"], "/c?$skip=10");
  json p3 = PageCollection(doc, "/c", {.skip = 20, .page_size = 10});
  EXPECT_EQ(p3["Members"].size(), 5u);
  EXPECT_EQ(p3["Members"][0]["@odata.id"], "/c/20");
  EXPECT_FALSE(p3.contains("@odata.nextLink"));
  EXPECT_EQ(PageCollection(Collection(5), "/c", {.page_size = 10}), Collection(5));
}

TEST(MockBmcPaging, ClientSkipTopAndOddDocuments) {
  json doc = Collection(25);
  json t = PageCollection(doc, "/c", {.skip = 3, .top = 4});
  EXPECT_EQ(t["Members"].size(), 4u);
  EXPECT_EQ(t["Members"][0]["@odata.id"], "/c/3");
  EXPECT_FALSE(t.contains("@odata.nextLink"));
  json limited = PageCollection(doc, "/c", {.skip = 0, .top = 15, .page_size = 10});
  EXPECT_EQ(limited["@odata.nextLink"], "/c?$skip=10&$top=5");
  EXPECT_EQ(PageCollection(doc, "/c", {.skip = 99})["Members"].size(), 0u);
  json null_members = {{"Members", nullptr}};
  EXPECT_EQ(PageCollection(null_members, "/c", {.page_size = 1}), null_members);
  EXPECT_EQ(ParseQueryCount("12"), 12u);
  EXPECT_FALSE(ParseQueryCount("-1"));
  EXPECT_FALSE(ParseQueryCount("1e3"));
  EXPECT_FALSE(ParseQueryCount(""));
  EXPECT_FALSE(ParseQueryCount("99999999999999999999"));
}

TEST(MockBmcSessions, CredentialsTokensBasicAndLimit) {
  SessionTable t("admin", "pw", 2);
  EXPECT_EQ(t.Create("admin", "nope").status().code(), StatusCode::kPermissionDenied);
  auto a = t.Create("admin", "pw");
  auto b = t.Create("admin", "pw");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->token, b->token);
  EXPECT_EQ(a->token.size(), 32u);
  EXPECT_EQ(t.Create("admin", "pw").status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(t.TokenValid(a->token));
  EXPECT_FALSE(t.TokenValid(""));
  EXPECT_FALSE(t.TokenValid(a->token + "x"));
  EXPECT_TRUE(t.Delete(a->id));
  EXPECT_FALSE(t.Delete(a->id));
  EXPECT_FALSE(t.TokenValid(a->token));
  EXPECT_EQ(t.Open().size(), 1u);
  EXPECT_EQ(t.created(), 2u);
  EXPECT_EQ(t.deleted(), 1u);
  EXPECT_TRUE(t.BasicValid("Basic YWRtaW46cHc="));   // admin:pw
  EXPECT_FALSE(t.BasicValid("Basic YWRtaW46cHd4"));  // admin:pwx
  EXPECT_FALSE(t.BasicValid("Basic !!!!"));
  EXPECT_FALSE(t.BasicValid("Basic YWRtaW4="));  // no colon
  EXPECT_FALSE(t.BasicValid("Bearer YWRtaW46cHc="));
  EXPECT_FALSE(t.BasicValid("Basic " + std::string(10000, 'A')));
}

TEST(MockBmcEventLog, IdsReplayAndCapacity) {
  EventLog log(3);
  for (int i = 0; i < 5; ++i) log.Push({.message_id = "M" + std::to_string(i)}, "2026-01-01T00:00:00Z");
  EXPECT_EQ(log.last_id(), 5u);
  auto after = log.After(2);
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0].first, 3u);
  auto payload = json::parse(after[0].second);
  EXPECT_EQ(payload["Events"][0]["MessageId"], "M2");
  EXPECT_EQ(payload["Events"][0]["EventTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(payload["Events"][0]["EventId"], "3");
  EXPECT_EQ(log.After(0).size(), 3u);  // the two oldest fell out
  EXPECT_TRUE(log.After(5).empty());
  EXPECT_EQ(after[0].second.find('\n'), std::string::npos);  // one SSE data line
}

TEST(MockBmcResourceTree, LoadsRedfishV1LayoutAndCanonicalisesPaths) {
  auto tree = ResourceTree::Load(testing::MiniServer());
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  EXPECT_EQ(tree->size(), 61u);
  EXPECT_NE(tree->Find("/redfish/v1"), nullptr);
  EXPECT_NE(tree->Find("/redfish/v1/"), nullptr);
  EXPECT_NE(tree->Find("/redfish/v1//Chassis/1U/"), nullptr);
  const Resource* meta = tree->Find("/redfish/v1/$metadata");
  ASSERT_NE(meta, nullptr);
  EXPECT_FALSE(meta->is_json);
  EXPECT_EQ(meta->content_type, "application/xml");
  EXPECT_EQ(tree->Find("/redfish/v1/Nope"), nullptr);
  EXPECT_EQ(ResourceTree::Load("/nonexistent/mockup").status().code(), StatusCode::kNotFound);
}

TEST(MockBmcResourceTree, SetGetAndAppend) {
  auto tree = ResourceTree::Load(testing::MiniServer());
  ASSERT_TRUE(tree.ok());
  const std::string power = "/redfish/v1/Chassis/1U/Power";
  ASSERT_TRUE(tree->Set(power, "/PowerSupplies/0/Status/State", "Absent").ok());
  EXPECT_EQ(*tree->Get(power, "/PowerSupplies/0/Status/State"), "Absent");
  EXPECT_EQ(tree->Set(power, "/PowerSupplies/0/Status/State/Deeper", 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tree->Set(power, "/PowerSupplies/9/Status", 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tree->Set("/redfish/v1/Nope", "/A", 1).code(), StatusCode::kNotFound);
  EXPECT_EQ(tree->Set("/redfish/v1/$metadata", "/A", 1).code(), StatusCode::kInvalidArgument);

  const std::string entries = "/redfish/v1/Systems/1/LogServices/SEL/Entries";
  auto uri = tree->Append(entries, {{"Message", "new"}}, "2026-11-29T12:00:00Z");
  ASSERT_TRUE(uri.ok()) << uri.status().ToString();
  EXPECT_EQ(*uri, entries + "/4");
  const Resource* coll = tree->Find(entries);
  EXPECT_EQ(coll->doc["Members@odata.count"], 4);
  EXPECT_EQ(coll->doc["Members"].back()["@odata.id"], *uri);
  const Resource* entry = tree->Find(*uri);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->doc["Created"], "2026-11-29T12:00:00Z");
  EXPECT_EQ(entry->doc["@odata.type"], "#LogEntry.v1_15_0.LogEntry");
  EXPECT_EQ(tree->Append(entries, {{"Id", "4"}}, "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tree->Append(entries, {{"Id", "../x"}}, "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tree->Append(entries, json::array(), "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tree->Append("/redfish/v1/Nope", json::object(), "").status().code(), StatusCode::kNotFound);
}

TEST(MockBmcResourceTree, ServesUnparseableFilesRaw) {
  const auto dir = std::filesystem::temp_directory_path() / ("mock-bmc-raw-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "Broken");
  { std::ofstream(dir / "index.json") << R"({"@odata.id": "/redfish/v1"})"; }
  { std::ofstream(dir / "Broken" / "index.json") << R"({"Name": "trunc)"; }
  auto tree = ResourceTree::Load(dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(tree.ok());
  const Resource* broken = tree->Find("/redfish/v1/Broken");
  ASSERT_NE(broken, nullptr);
  EXPECT_FALSE(broken->is_json);
  EXPECT_EQ(broken->raw, R"({"Name": "trunc)");
}

TEST(MockBmcYaml, LimitsNodesAndDepth) {
  EXPECT_TRUE(YamlToJson("a: [1, 2, 3]", 8, 100).ok());
  EXPECT_FALSE(YamlToJson("a: [1, 2, 3]", 8, 3).ok());
  EXPECT_FALSE(YamlToJson("a: {b: {c: {d: 1}}}", 2, 100).ok());
  EXPECT_FALSE(YamlToJson("a: [1, 2", 8, 100).ok());
  EXPECT_EQ(*YamlToJson("x: 0x10", 8, 100), json::parse(R"({"x": "0x10"})"));  // not a decimal: kept as text
}

}  // namespace
}  // namespace faultline::sim
