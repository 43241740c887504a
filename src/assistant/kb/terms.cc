#include "assistant/kb/terms.h"

#include <xapian.h>

#include <algorithm>
#include <array>

namespace faultline::assistant::kb {
namespace {

bool IsWordByte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x80 || (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z');
}

// All tokens, stop words included (code detection needs "xid" next to its number).
std::vector<std::string> Tokens(std::string_view text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size() && out.size() < kMaxTermsPerText) {
    while (i < text.size() && !IsWordByte(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && IsWordByte(text[i])) ++i;
    if (i > start) {
      std::string w(text.substr(start, i - start));
      for (char& c : w) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      }
      out.push_back(std::move(w));
    }
  }
  return out;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && s.size() <= 6 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

bool IsStopWord(std::string_view w) {
  // Function words only: domain words that read like stop words elsewhere ("down", "off",
  // "up", "over", "under", "out") carry meaning here ("link down", "fell off the bus").
  static constexpr std::array<std::string_view, 92> kStop = {
      "a",     "about", "after",  "again", "all",  "am",    "an",    "and",    "any",   "are",   "as",    "at",
      "be",    "been",  "before", "being", "both", "but",   "by",    "can",    "could", "did",   "do",    "does",
      "doing", "each",  "for",    "from",  "had",  "has",   "have",  "having", "he",    "her",   "here",  "him",
      "his",   "how",   "i",      "if",    "in",   "into",  "is",    "it",     "its",   "just",  "me",    "more",
      "most",  "my",    "of",     "on",    "once", "only",  "or",    "other",  "our",   "own",   "she",   "should",
      "so",    "some",  "such",   "than",  "that", "the",   "their", "them",   "then",  "there", "these", "they",
      "this",  "those", "to",     "too",   "very", "was",   "we",    "were",   "what",  "when",  "where", "which",
      "while", "who",   "why",    "will",  "with", "would", "you",   "your"};
  return std::find(kStop.begin(), kStop.end(), w) != kStop.end();
}

std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> out;
  for (std::string& t : Tokens(text)) {
    if (t.size() > kMaxWordBytes || IsStopWord(t)) continue;
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<std::string> StemmedTerms(std::string_view text, const Xapian::Stem& stem) {
  std::vector<std::string> out;
  for (const std::string& w : Words(text)) {
    std::string s = stem(w);
    out.push_back(s.empty() ? w : std::move(s));
  }
  return out;
}

std::vector<std::string> CodesInQuery(std::string_view text) {
  const std::vector<std::string> tokens = Tokens(text);
  std::vector<std::string> codes;
  auto add = [&](std::string_view kind, std::string_view num) {
    // Leading zeros do not make another code ("XID 079" is 79).
    while (num.size() > 1 && num.front() == '0') num.remove_prefix(1);
    std::string c = std::string(kind) + ":" + std::string(num);
    if (std::find(codes.begin(), codes.end(), c) == codes.end()) codes.push_back(std::move(c));
  };
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    for (std::string_view kind : {std::string_view("sxid"), std::string_view("xid")}) {
      if (t == kind && i + 1 < tokens.size() && AllDigits(tokens[i + 1])) {
        add(kind, tokens[i + 1]);
        break;
      }
      if (t.size() > kind.size() && t.starts_with(kind) && AllDigits(std::string_view(t).substr(kind.size()))) {
        add(kind, std::string_view(t).substr(kind.size()));
        break;
      }
    }
  }
  return codes;
}

}  // namespace faultline::assistant::kb
