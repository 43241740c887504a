// The knowledge base's Markdown splitter: sections, front matter, anchors, and bad input
// (truncated, oversized, binary, invalid UTF-8, CRLF, fences, thousands of headings).
#include <gtest/gtest.h>

#include <string>

#include "assistant/kb/markdown.h"
#include "assistant/kb/terms.h"
#include "assistant/retriever.h"

namespace faultline::assistant::kb {
namespace {

KbFile Parse(const std::string& s) {
  auto r = ParseKbMarkdown(s);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : KbFile{};
}

TEST(KbMarkdownTest, FrontMatterTitleAndSections) {
  const KbFile f = Parse(
      "---\nkind: runbook\nclass: gpu_fell_off_bus\ncomponent: gpu, pcie\ncodes: XID:79, xid:154\nother: x\n---\n"
      "# GPU fell off the bus\n\nIntro text.\n\n## Symptoms\nXID 79 in dmesg.\n### Detail\nstill symptoms\n"
      "## What confirms it\nAER before.\n");
  EXPECT_EQ(f.kind, "runbook");
  EXPECT_EQ(f.title, "GPU fell off the bus");
  EXPECT_EQ(f.classes, std::vector<std::string>{"gpu_fell_off_bus"});
  EXPECT_EQ(f.components, (std::vector<std::string>{"gpu", "pcie"}));
  EXPECT_EQ(f.codes, (std::vector<std::string>{"xid:79", "xid:154"}));  // lower-cased
  ASSERT_EQ(f.sections.size(), 3u);
  EXPECT_EQ(f.sections[0].heading, "");
  EXPECT_EQ(f.sections[0].anchor, "");
  EXPECT_EQ(f.sections[0].text, "\nIntro text.");
  EXPECT_EQ(f.sections[1].heading, "Symptoms");
  EXPECT_EQ(f.sections[1].anchor, "symptoms");
  EXPECT_NE(f.sections[1].text.find("### Detail\nstill symptoms"), std::string::npos);  // level 3 stays inside
  EXPECT_EQ(f.sections[2].anchor, "what-confirms-it");
}

TEST(KbMarkdownTest, NoFrontMatterNoHeadings) {
  const KbFile f = Parse("just a paragraph\nand another line\n");
  EXPECT_EQ(f.kind, "");
  EXPECT_EQ(f.title, "");
  ASSERT_EQ(f.sections.size(), 1u);
  EXPECT_EQ(f.sections[0].text, "just a paragraph\nand another line");
}

TEST(KbMarkdownTest, EmptyAndWhitespaceOnlyFilesHaveNoPassages) {
  EXPECT_TRUE(Parse("").sections.empty());
  EXPECT_TRUE(Parse("\n\n   \n\t\n").sections.empty());
  EXPECT_TRUE(Parse("# Only a title\n").sections.empty());
}

TEST(KbMarkdownTest, UnterminatedFrontMatterIsText) {
  const KbFile f = Parse("---\nkind: runbook\nclass: x\n# Title\nbody\n");
  EXPECT_EQ(f.kind, "");  // never closed: not front matter
  EXPECT_EQ(f.title, "Title");
  ASSERT_EQ(f.sections.size(), 1u);
  EXPECT_NE(f.sections[0].text.find("kind: runbook"), std::string::npos);
}

TEST(KbMarkdownTest, FrontMatterTooLongIsText) {
  std::string s = "---\n";
  for (size_t i = 0; i < kMaxFrontMatterLines + 5; ++i) s += "k" + std::to_string(i) + ": v\n";
  s += "---\nkind: runbook\n";
  const KbFile f = Parse(s);
  EXPECT_EQ(f.kind, "");
}

TEST(KbMarkdownTest, HeadingsInsideFencesAreText) {
  const KbFile f = Parse("# T\n## A\n```\n## not a heading\n```\n~~~\n# nor this\n~~~\n## B\nb\n");
  ASSERT_EQ(f.sections.size(), 2u);
  EXPECT_NE(f.sections[0].text.find("## not a heading"), std::string::npos);
  EXPECT_NE(f.sections[0].text.find("# nor this"), std::string::npos);
  EXPECT_EQ(f.sections[1].heading, "B");
}

TEST(KbMarkdownTest, UnterminatedFenceSwallowsTheRest) {
  const KbFile f = Parse("## A\n```\n## B\nmore\n");
  ASSERT_EQ(f.sections.size(), 1u);
  EXPECT_NE(f.sections[0].text.find("## B"), std::string::npos);
}

TEST(KbMarkdownTest, DuplicateAndEmptyHeadingsGetUniqueAnchors) {
  const KbFile f = Parse("## Notes\na\n## Notes\nb\n## !!!\nc\n##\nd\n");
  ASSERT_EQ(f.sections.size(), 4u);
  EXPECT_EQ(f.sections[0].anchor, "notes");
  EXPECT_EQ(f.sections[1].anchor, "notes-2");
  EXPECT_EQ(f.sections[2].anchor, "section-3");
  EXPECT_EQ(f.sections[3].heading, "");
  EXPECT_FALSE(f.sections[3].anchor.empty());
}

TEST(KbMarkdownTest, NotHeadings) {
  const KbFile f = Parse("##no space\n    ## indented code\n####### seven\n## Real ##\nx\n");
  ASSERT_EQ(f.sections.size(), 2u);
  EXPECT_EQ(f.sections[1].heading, "Real");  // closing hashes dropped
}

TEST(KbMarkdownTest, CrlfReadsLikeLf) {
  const KbFile a = Parse("---\r\nkind: xid\r\n---\r\n# T\r\n## S\r\nline\r\n");
  const KbFile b = Parse("---\nkind: xid\n---\n# T\n## S\nline\n");
  EXPECT_EQ(a.kind, "xid");
  ASSERT_EQ(a.sections.size(), b.sections.size());
  EXPECT_EQ(a.sections[0].text, b.sections[0].text);
  EXPECT_EQ(a.title, "T");
}

TEST(KbMarkdownTest, BinaryAndInvalidUtf8AreSanitized) {
  std::string s = "## S\n";
  s += std::string("a\0b\x01\x7f", 5);
  s += "\xff\xfe\xc0\xaf \xed\xa0\x80 caf\xc3\xa9 \xe2\x82";  // invalid, overlong, surrogate, valid, truncated
  const KbFile f = Parse(s);
  ASSERT_EQ(f.sections.size(), 1u);
  const std::string& t = f.sections[0].text;
  EXPECT_EQ(t.find('\0'), std::string::npos);
  EXPECT_NE(t.find("caf\xc3\xa9"), std::string::npos);  // valid UTF-8 kept
  EXPECT_EQ(t.find('\xff'), std::string::npos);
  EXPECT_EQ(SanitizeText(t), t);  // already clean
}

// A byte-order mark pasted mid-file (two files concatenated) is dropped like the leading
// one: the section it starts reads clean, and sanitizing is idempotent.
TEST(KbMarkdownTest, AByteOrderMarkAnywhereIsDropped) {
  const KbFile f = Parse("\xEF\xBB\xBF## A\none\n## B\n\xEF\xBB\xBFtwo \xEF\xBB\xBF three\n");
  ASSERT_EQ(f.sections.size(), 2u);
  EXPECT_EQ(f.sections[0].heading, "A");
  EXPECT_EQ(f.sections[1].text.find("\xEF\xBB\xBF"), std::string::npos) << f.sections[1].text;
  EXPECT_NE(f.sections[1].text.find("two  three"), std::string::npos) << f.sections[1].text;
  for (const auto& sec : f.sections) EXPECT_EQ(SanitizeText(sec.text), sec.text);
}

TEST(KbMarkdownTest, OversizedFileIsRefused) {
  const std::string big(kMaxFileBytes + 1, 'a');
  auto r = ParseKbMarkdown(big);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ParseKbMarkdown(std::string(kMaxFileBytes, 'a')).ok());
}

TEST(KbMarkdownTest, HugeSectionIsCapped) {
  std::string s = "## Big\n";
  while (s.size() < kMaxIndexedSectionBytes * 3) s += "word \xc3\xa9 ";
  const KbFile f = Parse(s);
  ASSERT_EQ(f.sections.size(), 1u);
  EXPECT_TRUE(f.sections[0].truncated);
  EXPECT_LE(f.sections[0].text.size(), kMaxIndexedSectionBytes);
  EXPECT_EQ(SanitizeText(f.sections[0].text), f.sections[0].text);  // not cut inside a character
}

TEST(KbMarkdownTest, TooManySectionsAreCounted) {
  std::string s;
  for (size_t i = 0; i < kMaxSections + 10; ++i) s += "## H" + std::to_string(i) + "\nt\n";
  const KbFile f = Parse(s);
  EXPECT_EQ(f.sections.size(), kMaxSections);
  EXPECT_EQ(f.sections_dropped, 10u);
}

TEST(KbMarkdownTest, LongHeadingAndFieldValuesAreBounded) {
  std::string s = "---\nclass: " + std::string(500, 'x') + ", ok\ntitle: " + std::string(1000, 't') + "\n---\n## " +
                  std::string(1000, 'h') + "\nx\n";
  const KbFile f = Parse(s);
  EXPECT_EQ(f.classes, std::vector<std::string>{"ok"});
  EXPECT_LE(f.title.size(), kMaxHeadingBytes);
  ASSERT_EQ(f.sections.size(), 1u);
  EXPECT_LE(f.sections[0].heading.size(), kMaxHeadingBytes);
  EXPECT_LE(f.sections[0].anchor.size(), 64u);
}

TEST(KbMarkdownTest, CommentLinesAreNotText) {
  const KbFile f = Parse("# T\n<!-- generated -->\nbody\n");
  ASSERT_EQ(f.sections.size(), 1u);
  EXPECT_EQ(f.sections[0].text.find("generated"), std::string::npos);
}

TEST(KbMarkdownTest, CutUtf8NeverSplitsACharacter) {
  const std::string s = "ab\xc3\xa9\xe2\x82\xac";  // a b é €
  EXPECT_EQ(CutUtf8(s, 3), "ab");
  EXPECT_EQ(CutUtf8(s, 4), "ab\xc3\xa9");
  EXPECT_EQ(CutUtf8(s, 6), "ab\xc3\xa9");
  EXPECT_EQ(CutUtf8(s, 100), s);
  EXPECT_EQ(CutUtf8(s, 0), "");
}

TEST(KbMarkdownTest, Slugify) {
  EXPECT_EQ(Slugify("What the RMA / facility ticket needs"), "what-the-rma-facility-ticket-needs");
  EXPECT_EQ(Slugify("  --Safe   actions--  "), "safe-actions");
  EXPECT_EQ(Slugify("\xc3\xa9\xc3\xa9"), "");
}

TEST(KbTermsTest, CodesInQuery) {
  EXPECT_EQ(CodesInQuery("what does XID 119 mean here"), std::vector<std::string>{"xid:119"});
  EXPECT_EQ(CodesInQuery("xid79 and Xid: 048, SXid-20034"),
            (std::vector<std::string>{"xid:79", "xid:48", "sxid:20034"}));
  EXPECT_TRUE(CodesInQuery("row remap failure on gpu 3").empty());
  EXPECT_TRUE(CodesInQuery("xid").empty());
  EXPECT_TRUE(CodesInQuery("xid 12345678").empty());  // not a code: too long
}

TEST(KbTermsTest, WordsDropStopWordsKeepDomainWords) {
  EXPECT_EQ(Words("The GPU fell OFF the bus"), (std::vector<std::string>{"gpu", "fell", "off", "bus"}));
  EXPECT_TRUE(Words("what is the").empty());
  EXPECT_TRUE(Words(std::string(200, 'x')).empty());  // longer than a word
}

}  // namespace
}  // namespace faultline::assistant::kb
