// A log page read as a stream (sources/redfish/collection_page.h): the same members and
// links as the whole-document parse, the cap, hostile bodies, and the memory a 190,000-entry
// SEL page costs a sweep (issue 25: 395 MB when the page was one nlohmann::json value).
#include "sources/redfish/collection_page.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/time.h"
#include "sources/redfish/fake_http_client.h"
#include "sources/redfish/redfish_collector.h"

namespace faultline::redfish {
namespace {

constexpr char kSel[] = "/redfish/v1/Chassis/GPU1/LogServices/SEL/Entries";

std::string Entry(int id) {
  const std::string n = std::to_string(id);
  return R"({"@odata.id":")" + std::string(kSel) + "/" + n + R"(","Id":")" + n +
         R"(","EntryType":"SEL","Severity":"OK","Created":"2025-03-01T10:00:00Z","Message":"entry"})";
}

std::string Page(int entries, const std::string& extra = "") {
  std::string body = R"({"@odata.type":"#LogEntryCollection.LogEntryCollection","@odata.id":")" + std::string(kSel) +
                     R"(","Members@odata.count":)" + std::to_string(entries) + R"(,"Members":[)";
  for (int i = 1; i <= entries; ++i) body += (i > 1 ? "," : "") + Entry(i);
  return body + "]" + extra + "}";
}

TEST(CollectionPage, SameMembersAndLinksAsTheWholeDocument) {
  const std::string body = R"({"Oem":{"x":[1,{"Members":[9]}]},"@odata.id":"/c","Members":[)"
                           R"({"@odata.id":"/c/1","Id":"1","MessageArgs":["a",{"b":[true,null,1.5,-2]}]},)"
                           R"({"@odata.id":"/c/2"},"odd",7],"Members@odata.nextLink":"/c?$skip=2"})";
  auto page = ParseCollectionPage(body, 100);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  auto whole = ParseBmcJson(body);
  ASSERT_TRUE(whole.ok());
  ASSERT_EQ(page->members.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(page->members[i], (*whole)["Members"][i]) << i;
  EXPECT_TRUE(page->members_array);
  EXPECT_FALSE(page->more);
  EXPECT_EQ(page->id, "/c");
  EXPECT_EQ(page->next_link, "/c?$skip=2");
  // @odata.nextLink wins over Members@odata.nextLink, wherever each comes.
  auto both = ParseCollectionPage(R"({"@odata.nextLink":"/a","Members":[],"Members@odata.nextLink":"/b"})", 10);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->next_link, "/a");
}

TEST(CollectionPage, StopsAtTheFirstMemberPastTheCap) {
  // What follows the cap is never read: not even the malformed tail.
  auto page = ParseCollectionPage(Page(50).substr(0, Page(50).size() - 40) + "{{{garbage", 10);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->members.size(), 10u);
  EXPECT_TRUE(page->more);
  EXPECT_EQ(page->members[9]["Id"], "10");
  auto exact = ParseCollectionPage(Page(10), 10);
  ASSERT_TRUE(exact.ok());
  EXPECT_FALSE(exact->more);
  EXPECT_EQ(exact->members.size(), 10u);
}

TEST(CollectionPage, HostileBodiesAreClearErrors) {
  EXPECT_EQ(ParseCollectionPage(R"({"Members":[{"Id":"1"},)", 10).status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(ParseCollectionPage(Page(3) + "trailing", 10).status().code(), StatusCode::kCorrupt);
  const std::string deep = R"({"Members":[)" + std::string(100'000, '[') + std::string(100'000, ']') + "]}";
  auto refused = ParseCollectionPage(deep, 10);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("deeper than 64"), std::string::npos) << refused.status().message();
  EXPECT_TRUE(ParseCollectionPage(R"({"Members":[)" + std::string(62, '[') + std::string(62, ']') + "]}", 10).ok());
  // Valid JSON that is no collection: no members, no error (the walk warns).
  for (const char* body : {"[1,2]", "\"x\"", R"({"Members":{"a":1}})", R"({"Members":null})"}) {
    auto page = ParseCollectionPage(body, 10);
    ASSERT_TRUE(page.ok()) << body;
    EXPECT_FALSE(page->members_array) << body;
    EXPECT_TRUE(page->members.empty()) << body;
  }
}

// The resident-set high-water mark (VmHWM), KiB; 0 when unknown.
long PeakRssKib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

long RssKib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

// Writing 5 to clear_refs resets VmHWM to the current RSS (Linux 4.0+).
bool ResetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return out.good();
}

TEST(CollectionPage, A190kEntrySelPageIsReadInBoundedMemory) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "resident memory under a sanitizer says nothing about the parser";
#endif
  FakeHttpClient fake;
  fake.ServeDirectory(std::string(FAULTLINE_SOURCE_DIR) + "/tests/redfish/data/node1");
  fake.Set("GET", kSel, 200, Page(190'000));
  FakeClock clock;
  clock.Set(*ParseIso8601("2025-03-01T16:00:00Z"));
  RedfishClientOptions o;
  o.base_url = "https://bmc.test";
  o.auth = AuthMode::kNone;
  RedfishClient client(fake, clock, o);
  RedfishCollector collector(client, {.node = "n1", .workers = 1});
  if (!ResetPeakRss()) GTEST_SKIP() << "no /proc/self/clear_refs: the peak cannot be measured";
  const long before = RssKib();
  SweepResult r = collector.Sweep(clock.MonotonicNs() + 600 * kNsPerSec);
  const long growth_mib = (PeakRssKib() - before) / 1024;
  size_t entries = 0;
  for (const auto& obs : r.observations) entries += obs.kind == ObsKind::kSelEntry;
  // The page is cut at max_log_entries (20,000), and says so; the rest of the sweep is whole.
  EXPECT_EQ(entries, 20'000u);
  bool capped = false;
  for (const auto& w : r.warnings) capped |= w.find("max_log_entries=20000") != std::string::npos;
  EXPECT_TRUE(capped);
  // The whole page as one document grew it by 257 MiB here (395 MB peak in the report).
  // Now: the response's body (31 MiB) and the 20,000 entries kept and mapped, ~90 MiB.
  std::printf("190k-entry SEL page: peak RSS growth %ld MiB\n", growth_mib);
  EXPECT_LT(growth_mib, 150);
}

}  // namespace
}  // namespace faultline::redfish
