// The committed knowledge base (kb/): a runbook per fault class with the six operator
// sections, the kb/xid entries exactly as the catalog renders them (one per XID and SXid
// code), and codes named by runbooks that exist in the catalog.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "assistant/kb/markdown.h"
#include "assistant/kb/xid_entries.h"
#include "assistant/retriever.h"
#include "core/types.h"
#include "parse/xid_catalog.h"

namespace faultline::assistant::kb {
namespace {

namespace fs = std::filesystem;
const fs::path kKb = fs::path(FAULTLINE_SOURCE_DIR) / "kb";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<FaultClass> RunbookClasses() {
  std::vector<FaultClass> out;
  for (int i = 0; i <= static_cast<int>(FaultClass::kNone); ++i) {
    if (static_cast<FaultClass>(i) != FaultClass::kNone) out.push_back(static_cast<FaultClass>(i));
  }
  return out;
}

TEST(KbContentTest, EveryFaultClassHasACompleteRunbook) {
  const std::vector<std::string> kSections = {"symptoms",     "what-confirms-it", "what-rules-it-out",
                                              "safe-actions", "escalation",       "what-the-rma-facility-ticket-needs"};
  for (FaultClass c : RunbookClasses()) {
    const std::string name(ToString(c));
    const fs::path p = kKb / "runbooks" / (name + ".md");
    ASSERT_TRUE(fs::exists(p)) << p;
    auto f = ParseKbMarkdown(ReadFile(p));
    ASSERT_TRUE(f.ok()) << p;
    EXPECT_EQ(f->kind, "runbook") << p;
    EXPECT_EQ(f->classes, std::vector<std::string>{name}) << p;
    EXPECT_FALSE(f->title.empty()) << p;
    EXPECT_FALSE(f->components.empty()) << p;
    std::vector<std::string> anchors;
    for (const KbSection& s : f->sections) {
      if (!s.anchor.empty()) anchors.push_back(s.anchor);
      EXPECT_GT(s.text.size(), 40u) << p << " section " << s.heading << " is too thin";
      EXPECT_LE(s.text.size(), kMaxPassageBytes) << p << " section " << s.heading << " would be cut";
    }
    EXPECT_EQ(anchors, kSections) << p;
  }
}

TEST(KbContentTest, NoRunbookForAClassThatDoesNotExist) {
  for (const auto& e : fs::directory_iterator(kKb / "runbooks")) {
    const std::string stem = e.path().stem().string();
    auto c = ParseFaultClass(stem);
    EXPECT_TRUE(c.has_value() && *c != FaultClass::kNone) << e.path();
  }
}

TEST(KbContentTest, XidEntriesMatchTheCatalog) {
  const auto entries = RenderCatalogEntries();
  EXPECT_EQ(entries.size(), AllXids().size() + AllSxids().size());
  std::set<std::string> expected;
  for (const KbEntryFile& e : entries) {
    expected.insert(fs::path(e.rel_path).filename().string());
    EXPECT_EQ(ReadFile(kKb / e.rel_path), e.content)
        << e.rel_path << " is stale: run build/src/assistant/kb/faultline-gen-kb-xid kb";
    auto f = ParseKbMarkdown(e.content);
    ASSERT_TRUE(f.ok());
    ASSERT_EQ(f->sections.size(), 1u) << e.rel_path << ": one passage per code";
    EXPECT_LE(f->sections[0].text.size(), kMaxPassageBytes);
  }
  for (const auto& d : fs::directory_iterator(kKb / "xid")) {
    EXPECT_EQ(expected.count(d.path().filename().string()), 1u) << d.path() << " is not in the catalog";
  }
}

TEST(KbContentTest, XidEntryNamesTheProjectsReading) {
  const std::string e79 = ReadFile(kKb / "xid" / "xid-79.md");
  EXPECT_NE(e79.find("codes: xid:79"), std::string::npos);
  EXPECT_NE(e79.find("class: gpu_fell_off_bus"), std::string::npos);
  EXPECT_NE(e79.find("Default action: " + std::string(ToString(RuleForXid(79).action))), std::string::npos);
  const std::string s = ReadFile(kKb / "xid" / "sxid-11012.md");  // corrected ECC: no fault class
  EXPECT_EQ(s.find("\nclass:"), std::string::npos);               // no class in the front matter
  EXPECT_NE(s.find("Fault class: none"), std::string::npos);
}

TEST(KbContentTest, RunbookCodesExistInTheCatalog) {
  for (FaultClass c : RunbookClasses()) {
    const fs::path p = kKb / "runbooks" / (std::string(ToString(c)) + ".md");
    auto f = ParseKbMarkdown(ReadFile(p));
    ASSERT_TRUE(f.ok());
    for (const std::string& code : f->codes) {
      const size_t colon = code.find(':');
      ASSERT_NE(colon, std::string::npos) << p << ": " << code;
      const std::string kind = code.substr(0, colon);
      const int n = std::stoi(code.substr(colon + 1));
      if (kind == "xid") {
        EXPECT_NE(FindXid(n), nullptr) << p << ": " << code;
      } else {
        EXPECT_EQ(kind, "sxid") << p;
        EXPECT_NE(FindSxid(n), nullptr) << p << ": " << code;
      }
    }
  }
}

TEST(KbContentTest, ReferenceNotesParse) {
  size_t notes = 0;
  for (const auto& e : fs::directory_iterator(kKb / "reference")) {
    auto f = ParseKbMarkdown(ReadFile(e.path()));
    ASSERT_TRUE(f.ok()) << e.path();
    EXPECT_EQ(f->kind, "reference") << e.path();
    EXPECT_GE(f->sections.size(), 2u) << e.path();
    ++notes;
  }
  EXPECT_GE(notes, 2u);
}

}  // namespace
}  // namespace faultline::assistant::kb
